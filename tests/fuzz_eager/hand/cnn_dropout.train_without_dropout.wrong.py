import os

os.environ["TF_USE_LEGACY_KERAS"] = "1"  # tf.compat.v1.layers and track_tf1_style_variables need tf-keras (TF 2.16+)

import numpy as np
import tensorflow as tf

tf.compat.v1.set_random_seed(1)


class Model(tf.keras.layers.Layer):
    """The TF 1 forward pass; ``tf1_variables``: its variables in TF 1's creation order."""

    def __init__(self):
        super().__init__()
        self.tf1_variables = []

    def _record(self, next_creator, **kwargs):
        variable = next_creator(**kwargs)
        self.tf1_variables.append(variable)
        return variable

    @tf.compat.v1.keras.utils.track_tf1_style_variables
    def call(self, x, y, keep_prob):
        # Re-entering the current variable scope makes the layer names (dense, dense_1...) the same
        # on every call, as in the TF 1 graph.
        with tf.variable_creator_scope(self._record), tf.compat.v1.variable_scope(
                tf.compat.v1.get_variable_scope()):
            W_conv1 = tf.compat.v1.get_variable("W_conv1", [3, 3, 1, 4], initializer=tf.compat.v1.truncated_normal_initializer(stddev=0.1))
            b_conv1 = tf.compat.v1.get_variable("b_conv1", [4], initializer=tf.compat.v1.constant_initializer(0.1))
            h_conv1 = tf.nn.relu(tf.compat.v1.nn.conv2d(x, W_conv1, strides=[1, 1, 1, 1], padding="SAME") + b_conv1)
            h_pool1 = tf.compat.v1.nn.max_pool(h_conv1, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
            h_conv2 = tf.compat.v1.layers.conv2d(h_pool1, 6, 3, padding="same", activation=tf.nn.relu, kernel_initializer=tf.compat.v1.glorot_uniform_initializer(), bias_initializer=tf.compat.v1.zeros_initializer())
            h_pool2 = tf.compat.v1.layers.max_pooling2d(h_conv2, 2, 2)
            flat = tf.reshape(h_pool2, [-1, 2 * 2 * 6])
            h_fc = tf.compat.v1.layers.dense(flat, 8, activation=tf.nn.relu, kernel_initializer=tf.compat.v1.glorot_uniform_initializer(), bias_initializer=tf.compat.v1.zeros_initializer())
            h_drop = tf.compat.v1.nn.dropout(h_fc, keep_prob)
            logits = tf.compat.v1.layers.dense(h_drop, 3, kernel_initializer=tf.compat.v1.glorot_uniform_initializer(), bias_initializer=tf.compat.v1.zeros_initializer())
            loss = tf.compat.v1.reduce_mean(tf.compat.v1.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits))
            correct = tf.compat.v1.equal(tf.compat.v1.argmax(logits, 1), tf.compat.v1.argmax(y, 1))
            accuracy = tf.compat.v1.reduce_mean(tf.cast(correct, tf.float32))
        return {"loss": loss, "accuracy": accuracy}


model = Model()
train_op_optimizer = tf.compat.v1.train.AdamOptimizer(0.01)

rng = np.random.RandomState(0)
data = rng.rand(16, 8, 8, 1).astype(np.float32)
labels = np.eye(3)[rng.randint(0, 3, 16)].astype(np.float32)


def fetched(values):
    """What ``Session.run`` returned: numpy values, and None for the training ops."""
    return [None if value is None else value.numpy() for value in values]


@tf.function(input_signature=[tf.TensorSpec([None, 8, 8, 1], tf.float32), tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec(None, tf.float32)])
def train_step(x, y, keep_prob):
    """``sess.run([train_op, loss])`` as one eager step."""
    with tf.GradientTape() as tape:
        outputs = model(x, y, keep_prob)
    trainable = [v for v in model.tf1_variables if v.trainable]
    loss = outputs["loss"]
    train_op_optimizer.apply_gradients(zip(tape.gradient(loss, trainable), trainable))
    return [None, loss]


@tf.function(input_signature=[tf.TensorSpec([None, 8, 8, 1], tf.float32), tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec(None, tf.float32)])
def evaluate(x, y, keep_prob):
    """``accuracy.eval()`` as one eager step."""
    outputs = model(x, y, keep_prob)
    accuracy = outputs["accuracy"]
    return accuracy


for step in range(4):
    batch = slice(step % 2 * 8, step % 2 * 8 + 8)
    _, l = fetched(train_step(data[batch], labels[batch], 1.0))
    print(repr(float(l)))
    print(repr(float(evaluate(data, labels, 1.0).numpy())))
