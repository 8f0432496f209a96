"""Stateful transforms under MirroredStrategy: 2 replicas train and keep statistics exactly like 1 device."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

import tfclip_compat as tfc

V1 = tf.compat.v1
RNG = np.random.RandomState(11)
X = RNG.randn(8, 3).astype(np.float32)
Y = (RNG.randn(8, 2) * 2).astype(np.float32)
SCALES = [1.0, 1.1, 0.9, 1.0, 25.0, 1.0, float("nan"), 1.2, 0.8]


_STRATEGY = []


def _two_replica_strategy():
    """A 2-replica MirroredStrategy over the 2 logical CPUs of tests/conftest.py.

    It reduces with ``ReductionToOneDevice`` rather than collective ops: collective instance
    keys are process-global, and a second collective-based strategy in the same pytest process
    (tests/test_distributed.py has one) aborts with "Shape mismatch in the collective
    instance". The aggregation is the same all-reduce (SUM) seen by the transforms.
    """
    devices = tf.config.list_logical_devices("CPU")
    if len(devices) < 2:
        pytest.skip("needs the 2 logical CPUs set up by tests/conftest.py")
    if not _STRATEGY:
        _STRATEGY.append(
            tf.distribute.MirroredStrategy(
                [d.name for d in devices[:2]], cross_device_ops=tf.distribute.ReductionToOneDevice()
            )
        )
    return _STRATEGY[0]


def make_transform():
    """Every stateful transform, measured by ClipStatistics."""
    return tfc.ClipStatistics(
        tfc.Chain(
            tfc.SkipNonFinite(),
            tfc.SkipOnSpike(std_factor=3.0, window=5, min_history=3),
            tfc.AutoClip(percentile=30.0, history_size=6),
            tfc.ZClip(alpha=0.9, warmup_steps=3),
            tfc.AdaptiveClipping(quick_start=True),
            tfc.Select(tfc.AdaptiveGradClip(0.05), exclude="bias"),
        ),
        per_variable_norms=True,
    )


def _run(strategy, kind):
    """Train kernel/bias on the global batch (X, Y*scale) under ``strategy``; return all state.

    Momentum SGD (not Adam): its update is not scale-invariant, so a wrongly scaled aggregate
    gradient would show in the weights.
    """
    with strategy.scope():
        kernel = tf.Variable(np.ones((3, 2), np.float32), name="kernel")
        bias = tf.Variable(np.zeros((2,), np.float32), name="bias")
        transform = make_transform()
        if kind == "keras":
            opt = tfc.wrap_optimizer(tf.keras.optimizers.SGD(0.05, momentum=0.9), transform)
            opt.build([kernel, bias])
        else:
            opt = tfc.wrap_optimizer(V1.train.MomentumOptimizer(0.05, momentum=0.9), transform)
            transform.build([kernel, bias])
    n = strategy.num_replicas_in_sync
    ds = tf.data.Dataset.from_tensor_slices(X).batch(len(X))
    x_dist = next(iter(strategy.experimental_distribute_dataset(ds)))

    def replica_step(x, scale):
        ctx = tf.distribute.get_replica_context()
        per = len(X) // n
        y = tf.constant(Y)[ctx.replica_id_in_sync_group * per:(ctx.replica_id_in_sync_group + 1) * per]
        with tf.GradientTape() as tape:
            # Each replica's share of the global-batch mean loss (the aggregate is the full loss).
            loss = tf.reduce_sum(tf.square(tf.matmul(x, kernel) + bias - y * scale)) / (len(X) * 2)
        grads = tape.gradient(loss, [kernel, bias])
        opt.apply_gradients(zip(grads, [kernel, bias]))

    @tf.function
    def step(x, scale):
        strategy.run(replica_step, args=(x, scale))

    for s in SCALES:
        step(x_dist, tf.constant(s, tf.float32))
    state = {"kernel": kernel.numpy(), "bias": bias.numpy()}
    for v in transform.variables:
        local = [t.numpy() for t in strategy.experimental_local_results(v)]
        for other in local[1:]:
            np.testing.assert_array_equal(other, local[0], err_msg=f"replicas differ: {v.name}")
        state[v.name] = local[0]
    return state


@pytest.mark.parametrize("kind", ["keras", "v1"])
def test_two_replicas_equal_one_device(kind):
    """Weights and every transform statistic: 2 MirroredStrategy replicas == 1 device (rtol 1e-5)."""
    two = _two_replica_strategy()
    one = tf.distribute.OneDeviceStrategy("/cpu:0")
    want = _run(one, kind)
    got = _run(two, kind)
    assert got.keys() == want.keys()
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-7, err_msg=name)
    skip_count = [v for k, v in want.items() if k.endswith("skip_count:0")]
    assert skip_count and int(skip_count[0]) == 2  # the spike and the NaN step
