"""The Keras API surface of TransformedKerasOptimizer (what users and Keras itself touch).

Where a feature belongs to the wrapped optimizer (learning-rate schedules, EMA, weight decay,
a static loss scale), the reference is Keras' own ``global_clipnorm`` on ONE device, where
clipping each replica's gradient and clipping the aggregated gradient are the same thing.
"""

from __future__ import annotations

import _requires_keras3  # noqa: F401 - skips this module on Keras 2 (TF 2.15)

import keras
import numpy as np
import pytest
import tensorflow as tf

import tfclip_compat as tfc
from _keras_fit_lib import BATCH, CLIP, X, Y, fit, make_model, weights


def test_compile_accepts_the_obvious_call():
    """model.compile(optimizer=clip_gradients_by_norm(SGD, c)) works (issue 14: it raised
    'Could not interpret optimizer identifier') and model.optimizer is the wrapper itself."""
    opt = tfc.clip_gradients_by_norm(keras.optimizers.SGD(0.1), 1.0)
    assert isinstance(opt, keras.optimizers.Optimizer) and opt.name == "ClipByNormSGD"
    model = make_model()
    model.compile(optimizer=opt, loss="mse")
    assert model.optimizer is opt
    assert isinstance(tfc.wrap_optimizer(keras.optimizers.Adam(), tfc.AutoClip()), tfc.TransformedKerasOptimizer)


@pytest.mark.parametrize(
    "make_inner, keras_kwargs",
    [
        (lambda **kw: keras.optimizers.Adam(keras.optimizers.schedules.ExponentialDecay(0.1, 2, 0.5), **kw), {}),
        (lambda **kw: keras.optimizers.AdamW(0.05, weight_decay=0.1, **kw), {}),
        (lambda **kw: keras.optimizers.Adam(0.05, use_ema=True, ema_momentum=0.5, **kw), {}),
        (lambda **kw: keras.optimizers.SGD(0.1, momentum=0.9, nesterov=True, loss_scale_factor=64.0, **kw), {}),
        (lambda **kw: keras.optimizers.Nadam(0.05, **kw), {}),
    ],
    ids=["lr-schedule", "adamw-weight-decay", "ema", "static-loss-scale", "nadam"],
)
def test_inner_optimizer_features_match_keras_global_clipnorm_on_one_device(make_inner, keras_kwargs):
    """Schedules, AdamW decay, EMA (finalized by fit), loss_scale_factor and Nadam's own update
    step behave as with Keras' global_clipnorm on one device (the same clip there)."""
    ours = fit(lambda: tfc.clip_gradients_by_norm(make_inner(), CLIP))
    theirs = fit(lambda: make_inner(global_clipnorm=CLIP, **keras_kwargs))
    np.testing.assert_allclose(ours["weights"], theirs["weights"], rtol=1e-5, atol=1e-7)
    assert ours["iterations"] == theirs["iterations"] == 8


def test_learning_rate_and_iterations_are_the_inner_optimizers():
    """learning_rate get/set and iterations read and write the wrapped optimizer; callbacks work."""
    inner = keras.optimizers.SGD(0.1)
    opt = tfc.clip_gradients_by_norm(inner, CLIP)
    opt.learning_rate = 0.05
    assert float(inner.learning_rate.numpy()) == pytest.approx(0.05)
    assert float(opt.learning_rate.numpy()) == pytest.approx(0.05)
    model = make_model()
    model.compile(optimizer=opt, loss="mse")
    schedule = keras.callbacks.LearningRateScheduler(lambda epoch, lr: 0.01 * (epoch + 1))
    model.fit(X, Y, batch_size=BATCH, epochs=2, verbose=0, callbacks=[schedule])
    assert float(inner.learning_rate.numpy()) == pytest.approx(0.02)
    assert opt.iterations is inner.iterations and int(opt.iterations.numpy()) == 8


def test_variables_build_and_set_weights():
    """build creates the inner slots and the transform state once; variables lists both; set_weights assigns them."""
    v = [tf.Variable(np.ones((2, 2), np.float32)), tf.Variable(np.zeros(2, np.float32))]
    opt = tfc.wrap_optimizer(keras.optimizers.Adam(0.1), tfc.AutoClip(history_size=4))
    opt.build(v)
    opt.build(v)
    inner_vars = opt.optimizer.variables
    assert len(inner_vars) == 2 + 2 * 2  # iterations, learning rate, m and v per variable
    assert len(opt.variables) == len(inner_vars) + 2  # AutoClip's history and count
    assert sorted(tuple(x.shape) for x in opt.transform.variables) == [(), (4,)]
    new = [np.full(x.shape, 3, np.asarray(x.numpy()).dtype) for x in opt.variables]
    opt.set_weights(new)
    assert all(np.all(np.asarray(x.numpy()) == 3) for x in opt.variables)
    with pytest.raises(ValueError, match="one array per variable"):
        opt.set_weights(new[:-1])


def test_apply_and_apply_gradients_contract():
    """apply(grads) needs a build or variables; apply_gradients returns iterations; the clip is applied."""
    v = tf.Variable([3.0, 4.0])
    opt = tfc.clip_gradients_by_norm(keras.optimizers.SGD(1.0), 1.0)
    with pytest.raises(ValueError, match="build"):
        opt.apply([tf.constant([30.0, 40.0])])
    it = opt.apply_gradients([(tf.constant([30.0, 40.0]), v)])  # norm 50 -> [0.6, 0.8]
    np.testing.assert_allclose(v.numpy(), [2.4, 3.2], rtol=1e-6)
    assert it is opt.iterations and int(it.numpy()) == 1
    opt.apply([tf.constant([0.3, 0.4])])  # built: the variables it was built with
    np.testing.assert_allclose(v.numpy(), [2.1, 2.8], rtol=1e-6)
    with pytest.raises(ValueError, match="2 gradients for 1 variables"):
        opt.apply([tf.constant([1.0, 1.0]), tf.constant([1.0, 1.0])], [v])
    assert not hasattr(keras.optimizers.Optimizer, "minimize") and not hasattr(opt, "minimize")


@pytest.mark.parametrize(
    "args, kwargs, exc, words",
    [
        (("adam", tfc.ClipByGlobalNorm(1.0)), {}, TypeError, "optimizer must be a Keras optimizer"),
        ((keras.optimizers.SGD(0.1), "clip"), {}, TypeError, "transform must be a GradientTransform"),
        ((keras.optimizers.SGD(0.1), tfc.ClipByGlobalNorm(1.0)), {"clipnorm": 1.0}, ValueError, "clipnorm=1.0.*ClipByNorm"),
        ((keras.optimizers.SGD(0.1), tfc.ClipByGlobalNorm(1.0)), {"nonfinite": "ignore"}, ValueError, "nonfinite"),
    ],
)
def test_bad_arguments_are_named(args, kwargs, exc, words):
    """Constructor errors name the argument and the remedy."""
    with pytest.raises(exc, match=words):
        tfc.TransformedKerasOptimizer(*args, **kwargs)


def test_summaries_written_at_iterations_in_fit(tmp_path):
    """summaries=True in model.fit writes every stat as <name>/<stat> at step = iterations."""
    from tensorflow.python.summary.summary_iterator import summary_iterator  # noqa: PLC0415

    model = make_model()
    model.compile(optimizer=tfc.clip_gradients_by_norm(keras.optimizers.SGD(0.1), CLIP, summaries=True), loss="mse")
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        model.fit(X, Y, batch_size=BATCH, epochs=1, verbose=0, shuffle=False)
    writer.flush()
    seen = {}
    for f in tmp_path.iterdir():
        for event in summary_iterator(str(f)):
            for value in event.summary.value:
                seen.setdefault(value.tag, []).append((event.step, float(tf.make_ndarray(value.tensor))))
    assert [s for s, _ in seen["ClipByNormSGD/global_norm"]] == [0, 1, 2, 3]
    assert all(v <= CLIP + 1e-6 for _, v in seen["ClipByNormSGD/clipped_global_norm"])
    assert any(v > CLIP for _, v in seen["ClipByNormSGD/global_norm"])


def test_summaries_under_xla_warn_instead_of_failing():
    """With jit_compile=True summaries cannot be compiled: a warning, and training still runs."""
    model = make_model()
    opt = tfc.clip_gradients_by_norm(keras.optimizers.SGD(0.1), CLIP, summaries=True)
    model.compile(optimizer=opt, loss="mse", jit_compile=True)
    with pytest.warns(UserWarning, match="XLA"):
        model.fit(X[:BATCH], Y[:BATCH], batch_size=BATCH, epochs=1, verbose=0)
    assert int(opt.iterations.numpy()) == 1


def test_static_loss_scale_is_removed_before_the_transform():
    """A wrapped optimizer with loss_scale_factor: the transform sees unscaled gradients (same
    training as without the factor), and setting the wrapper's factor sets the inner one."""
    scaled = fit(lambda: tfc.clip_gradients_by_norm(keras.optimizers.SGD(0.1, loss_scale_factor=256.0), CLIP))
    plain = fit(lambda: tfc.clip_gradients_by_norm(keras.optimizers.SGD(0.1), CLIP))
    np.testing.assert_allclose(scaled["weights"], plain["weights"], rtol=1e-6, atol=1e-8)
    opt = tfc.clip_gradients_by_norm(keras.optimizers.SGD(0.1), CLIP)
    opt.loss_scale_factor = 8.0
    assert opt.optimizer.loss_scale_factor == 8.0 == opt.loss_scale_factor


def test_repr_and_weight_decay_exclusion_reach_the_inner_optimizer():
    """exclude_from_weight_decay configures the wrapped optimizer; repr names both."""
    inner = keras.optimizers.AdamW(0.1, weight_decay=0.5)
    opt = tfc.clip_gradients_by_norm(inner, CLIP)
    opt.exclude_from_weight_decay(var_names=["bias"])
    assert inner._exclude_from_weight_decay_pattern is not None
    assert "ClipByNormAdamW" in repr(opt) and "AdamW" in repr(opt)
    model = make_model()
    model.compile(optimizer=opt, loss="mse")
    bias_before = np.array(model.layers[0].bias.numpy())
    model.fit(np.zeros_like(X[:BATCH]), np.zeros_like(Y[:BATCH]), verbose=0)  # zero grads: only decay acts
    np.testing.assert_array_equal(model.layers[0].bias.numpy(), bias_before)
    assert not np.array_equal(weights(model)[:6], weights(make_model())[:6])


def test_old_keras_is_refused_with_the_version(monkeypatch):
    """A Keras without the aggregation hook (< 3.2) gets a RuntimeError naming the version to install."""
    from tfclip_compat import _keras_support

    monkeypatch.setattr(_keras_support, "KerasOptimizer", type("OldOptimizer", (), {}))
    with pytest.raises(RuntimeError, match="Keras >= 3.2"):
        tfc.clip_gradients_by_norm(keras.optimizers.SGD(0.1), 1.0)
