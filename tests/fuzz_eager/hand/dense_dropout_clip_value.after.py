import numpy as np
import tensorflow as tf

tf.random.set_seed(1)

class Model(tf.keras.layers.Layer):
    @tf.compat.v1.keras.utils.track_tf1_style_variables
    def call(self, x):
        with tf.compat.v1.variable_scope("model"):
            h = tf.compat.v1.layers.dense(x, 8, activation=tf.nn.relu)
            h = tf.compat.v1.layers.dropout(h, rate=0.3, training=True, seed=3)
            pred = tf.compat.v1.layers.dense(h, 1)
        return pred

model = Model()
opt = tf.compat.v1.train.AdamOptimizer(0.01)

@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        pred = model(x)
        loss = tf.reduce_mean(tf.square(pred - y))
    variables = model.trainable_variables
    grads = tape.gradient(loss, variables)
    capped = [(tf.clip_by_value(g, -0.05, 0.05), v) for g, v in zip(grads, variables)]
    opt.apply_gradients(capped)
    return loss

rng = np.random.RandomState(0)
xd = rng.randn(16, 4).astype(np.float32)
yd = rng.randn(16, 1).astype(np.float32)
for step in range(5):
    l = train_step(xd, yd)
    print("step", step, "loss", repr(float(l)))
