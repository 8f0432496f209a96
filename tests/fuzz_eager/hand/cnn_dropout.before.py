import numpy as np
import tensorflow as tf

tf.set_random_seed(1)
x = tf.placeholder(tf.float32, [None, 8, 8, 1])
y = tf.placeholder(tf.float32, [None, 3])
keep_prob = tf.placeholder(tf.float32)

W_conv1 = tf.get_variable("W_conv1", [3, 3, 1, 4], initializer=tf.truncated_normal_initializer(stddev=0.1))
b_conv1 = tf.get_variable("b_conv1", [4], initializer=tf.constant_initializer(0.1))
h_conv1 = tf.nn.relu(tf.nn.conv2d(x, W_conv1, strides=[1, 1, 1, 1], padding="SAME") + b_conv1)
h_pool1 = tf.nn.max_pool(h_conv1, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
h_conv2 = tf.layers.conv2d(h_pool1, 6, 3, padding="same", activation=tf.nn.relu)
h_pool2 = tf.layers.max_pooling2d(h_conv2, 2, 2)
flat = tf.reshape(h_pool2, [-1, 2 * 2 * 6])
h_fc = tf.layers.dense(flat, 8, activation=tf.nn.relu)
h_drop = tf.nn.dropout(h_fc, keep_prob)
logits = tf.layers.dense(h_drop, 3)
loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits))
train_op = tf.train.AdamOptimizer(0.01).minimize(loss)
correct = tf.equal(tf.argmax(logits, 1), tf.argmax(y, 1))
accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))

rng = np.random.RandomState(0)
data = rng.rand(16, 8, 8, 1).astype(np.float32)
labels = np.eye(3)[rng.randint(0, 3, 16)].astype(np.float32)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(4):
        batch = slice(step % 2 * 8, step % 2 * 8 + 8)
        _, l = sess.run([train_op, loss], feed_dict={x: data[batch], y: labels[batch], keep_prob: 0.5})
        print(repr(float(l)))
        print(repr(float(accuracy.eval(feed_dict={x: data, y: labels, keep_prob: 1.0}))))
