"""Split the host CPU into two logical devices before TensorFlow's runtime starts, so
``tf.distribute.MirroredStrategy`` tests have two real replicas.

Called by the conftest of each test folder that runs TensorFlow (``tests/shim``,
``tests/proofs``, ``tests/fuzz``); the codemod and CLI tests (``tests/codemods``) never import
TensorFlow, so a codemod-only run does not pay for it.
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def configure() -> None:
    """Two logical CPUs (idempotent; a no-op when TensorFlow is not installed)."""
    try:
        import tensorflow as tf
    except ImportError:  # pragma: no cover - the dev extra always installs it
        return
    cpus = tf.config.list_physical_devices("CPU")
    if len(tf.config.get_logical_device_configuration(cpus[0]) or ()) >= 2:
        return
    tf.config.set_logical_device_configuration(
        cpus[0], [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()]
    )
