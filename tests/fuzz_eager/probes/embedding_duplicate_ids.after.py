import numpy as np
import tensorflow as tf

tf.random.set_seed(0)


class Model(tf.keras.layers.Layer):
    @tf.compat.v1.keras.utils.track_tf1_style_variables
    def call(self, ids):
        embedding = tf.compat.v1.get_variable("embedding", [5, 3])
        return tf.nn.embedding_lookup(embedding, ids)


model = Model()
optimizer = tf.compat.v1.train.AdamOptimizer(0.1)


@tf.function
def train_step(ids, targets):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(ids) - targets))
    variables = model.trainable_variables
    optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
    return loss


ids = np.array([1, 1, 3], np.int32)
targets = np.random.RandomState(0).randn(3, 3).astype(np.float32)
print("loss", repr(float(train_step(ids, targets))))
