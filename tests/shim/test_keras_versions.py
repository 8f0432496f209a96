"""The Keras optimizer wrapper on the installed Keras: Keras 2 (TF 2.15) and Keras 3 (TF >= 2.16).

Only the API both Keras versions have (``apply_gradients``, ``model.fit``, ``tf.train.Checkpoint``,
``MirroredStrategy``); the Keras 3 specifics are in ``test_keras_*.py``. ``.ci/run`` runs this
file on both ends of the supported range.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

import tfclip_compat as tfc
from _tf_versions import KERAS_MAJOR

RNG = np.random.RandomState(5)
X = RNG.randn(32, 3).astype(np.float32)
Y = (X @ np.array([[1.0], [2.0], [3.0]], np.float32) * 10).astype(np.float32)
CLIP = 1.0


def _model():
    inputs = tf.keras.Input(shape=(3,))
    outputs = tf.keras.layers.Dense(1, kernel_initializer="ones", bias_initializer="zeros")(inputs)
    return tf.keras.Model(inputs, outputs)


def test_eager_and_tf_function_steps_clip_then_apply():
    """Two SGD steps (eager, then in tf.function) apply the clipped gradient and count iterations."""
    v = tf.Variable([3.0, 4.0])
    opt = tfc.clip_gradients_by_norm(tf.keras.optimizers.SGD(0.5), CLIP)
    opt.apply_gradients([(tf.constant([6.0, 8.0]), v)])  # norm 10 -> [0.6, 0.8]
    np.testing.assert_allclose(v.numpy(), [2.7, 3.6], rtol=1e-6)

    @tf.function
    def step():
        opt.apply_gradients([(tf.constant([6.0, 8.0]), v)])

    step()
    np.testing.assert_allclose(v.numpy(), [2.4, 3.2], rtol=1e-6)
    assert int(opt.iterations) == 2 and int(opt.optimizer.iterations) == 2


def test_model_fit_equals_a_loop_with_tf_clip_by_global_norm():
    """model.fit with the wrapper trains bit for bit like a loop clipping with tf.clip_by_global_norm."""
    fitted = _model()
    fitted.compile(optimizer=tfc.clip_gradients_by_norm(tf.keras.optimizers.SGD(0.01), CLIP), loss="mse")
    fitted.fit(X, Y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    looped, sgd = _model(), tf.keras.optimizers.SGD(0.01)
    for _ in range(2):
        for i in range(0, len(X), 8):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(looped(X[i:i + 8]) - Y[i:i + 8]))
            grads, norm = tf.clip_by_global_norm(tape.gradient(loss, looped.trainable_variables), CLIP)
            assert float(norm) > CLIP  # the clip is active on every step
            sgd.apply_gradients(zip(grads, looped.trainable_variables))
    for a, b in zip(fitted.trainable_variables, looped.trainable_variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert int(fitted.optimizer.iterations) == 8


def test_skip_policy_leaves_weights_slots_and_iterations():
    """nonfinite='skip': a NaN gradient changes no weight, Adam slot or iterations."""
    w = tf.Variable([1.0, 2.0])
    opt = tfc.clip_gradients_by_norm(tf.keras.optimizers.Adam(0.1), CLIP, nonfinite="skip")
    opt.apply_gradients([(tf.constant([1.0, 1.0]), w)])
    before = [w.numpy()] + [x.numpy() for x in opt.optimizer.variables]
    opt.apply_gradients([(tf.constant([np.nan, 1.0]), w)])
    after = [w.numpy()] + [x.numpy() for x in opt.optimizer.variables]
    assert len(before) >= 4  # w, iterations, m, v (+ learning rate on Keras 2)
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)
    assert int(opt.iterations) == 1


def test_checkpoint_is_interchangeable_with_the_bare_optimizer(tmp_path):
    """A checkpoint of the wrapper has the bare optimizer's keys and restores into a bare optimizer."""
    w = tf.Variable([1.0, 2.0])
    opt = tfc.clip_gradients_by_norm(tf.keras.optimizers.Adam(0.1), CLIP)
    for _ in range(3):
        opt.apply_gradients([(tf.constant([3.0, -4.0]), w)])
    path = tf.train.Checkpoint(optimizer=opt, w=w).save(str(tmp_path / "wrapped"))
    bare_w = tf.Variable([1.0, 2.0])
    bare = tf.keras.optimizers.Adam(0.1)
    bare.apply_gradients([(tf.constant([0.0, 0.0]), bare_w)])
    bare_path = tf.train.Checkpoint(optimizer=bare, w=bare_w).save(str(tmp_path / "bare"))
    keys = sorted(n for n, _ in tf.train.list_variables(path))
    assert keys == sorted(n for n, _ in tf.train.list_variables(bare_path))
    tf.train.Checkpoint(optimizer=bare, w=bare_w).restore(path).assert_consumed()
    np.testing.assert_array_equal(bare_w.numpy(), w.numpy())
    assert int(bare.iterations) == 3
    for a, b in zip(opt.optimizer.variables, bare.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_two_replicas_clip_the_aggregated_gradient_like_one_device(two_replica_strategy):
    """MirroredStrategy, 2 replicas: the norm is the aggregated gradient's, as on one device."""

    def run(strategy):
        with strategy.scope():
            w = tf.Variable([[1.0], [1.0], [1.0]])
            opt = tfc.clip_gradients_by_norm(tf.keras.optimizers.SGD(0.05), CLIP)
            opt.build([w])
        ds = strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices((X, Y)).batch(16))

        def replica_step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(tf.square(tf.matmul(x, w) - y)) / 16.0
            opt.apply_gradients([(tape.gradient(loss, w), w)])

        @tf.function
        def step(x, y):
            strategy.run(replica_step, args=(x, y))

        for x, y in ds:
            step(x, y)
        return w.numpy(), int(opt.iterations.numpy())

    one, steps_one = run(tf.distribute.OneDeviceStrategy("/cpu:0"))
    two, steps_two = run(two_replica_strategy)
    assert steps_one == steps_two == 2
    np.testing.assert_allclose(two, one, rtol=1e-6)
    assert np.abs(one - 1.0).max() > 0.01  # it trained


@pytest.mark.skipif(KERAS_MAJOR >= 3, reason="Keras 3 supports a LossScaleOptimizer inside (test_keras_mixed_precision.py)")
def test_keras2_refuses_a_loss_scale_optimizer_inside():
    """On Keras 2 a LossScaleOptimizer inside the wrapper is refused with a clear ValueError."""
    lso = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(0.1))
    with pytest.raises(ValueError, match="Keras 2.*LossScaleOptimizer"):
        tfc.clip_gradients_by_norm(lso, CLIP)
