"""The harness itself: hand-written eager conversions (TensorFlow's model-mapping recipe) of four
session scripts train bit for bit like the scripts, and deliberately wrong conversions are flagged.
(``cnn_dropout`` is TFC301's own output for its fixture: ``tf.nn.dropout``'s masks are aligned by
``tests/_aligned_dropout.py``, so dropping the dropout, or training with an evaluation run's
``keep_prob``, shows.)"""

from __future__ import annotations

from pathlib import Path

import pytest

HAND = Path(__file__).parent / "hand"
CASES = sorted(p.name[: -len(".before.py")] for p in HAND.glob("*.before.py"))
WRONG = sorted(p.name for p in HAND.glob("*.wrong.py"))


def _read(name: str) -> str:
    return (HAND / name).read_text()


@pytest.mark.parametrize("case", CASES)
def test_hand_conversion_is_bit_identical(harness, case):
    """A correct hand conversion prints the same losses and ends with every variable equal, bit for bit."""
    result = harness.pair(_read(case + ".before.py"), _read(case + ".after.py"))
    assert result.verdict == "equal" and result.bitwise, result.detail
    assert result.printed_numbers >= 8 and result.variables >= 6, (result.printed_numbers, result.variables)


@pytest.mark.parametrize("wrong", WRONG)
def test_wrong_conversion_is_flagged(harness, wrong):
    """A conversion that trains differently (clip dropped, eval-mode step, Keras Adam, variables in sorted
    order under clip_by_global_norm, dropout dropped or not applied in training) is reported as different."""
    case = wrong.split(".")[0]
    result = harness.pair(_read(case + ".before.py"), _read(wrong))
    assert result.verdict == "different", (result.verdict, result.detail)


def test_sorted_variable_order_is_a_last_bit_difference(harness):
    """The subtlest wrong conversion differs by float32 rounding only: the harness compares bit for bit."""
    result = harness.pair(_read("bn_decay_global_norm.before.py"), _read("bn_decay_global_norm.sorted_vars.wrong.py"))
    assert result.verdict == "different" and 0 < result.max_abs_diff < 1e-5, (result.max_abs_diff, result.detail)


def test_initial_values_are_moved_across_by_name(harness):
    """The after side starts from the before side's initial values (TF 2 draws other numbers from the same seed)."""
    before = harness.before(_read("gan_two_adams.before.py"))
    after = harness.after(_read("gan_two_adams.after.py"), before)
    assert after["ok"], after.get("error")
    assert set(before["initial"]) <= set(after["aligned"]) | {n for n in before["initial"] if n not in after["final"]}
    assert "generator/dense/kernel" in after["aligned"] and not after["problems"], after["problems"]


def test_crash_and_invalid_scripts_get_their_verdicts(harness):
    """An after program that raises is after-crash; a before script that TF 1 rejects is before-invalid."""
    before = _read("dense_dropout_clip_value.before.py")
    assert harness.pair(before, "raise ValueError('boom')\n").verdict == "after-crash"
    assert harness.pair("import tensorflow as tf\ntf.placeholder(tf.float32)(1)\n", before).verdict == "before-invalid"
