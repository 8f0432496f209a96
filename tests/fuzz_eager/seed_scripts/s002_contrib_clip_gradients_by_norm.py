"""Seed 002, answer 4: the optimizer wrapped with tf.contrib.estimator.clip_gradients_by_norm, then minimize;
completed into a session script."""
import numpy as np
import tensorflow as tf

tf.set_random_seed(4)
learning_rate = 0.01
x = tf.placeholder(tf.float32, [None, 6], name="x")
y = tf.placeholder(tf.float32, [None, 1], name="y")
with tf.variable_scope("model"):
    hidden = tf.layers.dense(x, 8, activation=tf.nn.relu)
    prediction = tf.layers.dense(hidden, 1)
loss = tf.reduce_mean(tf.square(prediction - y))

original_optimizer = tf.train.AdamOptimizer(learning_rate=learning_rate)
optimizer = tf.contrib.estimator.clip_gradients_by_norm(original_optimizer, clip_norm=5.0)
train_op = optimizer.minimize(loss)

rng = np.random.RandomState(4)
x_data = rng.randn(64, 6).astype(np.float32)
y_data = (np.abs(x_data[:, :1]) * 10.0).astype(np.float32)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(8):
        _, loss_value = sess.run([train_op, loss], feed_dict={x: x_data, y: y_data})
        print("step", step, "loss", repr(float(loss_value)))
