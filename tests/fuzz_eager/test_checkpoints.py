"""Checkpoints (round 14): a TF 1 script's ``tf.train.Saver`` becomes
``tfclip_compat.checkpoints.Saver``; the harness reads every checkpoint each side wrote (``_side``)
and compares files, keys and tensors bit for bit, so the migrated program writes the checkpoints
the TF 1 program wrote (weights, slots, beta powers, global step; the ``max_to_keep`` rotation and
the ``checkpoint`` state file), which TF 1 code restores. A saver that leaves the optimizer's
variables out is caught."""

from __future__ import annotations

from pathlib import Path

import pytest

from codemods.api import Options, migrate_source

ROOT = Path(__file__).resolve().parents[2]
BEFORE = ROOT / "fixtures" / "TFC301" / "checkpoint_saver.before.py"


@pytest.fixture(scope="module")
def migrated() -> str:
    result = migrate_source(BEFORE.read_text(), Options(select=frozenset({"TFC301"})))
    assert result.changed
    return result.code


def test_the_eager_program_writes_the_tf1_checkpoints(harness, migrated):
    result = harness.pair(BEFORE.read_text(), migrated)
    assert result.verdict == "equal" and result.bitwise, result.detail
    written = result.before["checkpoints"]
    # max_to_keep=2: model.ckpt-2 rotated away, in both worlds
    assert sorted(written) == ["checkpoints/checkpoint", "checkpoints/final.ckpt", "checkpoints/model.ckpt-4"]
    assert {"net/w", "net/w/Adam", "net/w/Adam_1", "beta1_power", "global_step"} <= set(written["checkpoints/final.ckpt"])
    assert sorted(result.after["checkpoints"]) == sorted(written)


def test_a_saver_without_the_optimizer_variables_is_caught(harness, migrated):
    """The comparison is not vacuous: leave the slots out of the eager saver and it fails."""
    wrong = migrated.replace(" + [v for optimizer in (train_op_optimizer,) for v in optimizer.variables()]", "")
    assert wrong != migrated
    result = harness.pair(BEFORE.read_text(), wrong)
    assert result.verdict == "different" and "only before" in result.detail, result.detail


def test_the_shim_saver_says_what_it_needs():
    pytest.importorskip("tensorflow")
    from tfclip_compat.checkpoints import Saver

    with pytest.raises(TypeError, match="pass a function"):
        Saver([])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="var_list"):
        Saver(lambda: [], var_list=[])
    with pytest.raises(ValueError, match="no variables to save yet"):
        Saver(lambda: []).save(None, "unused")
