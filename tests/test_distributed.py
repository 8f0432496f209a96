"""Distributed tests: the wrappers clip the cross-replica aggregated gradient (N replicas == 1 device)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

import tfclip_compat

V1 = tf.compat.v1
STEPS = 6
CLIP = 0.5
RNG = np.random.RandomState(3)
X = RNG.randn(8, 3).astype(np.float32) * 2
Y = (RNG.randn(8, 1) * 5).astype(np.float32)
W0 = RNG.randn(3, 1).astype(np.float32) * 3


def _keras_run(strategy, mode):
    """Train ``w`` for STEPS steps on the global batch (X, Y); mode: 'shim' or 'naive'."""
    with strategy.scope():
        w = tf.Variable(W0)
        inner = tf.keras.optimizers.SGD(0.1)
        opt = tfclip_compat.clip_gradients_by_norm(inner, CLIP) if mode == "shim" else inner
        if mode == "shim":
            opt.build([w])
        else:
            inner.build([w])
    n = strategy.num_replicas_in_sync
    ds = tf.data.Dataset.from_tensor_slices((X, Y)).batch(len(X)).repeat()
    it = iter(strategy.experimental_distribute_dataset(ds))

    def replica_step(x, y):
        with tf.GradientTape() as tape:
            # Per-replica share of the global-batch mean loss.
            loss = tf.reduce_sum(tf.square(tf.matmul(x, w) - y)) / len(X)
        g = tape.gradient(loss, w)
        if mode == "naive":
            (g,), _ = tf.clip_by_global_norm([g], CLIP)  # clips each replica's part: the defect
        opt.apply_gradients([(g, w)])

    @tf.function
    def step(x, y):
        strategy.run(replica_step, args=(x, y))

    for _ in range(STEPS):
        x, y = next(it)
        step(x, y)
    assert n >= 1
    return w.numpy()


def test_mirrored_keras_two_replicas_equal_one_device(two_replica_strategy):
    """Keras SGD wrapper: 2 MirroredStrategy replicas train like 1 device; naive clipping does not."""
    two = two_replica_strategy
    one = tf.distribute.OneDeviceStrategy("/cpu:0")
    w_one = _keras_run(one, "shim")
    w_two = _keras_run(two, "shim")
    np.testing.assert_allclose(w_two, w_one, rtol=1e-5)
    w_naive = _keras_run(two, "naive")
    assert not np.allclose(w_naive, w_one, rtol=1e-3), "the naive per-replica clip should differ"


def _v1_run(strategy, mode, adam=False):
    """v1 optimizer inside strategy.run (tf.function): 'shim', or 'naive' tape+clip per replica."""
    with strategy.scope():
        w = tf.Variable(W0)
        inner = V1.train.AdamOptimizer(0.05) if adam else V1.train.GradientDescentOptimizer(0.1)
        opt = tfclip_compat.clip_gradients_by_norm(inner, CLIP) if mode == "shim" else inner
    ds = tf.data.Dataset.from_tensor_slices((X, Y)).batch(len(X)).repeat()
    it = iter(strategy.experimental_distribute_dataset(ds))

    def replica_step(x, y):
        def loss():
            # Per-replica mean; v1 compute_gradients divides by the replica count (TF1 semantics).
            return tf.reduce_mean(tf.square(tf.matmul(x, w) - y))

        if mode == "shim":
            opt.minimize(loss, var_list=[w])
        else:
            with tf.GradientTape() as tape:
                lv = loss() / strategy.num_replicas_in_sync
            (g,), _ = tf.clip_by_global_norm([tape.gradient(lv, w)], CLIP)
            opt.apply_gradients([(g, w)])

    @tf.function
    def step(x, y):
        strategy.run(replica_step, args=(x, y))

    for _ in range(STEPS):
        x, y = next(it)
        step(x, y)
    return w.numpy()


@pytest.mark.parametrize("adam", [False, True], ids=["sgd", "adam"])
def test_mirrored_v1_two_replicas_equal_one_device(adam, two_replica_strategy):
    """v1 optimizer wrapper: 2 MirroredStrategy replicas equal 1 device (rtol 1e-5); naive differs."""
    two = two_replica_strategy
    one = tf.distribute.OneDeviceStrategy("/cpu:0")
    w_one = _v1_run(one, "shim", adam)
    np.testing.assert_allclose(_v1_run(two, "shim", adam), w_one, rtol=1e-5)
    if not adam:  # Adam's normalised step hides most of the clipping difference
        assert not np.allclose(_v1_run(two, "naive", adam), w_one, rtol=1e-3)


def test_mirrored_skip_policy_skips_on_every_replica(two_replica_strategy):
    """nonfinite='skip' under MirroredStrategy: a NaN on one replica skips the step everywhere."""
    two = two_replica_strategy
    with two.scope():
        w = tf.Variable([1.0, 2.0])
        opt = tfclip_compat.clip_gradients_by_norm(tf.keras.optimizers.Adam(0.1), 1.0, nonfinite="skip")
        opt.build([w])

    @tf.function
    def step(bad):
        def replica_fn():
            rid = tf.distribute.get_replica_context().replica_id_in_sync_group
            poison = tf.where(tf.logical_and(bad, tf.equal(rid, 1)), np.nan, 0.0)
            opt.apply_gradients([(tf.constant([1.0, 1.0]) + poison, w)])

        two.run(replica_fn)

    step(tf.constant(False))
    before = [w.numpy()] + [v.numpy() for v in opt.optimizer.variables]
    step(tf.constant(True))
    after = [w.numpy()] + [v.numpy() for v in opt.optimizer.variables]
    for b, a in zip(before, after):
        np.testing.assert_array_equal(b, a)
    step(tf.constant(False))
    assert int(opt.iterations.numpy()) == 2 and np.isfinite(w.numpy()).all()


# --- MultiWorkerMirroredStrategy: two real worker processes on loopback ----------------

_WORKER = textwrap.dedent(
    """
    import json, os, sys
    import numpy as np
    import tensorflow as tf
    import tfclip_compat

    out = sys.argv[1]
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    rng = np.random.RandomState(3)
    X = rng.randn(8, 3).astype(np.float32) * 2
    Y = (rng.randn(8, 1) * 5).astype(np.float32)
    W0 = rng.randn(3, 1).astype(np.float32) * 3
    task = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
    half = slice(0, 4) if task == 0 else slice(4, 8)
    with strategy.scope():
        w = tf.Variable(W0)
        opt = tfclip_compat.clip_gradients_by_norm(tf.keras.optimizers.SGD(0.1), {clip})
        opt.build([w])

    @tf.function
    def step(x, y):
        def replica_fn(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(tf.square(tf.matmul(x, w) - y)) / 8.0
            opt.apply_gradients([(tape.gradient(loss, w), w)])
        strategy.run(replica_fn, args=(x, y))

    for _ in range({steps}):
        step(tf.constant(X[half]), tf.constant(Y[half]))
    np.save(out, w.numpy())
    """
)


def _free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def test_multiworker_two_processes_equal_one_device(tmp_path):
    """MultiWorkerMirroredStrategy, 2 worker processes on loopback: equals 1 device (rtol 1e-5)."""
    script = tmp_path / "worker.py"
    script.write_text(_WORKER.format(clip=CLIP, steps=STEPS))
    ports = _free_ports(2)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    procs = []
    repo = str(Path(__file__).resolve().parents[1])
    for i in range(2):
        env = dict(os.environ)
        env["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}})
        env["TF_CPP_MIN_LOG_LEVEL"] = "2"
        env["PYTHONPATH"] = repo + os.pathsep + env.get("PYTHONPATH", "")
        procs.append(
            subprocess.Popen(
                [sys.executable, str(script), str(tmp_path / f"w{i}.npy")],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
    outputs = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=120)
            outputs.append(out)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, out in zip(procs, outputs):
        assert p.returncode == 0, out[-3000:]
    w_one = _keras_run(tf.distribute.OneDeviceStrategy("/cpu:0"), "shim")
    for i in range(2):
        np.testing.assert_allclose(np.load(tmp_path / f"w{i}.npy"), w_one, rtol=1e-5)
