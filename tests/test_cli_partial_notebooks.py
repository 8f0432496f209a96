"""Notebooks with code cells that do not parse (the ML Crash Course exercise shape): the other
cells are analysed as one program, only the drop-in `tfclip_compat` fixes (TFC001-TFC004) are
applied, and only when no bad cell could rebind a name the fix reads (codemods.notebooks.partial).

These tests use the real rules.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import List

import pytest

from test_cli_notebooks import MODEL, code_cell, notebook, run, sources, training_notebook

IMPORTS = "import numpy as np\nimport tensorflow as tf\n"
BLANK = "# YOUR CODE HERE\nbucketized_latitude = \n"
TRAIN_FN = (
    "def train_model(learning_rate, clip):\n"
    "    my_optimizer = tf.compat.v1.train.GradientDescentOptimizer(learning_rate=learning_rate)\n"
    "    my_optimizer = tf.contrib.estimator.clip_gradients_by_norm(my_optimizer, clip)\n"
    "    return my_optimizer.minimize(loss, global_step=global_step)\n"
)
CALL = "train_op = train_model(0.1, 1.0)\n"


def exercise(blank: str = BLANK, imports: str = IMPORTS) -> List[dict]:
    """Imports, a student blank that does not parse, the model, `train_model` with the contrib call, its call."""
    return [code_cell(imports, "imports"), code_cell(blank, "blank"), code_cell(MODEL, "model"),
            code_cell(TRAIN_FN, "train"), code_cell(CALL, "call")]


@pytest.fixture
def nb_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path / "ex.ipynb"


def _program(cells: List[str]) -> str:
    return "\n".join(cells) + "\n"


def test_exercise_fixed_and_trains_like_tf1(nb_path, capsys):
    """`fix` rewrites the contrib call in `train_model` and adds the import, leaves the blank cell
    and every byte outside the two changed sources as they were, and the fixed cells train
    exactly like the TF 1.15 reference of `tf.contrib.estimator.clip_gradients_by_norm`."""
    pytest.importorskip("tensorflow")
    from _equivalence import assert_equivalent, run_graph

    cells = exercise()
    raw = notebook(cells)
    nb_path.write_bytes(raw)
    rc, out, err = run(capsys, "fix", "ex.ipynb")
    assert rc == 1 and "Rewriting ex.ipynb" in err
    assert "ex.ipynb:cell 2:2:23: TFC900 cannot parse: invalid syntax (cell left untouched)" in out
    new = sources(nb_path)
    assert new[1] == BLANK and new[2] == MODEL and new[4] == CALL
    assert new[0] == "import numpy as np\nimport tensorflow as tf\nimport tfclip_compat\n\n"
    assert new[3] == TRAIN_FN.replace("tf.contrib.estimator.clip_gradients_by_norm", "tfclip_compat.clip_gradients_by_norm")
    expected = [dict(cell) for cell in cells]
    for index in (0, 3):
        expected[index] = dict(cells[index], source=new[index].splitlines(keepends=True))
    assert nb_path.read_bytes() == notebook(expected)
    assert run(capsys, "fix", "ex.ipynb")[0] == 1 and nb_path.read_bytes() == notebook(expected)  # idempotent
    before = _program([IMPORTS, MODEL, TRAIN_FN, CALL])
    after = _program([new[0], new[2], new[3], new[4]])
    assert_equivalent(run_graph(before, legacy=True), run_graph(after, legacy=False))


def test_check_and_fix_agree_json(nb_path, capsys):
    """`check --format json` advertises exactly the fix `fix` applies, at cell 4 line 3, and after
    `fix` nothing is advertised."""
    nb_path.write_bytes(notebook(exercise()))
    rc, out, _ = run(capsys, "check", "ex.ipynb", "--format", "json")
    report = json.loads(out)
    rows = {(r["code"], r["cell"], r["line"], r["col"], r["fix"], r["applied"]) for r in report["findings"]}
    assert ("TFC001", 4, 3, 20, "safe", False) in rows and ("TFC900", 2, 2, 23, "none", False) in rows
    assert rc == 1 and report["summary"]["safe_fixes_available"] == 1
    fixed = json.loads(run(capsys, "fix", "ex.ipynb", "--format", "json")[1])["summary"]
    assert fixed["rewritten"] == 1 and fixed["findings_by_code"]["TFC001"]["fixed"] == 1
    after = json.loads(run(capsys, "check", "ex.ipynb", "--format", "json")[1])["summary"]
    assert after["safe_fixes_available"] == 0 and after["unsafe_fixes_available"] == 0


REBINDINGS = {
    "assign": "tf = None\nx = \n",
    "import-as": "import numpy as tf\nx = \n",
    "for": "for tf in range(3):\n    x = \n",
    "def": "def tf():\n    return \nx = \n",
    "global": "def f():\n    global tf\n    x = \n",
    "del": "del tf\nx = \n",
    "walrus": "y = (tf := 3)\nx = \n",
    "lambda": "f = lambda tf: tf\nx = \n",
    "attribute-patch": "tf.contrib.estimator = None\nx = \n",
    "dunder": "tf.__setattr__('contrib', None)\nx = \n",
    "shim-name": "tfclip_compat = None\nx = \n",
}


@pytest.mark.parametrize("blank", list(REBINDINGS.values()), ids=list(REBINDINGS))
@pytest.mark.parametrize("command", ["check", "fix"])
def test_bad_cell_that_could_rebind_withholds_fix(nb_path, capsys, blank, command):
    """A bad cell that could rebind `tf` or `tfclip_compat` (or patch the callee's path)
    withholds the fix: the notebook is left byte-identical, the finding says which cell and
    which name, and no fix is advertised."""
    raw = notebook(exercise(blank))
    nb_path.write_bytes(raw)
    rc, out, err = run(capsys, command, "ex.ipynb")
    assert rc == 1 and nb_path.read_bytes() == raw
    name = "tfclip_compat" if "tfclip_compat" in blank else "tf"
    assert f"fix withheld: cell 2 (which does not parse) could rebind `{name}`, which this fix reads" in out
    assert "[*]" not in out and "fix available" not in err and "fixes available" not in err


@pytest.mark.parametrize("blank, why", [
    pytest.param("exec(code)\nx = \n", "uses `exec`, which can rebind any name", id="exec"),
    pytest.param("globals()['tf'] = 1\nx = \n", "uses `globals`", id="globals"),
    pytest.param("tf.__dict__['contrib'] = 1\nx = \n", "uses `__dict__`", id="dict"),
    pytest.param("from numpy import *\nx = \n", "uses `import *`", id="star"),
    pytest.param("%run other.py\nx = \n", "uses the IPython magic `%run`", id="magic"),
    pytest.param("x = (1,\n", "does not parse and cannot even be tokenized", id="untokenizable"),
])
def test_dynamic_or_untokenizable_bad_cell_withholds_fix(nb_path, capsys, blank, why):
    """A bad cell that may bind names dynamically, or cannot be tokenized, withholds every drop-in fix."""
    raw = notebook(exercise(blank))
    nb_path.write_bytes(raw)
    rc, out, _ = run(capsys, "fix", "ex.ipynb")
    assert rc == 1 and nb_path.read_bytes() == raw
    assert f"fix withheld: cell 2 {why}" in out or f"fix withheld: cell 2 (which does not parse) {why}" in out


@pytest.mark.parametrize("blank", [
    "buckets = tf.feature_column.bucketized_column(\n    tf.feature_column.numeric_column('lat'), boundaries=)\n",
    "x = tf.contrib.layers.xavier_initializer()\ny = \n",
    "opt = tf.contrib.estimator.clip_gradients_by_norm(opt, 5.0)\nclassifier = \n",
    "tfclip_compat.clip_gradients_by_norm(opt, 1.0)\nx = \n",
    "tf_thing = 1\nx.tf = 2\ny = \n",
])
def test_reads_in_bad_cell_do_not_withhold(nb_path, capsys, blank):
    """Reading other attributes of `tf`, calling the helper itself, or names that merely contain
    `tf` in a bad cell binds nothing the fix reads: the fix is applied, the bad cell untouched."""
    nb_path.write_bytes(notebook(exercise(blank)))
    rc, _, err = run(capsys, "fix", "ex.ipynb")
    assert rc == 1 and "Rewriting ex.ipynb" in err
    new = sources(nb_path)
    assert new[1] == blank and "tfclip_compat.clip_gradients_by_norm(my_optimizer, clip)" in new[3]


def test_alias_read_through_rebindable_name(nb_path, capsys):
    """`est = tf.contrib.estimator` in a good cell makes the fix read `tf` too: a bad cell that
    rebinds `tf` withholds the fix of `est.clip_gradients_by_norm`."""
    cells = exercise("import numpy as tf\nx = \n")
    cells[3] = code_cell("est = tf.contrib.estimator\n" + TRAIN_FN.replace("tf.contrib.estimator.", "est."), "train")
    raw = notebook(cells)
    nb_path.write_bytes(raw)
    rc, out, _ = run(capsys, "fix", "ex.ipynb")
    assert rc == 1 and nb_path.read_bytes() == raw
    assert "could rebind `tf`, which this fix reads" in out


def test_removed_import_used_by_bad_cell(nb_path, capsys):
    """A fix that removes the contrib import (its last reader rewritten) is withheld when a bad
    cell still uses the imported name."""
    cells = exercise("clip_gradients_by_norm(opt, 1.0)\nx = \n",
                     imports=IMPORTS + "from tensorflow.contrib.estimator import clip_gradients_by_norm\n")
    cells[3] = code_cell(TRAIN_FN.replace("tf.contrib.estimator.", ""), "train")
    raw = notebook(cells)
    nb_path.write_bytes(raw)
    rc, out, _ = run(capsys, "fix", "ex.ipynb")
    assert rc == 1 and nb_path.read_bytes() == raw
    assert "fix withheld: the fixes remove a binding of `clip_gradients_by_norm`, which cell 2" in out


def test_tape_form_candidate_reported_not_rewritten(nb_path, capsys):
    """In a notebook with a bad cell, the TF 2 tape form (TFC103, applied when every cell parses)
    is reported without `[*]`, saying which cell stops it, and the shim form is written instead."""
    cells = training_notebook()
    cells.insert(1, code_cell("features = \n", "blank"))
    nb_path.write_bytes(notebook(cells))
    rc, out, err = run(capsys, "check", "ex.ipynb")
    assert rc == 1 and "1 safe fix available" in err
    line = next(line for line in out.splitlines() if " TFC103 " in line)
    assert line.startswith("ex.ipynb:cell 5:3:12: TFC103 ") and "[*]" not in line
    assert "not applied: cell 2 of this notebook does not parse" in line and "once it parses" in line
    rc, out, err = run(capsys, "fix", "ex.ipynb")
    assert rc == 1 and "Rewriting ex.ipynb" in err
    new = sources(nb_path)
    assert "GradientTape" not in "".join(new) and "tfclip_compat.clip_gradients_by_norm(base" in new[4]
    assert new[1] == "features = \n"


def test_module_exports():
    """The helper module keeps its documented, sorted `__all__`."""
    import codemods.notebooks.partial as mod

    assert mod.__all__ == sorted(mod.__all__) and all(hasattr(mod, name) for name in mod.__all__)
    assert Path(mod.__file__).read_text().count("\n") < 400


def test_removed_clipping_names_match_the_rules_table() -> None:
    """The TFC900 note's list of removed clipping APIs is the contrib rules' table (last names)."""
    from codemods.rules.tfnames import CONTRIB_TO_SHIM
    from codemods.cli.process import REMOVED_CLIPPING_NAMES

    assert set(REMOVED_CLIPPING_NAMES) == {key.rsplit(".", 1)[1] for key in CONTRIB_TO_SHIM}


def test_bad_cell_calling_a_removed_api_says_so(tmp_path) -> None:
    """A cell that does not parse and calls a contrib clipping helper is reported naming the call."""
    import json
    import subprocess
    import sys

    cells = [["import tensorflow as tf\n"],
             ["opt = tf.train.GradientDescentOptimizer(0.1)\n",
              "opt = tf.contrib.estimator.clip_gradients_by_norm(opt, 5.0)\n", "x = \n"]]
    nb = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": c}
                    for c in cells],
          "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 4}
    path = tmp_path / "exercise.ipynb"
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    before = path.read_bytes()
    out = subprocess.run([sys.executable, "-m", "codemods.cli", "fix", "--no-cache", "--format", "json", str(path)],
                         capture_output=True, text=True, check=False)
    findings = json.loads(out.stdout)["findings"]
    assert [(f["code"], f["cell"]) for f in findings] == [("TFC900", 2)]
    assert "`contrib.estimator.clip_gradients_by_norm`, removed in TF 2" in findings[0]["message"]
    assert path.read_bytes() == before
