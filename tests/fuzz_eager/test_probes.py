"""One-step probes for the systematic differences of Keras 3 that a short generated run can miss:
batch normalization's variance (TF 1's fused kernel moves the moving variance towards the unbiased
batch variance, Keras 3 towards the biased one) and Adam on duplicate sparse indices (TF 1 sums the
duplicate rows before squaring, Keras 3 squares first). A conversion that keeps the TF 1 pieces is
bit-identical; one that uses the Keras 3 layer / optimizer is caught in one step."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.fuzz_eager._side import decode
from tests.fuzz_eager.chains import differing

PROBES = Path(__file__).parent / "probes"


def _pair(harness, name, suffix):
    return harness.pair((PROBES / f"{name}.before.py").read_text(), (PROBES / f"{name}{suffix}").read_text())


@pytest.mark.parametrize("name", ["bn_fused_variance", "embedding_duplicate_ids"])
def test_probe_conversion_keeping_tf1_pieces_is_bit_identical(harness, name):
    """The probe converted with tf.compat.v1 layers and optimizers trains bit for bit like its TF 1 run."""
    result = _pair(harness, name, ".after.py")
    assert result.verdict == "equal" and result.bitwise, result.detail


def test_keras3_batch_norm_is_caught_by_its_moving_variance(harness):
    """Keras 3 BatchNormalization (same names, momentum, epsilon) leaves a moving variance that is off by
    the Bessel factor n/(n-1) = 8/7 in the batch-variance term after one step."""
    result = _pair(harness, "bn_fused_variance", ".keras3.wrong.py")
    assert result.verdict == "different" and "moving_variance" in result.detail, result.detail
    name = "model/batch_normalization/moving_variance"
    tf1, keras3 = decode(result.before["final"][name]), decode(result.after["final"][name])
    # momentum 0.5 from 1.0: moving = 0.5 + 0.5 * batch_variance
    np.testing.assert_allclose((tf1 - 0.5) / (keras3 - 0.5), 8.0 / 7.0, rtol=1e-5)


def test_keras3_adam_is_caught_on_the_duplicated_embedding_row(harness):
    """Keras 3 Adam moves the embedding row looked up twice differently (Σg² instead of (Σg)²) while the row
    looked up once agrees to rounding; the harness reports the embedding as different."""
    result = _pair(harness, "embedding_duplicate_ids", ".keras3.wrong.py")
    assert result.verdict == "different" and "embedding (max abs diff" in result.detail, result.detail
    tf1, keras3 = decode(result.before["final"]["embedding"]), decode(result.after["final"]["embedding"])
    assert np.max(np.abs(tf1[1] - keras3[1])) > 1e-3
    assert np.max(np.abs(tf1[3] - keras3[3])) < 1e-5
    np.testing.assert_array_equal(tf1[[0, 2, 4]], keras3[[0, 2, 4]])


LOGISTIC = ("-tf.reduce_mean(y * tf.math.log(tf.sigmoid(tf.matmul(x, W) + b) + 1e-7)"
            " + (1 - y) * tf.math.log(1 - tf.sigmoid(tf.matmul(x, W) + b) + 1e-7))")
SHARED_THREE_TIMES = "tf.reduce_mean(tf.square(tf.matmul(tf.tanh(tf.matmul(tf.tanh(tf.matmul(tf.tanh(tf.matmul(x, W2)), W2)), W2)), W) - y))"


def test_a_step_without_a_tensor_result_misses_the_sessions_constant_folding():
    """Why TFC301's training-only steps return a tensor (measured, round 11): grappler's constant
    folding runs its push-down rewrites only on a graph with a fetch; a ``tf.function`` with no
    tensor result has none, so ``tf.log(1 - p + 1e-7)`` is folded in TF 1's session (whose fetch is
    the training op) and not in the step, and the two train a few ulps apart. With a tensor result
    they agree for every seed; with the session's rewrites off they agree too."""
    assert differing(LOGISTIC, result=False), "a step with no result no longer differs"
    assert not differing(LOGISTIC, result=True)
    assert not differing(LOGISTIC, result=False, rewrites=False)


def test_a_tape_sums_three_uses_of_a_weight_in_another_order():
    """Why TFC301's steps differentiate with ``tf.compat.v1.gradients`` (measured, round 11): a weight
    read at three places (a recurrence unrolled by hand) gets three gradients, which TF 1's
    ``tf.gradients`` and a ``GradientTape`` add in different orders; ``tf.compat.v1.gradients`` inside
    the ``tf.function`` is TF 1's algorithm and trains bit for bit the same."""
    assert differing(SHARED_THREE_TIMES, gradients="tape"), "the tape no longer differs"
    assert not differing(SHARED_THREE_TIMES, gradients="tf")


@pytest.mark.parametrize("expression", [
    "tf.reduce_mean(tf.square((b + tf.sigmoid(tf.matmul(x, W))) + tf.matmul(x, W)))",  # a sum of three tensors
    "tf.reduce_mean(tf.square(tf.matmul(x, W) + b + 1.0 - YC))",  # constants in a chain with two tensors
])
def test_grappler_regroups_chains_that_tfc301_declines(expression):
    """What TFC301's chain check declines (``Reader.check_arithmetic_chains``): even with
    TF 1's gradients and a tensor result, grappler regroups these chains differently in the session
    and in the step (placeholders of a fixed batch size), and the two train a few ulps apart."""
    assert differing(expression, rows=4), "the chain no longer differs"


@pytest.mark.parametrize("expression", [
    "tf.reduce_mean(tf.square(tf.matmul(x, W) + b - y))",  # a difference of a sum: not declined
    "tf.reduce_mean(tf.square(tf.sigmoid(tf.matmul(x, W)) + 1.0 - 1e-7))",  # one tensor and constants
])
def test_chains_tfc301_keeps_train_the_same(expression):
    for rows in (None, 4):
        assert not differing(expression, rows=rows)


CHAIN_PROGRAM = '''import numpy as np
import tensorflow as tf

XC = np.ones((4, 3), np.float32)
YC = np.ones((4, 1), np.float32)
x = tf.placeholder(tf.float32, [4, 3])
y = tf.placeholder(tf.float32, [4, 1])
W = tf.get_variable("W", [3, 1])
b = tf.get_variable("b", [1])
W2 = tf.get_variable("W2", [3, 3])
loss = {expression}
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    sess.run(train_op, {{x: XC, y: YC}})
'''


def test_the_chain_check_declines_every_measured_chain_that_trained_differently():
    """``probes/chains.txt`` (``python -m tests.fuzz_eager.chains``: random chains, each trained the
    TF 1 way and the TFC301 way on three seeds): as a TFC301 program, every chain that trained
    differently on some seed is declined by the chain check (no TensorFlow needed here), and the
    check is not blanket: most chains measured equal are migrated."""
    import libcst as cst

    from codemods.rules.eager.model import Decline, Reader

    outcomes = {}
    for line in (PROBES / "chains.txt").read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        count, family, expression = line.split(" ", 2)
        try:
            Reader(cst.parse_module(CHAIN_PROGRAM.format(expression=expression))).read()
            verdict = "migrated"
        except Decline as decline:
            verdict = "declined" if "chain" in decline.reason else decline.reason
        assert verdict in ("migrated", "declined"), (expression, verdict)  # no other reason on these programs
        assert not (int(count) and verdict == "migrated"), f"trained differently, yet migrated: {expression}"
        outcomes.setdefault((family, int(count) > 0, verdict), 0)
        outcomes[(family, int(count) > 0, verdict)] = outcomes[(family, int(count) > 0, verdict)] + 1
    equal = sum(n for (_, differs, _), n in outcomes.items() if not differs)
    kept = sum(n for (_, differs, verdict), n in outcomes.items() if not differs and verdict == "migrated")
    assert sum(n for (_, differs, _), n in outcomes.items() if differs) >= 20, outcomes  # the file has some
    assert kept >= equal / 2, outcomes
