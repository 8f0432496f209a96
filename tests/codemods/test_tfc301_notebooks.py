"""TFC301 on notebooks, through ``tfclip-migrate`` (no TensorFlow: the numbers are proved in
``tests/proofs/test_eager_migration.py`` and by the fuzzer's ``--notebook`` mode).

A session script cut into cells becomes the same eager program as the script, cut into the same
cells; IPython lines that may touch the program, or that stand among statements that move, are
declined with their cause; a ``%%timeit`` cell is never changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codemods.cli import main
from tests.fuzz_eager.notebooks import as_script

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "TFC301"
NOTE = "# (tfclip-migrate TFC301: this cell's TF 1 graph code is now part of the eager program)"


def code_cell(text: str) -> dict:
    return {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [],
            "source": text.splitlines(keepends=True)}


def write(path: Path, cells) -> Path:
    doc = {"cells": cells, "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
           "nbformat": 4, "nbformat_minor": 4}
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def statement_cells(source: str):
    """One code cell per top-level statement (with the comments above it), a markdown cell
    after every third."""
    from codemods.notebooks.recut import statement_spans

    lines = source.splitlines(keepends=True)
    starts = [first for first, _ in statement_spans(lines)]
    starts[0] = 0
    cells = []
    for k, (a, b) in enumerate(zip(starts, starts[1:] + [len(lines)])):
        cells.append(code_cell("".join(lines[a:b]).rstrip("\n")))
        if k % 3 == 2:
            cells.append({"cell_type": "markdown", "metadata": {}, "source": ["Notes.\n"]})
    return cells


def code_lines(text: str):
    return [line for line in text.splitlines() if line.strip() and line != NOTE]


def run(capsys, *argv):
    rc = main([*argv, "--isolated", "-j1", "--no-cache"])
    captured = capsys.readouterr()
    return rc, captured.out + captured.err


@pytest.mark.parametrize("case", ["mnist_tutorial", "model_class", "session_object", "prediction_runs", "no_placeholders"])
def test_a_session_script_cut_into_cells_becomes_the_same_eager_program(tmp_path, capsys, case):
    """Every statement in a cell of its own (and `%matplotlib inline` first): `fix` writes the
    fixture's eager program, cut into the same cells, each of which parses on its own; the
    IPython cell is untouched and `check` then finds nothing left for TFC301."""
    before = (FIXTURES / f"{case}.before.py").read_text()
    cells = [code_cell("%matplotlib inline")] + statement_cells(before)
    path = write(tmp_path / f"{case}.ipynb", cells)
    rc, out = run(capsys, "fix", "--select", "TFC301", str(path))
    assert "TFC301" in out and "1 fixed" in out, out
    new = json.loads(path.read_text())["cells"]
    assert len(new) == len(cells) and [c["cell_type"] for c in new] == [c["cell_type"] for c in cells]
    assert new[0]["source"] == ["%matplotlib inline"]
    for cell in new:
        if cell["cell_type"] == "code":
            compile("".join(cell["source"]).replace("%matplotlib inline", ""), "<cell>", "exec")
    after = (FIXTURES / f"{case}.after.py").read_text()
    assert code_lines(as_script(path.read_text())) == code_lines(after)
    rc, out = run(capsys, "check", "--select", "TFC301", str(path))
    assert rc == 0 and "TFC301" not in out, out


def test_an_ipython_line_that_may_touch_the_program_is_declined(tmp_path, capsys):
    """`%run helpers.py` may define what the graph reads: declined, the notebook left byte-identical."""
    before = (FIXTURES / "mnist_tutorial.before.py").read_text()
    path = write(tmp_path / "nb.ipynb", [code_cell("%run helpers.py")] + statement_cells(before))
    data = path.read_bytes()
    rc, out = run(capsys, "fix", "--select", "TFC301", str(path))
    assert path.read_bytes() == data
    assert "an IPython line the rule does not follow" in out and "cell 1" in out, out


def test_an_ipython_line_among_moving_statements_is_declined(tmp_path, capsys):
    """`!ls` inside the `variable_scope` block (which moves into the model's `call`): declined with
    that cause, the notebook left byte-identical. (One between module-level statements stays
    where it is, even among the statements of a training op: see the fuzzer's notebook mode.)"""
    before = (FIXTURES / "seed000_clip_by_norm.before.py").read_text()
    cells = statement_cells(before)
    scope = next(i for i, c in enumerate(cells) if "".join(c["source"]).startswith("with tf.variable_scope"))
    text = "".join(cells[scope]["source"])
    cells[scope] = code_cell(text.replace("\n", "\n    !ls\n", 1))
    path = write(tmp_path / "nb.ipynb", cells)
    data = path.read_bytes()
    rc, out = run(capsys, "fix", "--select", "TFC301", str(path))
    assert path.read_bytes() == data
    assert "this IPython line stands among the statements that move" in out, out


def test_an_ipython_line_between_training_statements_stays_in_its_cell(tmp_path, capsys):
    """`!ls` between `compute_gradients` and the clipping: the clipping moves into the training
    step, the IPython line stays in its cell at module level, where it ran."""
    before = (FIXTURES / "seed000_clip_by_norm.before.py").read_text()
    cells = statement_cells(before)
    clip = next(i for i, c in enumerate(cells) if "".join(c["source"]).startswith("gradients = ["))
    cells[clip] = code_cell("!ls\n" + "".join(cells[clip]["source"]))
    path = write(tmp_path / "nb.ipynb", cells)
    rc, out = run(capsys, "fix", "--select", "TFC301", str(path))
    assert "1 fixed" in out, out
    new = json.loads(path.read_text())["cells"]
    assert "".join(new[clip]["source"]) == "!ls"  # the clipping moved into the step


def test_a_timeit_cell_is_never_changed(tmp_path, capsys):
    """`%%timeit` runs its cell many times: a rewrite that changes that cell is refused (TFC900)."""
    before = (FIXTURES / "mnist_tutorial.before.py").read_text()
    cells = statement_cells(before)
    session = next(i for i, c in enumerate(cells) if "".join(c["source"]).startswith("with tf.Session"))
    cells[session] = code_cell("%%timeit\n" + "".join(cells[session]["source"]))
    path = write(tmp_path / "nb.ipynb", cells)
    data = path.read_bytes()
    rc, out = run(capsys, "fix", "--select", "TFC301,TFC900", str(path))
    assert path.read_bytes() == data
    assert "runs under %%timeit" in out, out
    # TFC301 alone selected: its finding says why it was not applied (no TFC900 line)
    rc, out = run(capsys, "fix", "--select", "TFC301", str(path))
    assert path.read_bytes() == data
    assert "TFC900" not in out and "(model mapping) (not applied: cell" in out and "%%timeit" in out, out
