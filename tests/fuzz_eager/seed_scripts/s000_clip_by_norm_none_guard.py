"""Seed 000 (and 002, answer 1): each gradient clipped by its own norm, None kept,
completed into a session script."""
import numpy as np
import tensorflow as tf

tf.set_random_seed(2)
x = tf.placeholder(tf.float32, [None, 5], name="x")
y = tf.placeholder(tf.float32, [None, 2], name="y")
with tf.variable_scope("classifier"):
    hidden = tf.layers.dense(x, 6, activation=tf.nn.tanh)
    logits = tf.layers.dense(hidden, 2)
loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits))

optimizer = tf.train.AdamOptimizer(1e-3)
gradients, variables = zip(*optimizer.compute_gradients(loss))
gradients = [
    None if gradient is None else tf.clip_by_norm(gradient, 5.0)
    for gradient in gradients]
optimize = optimizer.apply_gradients(zip(gradients, variables))

rng = np.random.RandomState(2)
x_data = rng.randn(32, 5).astype(np.float32)
y_data = np.eye(2, dtype=np.float32)[(x_data[:, 0] > 0).astype(np.int64)]
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(8):
        _, loss_value = sess.run([optimize, loss], feed_dict={x: x_data, y: y_data})
        print("step", step, "loss", repr(float(loss_value)))
