"""Seed 000 (and 002, answer 0), the accepted answer: compute_gradients -> clip_by_value -> apply_gradients,
completed into a session script: a two-layer regression net on seeded numpy data."""
import numpy as np
import tensorflow as tf

tf.set_random_seed(0)
learning_rate = 0.01
x = tf.placeholder(tf.float32, [None, 6], name="x")
y = tf.placeholder(tf.float32, [None, 1], name="y")
with tf.variable_scope("model"):
    hidden = tf.layers.dense(x, 8, activation=tf.nn.relu)
    prediction = tf.layers.dense(hidden, 1)
cost = tf.reduce_mean(tf.square(prediction - y))

optimizer = tf.train.AdamOptimizer(learning_rate=learning_rate)
gvs = optimizer.compute_gradients(cost)
capped_gvs = [(tf.clip_by_value(grad, -1., 1.), var) for grad, var in gvs]
train_op = optimizer.apply_gradients(capped_gvs)

rng = np.random.RandomState(0)
x_data = rng.randn(64, 6).astype(np.float32)
y_data = np.sin(x_data[:, :1]) * 3.0
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(8):
        _, cost_value = sess.run([train_op, cost], feed_dict={x: x_data, y: y_data})
        print("step", step, "cost", repr(float(cost_value)))
