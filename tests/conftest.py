"""Test session setup.

When TensorFlow is installed, split the host CPU into two logical devices before the
runtime starts, so ``tf.distribute.MirroredStrategy`` tests have two real replicas.
Tests that must not import TensorFlow (the CLI, the codemods) check that in a subprocess.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

try:  # noqa: SIM105 - TensorFlow is an optional extra
    import tensorflow as tf
except ImportError:  # pragma: no cover - the dev extra always installs it
    tf = None

if tf is not None:
    _cpus = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(
        _cpus[0], [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()]
    )
