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
