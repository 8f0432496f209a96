"""``check`` lists exactly the fixes ``fix`` applies (same options), on every fixture and on programs
where one fix opens another (TFC103's tape, then TFC104's Keras optimizer)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from _fixtures_lib import discover, parse_options
from codemods.cli import app as cli
from codemods.api import FixSafety, Options, migrate_source

CASES = discover()

BOTH_SITES = '''import numpy as np
import tensorflow as tf

tf.enable_eager_execution()
w = tf.Variable(np.ones((3, 1), np.float32))
x = np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(8, 3)


def compute_loss():
    return tf.reduce_mean(tf.square(tf.matmul(x, w)))


def make_train_step():
    optimizer = tf.train.{optimizer}

    def train_step():
        optimizer.minimize(compute_loss, var_list=[w])
        return compute_loss()

    return train_step
'''


def check_and_fix(source: str, options: Options):
    """(what ``check`` lists as fixes, what ``fix`` applied, fix's diagnostics) for ``source``."""
    check = migrate_source(source, replace(options, apply_fixes=False))
    fix = migrate_source(source, replace(options, apply_fixes=True))
    allowed = {FixSafety.SAFE, FixSafety.UNSAFE} if options.unsafe_fixes else {FixSafety.SAFE}
    listed = [(d.line, d.col, d.code, d.message) for d in check.diagnostics if d.fix in allowed]
    applied = [(d.line, d.col, d.code, d.message) for d in fix.diagnostics if d.applied]
    assert not any(d.applied for d in check.diagnostics) and check.code == source
    return listed, applied, fix


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
def test_check_lists_what_fix_applies_on_every_fixture(case, unsafe: bool) -> None:
    """On each fixture, with and without ``--unsafe-fixes``, check's fixes are fix's applied ones."""
    source = case.source.read_text(encoding="utf-8")
    options = replace(parse_options(source, str(case.source)), unsafe_fixes=unsafe)
    listed, applied, fix = check_and_fix(source, options)
    if any(d.code == "TFC900" for d in fix.diagnostics) and not applied:
        pytest.skip("fix refuses every fix here (TFC900); check lists what it saw")
    assert listed == applied


@pytest.mark.parametrize("optimizer, unsafe, keras", [
    ("AdagradOptimizer(0.1)", False, "Adagrad"),
    ("GradientDescentOptimizer(0.1)", False, "SGD"),
    ("AdamOptimizer(0.1)", True, "Adam"),
    ("AdamOptimizer(0.1)", False, None),
])
def test_check_lists_the_keras_swap_the_tape_makes_possible(optimizer: str, unsafe: bool, keras) -> None:
    """A ``minimize`` site TFC103 rewrites lets TFC104 swap the optimizer: ``check`` lists both."""
    source = BOTH_SITES.format(optimizer=optimizer)
    listed, applied, _ = check_and_fix(source, Options(unsafe_fixes=unsafe))
    assert listed == applied
    codes = [code for _, _, code, _ in listed]
    assert codes == (["TFC104", "TFC103"] if keras else ["TFC103"])


def test_cli_check_prints_the_keras_swap(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """``tfclip-migrate check`` prints TFC104 ``[*]`` where ``fix`` applies it after TFC103."""
    path = tmp_path / "train.py"
    path.write_text(BOTH_SITES.format(optimizer="AdagradOptimizer(0.1)"), encoding="utf-8")
    assert cli.main(["check", "--no-cache", str(path)]) == 1
    out = capsys.readouterr().out
    assert "TFC104 [*] `AdagradOptimizer` in eager code" in out and "TFC103 [*]" in out
