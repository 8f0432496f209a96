"""Seed 003, example 1: already TF 2 (a Keras optimizer, a tape, clip_by_global_norm in a tf.function);
not a session script, so TFC301 must leave it byte-identical."""
import numpy as np
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(4, activation="relu"), tf.keras.layers.Dense(1)])
loss_function = tf.keras.losses.MeanSquaredError()
optimizer = tf.keras.optimizers.Adam(learning_rate=1e-3)


@tf.function
def train_step(images, labels):
    with tf.GradientTape() as tape:
        predictions = model(images)
        loss = loss_function(labels, predictions)

    gradients = tape.gradient(loss, model.trainable_variables)
    gradients, _ = tf.clip_by_global_norm(gradients, clip_norm=1.0)  # Clip norm to 1.0

    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss


data = np.random.RandomState(0).randn(8, 3).astype(np.float32)
for step in range(3):
    print("step", step, "loss", repr(float(train_step(data, data[:, :1]))))
