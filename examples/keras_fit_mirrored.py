"""model.fit under MirroredStrategy with tfclip_compat clipping the AGGREGATED gradient.

Runs on a CPU-only machine: the CPU is split into 2 logical devices, one replica each (on a
GPU machine, drop that block and MirroredStrategy() takes the GPUs). Each global batch of 64
is split 32 + 32; the optimizer all-reduces the gradients first and clips their global norm at 2.0,
so the training is the one a single device would do on the whole batch. (Keras'
``global_clipnorm=2.0`` would clip each replica's half-batch gradient instead.)

    python examples/keras_fit_mirrored.py

Prints the loss per epoch, the clip statistics (how many steps were clipped), and checks
that a ``model.save`` / ``keras.models.load_model`` round trip keeps the optimizer.
"""

import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

# Before anything else touches the runtime: 2 logical CPUs, so MirroredStrategy has 2 replicas.
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import keras  # noqa: E402

import tfclip_compat  # noqa: E402  (also registers the optimizer for load_model)

keras.utils.set_random_seed(0)
rng = np.random.RandomState(0)
x = rng.randn(1024, 20).astype(np.float32)
y = (np.sin(x[:, :1]) * 3 + x[:, 1:2] ** 2 + 0.1 * rng.randn(1024, 1)).astype(np.float32)
dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(64)  # 64 = the GLOBAL batch

strategy = tf.distribute.MirroredStrategy([d.name for d in tf.config.list_logical_devices("CPU")[:2]])
print(f"replicas in sync: {strategy.num_replicas_in_sync}")

with strategy.scope():
    model = keras.Sequential([
        keras.Input((20,)),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(1),
    ])
    # The obvious call: clip the global norm at 2.0, like tf.contrib's clip_gradients_by_norm...
    # ...or any transform; here the clip is measured by ClipStatistics.
    stats = tfclip_compat.ClipStatistics(tfclip_compat.ClipByGlobalNorm(2.0))
    optimizer = tfclip_compat.wrap_optimizer(keras.optimizers.Adam(3e-3), stats, nonfinite="skip")
    model.compile(optimizer=optimizer, loss="mse")

history = model.fit(dataset, epochs=5, verbose=0, shuffle=False)
for epoch, loss in enumerate(history.history["loss"]):
    print(f"epoch {epoch}  loss {loss:.4f}")
counts = stats.result()
print(f"steps {int(counts['steps'])}  clipped {int(counts['clip_count'])}  "
      f"skipped {int(counts['skip_count'])}  last global norm {float(counts['global_norm']):.3f}")

path = os.path.join(tempfile.mkdtemp(), "model.keras")
model.save(path)
restored = keras.models.load_model(path)
print(f"reloaded optimizer: {type(restored.optimizer).__name__} around "
      f"{type(restored.optimizer.optimizer).__name__}, iterations {int(restored.optimizer.iterations)}")
