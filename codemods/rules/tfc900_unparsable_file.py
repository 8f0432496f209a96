"""TFC900: a file or notebook cell that could not be read, decoded, parsed or safely rewritten.

Not a codemod: the CLI reports it (``codemods.cli.process``) for any file it cannot handle, and
the engine (``codemods.api``) when it refuses to write fixes it cannot splice byte-exactly.
The class carries the rule's code, name, summary and documentation, which
``tfclip-migrate rules TFC900`` prints. It is deliberately not in ``_registry.RULES``.
"""

from __future__ import annotations

from typing import ClassVar


class UnparsableFile:
    """## What it does
    Reports a file (or a notebook code cell) that tfclip-migrate could not analyse, and
    files whose fixes it would not write. The file is left byte-identical and the run
    goes on. The message says why:

    - `cannot parse: ...` -- CPython cannot parse it (Python 2 syntax such as
      `print "x"` or `except E, e:`, 200+ nested brackets, a syntax error), or libcst
      cannot; the position is the error's.
    - `cannot decode as ...`, `binary file`, `cannot read: ...` -- bad encoding, NUL
      bytes, no read permission.
    - `the parser crashed on this file: ...` -- the worker process analysing it died
      (e.g. a native parser crash); with `--jobs` > 1 the run goes on without it.
    - `too large to analyse: ...` -- more Python than `--max-file-size` (default 1 MiB).
    - `fixes not applied: ...` -- the file was analysed and its findings are reported,
      but its fixes were not written: libcst cannot reproduce a line a fix touches byte
      for byte, or (notebooks) a rewrite would cross a cell boundary, a cell does not
      parse, or the written notebook would not decode to the same document with only the
      changed cells' sources replaced. `check` reports the same note, so it never
      advertises a fix `fix` cannot write.
    - invalid notebook JSON, nbformat 3, an empty notebook.

    ## Why is this bad?
    Legacy clipping code in such a file can be neither checked nor migrated, so a clean
    `check` would be a false promise.

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
    SUMMARY: ClassVar[str] = "A file or notebook cell could not be analysed or safely rewritten; it was left untouched."
