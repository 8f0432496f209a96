"""adaptive_clipping_fn vs the TF 1.15 reference (graph mode), eager/tf.function state, and AdaptiveClipping."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

import tfclip_compat as tfc
from reference import contrib_layers as ref

V1 = tf.compat.v1
STEPS = 12
RNG = np.random.RandomState(7)
X = RNG.randn(16, 3).astype(np.float32)
Y = (RNG.randn(16, 1) * 3).astype(np.float32)
# Per-step scale of the targets: a few spikes so that the adaptive threshold clips.
SCALES = [1.0, 1.0, 1.2, 0.9, 30.0, 1.0, 1.1, 50.0, 1.0, 0.8, 1.0, 40.0]


def _train_graph(clip_fn_factory, *, use_global_step, static_max_norm=None, optimizer="SGD"):
    """Train a linear model with optimize_loss(clip_gradients=clip_fn) in graph mode; return w, b."""
    with tf.Graph().as_default():
        x = V1.placeholder(tf.float32, [None, 3])
        y = V1.placeholder(tf.float32, [None, 1])
        scale = V1.placeholder(tf.float32, [])
        w = V1.get_variable("w", initializer=np.ones((3, 1), np.float32))
        b = V1.get_variable("b", initializer=np.zeros((1,), np.float32))
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y * scale))
        gs = V1.train.get_or_create_global_step()
        clip = clip_fn_factory(
            static_max_norm=static_max_norm, global_step=gs if use_global_step else None
        )
        train = ref.optimize_loss(loss, gs, 0.05, optimizer, clip_gradients=clip, summaries=[])
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            for s in SCALES[:STEPS]:
                sess.run(train, {x: X, y: Y, scale: s})
            return sess.run([w, b])


@pytest.mark.parametrize("use_global_step", [False, True])
@pytest.mark.parametrize("static_max_norm", [None, 3.0])
def test_matches_tf115_reference_in_graph_mode(use_global_step, static_max_norm):
    """adaptive_clipping_fn trains exactly like TF 1.15's (reference) over 12 graph steps."""

    def shim(**kw):
        return tfc.adaptive_clipping_fn(std_factor=1.5, decay=0.9, **kw)

    def reference(**kw):
        return ref.adaptive_clipping_fn(std_factor=1.5, decay=0.9, **kw)

    got = _train_graph(shim, use_global_step=use_global_step, static_max_norm=static_max_norm)
    want = _train_graph(reference, use_global_step=use_global_step, static_max_norm=static_max_norm)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5)
    unclipped = _train_graph(lambda **kw: (lambda gv: gv), use_global_step=False)
    assert not np.allclose(got[0], unclipped[0], rtol=1e-3), "the spikes must have been clipped"


def test_shim_optimize_loss_accepts_it_and_creates_tf1_variable_names():
    """tfclip_compat.optimize_loss takes it; state is OptimizeLoss/AdaptiveMaxNorm/{mean,sq_mean}."""
    with tf.Graph().as_default():
        w = V1.get_variable("w", initializer=np.ones((3, 1), np.float32))
        loss = tf.reduce_mean(tf.square(tf.matmul(X, w) - Y))
        gs = V1.train.get_or_create_global_step()
        tfc.optimize_loss(loss, gs, 0.1, "SGD", clip_gradients=tfc.adaptive_clipping_fn(), summaries=[])
        names = {v.op.name for v in V1.global_variables()}
    assert {"OptimizeLoss/AdaptiveMaxNorm/mean", "OptimizeLoss/AdaptiveMaxNorm/sq_mean"} <= names


def _numpy_adaptive(norms, std_factor, decay, static_max_norm=None, eps=1e-8, quick=False):
    """arXiv:1412.1602 §3.2.1 as TF 1.15 computed it, in float64 numpy: the factor per step."""
    mean = sq = 0.0
    factors = []
    for n_steps, norm in enumerate(norms):
        d = min(decay, n_steps / (n_steps + 1.0)) if quick else decay
        log_norm = np.log(norm + eps)
        mean -= (mean - log_norm) * (1 - d)
        sq -= (sq - log_norm**2) * (1 - d)
        std = np.sqrt(max(eps, sq - mean**2))
        max_norm = np.exp(mean + std_factor * std)
        f = 1.0 if norm < max_norm else np.exp(mean) / norm
        if static_max_norm is not None:
            f = min(static_max_norm / norm, f)
        factors.append(f)
    return factors


GRAD_SCALES = [1.0, 2.0, 1.5, 40.0, 1.0, 0.5, 60.0, 1.2]


@pytest.mark.parametrize("use_function", [False, True])
def test_eager_and_function_keep_state_across_calls(use_function):
    """In eager and tf.function the returned fn keeps its averages and matches the numpy formula."""
    fn = tfc.adaptive_clipping_fn(std_factor=2.0, decay=0.9, static_max_norm=50.0)
    v = tf.Variable(np.zeros(4, np.float32))
    base = np.array([0.5, -1.0, 2.0, 0.25], np.float32)
    call = tf.function(fn) if use_function else fn
    got = []
    for s in GRAD_SCALES:
        (g, _), = call([(tf.constant(base * s), v)])
        got.append(float(np.linalg.norm(g.numpy()) / np.linalg.norm(base * s)))
    want = _numpy_adaptive([np.linalg.norm(base * s) for s in GRAD_SCALES], 2.0, 0.9, 50.0)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert min(want) < 0.5 and fn.state() is not None


@pytest.mark.parametrize("quick_start", [False, True])
def test_adaptive_clipping_transform_matches_formula(quick_start):
    """AdaptiveClipping (transform) follows the same formula; quick_start = TF1's global_step."""
    t = tfc.AdaptiveClipping(std_factor=2.0, decay=0.9, quick_start=quick_start)
    v = tf.Variable(np.zeros(4, np.float32))
    base = np.array([0.5, -1.0, 2.0, 0.25], np.float32)
    got = []
    for s in GRAD_SCALES:
        r = t([(tf.constant(base * s), v)])
        got.append(float(np.linalg.norm(r.grads_and_vars[0][0].numpy()) / np.linalg.norm(base * s)))
    want = _numpy_adaptive([np.linalg.norm(base * s) for s in GRAD_SCALES], 2.0, 0.9, quick=quick_start)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_adaptive_clipping_transform_ignores_nonfinite_norms():
    """A non-finite norm is not recorded: the averages stay as they were (TF 1.15 became NaN)."""
    t = tfc.AdaptiveClipping()
    v = tf.Variable(np.zeros(2, np.float32))
    t([(tf.constant([1.0, 2.0]), v)])
    before = [t.mean.numpy(), t.sq_mean.numpy(), t.count.numpy()]
    t([(tf.constant([np.inf, 2.0], tf.float32), v)])
    assert [t.mean.numpy(), t.sq_mean.numpy(), t.count.numpy()] == before


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"decay": 1.5}, "decay"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"static_max_norm": -1.0}, "static_max_norm"),
        ({"std_factor": "2"}, "std_factor"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, words):
    """Bad arguments fail at construction with a message naming the argument."""
    with pytest.raises((TypeError, ValueError), match=words):
        tfc.adaptive_clipping_fn(**kwargs)
