"""Seed 000 (and 002, answer 1): zip(*compute_gradients) -> clip_by_global_norm -> apply_gradients,
completed into a session script."""
import numpy as np
import tensorflow as tf

tf.set_random_seed(1)
x = tf.placeholder(tf.float32, [None, 6], name="x")
y = tf.placeholder(tf.float32, [None, 1], name="y")
with tf.variable_scope("model"):
    w1 = tf.get_variable("w1", [6, 8])
    b1 = tf.get_variable("b1", [8], initializer=tf.zeros_initializer())
    w2 = tf.get_variable("w2", [8, 1])
loss = tf.reduce_mean(tf.square(tf.matmul(tf.tanh(tf.matmul(x, w1) + b1), w2) - y))

optimizer = tf.train.AdamOptimizer(1e-3)
gradients, variables = zip(*optimizer.compute_gradients(loss))
gradients, _ = tf.clip_by_global_norm(gradients, 5.0)
optimize = optimizer.apply_gradients(zip(gradients, variables))

rng = np.random.RandomState(1)
x_data = rng.randn(64, 6).astype(np.float32)
y_data = (x_data[:, :1] * 4.0).astype(np.float32)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(8):
        _, loss_value = sess.run([optimize, loss], feed_dict={x: x_data, y: y_data})
        print("step", step, "loss", repr(float(loss_value)))
