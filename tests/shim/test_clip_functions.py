"""Tests for the robust clip functions: TF numerics on float32, robustness where TF fails."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

import tfclip_compat

RNG = np.random.RandomState(42)
F32 = [RNG.randn(3, 4).astype(np.float32) * 7, RNG.randn(5).astype(np.float32), RNG.randn(2, 2, 2).astype(np.float32)]


def test_global_norm_and_clip_equal_tf_for_float32():
    """For finite float32 tensors, global_norm and clip_by_global_norm give TF's exact values."""
    ts = [tf.constant(a) for a in F32]
    assert tfclip_compat.global_norm(ts).numpy() == tf.linalg.global_norm(ts).numpy()
    for clip in (0.5, 1e6):
        ours, n1 = tfclip_compat.clip_by_global_norm(ts, clip)
        ref, n2 = tf.clip_by_global_norm(ts, clip)
        assert n1.numpy() == n2.numpy()
        for a, b in zip(ours, ref):
            np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_clip_by_global_norm_use_norm_and_none_entries():
    """use_norm is honoured and None entries come back as None, as in TF."""
    ts = [tf.constant(F32[0]), None, tf.constant(F32[1])]
    ours, n = tfclip_compat.clip_by_global_norm(ts, 1.0, use_norm=tf.constant(4.0))
    ref, _ = tf.clip_by_global_norm(ts, 1.0, use_norm=tf.constant(4.0))
    assert ours[1] is None and float(n) == 4.0
    np.testing.assert_array_equal(ours[0].numpy(), ref[0].numpy())
    np.testing.assert_array_equal(ours[2].numpy(), ref[2].numpy())
    assert float(tfclip_compat.global_norm([None, None])) == 0.0


def test_clip_by_norm_equals_tf_for_float32_with_axes():
    """clip_by_norm matches tf.clip_by_norm exactly for float32, with and without axes."""
    t = tf.constant(F32[0])
    for axes in (None, [1], [0]):
        np.testing.assert_array_equal(
            tfclip_compat.clip_by_norm(t, 2.0, axes=axes).numpy(), tf.clip_by_norm(t, 2.0, axes=axes).numpy()
        )
    np.testing.assert_array_equal(
        tfclip_compat.clip_by_norm(t, tf.constant(2.0)).numpy(), tf.clip_by_norm(t, tf.constant(2.0)).numpy()
    )


def test_clip_by_average_norm_equals_tf1_exactly():
    """clip_by_average_norm gives exactly tf.compat.v1.clip_by_average_norm."""
    for a in F32:
        for c in (0.01, 0.3, 100.0):
            np.testing.assert_array_equal(
                tfclip_compat.clip_by_average_norm(tf.constant(a), c).numpy(),
                tf.compat.v1.clip_by_average_norm(tf.constant(a), c).numpy(),
            )


def test_clip_by_value_equals_tf_for_dense():
    """clip_by_value on dense tensors is tf.clip_by_value."""
    t = tf.constant(F32[0])
    np.testing.assert_array_equal(tfclip_compat.clip_by_value(t, -1.0, 2.0).numpy(), tf.clip_by_value(t, -1.0, 2.0).numpy())


def test_float16_global_norm_is_finite_where_tf_overflows():
    """1,000 float16 values of 300.0: TF gives an inf norm and NaN grads; ours is finite and right."""
    g = tf.fill([1000], tf.constant(300.0, tf.float16))
    ref, ref_norm = tf.clip_by_global_norm([g], 1.0)
    assert not np.isfinite(ref_norm.numpy())  # TF's defect, measured
    assert np.isnan(ref[0].numpy()).all()
    (clipped,), norm = tfclip_compat.clip_by_global_norm([g], 1.0)
    expected = 300.0 * np.sqrt(1000.0)
    assert norm.dtype == tf.float32
    np.testing.assert_allclose(norm.numpy(), expected, rtol=1e-6)
    assert clipped.dtype == tf.float16
    np.testing.assert_allclose(clipped.numpy().astype(np.float64), 1.0 / np.sqrt(1000.0), rtol=1e-3)
    np.testing.assert_allclose(float(tfclip_compat.global_norm([g])), expected, rtol=1e-6)


def test_half_precision_clip_by_norm_and_average_norm():
    """clip_by_norm and clip_by_average_norm on float16/bfloat16 stay finite and keep the dtype."""
    for dtype in (tf.float16, tf.bfloat16):
        g = tf.fill([1000], tf.constant(300.0, dtype))
        c = tfclip_compat.clip_by_norm(g, 1.0)
        assert c.dtype == dtype
        np.testing.assert_allclose(tf.cast(c, tf.float32).numpy(), 1.0 / np.sqrt(1000.0), rtol=1e-2)
        a = tfclip_compat.clip_by_average_norm(g, 0.001)
        assert a.dtype == dtype and np.isfinite(tf.cast(a, tf.float32).numpy()).all()
    # TF overflows the float16 norm to inf and returns all zeros instead of 1/sqrt(1000).
    assert not tf.clip_by_norm(tf.fill([1000], tf.constant(300.0, tf.float16)), 1.0).numpy().any()


def test_mixed_dtypes_in_one_list():
    """float16, bfloat16 and float32 in one list: float32 norm, each output keeps its dtype."""
    ts = [tf.constant([3.0], tf.float16), tf.constant([4.0], tf.bfloat16), tf.constant([12.0], tf.float32)]
    clipped, norm = tfclip_compat.clip_by_global_norm(ts, 6.5)
    assert float(norm) == pytest.approx(13.0)
    assert [c.dtype for c in clipped] == [tf.float16, tf.bfloat16, tf.float32]
    np.testing.assert_allclose([float(tf.cast(c, tf.float32)[0]) for c in clipped], [1.5, 2.0, 6.0], rtol=1e-2)
    with pytest.raises((TypeError, tf.errors.InvalidArgumentError, ValueError)):
        tf.clip_by_global_norm(ts, 6.5)  # TF cannot mix dtypes


def _dup_slices():
    # Dense gradient [[6.], [0.]]: norm 6. TF squares each slice: sqrt(9 + 9) = 4.24.
    return tf.IndexedSlices(tf.constant([[3.0], [3.0]]), tf.constant([0, 0]), tf.constant([2, 1]))


def test_indexed_slices_with_duplicates_use_dense_norm():
    """IndexedSlices with repeated indices: norm 6.0 (dense), where TF says 4.24; result stays sparse."""
    s = _dup_slices()
    assert float(tf.linalg.global_norm([s])) == pytest.approx(np.sqrt(18.0))  # TF's defect
    assert float(tfclip_compat.global_norm([s])) == pytest.approx(6.0)
    (c, none), _ = tfclip_compat.clip_by_global_norm([s, None], 3.0)
    assert none is None
    assert isinstance(c, tf.IndexedSlices)
    np.testing.assert_allclose(tf.convert_to_tensor(c).numpy(), [[3.0], [0.0]], rtol=1e-6)
    cn = tfclip_compat.clip_by_norm(s, 3.0)
    assert isinstance(cn, tf.IndexedSlices)
    np.testing.assert_allclose(tf.convert_to_tensor(cn).numpy(), [[3.0], [0.0]], rtol=1e-6)
    cv = tfclip_compat.clip_by_value(s, -5.0, 5.0)
    assert isinstance(cv, tf.IndexedSlices)
    np.testing.assert_allclose(tf.convert_to_tensor(cv).numpy(), [[5.0], [0.0]])  # TF: [[6.], [0.]]
    np.testing.assert_allclose(tf.convert_to_tensor(tf.clip_by_value(s, -5.0, 5.0)).numpy(), [[6.0], [0.0]])


def test_indexed_slices_without_duplicates_match_tf():
    """IndexedSlices without duplicates: identical to TF (values, indices and norm)."""
    s = tf.IndexedSlices(tf.constant(F32[0]), tf.constant([4, 1, 2]), tf.constant([6, 4]))
    (c,), n = tfclip_compat.clip_by_global_norm([s], 1.0)
    (r,), m = tf.clip_by_global_norm([s], 1.0)
    assert float(n) == float(m)
    np.testing.assert_array_equal(c.values.numpy(), r.values.numpy())
    np.testing.assert_array_equal(c.indices.numpy(), r.indices.numpy())


@pytest.mark.parametrize("bad", [tf.constant([1.0]), "abc", (x for x in [])])
def test_non_sequence_raises_type_error(bad):
    """A t_list that is not a list/tuple raises TypeError, as TF does."""
    with pytest.raises(TypeError, match="t_list"):
        tfclip_compat.global_norm(bad)
    with pytest.raises(TypeError, match="t_list"):
        tfclip_compat.clip_by_global_norm(bad, 1.0)


def test_graph_mode_float32_numerics_equal_tf():
    """In a tf.compat.v1 graph the functions build ops giving TF's values."""
    with tf.Graph().as_default():
        ts = [tf.constant(a) for a in F32]
        ours = tfclip_compat.clip_by_global_norm(ts, 0.7)
        ref = tf.clip_by_global_norm(ts, 0.7)
        with tf.compat.v1.Session() as sess:
            (o, on), (r, rn) = sess.run([ours, ref])
    assert on == rn
    for a, b in zip(o, r):
        np.testing.assert_array_equal(a, b)


# --- dtypes without a norm; clip_norm = inf / NaN (issue 23, item 10) --------------------------

_NORM_CALLS = {
    "global_norm": lambda t: tfclip_compat.global_norm([tf.constant([1.0]), t]),
    "clip_by_global_norm": lambda t: tfclip_compat.clip_by_global_norm([tf.constant([1.0]), t], 1.0),
    "clip_by_global_norm(use_norm)": lambda t: tfclip_compat.clip_by_global_norm([t], 1.0, use_norm=5.0),
    "fast_global_norm": lambda t: tfclip_compat.fast_global_norm([tf.constant([1.0]), t]),
    "fast_clip_by_global_norm": lambda t: tfclip_compat.fast_clip_by_global_norm([tf.constant([1.0]), t], 1.0),
    "clip_by_norm": lambda t: tfclip_compat.clip_by_norm(t, 1.0),
    "clip_by_average_norm": lambda t: tfclip_compat.clip_by_average_norm(t, 1.0),
}
_NO_NORM = [tf.constant([3 + 4j], tf.complex64), tf.constant([3 + 4j], tf.complex128),
            tf.constant([3, 4], tf.int32), tf.constant([3, 4], tf.int64), tf.constant([True])]


@pytest.mark.parametrize("t", _NO_NORM, ids=lambda t: t.dtype.name)
@pytest.mark.parametrize("call", sorted(_NORM_CALLS))
def test_complex_integer_and_bool_gradients_raise_type_error(call, t):
    """A complex, integer or bool tensor raises a TypeError naming the function and the dtype."""
    fn = call.split("(")[0]
    with pytest.raises(TypeError, match=rf"tfclip_compat\.{fn}: t.* has dtype {t.dtype.name}; .*float16"):
        _NORM_CALLS[call](t)


def test_tensorflow_raises_on_the_same_dtypes():
    """TF's own functions raise on [3+4j] and int32 (the shim used to return 3.0 and zeros)."""
    for t in (tf.constant([3 + 4j], tf.complex64), tf.constant([3, 4], tf.int32)):
        with pytest.raises((TypeError, tf.errors.InvalidArgumentError)):
            tf.linalg.global_norm([t])
        with pytest.raises((TypeError, tf.errors.InvalidArgumentError)):
            tf.clip_by_global_norm([t], 1.0)


def test_integer_indexed_slices_and_graph_mode_raise_type_error():
    """Integer IndexedSlices values and complex graph tensors raise the same TypeError at build time."""
    s = tf.IndexedSlices(tf.constant([[3], [4]]), tf.constant([0, 1]), tf.constant([2, 1]))
    for fn in (lambda: tfclip_compat.global_norm([s]), lambda: tfclip_compat.fast_clip_by_global_norm([s], 1.0),
               lambda: tfclip_compat.clip_by_norm(s, 1.0)):
        with pytest.raises(TypeError, match="has dtype int32"):
            fn()
    with tf.Graph().as_default():
        p = tf.compat.v1.placeholder(tf.complex64, [2])
        with pytest.raises(TypeError, match="has dtype complex64"):
            tfclip_compat.clip_by_global_norm([p], 1.0)


def test_clip_by_value_takes_integers_like_tf_and_rejects_complex():
    """clip_by_value clips integers as tf.clip_by_value does; complex raises TypeError."""
    t = tf.constant([-7, 3, 9], tf.int32)
    np.testing.assert_array_equal(tfclip_compat.clip_by_value(t, 0, 5).numpy(), tf.clip_by_value(t, 0, 5).numpy())
    with pytest.raises(TypeError, match="clip_by_value: t has dtype complex64"):
        tfclip_compat.clip_by_value(tf.constant([1 + 1j], tf.complex64), 0, 1)


def _clip_all(clip_norm, ts):
    """Every robust clip function on ts with clip_norm: {name: list of numpy outputs}."""
    sparse = tf.IndexedSlices(tf.constant([[3.0], [3.0]]), tf.constant([0, 0]), tf.constant([2, 1]))
    out = {
        "clip_by_global_norm": tfclip_compat.clip_by_global_norm(ts + [sparse, None], clip_norm)[0],
        "fast_clip_by_global_norm": tfclip_compat.fast_clip_by_global_norm(ts + [sparse, None], clip_norm)[0],
        "clip_by_norm": [tfclip_compat.clip_by_norm(t, clip_norm) for t in ts + [sparse]],
        "clip_by_average_norm": [tfclip_compat.clip_by_average_norm(t, clip_norm) for t in ts],
    }
    return {k: [None if v is None else tf.convert_to_tensor(v).numpy() for v in vs] for k, vs in out.items()}


@pytest.mark.parametrize("inf", [float("inf"), np.inf, np.float32("inf"), tf.constant(np.inf)],
                         ids=["float", "np.inf", "np.float32", "eager-tensor"])
def test_inf_clip_norm_means_no_clipping(inf):
    """clip_norm=inf returns every tensor unchanged (TF: all NaN), even when the norm overflows."""
    ts = [tf.constant(a) for a in F32] + [tf.constant([1e30, 1e30], tf.float32)]  # float32 norm: inf
    assert np.isnan(tf.clip_by_global_norm(ts[:1], np.inf)[0][0].numpy()).all()  # TF's behaviour
    dense = [t.numpy() for t in ts]
    sparse_dense = np.array([[6.0], [0.0]], np.float32)  # the IndexedSlices of _clip_all, densified
    expected = {
        "clip_by_global_norm": dense + [sparse_dense, None],
        "fast_clip_by_global_norm": dense + [sparse_dense, None],
        "clip_by_norm": dense + [sparse_dense],
        "clip_by_average_norm": dense,
    }
    got = _clip_all(inf, ts)
    assert sorted(got) == sorted(expected)
    for name, outs in got.items():
        assert len(outs) == len(expected[name]), name
        for out, want in zip(outs, expected[name]):
            if want is None:
                assert out is None, name
            else:
                np.testing.assert_array_equal(out, want, err_msg=name)
    (same,), norm = tfclip_compat.clip_by_global_norm(ts[:1], inf)
    assert float(norm) == float(tfclip_compat.global_norm(ts[:1]))  # the norm is still reported
    assert isinstance(tfclip_compat.clip_by_global_norm([_dup_slices()], inf)[0][0], tf.IndexedSlices)


@pytest.mark.parametrize("nan", [float("nan"), np.float32("nan"), np.array(np.nan), tf.constant(np.nan)],
                         ids=["float", "np.float32", "np.ndarray", "eager-tensor"])
def test_nan_clip_norm_known_at_the_call_raises_value_error(nan):
    """A NaN clip_norm known when the function is called raises ValueError (TF: all NaN)."""
    t = tf.constant(F32[0])
    for fn in (lambda: tfclip_compat.clip_by_global_norm([t], nan), lambda: tfclip_compat.fast_clip_by_global_norm([t], nan),
               lambda: tfclip_compat.clip_by_norm(t, nan), lambda: tfclip_compat.clip_by_average_norm(t, nan)):
        with pytest.raises(ValueError, match="clip_norm is NaN"):
            fn()


def test_run_time_clip_norm_inf_means_no_clipping_and_nan_fails_the_step():
    """A clip_norm only the running graph knows: finite clips as a number, inf does not clip, NaN raises."""
    ts = [tf.constant(a) for a in F32]
    with tf.Graph().as_default():
        c = tf.compat.v1.placeholder(tf.float32, [])
        g = [tf.constant(a) for a in F32]
        fetches = {
            "global": tfclip_compat.clip_by_global_norm(g, c)[0],
            "fast": tfclip_compat.fast_clip_by_global_norm(g, c)[0],
            "norm": [tfclip_compat.clip_by_norm(t, c) for t in g],
            "average": [tfclip_compat.clip_by_average_norm(t, c) for t in g],
        }
        with tf.compat.v1.Session() as sess:
            finite = sess.run(fetches, {c: 0.7})
            unclipped = sess.run(fetches, {c: np.inf})
            with pytest.raises(tf.errors.InvalidArgumentError, match="clip_norm is NaN"):
                sess.run(fetches["global"], {c: np.nan})
            for key in ("fast", "norm", "average"):
                with pytest.raises(tf.errors.InvalidArgumentError, match="clip_norm is NaN"):
                    sess.run(fetches[key], {c: np.nan})
    eager = {
        "global": tfclip_compat.clip_by_global_norm(ts, 0.7)[0],
        "fast": tfclip_compat.fast_clip_by_global_norm(ts, 0.7)[0],
        "norm": [tfclip_compat.clip_by_norm(t, 0.7) for t in ts],
        "average": [tfclip_compat.clip_by_average_norm(t, 0.7) for t in ts],
    }
    for key, outs in eager.items():
        for got, want, orig in zip(finite[key], outs, F32):
            np.testing.assert_array_equal(got, want.numpy(), err_msg=key)
        for got, orig in zip(unclipped[key], F32):
            np.testing.assert_array_equal(got, orig, err_msg=key)


def test_variable_clip_norm_is_checked_when_it_is_read():
    """A tf.Variable clip_norm (eager): inf does not clip, NaN raises InvalidArgumentError at once."""
    t = tf.constant(F32[0])
    v = tf.Variable(np.inf)
    np.testing.assert_array_equal(tfclip_compat.clip_by_global_norm([t], v)[0][0].numpy(), F32[0])
    np.testing.assert_array_equal(tfclip_compat.clip_by_norm(t, v).numpy(), F32[0])
    v.assign(0.5)
    np.testing.assert_array_equal(tfclip_compat.clip_by_norm(t, v).numpy(), tf.clip_by_norm(t, 0.5).numpy())
    v.assign(np.nan)
    with pytest.raises(tf.errors.InvalidArgumentError, match="clip_norm is NaN"):
        tfclip_compat.clip_by_global_norm([t], v)
