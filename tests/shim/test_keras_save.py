"""Saving the Keras wrapper: model.save + load_model, tf.train.Checkpoint, get_config round trips.

A restored run must continue *bit-identically* to an uninterrupted one: weights, the wrapped
optimizer's slots and ``iterations``, and the transform's state (norm histories, EMAs).
"""

from __future__ import annotations

import _requires_keras3  # noqa: F401 - skips this module on Keras 2 (TF 2.15)

import keras
import numpy as np
import pytest
import tensorflow as tf

import tfclip_compat as tfc
from _keras_fit_lib import BATCH, X, Y, dataset, make_model, optimizer_state
from tfclip_compat._transform_config import deserialize_transform, serialize_transform


def _transform():
    """Stateful transforms whose state must survive the round trip."""
    return tfc.ClipStatistics(
        tfc.Chain(
            tfc.SkipOnSpike(std_factor=2.0, window=4, min_history=2),
            tfc.AutoClip(percentile=50.0, history_size=8),
            tfc.ZClip(alpha=0.9, warmup_steps=2),
        )
    )


def _compiled_model():
    model = make_model()
    opt = tfc.wrap_optimizer(keras.optimizers.Adam(0.05), _transform(), nonfinite="skip")
    model.compile(optimizer=opt, loss="mse")
    return model


def _everything(model):
    return [np.array(w) for w in model.get_weights()] + optimizer_state(model.optimizer)


def _assert_identical(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


@pytest.fixture(scope="module")
def uninterrupted():
    """4 epochs straight, the reference of both round trips."""
    model = _compiled_model()
    model.fit(dataset(), epochs=4, verbose=0, shuffle=False)
    return _everything(model)


def test_save_load_model_continues_bit_identically(tmp_path, uninterrupted):
    """model.save after 2 epochs, keras.models.load_model, 2 more epochs == 4 epochs straight."""
    model = _compiled_model()
    model.fit(dataset(), epochs=2, verbose=0, shuffle=False)
    path = str(tmp_path / "model.keras")
    model.save(path)
    restored = keras.models.load_model(path)
    opt = restored.optimizer
    assert isinstance(opt, tfc.TransformedKerasOptimizer) and opt.nonfinite == "skip"
    assert type(opt.transform.transform.transforms[1]).__name__ == "AutoClip"
    assert int(opt.iterations.numpy()) == int(model.optimizer.iterations.numpy()) > 0
    restored.fit(dataset(), epochs=2, verbose=0, shuffle=False)
    _assert_identical(_everything(restored), uninterrupted)


def test_checkpoint_mid_fit_continues_bit_identically(tmp_path, uninterrupted):
    """tf.train.Checkpoint(model, optimizer) after 2 epochs, restored into a fresh model: == straight."""
    model = _compiled_model()
    model.fit(dataset(), epochs=2, verbose=0, shuffle=False)
    path = tf.train.Checkpoint(model=model, optimizer=model.optimizer).save(str(tmp_path / "ckpt"))
    fresh = _compiled_model()
    status = tf.train.Checkpoint(model=fresh, optimizer=fresh.optimizer).restore(path)
    fresh.fit(dataset(), epochs=2, verbose=0, shuffle=False)  # builds the optimizer: deferred restore
    status.assert_consumed()
    _assert_identical(_everything(fresh), uninterrupted)


def test_checkpoint_is_interchangeable_with_the_bare_optimizer(tmp_path):
    """A checkpoint of plain Adam restores into the wrapper (slots, iterations), and back."""
    model = make_model()
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss="mse")
    model.fit(X, Y, batch_size=BATCH, epochs=1, verbose=0)
    path = tf.train.Checkpoint(optimizer=model.optimizer, model=model).save(str(tmp_path / "bare"))
    wrapped = make_model()
    wrapped.compile(optimizer=tfc.clip_gradients_by_norm(keras.optimizers.Adam(0.05), 1.0), loss="mse")
    wrapped.optimizer.build(wrapped.trainable_variables)
    tf.train.Checkpoint(optimizer=wrapped.optimizer, model=wrapped).restore(path).assert_consumed()
    _assert_identical(optimizer_state(wrapped.optimizer), optimizer_state(model.optimizer))
    wrapped.fit(X, Y, batch_size=BATCH, epochs=1, verbose=0)
    back = tf.train.Checkpoint(optimizer=wrapped.optimizer, model=wrapped).save(str(tmp_path / "wrapped"))
    bare = make_model()
    bare.compile(optimizer=keras.optimizers.Adam(0.05), loss="mse")
    bare.optimizer.build(bare.trainable_variables)
    tf.train.Checkpoint(optimizer=bare.optimizer, model=bare).restore(back).assert_consumed()
    _assert_identical(optimizer_state(bare.optimizer), optimizer_state(wrapped.optimizer))


def _every_exported_transform():
    sub = tfc.ClipByGlobalNorm(2.0)
    return [
        tfc.ClipByGlobalNorm(1.5, name="g"),
        tfc.ClipByNorm(0.5),
        tfc.ClipByValue(0.2, -0.1),
        tfc.AdaptiveGradClip(0.02, eps=1e-2),
        tfc.AutoClip(percentile=25.0, history_size=50),
        tfc.ZClip(alpha=0.8, z_thresh=3.0, max_norm=4.0, warmup_steps=3, clip_option="mean"),
        tfc.SkipNonFinite(),
        tfc.SkipOnSpike(std_factor=3.0, window=7, min_history=3, max_consecutive_skips=2),
        tfc.AdaptiveClipping(std_factor=1.5, decay=0.9, static_max_norm=3.0, quick_start=True),
        tfc.Chain(tfc.SkipNonFinite(), sub, name="c"),
        tfc.PerGroup([("hidden", tfc.ClipByNorm(0.3)), (["bias", "x"], None)], default=sub),
        tfc.Select(tfc.ClipByValue(0.05), include="kernel", exclude=["out"]),
        tfc.Select(tfc.ClipByValue(0.05)),
        tfc.ClipStatistics(tfc.Chain(tfc.AutoClip()), per_variable_norms=True, count_nonfinite_as_skipped=True),
    ]


def test_every_exported_transform_round_trips_through_its_config():
    """serialize -> JSON -> deserialize gives the same class, the same config and the same output."""
    import json

    exported = {
        obj for name in tfc.__all__ if isinstance(obj := getattr(tfc, name), type) and issubclass(obj, tfc.GradientTransform)
    }
    covered = {type(t) for t in _every_exported_transform()}
    assert exported - {tfc.GradientTransform} <= covered, "a new transform needs a round-trip case here"
    v = [tf.Variable(np.ones((3, 2), np.float32), name="hidden/kernel"), tf.Variable(np.ones(2, np.float32), name="out/bias")]
    grads = [tf.constant(np.arange(6, dtype=np.float32).reshape(3, 2) - 2.0), tf.constant([0.4, -3.0])]
    for t in _every_exported_transform():
        config = serialize_transform(t)
        again = deserialize_transform(json.loads(json.dumps(config)))
        assert type(again) is type(t) and serialize_transform(again) == config, config
        t.build(v)
        again.build(v)
        want = t(list(zip(grads, v))).grads_and_vars
        got = again(list(zip(grads, v))).grads_and_vars
        for (a, _), (b, _) in zip(got, want):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_tensor_and_variable_arguments_are_saved():
    """A constant-tensor clip_norm is saved as a number; a variable one is recreated as a variable."""
    config = serialize_transform(tfc.ClipByGlobalNorm(tf.constant(2.5)))
    assert config["config"]["clip_norm"] == 2.5
    restored = deserialize_transform(serialize_transform(tfc.ClipByGlobalNorm(tf.Variable(3.0))))
    assert isinstance(restored.clip_norm, tf.Variable) and float(restored.clip_norm.numpy()) == 3.0


class _Unsaveable(tfc.GradientTransform):
    def __call__(self, grads_and_vars):
        return tfc.TransformResult(list(grads_and_vars), None, {})


@keras.saving.register_keras_serializable(package="tfclip_tests")
class _Halve(tfc.GradientTransform):
    def __init__(self, factor=0.5, name=None):
        super().__init__(name=name or "halve")
        self.factor = factor

    def get_config(self):
        return {"factor": self.factor, "name": self.name}

    def __call__(self, grads_and_vars):
        return tfc.TransformResult([(g * self.factor, v) for g, v in grads_and_vars], None, {})


def test_custom_transforms_need_get_config_and_registration(tmp_path):
    """A registered transform with get_config saves and loads; one without get_config fails naming the fix."""
    model = make_model()
    model.compile(optimizer=tfc.wrap_optimizer(keras.optimizers.SGD(0.1), _Halve(0.25)), loss="mse")
    model.fit(X, Y, batch_size=BATCH, epochs=1, verbose=0)
    path = str(tmp_path / "custom.keras")
    model.save(path)
    loaded = keras.models.load_model(path).optimizer.transform
    assert isinstance(loaded, _Halve) and loaded.factor == 0.25
    bad = tfc.wrap_optimizer(keras.optimizers.SGD(0.1), _Unsaveable())
    with pytest.raises(TypeError, match="get_config.*register_keras_serializable"):
        bad.get_config()


def test_optimizer_config_round_trip_without_a_model():
    """get_config -> from_config rebuilds the wrapped optimizer, transform, policy and name."""
    opt = tfc.wrap_optimizer(
        keras.optimizers.Adam(keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5), beta_1=0.8),
        tfc.ZClip(alpha=0.8), nonfinite="skip", summaries=True, name="zclipped",
    )
    config = keras.saving.serialize_keras_object(opt)
    assert config["registered_name"] == "tfclip_compat>TransformedKerasOptimizer"
    again = keras.saving.deserialize_keras_object(config)
    assert isinstance(again, tfc.TransformedKerasOptimizer)
    assert again.name == "zclipped" and again.nonfinite == "skip" and again.summaries
    assert again.optimizer.beta_1 == 0.8 and again.transform.alpha == 0.8
    assert isinstance(again.optimizer._learning_rate, keras.optimizers.schedules.ExponentialDecay)
