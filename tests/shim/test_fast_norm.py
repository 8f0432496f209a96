"""The grouped fast global norm equals the exact norm and the shim's clip_by_global_norm."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

import tfclip_compat as tfc
from tfclip_compat import _fast_norm

V1 = tf.compat.v1
RNG = np.random.RandomState(1)


def _tensors(n, shapes=((4, 4), (4,), (2, 3, 2))):
    return [RNG.randn(*shapes[i % len(shapes)]).astype(np.float32) * (1 + i % 5) for i in range(n)]


def _exact(arrays):
    return float(np.sqrt(sum(np.sum(np.square(a.astype(np.float64))) for a in arrays)))


@pytest.mark.parametrize("n", [1, 2, 10, 100])
def test_norm_equals_exact_float64_norm(n):
    """fast_global_norm (stacked shape groups + loose tensors) == float64 numpy norm (rtol 1e-6)."""
    arrays = _tensors(n) + [RNG.randn(300, 300).astype(np.float32)]  # one large, reduced alone
    got = tfc.fast_global_norm([tf.constant(a) for a in arrays], stack_limit=1000)
    np.testing.assert_allclose(got.numpy(), _exact(arrays), rtol=1e-6)
    np.testing.assert_allclose(got.numpy(), tfc.global_norm([tf.constant(a) for a in arrays]).numpy(), rtol=1e-6)


@pytest.mark.parametrize("mode", ["eager", "function", "graph"])
def test_clip_equals_shim_clip_by_global_norm(mode):
    """fast_clip_by_global_norm returns the shim's clipped tensors and norm (rtol 1e-6), None kept."""
    arrays = _tensors(12)

    def both(ts):
        ts = list(ts[:3]) + [None] + list(ts[3:])
        fast, fn = tfc.fast_clip_by_global_norm(ts, 2.0)
        ref, rn = tfc.clip_by_global_norm(ts, 2.0)
        assert fast[3] is None
        return [f for f in fast if f is not None], fn, [r for r in ref if r is not None], rn

    if mode == "graph":
        with tf.Graph().as_default():
            out = both([tf.constant(a) for a in arrays])
            with V1.Session() as sess:
                fast, fn, ref, rn = sess.run(out)
    else:
        call = tf.function(both) if mode == "function" else both
        fast, fn, ref, rn = tf.nest.map_structure(lambda t: t.numpy(), call([tf.constant(a) for a in arrays]))
    np.testing.assert_allclose(fn, rn, rtol=1e-6)
    for a, b in zip(fast, ref):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert fn > 2.0


def test_float16_accumulates_in_float32_and_keeps_dtype():
    """1,000 float16 values of 300 have a finite float32 norm; clipped tensors stay float16."""
    ts = [tf.fill([10, 10], tf.constant(300.0, tf.float16)) for _ in range(10)]
    norm = tfc.fast_global_norm(ts)
    assert norm.dtype == tf.float32
    np.testing.assert_allclose(norm.numpy(), 300.0 * np.sqrt(1000), rtol=1e-6)
    clipped, _ = tfc.fast_clip_by_global_norm(ts, 1.0)
    assert all(c.dtype == tf.float16 for c in clipped)
    assert np.isfinite(clipped[0].numpy()).all()


def test_mixed_dtypes_and_float64():
    """Mixed float16/float32/float64 lists work; any float64 makes the norm float64."""
    arrays = [np.ones((2, 2), np.float16), np.ones((2, 2), np.float32) * 2, np.ones(3, np.float64) * 3]
    norm = tfc.fast_global_norm([tf.constant(a) for a in arrays])
    assert norm.dtype == tf.float64
    np.testing.assert_allclose(norm.numpy(), _exact(arrays), rtol=1e-12)


def test_indexed_slices_duplicates_count_as_dense_and_stay_sparse():
    """IndexedSlices with repeated indices: dense norm (6.0, not 4.24), output sparse with same indices."""
    s = tf.IndexedSlices(tf.constant([[3.0], [3.0]]), tf.constant([0, 0]), tf.constant([2, 1]))
    assert float(tfc.fast_global_norm([s])) == pytest.approx(6.0)
    (clipped,), norm = tfc.fast_clip_by_global_norm([s], 3.0)
    assert isinstance(clipped, tf.IndexedSlices)
    np.testing.assert_array_equal(clipped.indices.numpy(), [0, 0])
    np.testing.assert_allclose(clipped.values.numpy(), [[1.5], [1.5]])


def test_nonfinite_gives_nan_outputs_and_empty_gives_zero():
    """As TF: a non-finite norm makes every clipped tensor NaN; only-None lists have norm 0."""
    clipped, norm = tfc.fast_clip_by_global_norm([tf.constant([np.inf, 1.0]), tf.constant([1.0, 2.0])], 1.0)
    assert not np.isfinite(norm.numpy())
    assert np.isnan(clipped[1].numpy()).all()
    assert float(tfc.fast_global_norm([None, None])) == 0.0
    with pytest.raises(TypeError, match="t_list"):
        tfc.fast_global_norm(tf.constant([1.0]))


def test_graph_has_fewer_ops_than_tf_clip_for_many_small_variables():
    """1,000 variables of 4 shapes: the fast clip builds a fraction of tf.clip_by_global_norm's ops."""
    counts = {}
    for name, clip in (("tf", tf.clip_by_global_norm), ("fast", _fast_norm.fast_clip_by_global_norm)):
        with tf.Graph().as_default() as g:
            ts = [V1.placeholder(tf.float32, s) for s in [(8, 8), (8,), (4, 8), (2,)] * 250]
            before = len(g.get_operations())
            clip(ts, 1.0)
            counts[name] = len(g.get_operations()) - before
    assert counts["fast"] * 2 < counts["tf"], counts


def test_use_norm_is_honoured():
    """use_norm replaces the computed norm, as in tf.clip_by_global_norm."""
    arrays = _tensors(4)
    fast, n = tfc.fast_clip_by_global_norm([tf.constant(a) for a in arrays], 1.0, use_norm=tf.constant(4.0))
    assert float(n) == 4.0
    for f, a in zip(fast, arrays):
        np.testing.assert_allclose(f.numpy(), a * 0.25, rtol=1e-6)
