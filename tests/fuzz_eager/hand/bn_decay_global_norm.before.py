import numpy as np
import tensorflow as tf

tf.set_random_seed(7)
x = tf.placeholder(tf.float32, [None, 5], name="x")
y = tf.placeholder(tf.float32, [None, 1], name="y")
is_training = tf.placeholder(tf.bool, [], name="is_training")


def model(inputs, training):
    with tf.variable_scope("net"):
        w = tf.get_variable("w", [5, 6], initializer=tf.truncated_normal_initializer(stddev=0.3))
        b = tf.get_variable("b", [6], initializer=tf.zeros_initializer())
        h = tf.matmul(inputs, w) + b
        h = tf.layers.batch_normalization(h, training=training)
        h = tf.nn.relu(h)
        return tf.layers.dense(h, 1, name="out")


pred = model(x, is_training)
loss = tf.reduce_mean(tf.square(pred - y))
global_step = tf.train.get_or_create_global_step()
lr = tf.train.exponential_decay(0.1, global_step, 2, 0.5, staircase=True)
opt = tf.train.MomentumOptimizer(lr, 0.9)
update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
with tf.control_dependencies(update_ops):
    grads, variables = zip(*opt.compute_gradients(loss))
    grads, _ = tf.clip_by_global_norm(grads, 1.0)
    train_op = opt.apply_gradients(zip(grads, variables), global_step=global_step)

rng = np.random.RandomState(1)
x_train = rng.randn(32, 5).astype(np.float32)
y_train = (x_train[:, :1] * 2.0 - x_train[:, 1:2]).astype(np.float32)
x_test = rng.randn(8, 5).astype(np.float32)
y_test = (x_test[:, :1] * 2.0 - x_test[:, 1:2]).astype(np.float32)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(6):
        _, train_loss = sess.run([train_op, loss], feed_dict={x: x_train, y: y_train, is_training: True})
        test_loss, rate = sess.run([loss, lr], feed_dict={x: x_test, y: y_test, is_training: False})
        print("step", step, "train", repr(float(train_loss)), "lr", repr(float(rate)),
              "test", repr(float(test_loss)))
