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
    """adaptive_clipping_fn trains bit for bit like TF 1.15's (reference) over 12 graph steps."""

    def shim(**kw):
        return tfc.adaptive_clipping_fn(std_factor=1.5, decay=0.9, **kw)

    def reference(**kw):
        return ref.adaptive_clipping_fn(std_factor=1.5, decay=0.9, **kw)

    got = _train_graph(shim, use_global_step=use_global_step, static_max_norm=static_max_norm)
    want = _train_graph(reference, use_global_step=use_global_step, static_max_norm=static_max_norm)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
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


def _tf1_arguments(module, gs):
    """What TF 1.15 accepted and the shim used to reject: tensors, decay > 1, epsilon 0."""
    return module.adaptive_clipping_fn(
        std_factor=tf.constant(1.5),
        decay=1.5,  # capped at n / (n + 1) by the global step
        static_max_norm=tf.constant(3.0),
        global_step=gs,
        epsilon=0.0,
    )


@pytest.mark.parametrize(
    "make",
    [
        _tf1_arguments,
        lambda m, gs: m.adaptive_clipping_fn(decay=tf.constant(0.9), epsilon=tf.constant(1e-6)),
    ],
    ids=["tensor-std-and-cap-decay-1.5-eps-0", "tensor-decay-and-eps"],
)
def test_accepts_what_tf115_accepted_with_same_results(make):
    """Tensor std_factor/decay/static_max_norm/epsilon, decay=1.5, epsilon=0.0 train bit for bit as TF 1.15."""

    def train(module):
        def factory(static_max_norm, global_step):
            gs = V1.train.get_global_step()
            return make(module, gs)

        return _train_graph(factory, use_global_step=True)

    got, want = train(tfc), train(ref)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert np.isfinite(got[0]).all()


def _embedding_run(module, norm=None):
    """Graph-mode SGD on an embedding looked up with repeated ids, clipped adaptively."""
    from _tiny_model_data import E0, IDS_DUPLICATE, W0, X as TX, Y as TY

    with tf.Graph().as_default():
        w = V1.get_variable("W", initializer=tf.constant(W0))
        e = V1.get_variable("E", initializer=tf.constant(E0))
        scale = V1.placeholder(tf.float32, [])
        pred = tf.matmul(tf.constant(TX), w) + tf.nn.embedding_lookup(e, tf.constant(IDS_DUPLICATE))
        loss = tf.reduce_mean(tf.square(pred - tf.constant(TY) * scale))
        kwargs = {} if norm is None else {"norm": norm}
        clip = module.adaptive_clipping_fn(std_factor=0.5, decay=0.5, **kwargs)
        train = ref.optimize_loss(loss, None, 0.05, "SGD", clip_gradients=clip, summaries=[])
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            for s in SCALES:
                sess.run(train, {scale: s})
            return sess.run([w, e])


def test_sparse_repeated_ids_default_is_tf115_and_exact_is_opt_in():
    """Repeated embedding ids: the default equals TF 1.15 bit for bit (norm of ``.values``);
    ``norm="exact"`` (dense norm) trains differently."""
    want = _embedding_run(ref)
    got = _embedding_run(tfc)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    exact = _embedding_run(tfc, norm="exact")
    assert not np.allclose(exact[1], want[1], rtol=1e-4)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"static_max_norm": -1.0}, "static_max_norm must be > 0"),
        ({"static_max_norm": 0}, "static_max_norm must be > 0"),
        ({"std_factor": "2"}, "std_factor"),
        ({"decay": None}, "decay"),
        ({"epsilon": float("nan")}, "epsilon"),
        ({"norm": "dense"}, "norm='dense'"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, words):
    """Arguments TF 1.15 crashed on or that corrupt every gradient fail at construction, named."""
    with pytest.raises((TypeError, ValueError), match=words):
        tfc.adaptive_clipping_fn(**kwargs)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"decay": 1.5}, "decay"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"static_max_norm": -1.0}, "static_max_norm"),
    ],
)
def test_adaptive_clipping_transform_keeps_strict_arguments(kwargs, words):
    """The AdaptiveClipping transform (new API, no TF 1.15 program to match) still validates ranges."""
    with pytest.raises((TypeError, ValueError), match=words):
        tfc.AdaptiveClipping(**kwargs)
