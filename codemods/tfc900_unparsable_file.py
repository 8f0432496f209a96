"""TFC900: a file or notebook cell that could not be read, decoded or parsed.

Not a codemod: the CLI reports it (``codemods._process``) for any file it cannot handle.
The class carries the rule's code, name, summary and documentation, which
``tfclip-migrate rules TFC900`` prints. It is deliberately not in ``_registry.RULES``.
"""

from __future__ import annotations

from typing import ClassVar


class UnparsableFile:
    """## What it does
    Reports a file (or a notebook code cell) that tfclip-migrate could not read, decode or
    parse: Python 2 syntax, binary content, an invalid encoding, invalid notebook JSON, a
    file the process may not read. The file is left byte-identical and the run goes on.

    ## Why is this bad?
    Legacy clipping code in such a file can be neither checked nor migrated.

    ## Example
    ```python
    print "step", step   # Python 2
    optimizer = tf.contrib.estimator.clip_gradients_by_norm(opt, clip_norm=5.0)
    ```

    ## Use instead
    Port the file to Python 3 (e.g. with `pyupgrade`/`2to3`), then run tfclip-migrate again.
    Files without any candidate token (no name a rule looks for) are never parsed, so a
    syntax error there is never reported; binary and undecodable files always are. Silence
    with `--ignore TFC900` or `ignore = ["TFC900"]` in `[tool.tfclip-migrate]`.

    ## Fix safety
    No fix: the file is never modified.
    """

    CODE: ClassVar[str] = "TFC900"
    NAME: ClassVar[str] = "unparsable-file"
    SUMMARY: ClassVar[str] = "A file or notebook cell could not be read, decoded or parsed; it was left untouched."
