"""TFC301 proved by execution: each session script runs as TF 1 ran it (graph mode) and, after
``tfclip-migrate fix``, eagerly on plain TF 2, from the same initial values by TF 1 variable
name; the printed losses and every variable (slots and beta powers included) must be equal
bit for bit. Runs in a subprocess with ``TF_USE_LEGACY_KERAS=1`` (tf-keras)."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from codemods.api import Options, migrate_source

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROGRAMS = [ROOT / "examples" / "legacy_clipping.py"] + sorted((ROOT / "fixtures" / "TFC301").glob("*.before.py"))


def rule_doc_example(tmp_path):
    """TFC301's documented Example, as a file."""
    import re
    import textwrap

    from codemods.rules.tfc301_session_script_eager import SessionScriptEager

    block = re.search(r"## Example\n\s*```python\n(.*?)\n\s*```", SessionScriptEager.__doc__, re.S).group(1)
    path = tmp_path / "doc_example.py"
    path.write_text(textwrap.dedent(block) + "\n")
    return path


@pytest.mark.parametrize("path", PROGRAMS + ["doc-example"], ids=lambda p: getattr(p, "name", p))
def test_session_script_trains_the_same_eagerly(path, tmp_path):
    """The migrated program prints the same losses and ends with the same variables as TF 1."""
    if path == "doc-example":
        path = rule_doc_example(tmp_path)
    result = migrate_source(path.read_text(), Options(select=frozenset({"TFC301"})))
    assert any(d.code == "TFC301" and d.applied for d in result.diagnostics), [d.format() for d in result.diagnostics]
    after = tmp_path / "after.py"
    after.write_text(result.code)
    env = dict(os.environ, TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "_eager_migration_worker.py"), str(path), str(after)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["lines_before"] and report["lines_before"] == report["lines_after"]
    assert report["variables"] > 0 and report["problems"] == []


@pytest.mark.parametrize("case", ["mnist_tutorial", "session_object"])
def test_notebook_trains_the_same_eagerly(case, tmp_path):
    """The fixture cut into notebook cells (the fuzzer's cuts, IPython lines included) and migrated
    as an ``.ipynb``: its code cells, run in order, train as the TF 1 script does, bit for bit."""
    from tests.fuzz_eager import notebooks

    before = ROOT / "fixtures" / "TFC301" / f"{case}.before.py"
    result = notebooks.migrate(notebooks.as_notebook(before.read_text(), seed=7), "TFC301")
    assert result.changed, [getattr(d, "message", d) for d in result.diagnostics]
    after = tmp_path / "after.py"
    after.write_text(result.code)
    env = dict(os.environ, TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "_eager_migration_worker.py"), str(before), str(after)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["lines_before"] and report["lines_before"] == report["lines_after"]
    assert report["variables"] > 0 and report["problems"] == []


def test_output_is_clean_and_idempotent():
    """Running the whole engine again over the eager output changes nothing and reports nothing."""
    first = migrate_source(PROGRAMS[0].read_text(), Options())
    second = migrate_source(first.code, Options())
    assert not second.changed and second.diagnostics == []


def test_names_kept_as_tf2_names_are_the_same_functions():
    """Every name TFC301 keeps as ``tf.<name>`` is the very object ``tf.compat.v1.<name>`` is."""
    import functools

    tf = pytest.importorskip("tensorflow")
    from codemods.rules.eager.tfnames import SAME_IN_TF2

    def get(root, path):
        try:
            return functools.reduce(getattr, path.split("."), root)
        except AttributeError:
            return AttributeError  # missing in one of the two: counts as different

    different = [name for name in sorted(SAME_IN_TF2) if get(tf, name) is not get(tf.compat.v1, name)]
    assert different == []


def test_dtype_strings_are_tf1s_as_dtype():
    """``tf.placeholder("float", ...)``: every dtype string TFC301 reads means what ``tf.as_dtype`` makes of it."""
    tf = pytest.importorskip("tensorflow")
    from codemods.rules.eager.tfnames import DTYPE_STRINGS

    assert {text: tf.as_dtype(text).name for text in DTYPE_STRINGS} == {
        text: getattr(tf, path).name for text, path in DTYPE_STRINGS.items()}


@pytest.mark.parametrize("shape", [[784, 256], [5, 5, 1, 32], [3, 3, 32, 64], [10], [7, 3]])
def test_renamed_initializers_draw_what_contrib_drew(shape):
    """TFC301 writes ``tf.contrib.layers.xavier_initializer(...)`` as the ``tf.compat.v1``
    initializer ``RENAMED_INITIALIZERS`` names: in a TF 1 graph, with the same seeds, both draw
    the very same numbers (TF 1.15's contrib from the test reference)."""
    import numpy as np

    tf = pytest.importorskip("tensorflow")
    from codemods.rules.eager.tfnames import RENAMED_INITIALIZERS
    from reference import contrib

    for path, name in RENAMED_INITIALIZERS.items():
        with tf.Graph().as_default():
            tf.compat.v1.set_random_seed(4)
            legacy = getattr(contrib.layers, path.rsplit(".", 1)[1])(seed=3)(shape)
            renamed = getattr(tf.compat.v1, name)(seed=3)(shape)
            with tf.compat.v1.Session() as sess:
                legacy_value, renamed_value = sess.run([legacy, renamed])
        np.testing.assert_array_equal(legacy_value, renamed_value)
        assert np.max(np.abs(legacy_value)) > 0
