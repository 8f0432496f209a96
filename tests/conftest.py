"""Test session setup.

When TensorFlow is installed, split the host CPU into two logical devices before the
runtime starts, so ``tf.distribute.MirroredStrategy`` tests have two real replicas.
Tests that must not import TensorFlow (the CLI, the codemods) check that in a subprocess.
"""

import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


@pytest.fixture(autouse=True)
def _tfclip_migrate_cache(tmp_path_factory, monkeypatch):
    """tfclip-migrate's result cache: a fresh directory for each test (and the subprocesses it
    starts), never the user's ~/.cache, and never a result computed by another test."""
    monkeypatch.setenv("TFCLIP_MIGRATE_CACHE_DIR", str(tmp_path_factory.mktemp("tfclip-cache")))


try:  # noqa: SIM105 - TensorFlow is an optional extra
    import tensorflow as tf
except ImportError:  # pragma: no cover - the dev extra always installs it
    tf = None

if tf is not None:
    _cpus = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(
        _cpus[0], [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()]
    )


if tf is not None:

    @pytest.fixture(scope="session")
    def two_replica_strategy():
        """The one ``MirroredStrategy`` over the 2 logical CPUs, shared by every test.

        Several MirroredStrategy objects in one process reuse collective instance keys and
        abort each other's collectives ("Shape mismatch in the collective instance"), so all
        distributed tests in the session must use this one.
        """
        devices = tf.config.list_logical_devices("CPU")
        assert len(devices) >= 2, "conftest failed to create 2 logical CPUs"
        return tf.distribute.MirroredStrategy([d.name for d in devices[:2]])
