import numpy as np
import tensorflow as tf

tf.random.set_seed(0)


class Model(tf.keras.layers.Layer):
    @tf.compat.v1.keras.utils.track_tf1_style_variables
    def call(self, images, training=False):
        with tf.compat.v1.variable_scope("model"):
            return tf.compat.v1.layers.batch_normalization(images, momentum=0.5, training=training)


model = Model()
optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)


@tf.function
def train_step(images):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(images, training=True)))
    variables = [v for v in model._tf1_style_var_store._vars.values() if v.trainable]
    optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
    return loss


data = np.random.RandomState(0).randn(2, 2, 2, 3).astype(np.float32) * 3.0
print("loss", repr(float(train_step(data))))
