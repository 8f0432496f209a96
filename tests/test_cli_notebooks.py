"""Notebooks are one program (issue 10 item 2): a notebook's code cells are analysed as one module,
findings are reported as cell + line, each cell is written back in place (outputs, metadata, ids,
JSON layout and line endings untouched), a rewrite that would span a cell boundary is refused,
and a migrated notebook trains like the original.

These tests use the real rules.
"""

from __future__ import annotations

import ast
import difflib
import json
from pathlib import Path
from typing import List

import pytest

from codemods.cli import main

OUTPUT = [{"name": "stdout", "output_type": "stream", "text": ["step 1 loss 3.2\n"]}]


def code_cell(source: str, cell_id: str, outputs=None) -> dict:
    return {"cell_type": "code", "execution_count": 7, "id": cell_id, "metadata": {"tags": ["t"]},
            "outputs": outputs or [], "source": source.splitlines(keepends=True)}


def markdown(text: str, cell_id: str) -> dict:
    return {"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": [text]}


def notebook(cells: List[dict]) -> bytes:
    data = {"cells": cells, "metadata": {"kernelspec": {"language": "python", "name": "python3"},
                                         "language_info": {"name": "python"}},
            "nbformat": 4, "nbformat_minor": 5}
    return (json.dumps(data, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def sources(path: Path) -> List[str]:
    return ["".join(cell["source"]) for cell in json.loads(path.read_text())["cells"]]


def run(capsys, *argv):
    rc = main([*argv, "--isolated", "-j1"])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


MODEL = """rng = np.random.RandomState(0)
X = rng.randn(16, 4).astype(np.float32)
Y = (X @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32) + 0.3).astype(np.float32)
x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
y = tf.compat.v1.placeholder(tf.float32, [None, 1], name="y")
w = tf.compat.v1.get_variable("w", initializer=np.full((4, 1), 0.1, np.float32))
b = tf.compat.v1.get_variable("b", initializer=np.zeros((1,), np.float32))
loss = 10.0 * tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
global_step = tf.compat.v1.train.get_or_create_global_step()


def feeds(step):
    return {"x": X, "y": Y}
"""
TRAIN = (
    "base = tf.compat.v1.train.GradientDescentOptimizer(0.1)\n"
    "clipped = tf.contrib.estimator.clip_gradients_by_norm(base, clip_norm=1.0)\n"
    "train_op = clipped.minimize(loss, global_step=global_step)"  # no final newline
)


def training_notebook() -> List[dict]:
    """Imports (with a magic) in cell 1, prose, the model in cell 3, the contrib optimizer in cell 4."""
    return [
        code_cell("%matplotlib inline\nimport numpy as np\nimport tensorflow as tf\n", "imports"),
        markdown("## The model (uses `tf.contrib`)", "prose"),
        code_cell(MODEL, "model"),
        code_cell(TRAIN, "train", OUTPUT),
    ]


@pytest.fixture
def nb_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path / "train.ipynb"


class TestOneProgram:
    def test_findings_across_cells(self, nb_path, capsys):
        """`import tensorflow as tf` in cell 1 makes the contrib call in cell 4 a finding, at cell 4 line 2."""
        nb_path.write_bytes(notebook(training_notebook()))
        rc, out, _ = run(capsys, "check", "train.ipynb")
        assert rc == 1
        assert "train.ipynb:cell 4:2:11: TFC001 [*] `tf.contrib.estimator.clip_gradients_by_norm`" in out
        assert "train.ipynb:cell 4:3:12: TFC103 [*]" in out
        rc, out, _ = run(capsys, "check", "train.ipynb", "--format", "json")
        rows = {(r["code"], r["cell"], r["line"], r["col"]) for r in json.loads(out)["findings"]}
        assert ("TFC001", 4, 2, 11) in rows

    def test_compat_rewrite_written_back_in_place(self, nb_path, capsys):
        """`fix --select TFC001`: cell 4 is rewritten, the import goes to cell 1; outputs, metadata,
        ids, markdown and the JSON layout are byte-identical."""
        cells = training_notebook()
        nb_path.write_bytes(notebook(cells))
        rc, out, err = run(capsys, "fix", "--select", "TFC001", "train.ipynb")
        assert rc == 1 and "Rewriting train.ipynb" in err and out == ""
        new = sources(nb_path)
        assert "import tfclip_compat" in new[0] and new[0].endswith("import tensorflow as tf\n")
        assert new[3] == TRAIN.replace("tf.contrib.estimator.clip_gradients_by_norm", "tfclip_compat.clip_gradients_by_norm")
        expected = [dict(cell) for cell in cells]
        expected[0] = dict(cells[0], source=new[0].splitlines(keepends=True))
        expected[3] = dict(cells[3], source=new[3].splitlines(keepends=True))
        assert nb_path.read_bytes() == notebook(expected)
        assert run(capsys, "fix", "--select", "TFC001", "train.ipynb")[0] == 0  # idempotent

    def test_tape_rewrite_across_cells_written_back(self, nb_path, capsys):
        """The TF 2 form: the tape wraps the loss in cell 3, the gradient step replaces `minimize` in
        cell 4; each cell still parses on its own."""
        nb_path.write_bytes(notebook(training_notebook()))
        rc, _, err = run(capsys, "fix", "train.ipynb")
        assert rc == 1 and "Rewriting train.ipynb" in err
        new = sources(nb_path)
        assert "with tf.GradientTape() as tape:\n    loss = 10.0" in new[2]
        assert "gradients = tape.gradient(loss, variables)" in new[3] and "minimize" not in new[3]
        for source in (new[0], new[2], new[3]):
            ast.parse("\n".join(line for line in source.splitlines() if not line.startswith("%")))

    def test_tape_spanning_cells_declined_compat_form_written(self, nb_path, capsys):
        """A tape that would wrap statements of cells 2 and 3 is declined at the training site
        (TFC202 names the cell), the shim form is written instead, and `check` advertises exactly
        that one safe fix."""
        cells = [
            code_cell("import tensorflow as tf\n", "a"),
            code_cell("x = tf.compat.v1.placeholder(tf.float32, [None, 3])\n"
                      "w = tf.compat.v1.get_variable('w', [3, 1])\nh = tf.matmul(x, w)\n", "b"),
            code_cell("loss = tf.reduce_sum(tf.square(h))\n", "c"),
            code_cell("opt = tf.compat.v1.train.AdamOptimizer(0.1)\n"
                      "clipped = tf.contrib.estimator.clip_gradients_by_norm(opt, clip_norm=5.0)\n"
                      "train_op = clipped.minimize(loss)\n", "d"),
        ]
        nb_path.write_bytes(notebook(cells))
        rc, out, err = run(capsys, "check", "train.ipynb")
        assert rc == 1 and "1 safe fix available" in err and "TFC900" not in out
        assert "train.ipynb:cell 4:2:11: TFC001 [*]" in out
        rc, out, err = run(capsys, "fix", "train.ipynb")
        assert rc == 1 and "Rewriting train.ipynb" in err and "fix available" not in err
        assert out == ("train.ipynb:cell 4:3:12: TFC202 the statements the tape must wrap span notebook cells "
                       "(cell 3): one `with` block cannot cross a cell (manual edit required)\n")
        new = sources(nb_path)
        assert new[1:3] == ["".join(cell["source"]) for cell in cells[1:3]]
        assert "tfclip_compat.clip_gradients_by_norm(opt, clip_norm=5.0)" in new[3] and "GradientTape" not in new[3]

    def test_unrelated_cells_and_magic_assignments(self, nb_path, capsys):
        """IPython lines in any cell (`files = !ls`, `%time`) are masked and come back verbatim."""
        cells = training_notebook()
        cells.insert(2, code_cell("files = !ls\n%time n = len(files)\n", "shell"))
        nb_path.write_bytes(notebook(cells))
        rc, _, _ = run(capsys, "fix", "--select", "TFC001", "train.ipynb")
        new = sources(nb_path)
        assert rc == 1 and new[2] == "files = !ls\n%time n = len(files)\n"
        assert "tfclip_compat.clip_gradients_by_norm" in new[4]

    def test_marker_text_in_user_code_means_report_only(self, nb_path, capsys):
        """If the code already contains the cell-boundary marker text, nothing is written (reported)."""
        cells = training_notebook()
        cells[2]["source"].insert(0, "# tfclip-migrate:cell-boundary 99\n")
        raw = notebook(cells)
        nb_path.write_bytes(raw)
        rc, out, _ = run(capsys, "fix", "train.ipynb")
        assert rc == 1 and nb_path.read_bytes() == raw
        assert "fixes not applied: the code contains tfclip-migrate's cell-boundary marker text" in out


    def test_program_parse_error_is_located_in_its_cell(self, nb_path, capsys, monkeypatch):
        """When the program as a whole cannot be parsed (libcst refuses what CPython accepted), the
        TFC900 names the cell and the line within it; the notebook is left unchanged."""
        import codemods.api
        from codemods.engine.core import SourceError

        raw = notebook(training_notebook())
        nb_path.write_bytes(raw)

        def refuse(source, options, path="-", **engine_args):
            line = source.splitlines().index("w = tf.compat.v1.get_variable(\"w\", initializer=np.full((4, 1), 0.1, np.float32))")
            raise SourceError(f"cannot parse: simulated (line {line + 1}, column 3)")

        monkeypatch.setattr(codemods.api, "migrate_source", refuse)
        rc, out, _ = run(capsys, "fix", "train.ipynb")
        assert rc == 1 and nb_path.read_bytes() == raw
        assert out.startswith("train.ipynb:cell 3:6:3: TFC900 cannot parse: simulated")


class TestLineEndings:
    def test_mixed_line_endings_kept(self, nb_path, capsys):
        """A notebook mixing CRLF and LF comes back with each untouched line's own ending, and the
        same content as the LF notebook gets."""
        lf = notebook(training_notebook())
        mixed = "".join(
            line + ("\r\n" if i % 3 == 0 else "\n") for i, line in enumerate(lf.decode().split("\n")[:-1])
        ).encode()
        (nb_path.parent / "lf").mkdir()
        (nb_path.parent / "lf" / "train.ipynb").write_bytes(lf)
        nb_path.write_bytes(mixed)
        assert run(capsys, "fix", "--select", "TFC001", "train.ipynb")[0] == 1
        assert run(capsys, "fix", "--select", "TFC001", "lf/train.ipynb")[0] == 1
        new = nb_path.read_bytes()
        assert new.replace(b"\r\n", b"\n") == (nb_path.parent / "lf" / "train.ipynb").read_bytes() != lf
        old_lines, new_lines = mixed.splitlines(keepends=True), new.splitlines(keepends=True)
        plain = [[line.rstrip(b"\r\n") for line in lines] for lines in (old_lines, new_lines)]
        kept = 0
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, *plain, autojunk=False).get_opcodes():
            if tag == "equal":
                assert new_lines[j1:j2] == old_lines[i1:i2]
                kept += i2 - i1
        assert kept >= len(old_lines) - 1 and b"\r\n" in new and b"\n " in new


def _program(cells: List[str]) -> str:
    """The code cells as Jupyter would run them, one after the other (line magics dropped)."""
    return "\n".join(
        "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("%")) for source in cells
    ) + "\n"


@pytest.mark.parametrize("select", [pytest.param(["--select", "TFC001"], id="compat"), pytest.param([], id="tf2")])
def test_migrated_notebook_trains_the_same(nb_path, capsys, select):
    """The original notebook's code cells (TF1, contrib from the TF 1.15 reference) and the migrated
    cells (TF 2, real tfclip_compat / tape form), concatenated and executed, train identically."""
    pytest.importorskip("tensorflow")
    from _equivalence import assert_equivalent, run_graph

    cells = training_notebook()
    nb_path.write_bytes(notebook(cells))
    before = _program([source for source in sources(nb_path) if "## The model" not in source])
    rc, _, err = run(capsys, "fix", *select, "train.ipynb")
    assert rc == 1 and "Rewriting train.ipynb" in err
    after = _program([source for source in sources(nb_path) if "## The model" not in source])
    assert "tf.contrib" not in after
    assert_equivalent(run_graph(before, legacy=True), run_graph(after, legacy=False))
