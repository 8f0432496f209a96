"""Seed 000 (and 002, answer 2), TensorFlow's documented three steps: GradientDescentOptimizer(0.1),
compute_gradients(loss, <list of variables>), capped with MyCapper(gv[0]) (here a clip_by_value),
apply_gradients; completed into a session script."""
import numpy as np
import tensorflow as tf

tf.set_random_seed(3)
x = tf.placeholder(tf.float32, [None, 4], name="x")
y = tf.placeholder(tf.float32, [None, 1], name="y")
w = tf.get_variable("w", [4, 1])
b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))


def MyCapper(gradient):
    return tf.clip_by_value(gradient, -0.5, 0.5)


# Create an optimizer.
opt = tf.train.GradientDescentOptimizer(learning_rate=0.1)

# Compute the gradients for a list of variables.
grads_and_vars = opt.compute_gradients(loss, [w, b])

# grads_and_vars is a list of tuples (gradient, variable).  Do whatever you
# need to the 'gradient' part, for example cap them, etc.
capped_grads_and_vars = [(MyCapper(gv[0]), gv[1]) for gv in grads_and_vars]

# Ask the optimizer to apply the capped gradients.
train_op = opt.apply_gradients(capped_grads_and_vars)

rng = np.random.RandomState(3)
x_data = rng.randn(32, 4).astype(np.float32)
y_data = (x_data @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)).astype(np.float32)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(8):
        _, loss_value = sess.run([train_op, loss], feed_dict={x: x_data, y: y_data})
        print("step", step, "loss", repr(float(loss_value)))
