"""The shim's tests run TensorFlow: two logical CPUs before the runtime starts, and the one
``MirroredStrategy`` every distributed test shares."""

import pytest

import _tf_devices

_tf_devices.configure()


@pytest.fixture(scope="session")
def two_replica_strategy():
    """The one ``MirroredStrategy`` over the 2 logical CPUs, shared by every test.

    Several MirroredStrategy objects in one process reuse collective instance keys and
    abort each other's collectives ("Shape mismatch in the collective instance"), so all
    distributed tests in the session must use this one.
    """
    import tensorflow as tf

    devices = tf.config.list_logical_devices("CPU")
    assert len(devices) >= 2, "conftest failed to create 2 logical CPUs"
    return tf.distribute.MirroredStrategy([d.name for d in devices[:2]])
