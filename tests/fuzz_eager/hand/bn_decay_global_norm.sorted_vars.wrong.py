import numpy as np
import tensorflow as tf

tf.random.set_seed(7)


class Model(tf.keras.layers.Layer):
    @tf.compat.v1.keras.utils.track_tf1_style_variables
    def call(self, inputs, training=False):
        with tf.compat.v1.variable_scope("net"):
            w = tf.compat.v1.get_variable("w", [5, 6], initializer=tf.compat.v1.truncated_normal_initializer(stddev=0.3))
            b = tf.compat.v1.get_variable("b", [6], initializer=tf.compat.v1.zeros_initializer())
            h = tf.matmul(inputs, w) + b
            h = tf.compat.v1.layers.batch_normalization(h, training=training)
            h = tf.nn.relu(h)
            return tf.compat.v1.layers.dense(h, 1, name="out")


model = Model()
global_step = tf.compat.v1.train.get_or_create_global_step()


def lr():
    return tf.compat.v1.train.exponential_decay(0.1, global_step, 2, 0.5, staircase=True)


opt = tf.compat.v1.train.MomentumOptimizer(lr, 0.9)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        pred = model(x, training=True)
        loss = tf.reduce_mean(tf.square(pred - y))
    variables = model.trainable_variables
    grads = tape.gradient(loss, variables)
    grads, _ = tf.clip_by_global_norm(grads, 1.0)
    opt.apply_gradients(zip(grads, variables), global_step=global_step)
    return loss


@tf.function
def eval_loss(x, y):
    pred = model(x, training=False)
    return tf.reduce_mean(tf.square(pred - y)), lr()


rng = np.random.RandomState(1)
x_train = rng.randn(32, 5).astype(np.float32)
y_train = (x_train[:, :1] * 2.0 - x_train[:, 1:2]).astype(np.float32)
x_test = rng.randn(8, 5).astype(np.float32)
y_test = (x_test[:, :1] * 2.0 - x_test[:, 1:2]).astype(np.float32)
for step in range(6):
    train_loss = train_step(x_train, y_train)
    test_loss, rate = eval_loss(x_test, y_test)
    print("step", step, "train", repr(float(train_loss)), "lr", repr(float(rate)),
          "test", repr(float(test_loss)))
