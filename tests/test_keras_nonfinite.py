"""Non-finite policies of the Keras wrapper inside ``model.fit`` (eager, compiled, XLA, 2 replicas).

A batch with a NaN input gives NaN gradients. "skip" must leave weights, optimizer slots,
``iterations`` and the transform's state exactly as they were, and training must go on;
"raise" must raise with nothing changed.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

import tfclip_compat as tfc
from _keras_fit_lib import BATCH, X, Y, make_model, optimizer_state

X_BAD = X[:BATCH].copy()
X_BAD[3, 2] = np.nan


def _compiled(policy, strategy=None, **compile_kwargs):
    scope = strategy.scope() if strategy is not None else _Null()
    with scope:
        model = make_model()
        # stateful, and cheap to compile with XLA (AutoClip's sort takes seconds)
        transform = tfc.Chain(tfc.ZClip(alpha=0.9, warmup_steps=2), tfc.ClipByGlobalNorm(1.0))
        opt = tfc.wrap_optimizer(keras.optimizers.Adam(0.05), transform, nonfinite=policy)
        model.compile(optimizer=opt, loss="mse", **compile_kwargs)
    model.fit(X, Y, batch_size=BATCH, epochs=1, verbose=0, shuffle=False)
    return model, opt


class _Null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return None


def _state(model, opt):
    return [np.array(w) for w in model.get_weights()] + optimizer_state(opt)


def _assert_same(before, after):
    assert len(before) == len(after)
    for b, a in zip(before, after):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "compile_kwargs", [{"run_eagerly": True}, {}, {"jit_compile": True}], ids=["eager", "compiled", "jit"]
)
def test_skip_leaves_everything_unchanged_then_trains_on(compile_kwargs):
    """nonfinite='skip' in fit: a NaN batch changes no weight, slot, iteration or ZClip statistic."""
    model, opt = _compiled("skip", **compile_kwargs)
    before = _state(model, opt)
    assert int(opt.iterations.numpy()) == 4
    model.fit(X_BAD, Y[:BATCH], batch_size=BATCH, epochs=1, verbose=0)
    _assert_same(before, _state(model, opt))
    model.fit(X, Y, batch_size=BATCH, epochs=1, verbose=0, shuffle=False)
    assert int(opt.iterations.numpy()) == 8 and np.isfinite(np.concatenate([w.ravel() for w in model.get_weights()])).all()


def test_skip_under_mirrored_strategy(two_replica_strategy):
    """nonfinite='skip' with 2 replicas: the NaN lands on replica 0 only and the step is skipped on both."""
    model, opt = _compiled("skip", two_replica_strategy)
    before = _state(model, opt)
    model.fit(X_BAD, Y[:BATCH], batch_size=BATCH, epochs=1, verbose=0)
    _assert_same(before, _state(model, opt))


@pytest.mark.parametrize("compile_kwargs", [{"run_eagerly": True}, {}], ids=["eager", "compiled"])
def test_raise_names_the_variable_and_changes_nothing(compile_kwargs):
    """nonfinite='raise' in fit: InvalidArgumentError naming a variable; weights/slots/iterations/state intact."""
    model, opt = _compiled("raise", **compile_kwargs)
    before = _state(model, opt)
    with pytest.raises(tf.errors.InvalidArgumentError, match="nonfinite='raise'.*hidden/kernel"):
        model.fit(X_BAD, Y[:BATCH], batch_size=BATCH, epochs=1, verbose=0)
    _assert_same(before, _state(model, opt))


def test_raise_under_xla_is_refused_at_trace_time():
    """XLA drops CheckNumerics, so nonfinite='raise' with jit_compile=True fails loudly, naming the fix."""
    with pytest.raises(ValueError, match="jit_compile=False"):
        _compiled("raise", jit_compile=True)


def test_propagate_applies_nan_like_tf1():
    """nonfinite='propagate' (the default) applies the NaN update, as TF1 did."""
    model, _ = _compiled("propagate")
    model.fit(X_BAD, Y[:BATCH], batch_size=BATCH, epochs=1, verbose=0)
    assert np.isnan(model.get_weights()[0]).all()


class _NaNOut(tfc.GradientTransform):
    """A transform that turns finite gradients into NaN (a stand-in for a broken threshold)."""

    def __call__(self, grads_and_vars):
        return tfc.TransformResult([(g * np.nan, v) for g, v in grads_and_vars], None, {"global_norm": tf.constant(1.0)})


@pytest.mark.parametrize("policy", ["skip", "raise"])
def test_policies_look_at_what_is_applied(policy):
    """Finite gradients made NaN by the transform: 'skip' skips (its global_norm stat says finite), 'raise' raises."""
    v = tf.Variable([1.0, 2.0], name="applied")
    opt = tfc.wrap_optimizer(keras.optimizers.Adam(0.1), _NaNOut(), nonfinite=policy)
    step = tf.function(lambda g: opt.apply_gradients([(g, v)]))
    if policy == "raise":
        with pytest.raises(tf.errors.InvalidArgumentError, match="applied"):
            step(tf.constant([1.0, 1.0]))
    else:
        step(tf.constant([1.0, 1.0]))
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    assert int(opt.iterations.numpy()) == 0
