import numpy as np
import tensorflow as tf

tf.set_random_seed(1)
x = tf.placeholder(tf.float32, [None, 4], name="x")
y = tf.placeholder(tf.float32, [None, 1], name="y")
with tf.variable_scope("model"):
    h = tf.layers.dense(x, 8, activation=tf.nn.relu)
    h = tf.layers.dropout(h, rate=0.3, training=True, seed=3)
    pred = tf.layers.dense(h, 1)
loss = tf.reduce_mean(tf.square(pred - y))
opt = tf.train.AdamOptimizer(0.01)
gvs = opt.compute_gradients(loss)
capped = [(tf.clip_by_value(g, -0.05, 0.05), v) for g, v in gvs]
train_op = opt.apply_gradients(capped)
rng = np.random.RandomState(0)
xd = rng.randn(16, 4).astype(np.float32)
yd = rng.randn(16, 1).astype(np.float32)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(5):
        _, l = sess.run([train_op, loss], feed_dict={x: xd, y: yd})
        print("step", step, "loss", repr(float(l)))
