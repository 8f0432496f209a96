"""The Keras wrapper inside ``model.fit``: 2 MirroredStrategy replicas train like 1 device.

Same model, data and GLOBAL batch everywhere; "1 device" is no strategy at all. Keras' own
``global_clipnorm`` / ``clipnorm`` clip each replica's partial gradient, so the same
comparison shows them differing: that is what makes these tests able to fail.
"""

from __future__ import annotations

import _requires_keras3  # noqa: F401 - skips this module on Keras 2 (TF 2.15)

import keras
import numpy as np
import pytest
import tensorflow as tf

import tfclip_compat as tfc
from _keras_fit_lib import (
    BATCH,
    CLIP,
    X,
    Y,
    fit,
    fit_one_device,
    keras_sgd_global_clipnorm,
    make_model,
    max_abs_diff,
    ours_sgd,
)


def test_fit_two_replicas_equal_one_device_and_keras_global_clipnorm_differs(two_replica_strategy):
    """Ours: 2 replicas == 1 device (rtol 1e-5) == Keras global_clipnorm on 1 device; Keras' own differs on 2."""
    one = fit_one_device(ours_sgd)
    two = fit(ours_sgd, two_replica_strategy)
    assert one["iterations"] == two["iterations"] == 8
    np.testing.assert_allclose(two["weights"], one["weights"], rtol=1e-5, atol=1e-7)
    # On one device there is nothing to aggregate: Keras' global_clipnorm is the reference.
    keras_one = fit_one_device(keras_sgd_global_clipnorm)
    np.testing.assert_allclose(one["weights"], keras_one["weights"], rtol=1e-5, atol=1e-7)
    keras_two = fit(keras_sgd_global_clipnorm, two_replica_strategy)
    assert max_abs_diff(keras_two["weights"], keras_one["weights"]) > 1e-3


def test_fit_keras_clipnorm_per_tensor_differs_ours_does_not(two_replica_strategy):
    """Per-tensor clip: tfclip_compat.ClipByNorm on 2 replicas == 1 device; Keras' clipnorm differs."""
    def ours():
        return tfc.wrap_optimizer(keras.optimizers.SGD(0.1), tfc.ClipByNorm(CLIP))

    np.testing.assert_allclose(
        fit(ours, two_replica_strategy)["weights"], fit(ours)["weights"], rtol=1e-5, atol=1e-7
    )

    def theirs():
        return keras.optimizers.SGD(0.1, clipnorm=CLIP)

    assert max_abs_diff(fit(theirs, two_replica_strategy)["weights"], fit(theirs)["weights"]) > 1e-3


def _adaptive():
    chain = tfc.Chain(
        tfc.SkipOnSpike(std_factor=2.0, window=4, min_history=2),
        tfc.AutoClip(percentile=50.0, history_size=8),
        tfc.ZClip(alpha=0.9, warmup_steps=2),
    )
    return tfc.wrap_optimizer(keras.optimizers.Adam(0.05), tfc.ClipStatistics(chain))


def test_fit_adaptive_transforms_two_replicas_equal_one_device(two_replica_strategy):
    """Stateful transforms (spike skip, AutoClip, ZClip) in fit: weights and their state agree 1 vs 2."""
    one = fit(_adaptive)
    two = fit(_adaptive, two_replica_strategy)
    np.testing.assert_allclose(two["weights"], one["weights"], rtol=1e-5, atol=1e-7)
    counts_one = one["optimizer"].transform.result()
    counts_two = two["optimizer"].transform.result()
    assert int(counts_one["steps"]) == 8 and int(counts_one["clip_count"]) >= 1
    for key in ("steps", "clip_count", "skip_count"):
        assert int(counts_two[key]) == int(counts_one[key]), key
    assert two["iterations"] == one["iterations"] == 8 - int(counts_one["skip_count"])


@pytest.mark.parametrize(
    "compile_kwargs",
    [{"run_eagerly": True}, {"jit_compile": True}],
    ids=["eager", "jit_compile"],
)
def test_fit_eager_and_xla_equal_compiled(compile_kwargs):
    """model.fit run eagerly, and compiled with XLA, trains like the default tf.function (1 device)."""
    def make():  # stateful, and cheap to compile with XLA (AutoClip's sort takes seconds)
        chain = tfc.Chain(tfc.ZClip(alpha=0.9, warmup_steps=2), tfc.ClipByGlobalNorm(CLIP))
        return tfc.wrap_optimizer(keras.optimizers.Adam(0.05), tfc.ClipStatistics(chain), nonfinite="skip")

    reference = fit(make)
    other = fit(make, **compile_kwargs)
    np.testing.assert_allclose(other["weights"], reference["weights"], rtol=1e-5, atol=1e-7)
    assert other["iterations"] == reference["iterations"]


def test_fit_eager_two_replicas_equal_one_device(two_replica_strategy):
    """run_eagerly=True under MirroredStrategy (replica threads, no tf.function) == 1 device."""
    two = fit(ours_sgd, two_replica_strategy, run_eagerly=True)
    np.testing.assert_allclose(two["weights"], fit_one_device(ours_sgd)["weights"], rtol=1e-5, atol=1e-7)


class _SGDWithOwnApply(keras.optimizers.SGD):
    """An optimizer class that overrides ``apply``: its aggregation is not switched off."""

    def apply(self, grads, trainable_variables=None):
        return super().apply(grads, trainable_variables)


def test_fallback_for_optimizers_overriding_apply(two_replica_strategy):
    """An inner optimizer overriding apply gets the replica-0-only fallback: still 2 replicas == 1 device."""
    def make():
        opt = tfc.clip_gradients_by_norm(_SGDWithOwnApply(0.1, name="sgd_own_apply"), CLIP)
        assert opt._switch is None
        return opt

    np.testing.assert_allclose(
        fit(make, two_replica_strategy)["weights"], fit_one_device(ours_sgd)["weights"], rtol=1e-5, atol=1e-7
    )


def test_nested_wrappers_aggregate_once(two_replica_strategy):
    """A wrapper around a wrapper: the gradient is aggregated once; 2 replicas == 1 device."""
    def make():
        inner = tfc.wrap_optimizer(keras.optimizers.SGD(0.1), tfc.ClipByValue(0.05))
        return tfc.clip_gradients_by_norm(inner, CLIP)

    one = fit(make)
    np.testing.assert_allclose(fit(make, two_replica_strategy)["weights"], one["weights"], rtol=1e-5, atol=1e-7)
    # and the inner clip by value does bite: not the same as the global-norm clip alone
    assert max_abs_diff(one["weights"], fit_one_device(ours_sgd)["weights"]) > 1e-4


def _collectives_in_train_step(make_optimizer, strategy):
    """Number of CollectiveReduceV2 ops in one traced ``strategy.run(train_step)``."""
    with strategy.scope():
        model = make_model()
        model.compile(optimizer=make_optimizer(), loss="mse")
        model.optimizer.build(model.trainable_variables)
    x, y = tf.constant(X[:BATCH]), tf.constant(Y[:BATCH])

    @tf.function
    def step(x, y):
        strategy.run(model.train_step, args=((x, y),))

    graph = step.get_concrete_function(x, y).graph
    return sum(op.type == "CollectiveReduceV2" for op in graph.get_operations())


def test_one_gradient_all_reduce_per_step(two_replica_strategy):
    """Ours all-reduces as often as plain Keras (the inner's is switched off); the fallback does it twice."""
    plain = _collectives_in_train_step(lambda: keras.optimizers.SGD(0.1), two_replica_strategy)
    ours = _collectives_in_train_step(ours_sgd, two_replica_strategy)
    fallback = _collectives_in_train_step(
        lambda: tfc.clip_gradients_by_norm(_SGDWithOwnApply(0.1, name="sgd_own_apply"), CLIP),
        two_replica_strategy,
    )
    assert plain >= 1 and ours == plain and fallback == 2 * plain, (plain, ours, fallback)
