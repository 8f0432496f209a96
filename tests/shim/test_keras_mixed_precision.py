"""Mixed precision: the wrapper composed with Keras' LossScaleOptimizer, in both orders.

* A: ``LossScaleOptimizer(wrapper)`` -- what ``model.compile`` builds under ``mixed_float16``;
* B: ``wrapper(LossScaleOptimizer)`` -- the wrapper unscales before its transform, rescales after.

float16 forward/backward passes round differently for a batch of 8 and two batches of 4, so
"2 replicas == 1 device" holds to float16 noise here (measured: 2e-4 absolute without any
clipping), not to rtol 1e-5; Keras' ``global_clipnorm`` under the same comparison is far off.
The initial loss scale is 2**10 so that no step overflows on either layout (with 2**15 the
first steps overflow on 1 device but not on 2 half batches: a skipped-step difference that
has nothing to do with clipping).
"""

from __future__ import annotations

import _requires_keras3  # noqa: F401 - skips this module on Keras 2 (TF 2.15)

import keras
import numpy as np
import pytest
import tensorflow as tf

import tfclip_compat as tfc
from _keras_fit_lib import CLIP, dataset, make_model, max_abs_diff, weights

LSO = keras.optimizers.LossScaleOptimizer
SCALE = 2.0 ** 10


@pytest.fixture
def mixed_float16():
    """The mixed_float16 global policy, for one test."""
    keras.config.set_dtype_policy("mixed_float16")
    yield
    keras.config.set_dtype_policy("float32")


def _fit(make_optimizer, strategy=None, auto_scale_loss=True):
    scope = strategy.scope() if strategy is not None else tf.name_scope("one_device")
    with scope:
        model = make_model(dtype="mixed_float16")
        model.compile(optimizer=make_optimizer(), loss="mse", auto_scale_loss=auto_scale_loss)
    history = model.fit(dataset(), epochs=2, verbose=0, shuffle=False)
    return model, history.history["loss"]


def _order_a():
    return LSO(tfc.clip_gradients_by_norm(keras.optimizers.SGD(0.05), CLIP), initial_scale=SCALE)


def _order_b():
    return tfc.clip_gradients_by_norm(LSO(keras.optimizers.SGD(0.05), initial_scale=SCALE), CLIP)


def _keras_global_clipnorm():
    return LSO(keras.optimizers.SGD(0.05, global_clipnorm=CLIP), initial_scale=SCALE)


def test_compile_puts_the_loss_scale_optimizer_outside(mixed_float16):
    """compile(optimizer=wrapper) under mixed_float16 builds order A: LossScaleOptimizer(wrapper)."""
    model = make_model(dtype="mixed_float16")
    model.compile(optimizer=tfc.clip_gradients_by_norm(keras.optimizers.SGD(0.05), CLIP), loss="mse")
    assert isinstance(model.optimizer, LSO)
    assert isinstance(model.optimizer.inner_optimizer, tfc.TransformedKerasOptimizer)


def test_both_orders_train_and_two_replicas_equal_one_device(mixed_float16, two_replica_strategy):
    """Orders A and B: loss falls, no step skipped, 1 device A == B (1 ulp), 2 replicas == 1 device
    to float16 noise (atol 1e-3), while Keras' global_clipnorm differs by more than 1e-2."""
    model_a, loss_a = _fit(_order_a)
    model_b, _ = _fit(_order_b, auto_scale_loss=False)
    assert loss_a[-1] < loss_a[0]
    assert int(model_a.optimizer.iterations.numpy()) == int(model_b.optimizer.iterations.numpy()) == 8
    # B's unscale/rescale by a power of two is exact: A and B are bit-identical in eager mode
    # and with Grappler's arithmetic optimizer off; compiled, Grappler reassociates the
    # scale chain and they differ by at most an ulp (measured 3e-8).
    np.testing.assert_allclose(weights(model_b), weights(model_a), rtol=1e-6, atol=1e-9)
    two_a, _ = _fit(_order_a, two_replica_strategy)
    two_b, _ = _fit(_order_b, two_replica_strategy, auto_scale_loss=False)
    np.testing.assert_allclose(weights(two_a), weights(model_a), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(weights(two_b), weights(model_a), rtol=1e-3, atol=1e-3)
    keras_one, _ = _fit(_keras_global_clipnorm)
    keras_two, _ = _fit(_keras_global_clipnorm, two_replica_strategy)
    assert max_abs_diff(weights(keras_two), weights(keras_one)) > 1e-2


def test_second_loss_scale_optimizer_is_refused(mixed_float16):
    """compile() wrapping order B in another LossScaleOptimizer would scale twice: a clear ValueError."""
    model = make_model(dtype="mixed_float16")
    with pytest.raises(ValueError, match="scaled twice.*auto_scale_loss=False"):
        model.compile(optimizer=_order_b(), loss="mse")


def test_raise_policy_cannot_wrap_a_loss_scale_optimizer():
    """nonfinite='raise' around a LossScaleOptimizer (which overflows by design) is refused at construction."""
    with pytest.raises(ValueError, match="nonfinite='raise' cannot wrap a LossScaleOptimizer"):
        tfc.clip_gradients_by_norm(LSO(keras.optimizers.SGD(0.1)), 1.0, nonfinite="raise")


def _overflow_on_replica_1(opt, strategy, w):
    """One good step, then one whose gradient is inf on replica 1 only."""

    @tf.function
    def step(bad_replica):
        def replica_fn():
            rid = tf.distribute.get_replica_context().replica_id_in_sync_group
            grad = tf.where(tf.equal(rid, bad_replica), np.inf, 1.0) * tf.ones([2])
            opt.apply_gradients([(grad, w)])

        strategy.run(replica_fn)

    step(tf.constant(-1))
    after_good = w.numpy().copy()
    step(tf.constant(1))
    return after_good


def test_order_b_sees_an_overflow_on_any_replica(two_replica_strategy):
    """B aggregates first, so an inf on replica 1 alone is skipped everywhere and halves the scale
    (Keras' LossScaleOptimizer alone looks at replica 0's local gradient only)."""
    with two_replica_strategy.scope():
        w = tf.Variable([1.0, 2.0])
        lso = LSO(keras.optimizers.SGD(0.1), initial_scale=4.0)
        opt = tfc.clip_gradients_by_norm(lso, 1.0)
        opt.build([w])
    after_good = _overflow_on_replica_1(opt, two_replica_strategy, w)
    np.testing.assert_allclose(after_good, [0.95, 1.95])  # grads 2 * 1.0 / scale 4 -> norm 0.71 < 1
    np.testing.assert_array_equal(w.numpy(), after_good)
    assert float(lso.dynamic_scale.numpy()) == 2.0 and int(opt.iterations.numpy()) == 1


def test_order_a_with_skip_keeps_the_weights(two_replica_strategy):
    """A with nonfinite='skip': the aggregated inf is skipped on every replica, weights stay finite."""
    with two_replica_strategy.scope():
        w = tf.Variable([1.0, 2.0])
        opt = LSO(tfc.clip_gradients_by_norm(keras.optimizers.SGD(0.1), 1.0, nonfinite="skip"), initial_scale=4.0)
        opt.build([w])
    after_good = _overflow_on_replica_1(opt, two_replica_strategy, w)
    np.testing.assert_array_equal(w.numpy(), after_good)
    assert int(opt.iterations.numpy()) == 1


def test_transform_skip_never_hides_an_overflow_from_the_loss_scale_optimizer():
    """B with SkipNonFinite in the chain: an overflow still reaches the LossScaleOptimizer, which
    halves its scale (a skip before it would leave the scale too high for ever)."""
    w = tf.Variable([1.0, 2.0])
    lso = LSO(keras.optimizers.SGD(0.1), initial_scale=4.0)
    opt = tfc.wrap_optimizer(lso, tfc.Chain(tfc.SkipNonFinite(), tfc.ClipByGlobalNorm(1.0)), nonfinite="skip")
    step = tf.function(lambda g: opt.apply_gradients([(g, w)]))
    step(tf.constant([np.inf, 1.0]))
    assert float(lso.dynamic_scale.numpy()) == 2.0
    np.testing.assert_array_equal(w.numpy(), [1.0, 2.0])
    step(tf.constant([0.4, 0.0]))  # scaled by 2: applied gradient 0.2
    np.testing.assert_allclose(w.numpy(), [0.98, 2.0])
    assert int(opt.iterations.numpy()) == 1
