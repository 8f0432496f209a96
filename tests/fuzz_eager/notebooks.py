"""Generated session scripts as Jupyter notebooks: the fuzzer's notebook mode.

:func:`as_notebook` cuts a script into code cells between top-level statements (where a cut falls
is drawn from the program's own seed; comments stay with the statement below them), with markdown
cells between some of them and, in some notebooks, IPython lines that leave the program alone
(``%matplotlib inline``, ``!ls``). :func:`migrate` runs the same steps as ``tfclip-migrate fix``
on an ``.ipynb`` (mask the IPython lines, join the cells into one program, run the rules, cut the
result into the cells, write them back in the file's JSON layout) and gives the notebook back as a
script (:func:`as_script`: its code cells in order, IPython lines dropped) for the harness, which
runs it the way a notebook runs: every cell in order in one namespace.
"""

from __future__ import annotations

import ast
import json
import random
from dataclasses import dataclass, field
from typing import Any, List

from codemods.api import Options, migrate_source
from codemods.notebooks import cells as nbcells
from codemods.notebooks.recut import statement_spans

_INERT = ("%matplotlib inline", "!ls", "%config InlineBackend.figure_format = 'retina'")


def as_notebook(source: str, seed: int) -> str:
    """``source`` cut into code cells (a JSON text, nbformat 4)."""
    rng = random.Random(seed)
    lines = source.splitlines(keepends=True)
    starts = [first for first, _ in statement_spans(lines)]
    cuts = [0] + [s for s in starts[1:] if rng.random() < 0.5] + [len(lines)]
    cells: List[dict] = []
    if rng.random() < 0.3:
        cells.append(_code(rng.choice(_INERT) + "\n"))
    for a, b in zip(cuts, cuts[1:]):
        text = "".join(lines[a:b])
        if rng.random() < 0.2 and "from __future__" not in text:  # (IPython too wants those first in a cell)
            text = rng.choice(_INERT) + "\n" + text
        if rng.random() < 0.3:
            cells.append({"cell_type": "markdown", "metadata": {}, "source": ["Some prose.\n"]})
        cells.append(_code(text.rstrip("\n")))
    doc = {"cells": cells, "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
           "nbformat": 4, "nbformat_minor": 4}
    return json.dumps(doc, indent=1) + "\n"


def _code(text: str) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": text.splitlines(keepends=True)}


def as_script(notebook: str) -> str:
    """The code cells in order, IPython lines dropped: what running the notebook runs."""
    out = []
    for cell in json.loads(notebook)["cells"]:
        if cell["cell_type"] != "code":
            continue
        text = "".join(cell["source"])
        kept = [line for line in text.split("\n") if not line.lstrip().startswith(("%", "!"))]
        out.append("\n".join(kept).rstrip("\n") + "\n")
    return "".join(out)


@dataclass
class Result:
    """What the runner reads of a migration (as :func:`codemods.api.migrate_source` returns)."""

    code: str
    changed: bool
    diagnostics: List[Any] = field(default_factory=list)
    notebook: str = ""


def migrate(notebook: str, rule: str) -> Result:
    """``tfclip-migrate fix --select RULE`` on the notebook text; ``code`` is the result as a script
    (the input's own script when nothing could be written back)."""
    nb = nbcells.load_notebook(notebook.encode("utf-8"))
    masked = [(number, nbcells.mask_ipython(text, number)) for number, text in nb.code_cells()]
    program = nbcells.build_program([(number, cell) for number, cell in masked if cell is not None])
    result = migrate_source(program.source, Options(select=frozenset({rule})), path="notebook.ipynb")
    unchanged = Result(as_script(notebook), False, result.diagnostics, notebook)
    if not result.changed:
        return unchanged
    try:
        sources = program.split(result.code)
        new = nb.write_back(sources).decode("utf-8")
    except (nbcells.CellBoundaryError, nbcells.NotebookError) as exc:
        refusal = type("Refusal", (), {"code": rule, "applied": False, "message": f"not written back: {exc.reason}"})
        return Result(unchanged.code, False, [refusal()], notebook)
    # every cell must run on its own (a cut inside a statement would not)
    for cell in json.loads(new)["cells"]:
        if cell["cell_type"] == "code":
            ast.parse("\n".join(line for line in "".join(cell["source"]).split("\n")
                                if not line.lstrip().startswith(("%", "!"))))
    return Result(as_script(new), True, result.diagnostics, new)
