"""``tfclip_compat.optimize_loss`` vs the TF 1.15 ``tf.contrib.layers.optimize_loss`` reference.

Tiny dense + embedding model, >= 10 graph-mode steps, trained variables / losses / global step
compared at rtol 1e-5 with ``tests/reference/contrib_layers.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from reference import contrib_layers as ref
import tfclip_compat as tfc
from tfclip_compat._contrib import layers as shim_layers

v1 = tf.compat.v1
STEPS = 10
RTOL = 1e-5

from _tiny_model_data import E0, IDS_DUPLICATE, IDS_UNIQUE, W0, X, Y  # noqa: E402 - shared data, kept with the constants



def _model(ids=IDS_UNIQUE, with_bn=False, with_step=True):
    """Build the tiny model (and a global step) in the default graph; return (loss, variables)."""
    if with_step:
        v1.train.get_or_create_global_step()
    w = v1.get_variable("W", initializer=tf.constant(W0))
    b = v1.get_variable("b", initializer=tf.zeros([2]))
    e = v1.get_variable("E", initializer=tf.constant(E0))
    pred = tf.matmul(tf.constant(X), w) + b + tf.nn.embedding_lookup(e, tf.constant(ids))
    variables = {"W": w, "b": b, "E": e}
    if with_bn:
        mean = v1.get_variable("moving_mean", initializer=tf.zeros([2]), trainable=False)
        update = v1.assign(mean, 0.9 * mean + 0.1 * tf.reduce_mean(pred, axis=0))
        v1.add_to_collection(v1.GraphKeys.UPDATE_OPS, update)
        variables["moving_mean"] = mean
    return tf.reduce_mean(tf.square(pred - tf.constant(Y))), variables


def _train(build, steps=STEPS, **model_kwargs):
    """Build with ``build(module-free loss, variables)``, run ``steps``; return results."""
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(0)
        loss, variables = _model(**model_kwargs)
        train_op = build(loss, variables)
        gs = v1.train.get_global_step()
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            losses = [sess.run(train_op) for _ in range(steps)]
            values = {v.op.name: sess.run(v) for v in v1.global_variables()}
            step = None if gs is None else int(sess.run(gs))
    return np.array(losses), values, step, graph


def _assert_same(a, b, exact=True):
    """Losses, every global variable and the step equal: bit-identical, or rtol 1e-5 if not ``exact``."""
    check = np.testing.assert_array_equal if exact else (
        lambda x, y, err_msg="": np.testing.assert_allclose(x, y, rtol=RTOL, err_msg=err_msg)
    )
    check(a[0], b[0])
    assert sorted(a[1]) == sorted(b[1])
    for name in a[1]:
        check(a[1][name], b[1][name], err_msg=name)
    assert a[2] == b[2]


def _both(learning_rate=0.05, optimizer="SGD", model_kwargs=None, **kwargs):
    """Train with the reference and the shim; kwargs values may be ``f(variables)``."""
    def make(module):
        def build(loss, variables):
            extra = {k: (v(variables) if k in ("variables", "gradient_multipliers", "update_ops") and callable(v) else v)
                     for k, v in kwargs.items()}
            return module.optimize_loss(loss, None, learning_rate, optimizer, **extra)
        return build

    model_kwargs = model_kwargs or {}
    return _train(make(ref), **model_kwargs), _train(make(tfc), **model_kwargs)


@pytest.mark.parametrize("name", sorted(ref.OPTIMIZER_CLS_NAMES))
def test_each_optimizer_name_matches_reference(name):
    """Every TF 1.15 optimizer name trains identically, in the ``OptimizeLoss`` scope."""
    r, s = _both(optimizer=name)
    _assert_same(r, s)
    assert s[2] == STEPS
    assert "OptimizeLoss/learning_rate" in s[1]
    assert s[0][-1] < s[0][0]


def test_optimizer_class_instance_and_function_match_reference():
    """A class, an instance, a function of lr, and a no-arg function with lr=None all match."""
    _assert_same(*_both(optimizer=v1.train.AdamOptimizer))
    _assert_same(*_both(optimizer=lambda lr: v1.train.MomentumOptimizer(lr, 0.5)))
    _assert_same(*_both(learning_rate=None, optimizer=lambda: v1.train.AdagradOptimizer(0.3)))
    r = _train(lambda loss, _: ref.optimize_loss(loss, None, None, v1.train.AdamOptimizer(0.1)))
    s = _train(lambda loss, _: tfc.optimize_loss(loss, None, None, v1.train.AdamOptimizer(0.1)))
    _assert_same(r, s)


def test_float_clip_gradients_is_global_norm_and_matches_reference():
    """A float ``clip_gradients`` clips by the global norm exactly like TF 1.15 (and clips)."""
    r, s = _both(optimizer="Adam", clip_gradients=0.5, learning_rate=0.1)
    _assert_same(r, s)
    unclipped = _both(optimizer="Adam", learning_rate=0.1)[1]
    assert not np.allclose(unclipped[1]["W"], s[1]["W"], rtol=1e-3)


def test_int_clip_gradients_is_accepted_as_float():
    """``clip_gradients=1`` (TF 1.15: ValueError) trains like ``clip_gradients=1.0``."""
    r = _train(lambda loss, _: ref.optimize_loss(loss, None, 0.05, "SGD", clip_gradients=1.0))
    s = _train(lambda loss, _: tfc.optimize_loss(loss, None, 0.05, "SGD", clip_gradients=1))
    _assert_same(r, s)


def test_callable_clip_gradients_adaptive_matches_reference():
    """A callable ``clip_gradients`` (TF 1.15's adaptive clipping) is applied as given."""
    def build(module):
        return lambda loss, _: module.optimize_loss(
            loss, None, 0.05, "SGD",
            clip_gradients=ref.adaptive_clipping_fn(
                global_step=v1.train.get_global_step(), static_max_norm=2.0
            ),
        )

    _assert_same(_train(build(ref)), _train(build(tfc)))


def test_learning_rate_decay_fn_matches_reference():
    """``learning_rate_decay_fn`` decays the learning-rate variable with the global step."""
    decay = lambda lr, step: v1.train.exponential_decay(lr, step, 2, 0.5)  # noqa: E731
    r, s = _both(optimizer="SGD", learning_rate=0.1, learning_rate_decay_fn=decay)
    _assert_same(r, s)


def test_tensor_learning_rate_matches_reference():
    """A scalar tensor learning rate is used as is (no ``learning_rate`` variable)."""
    def build(module):
        return lambda loss, _: module.optimize_loss(loss, None, tf.constant(0.05), "Momentum")

    r, s = _train(build(ref)), _train(build(tfc))
    _assert_same(r, s)
    assert "OptimizeLoss/learning_rate" not in s[1]


def test_gradient_multipliers_by_variable_and_name_match_reference():
    """``gradient_multipliers`` keyed by variable and by ``variable.name`` match (dense + sparse)."""
    r, s = _both(gradient_multipliers=lambda vs: {vs["W"]: 3.0, "E:0": 0.5})
    _assert_same(r, s)
    plain = _both()[1]
    assert not np.allclose(plain[1]["E"], s[1]["E"])


def test_unknown_multiplier_key_is_logged(monkeypatch):
    """A multiplier key matching no variable is logged (TF 1.15 ignored it silently)."""
    messages = []
    monkeypatch.setattr(v1.logging, "warning", lambda msg, *a: messages.append(msg % a if a else msg))
    with tf.Graph().as_default():
        loss, _ = _model()
        tfc.optimize_loss(loss, None, 0.1, "SGD", gradient_multipliers={"W": 2.0})
    assert any("match no variable" in m and "'W'" in m for m in messages)


def test_variables_subset_and_no_increment_match_reference():
    """``variables`` restricts training; ``increment_global_step=False`` leaves the step."""
    r, s = _both(variables=lambda vs: [vs["W"]], increment_global_step=False, optimizer="Adam")
    _assert_same(r, s)
    assert s[2] == 0
    np.testing.assert_array_equal(s[1]["E"], E0)


def test_no_global_step_in_graph_matches_reference():
    """Without a graph global step nothing is incremented, as in TF 1.15."""
    r, s = _both(model_kwargs={"with_step": False})
    _assert_same(r, s)
    assert s[2] is None


@pytest.mark.parametrize("update_ops", [None, []], ids=["collection", "none"])
def test_update_ops_match_reference(update_ops):
    """UPDATE_OPS run before the loss by default (batch-norm style); ``[]`` disables them."""
    r, s = _both(update_ops=update_ops, model_kwargs={"with_bn": True})
    _assert_same(r, s)
    assert (not np.allclose(s[1]["moving_mean"], 0.0)) is (update_ops is None)


def test_all_summaries_and_name_match_reference():
    """``summaries=OPTIMIZER_SUMMARIES`` and ``name`` give TF 1.15's summary ops and scope."""
    r, s = _both(
        summaries=list(ref.OPTIMIZER_SUMMARIES), name="opt", clip_gradients=1.0,
        learning_rate_decay_fn=lambda lr, step: lr,
    )
    _assert_same(r, s)

    def summary_names(graph):
        return sorted(op.name for op in graph.get_operations() if op.type.endswith("Summary"))

    assert summary_names(s[3]) == summary_names(r[3])
    assert "opt/global_norm/clipped_gradient_norm" in summary_names(s[3])
    assert "opt/learning_rate" in s[1]


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
def test_duplicate_indices_float_clip_is_tf115_bit_for_bit(optimizer):
    """With repeated ids a float ``clip_gradients`` trains bit for bit as TF 1.15 (norm of ``.values``)."""
    kw = {"ids": IDS_DUPLICATE}
    sparse_ref = _train(lambda loss, _: ref.optimize_loss(loss, None, 0.05, optimizer, clip_gradients=0.5), **kw)
    got = _train(lambda loss, _: tfc.optimize_loss(loss, None, 0.05, optimizer, clip_gradients=0.5), **kw)
    _assert_same(sparse_ref, got)


def test_duplicate_indices_exact_norm_is_opt_in():
    """``norm="exact"``: clipping uses the dense global norm (TF 1.15 on densified gradients), not TF 1.15's."""
    def densified_clip(grads_and_vars):
        dense = [(tf.convert_to_tensor(g), v) for g, v in grads_and_vars]
        grads, variables = zip(*dense)
        clipped, _ = tf.clip_by_global_norm(grads, 0.5)
        return list(zip(clipped, variables))

    kw = {"ids": IDS_DUPLICATE}
    dense_ref = _train(lambda loss, _: ref.optimize_loss(loss, None, 0.05, "SGD", clip_gradients=densified_clip), **kw)
    sparse_ref = _train(lambda loss, _: ref.optimize_loss(loss, None, 0.05, "SGD", clip_gradients=0.5), **kw)
    got = _train(lambda loss, _: tfc.optimize_loss(loss, None, 0.05, "SGD", clip_gradients=0.5, norm="exact"), **kw)
    _assert_same(dense_ref, got, exact=False)
    assert not np.allclose(sparse_ref[1]["W"], got[1]["W"], rtol=1e-4)


def test_gradient_noise_has_tf1_scale():
    """``gradient_noise_scale`` adds zero-mean truncated-normal noise of that scale."""
    with tf.Graph().as_default():
        v1.set_random_seed(1)
        var = v1.get_variable("n", initializer=tf.zeros([20000]))
        grads = shim_layers._add_scaled_noise_to_gradients([(tf.ones([20000]), var)], 0.5)
        with v1.Session() as sess:
            noise = sess.run(grads[0][0]) - 1.0
    # truncated normal (2 sigma) has std 0.8796
    assert abs(noise.mean()) < 0.02
    assert noise.std() == pytest.approx(0.5 * 0.8796, rel=0.03)
    assert np.abs(noise).max() <= 1.0 + 1e-6


def test_gradient_noise_trains_close_to_reference():
    """With noise both train to nearby (not equal: different random ops) weights."""
    r, s = _both(gradient_noise_scale=1e-3)
    np.testing.assert_allclose(r[1]["W"], s[1]["W"], atol=5e-3)
    assert s[2] == STEPS


def test_nonfinite_skip_leaves_step_out():
    """``nonfinite="skip"``: a step with inf gradients changes nothing, later steps proceed."""
    graph = tf.Graph()
    with graph.as_default():
        scale = v1.placeholder(tf.float32, [])
        loss, variables = _model()
        train_op = tfc.optimize_loss(loss * scale, None, 0.1, "Adam", nonfinite="skip",
                                        summaries=[])
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            sess.run(train_op, {scale: 1.0})
            before = sess.run(variables)
            sess.run(train_op, {scale: np.inf})
            after = sess.run(variables)
            assert int(sess.run(v1.train.get_global_step())) == 1
            sess.run(train_op, {scale: 1.0})
            assert int(sess.run(v1.train.get_global_step())) == 2
    for k in before:
        np.testing.assert_array_equal(before[k], after[k])


# ---------------------------------------------------------------- bad arguments


def _loss():
    loss, _ = _model()
    return loss


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"optimizer": "Adamax"}, r"one of \[Adagrad, Adam, Ftrl, Momentum, RMSProp, SGD\], you provided Adamax"),
        ({"optimizer": 3}, "Unrecognized optimizer"),
        ({"optimizer": lambda lr: "nope"}, "function should return subclass of Optimizer"),
        ({"optimizer": "SGD", "learning_rate": None}, "Learning rate is None"),
        ({"optimizer": v1.train.AdamOptimizer, "learning_rate": None}, "Learning rate is None"),
        ({"learning_rate": -0.1}, "Invalid learning_rate"),
        ({"learning_rate": 1}, "Learning rate should be 0d Tensor or float"),
        ({"summaries": ["loss", "weights"]}, "Summaries should be one of"),
        ({"clip_gradients": "1.0"}, "Unknown type .* for clip_gradients"),
        ({"clip_gradients": 0.0}, "clip_gradients=0.0 must be a finite number > 0"),
        ({"clip_gradients": float("inf")}, "clip_gradients=inf must be a finite number > 0.*NaN"),
        ({"norm": "dense"}, "norm='dense' is not a known norm; use one of 'tf1', 'exact', 'fast'"),
        ({"gradient_multipliers": [1.0]}, "gradient_multipliers must be a dict"),
        ({"nonfinite": "zero"}, "nonfinite"),
        ({"variables": []}, r"optimize_loss\(variables=\[\]\): the list of variables to optimize is empty"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, match):
    """Bad arguments raise a ValueError naming the argument (and valid values where listed)."""
    args = {"learning_rate": 0.1, "optimizer": "SGD"}
    args.update(kwargs)
    with tf.Graph().as_default():
        loss = _loss()
        with pytest.raises(ValueError, match=match):
            tfc.optimize_loss(loss, None, **args)


def test_decay_without_global_step_is_rejected():
    """``learning_rate_decay_fn`` without any global step is an error, as in TF 1.15."""
    with tf.Graph().as_default():
        loss, _ = _model(with_step=False)
        with pytest.raises(ValueError, match="global_step is required for learning_rate_decay_fn"):
            tfc.optimize_loss(loss, None, 0.1, "SGD", learning_rate_decay_fn=lambda lr, s: lr)


def test_non_scalar_loss_is_rejected():
    """A non-scalar loss is named with its shape."""
    with tf.Graph().as_default():
        _model()
        with pytest.raises(ValueError, match="loss must be a scalar"):
            tfc.optimize_loss(tf.ones([3]), None, 0.1, "SGD")


def test_eager_mode_is_refused_with_remedy():
    """Eager execution gets a RuntimeError pointing to graph mode / GradientTape."""
    with pytest.raises(RuntimeError, match="GradientTape"):
        tfc.optimize_loss(tf.constant(1.0), None, 0.1, "SGD")
