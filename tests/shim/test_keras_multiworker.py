"""MultiWorkerMirroredStrategy: model.fit with the wrapper in 2 real worker processes on loopback.

Each worker fits the same model on the same global batches (tf.data DATA auto-sharding
splits every global batch of 8 into 4 + 4) with our global-norm clip and with Keras'
``global_clipnorm``; the test process fits on 1 device and compares. The workers patch two
shape/metric reductions of Keras' trainer that fail under MWMS in Keras 3.15 for any
optimizer (keras-team/keras#20585; see the worker source); the train step is Keras' own.
"""

from __future__ import annotations

import _requires_keras3  # noqa: F401 - skips this module on Keras 2 (TF 2.15)

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from _keras_fit_lib import fit_one_device, keras_sgd_global_clipnorm, max_abs_diff, ours_sgd

TESTS = Path(__file__).resolve().parents[1]  # tests/: the shared support modules
REPO = TESTS.parent

_WORKER = textwrap.dedent(
    """
    import sys
    import numpy as np
    import tensorflow as tf
    from keras.src.backend.tensorflow import trainer

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    import _keras_fit_lib
    from _keras_fit_lib import dataset, fit, keras_sgd_global_clipnorm, ours_sgd

    # Keras 3.15's model.fit fails under MultiWorkerMirroredStrategy before and after the
    # train step, whatever the optimizer (keras-team/keras#20585): it MEAN-reduces the first
    # batch to build the model, and the scalar metrics with axis=0. Both only concern shapes and
    # logged metrics; the train step and the optimizer run unpatched.
    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        if iterator is not None:
            for _, _, it in iterator:
                local = self.distribute_strategy.experimental_local_results
                data_batch = tf.nest.map_structure(lambda x: local(x)[0], next(it))
                break
        with self.distribute_strategy.scope():
            self._symbolic_build(data_batch=data_batch)

    _reduce = trainer.reduce_per_replica

    def reduce_per_replica(values, strategy, reduction):
        if reduction in ("auto", "mean") and trainer._collective_all_reduce_multi_worker(strategy):
            return tf.nest.map_structure(lambda v: strategy.reduce("MEAN", v, axis=None), values)
        return _reduce(values, strategy, reduction)

    trainer.TensorFlowTrainer._maybe_symbolic_build = _maybe_symbolic_build
    trainer.reduce_per_replica = reduce_per_replica

    def sharded():
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
        return dataset().with_options(options)

    _keras_fit_lib.dataset = sharded
    ours = fit(ours_sgd, strategy)
    theirs = fit(keras_sgd_global_clipnorm, strategy)
    np.savez(sys.argv[1], ours=ours["weights"], theirs=theirs["weights"], iterations=ours["iterations"])
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


def test_fit_multiworker_two_processes_equal_one_device(tmp_path):
    """MWMS, 2 worker processes: our clip == 1 device (rtol 1e-5) on both workers; Keras' differs."""
    script = tmp_path / "worker.py"
    script.write_text(_WORKER)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in _free_ports(2)]}
    procs = []
    for i in range(2):
        env = dict(os.environ)
        env["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}})
        env["TF_CPP_MIN_LOG_LEVEL"] = "2"
        env["PYTHONPATH"] = os.pathsep.join([str(TESTS), str(REPO), env.get("PYTHONPATH", "")])
        procs.append(subprocess.Popen(
            [sys.executable, str(script), str(tmp_path / f"w{i}.npz")],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        ))
    outputs = []
    try:
        for p in procs:
            outputs.append(p.communicate(timeout=240)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, out in zip(procs, outputs):
        assert p.returncode == 0, out[-3000:]
    one = fit_one_device(ours_sgd)
    keras_one = fit_one_device(keras_sgd_global_clipnorm)
    for i in range(2):
        got = np.load(tmp_path / f"w{i}.npz")
        assert int(got["iterations"]) == one["iterations"] == 8
        np.testing.assert_allclose(got["ours"], one["weights"], rtol=1e-5, atol=1e-7)
        assert max_abs_diff(got["theirs"], keras_one["weights"]) > 1e-3
