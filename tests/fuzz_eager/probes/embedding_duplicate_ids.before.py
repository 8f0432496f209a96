import numpy as np
import tensorflow as tf

# One Adam step on an embedding looked up with a repeated id: TF 1's Adam sums the duplicate
# rows of the IndexedSlices gradient before squaring it ((g1 + g2)^2 in the second moment).
tf.set_random_seed(0)
ids = tf.placeholder(tf.int32, [None], name="ids")
targets = tf.placeholder(tf.float32, [None, 3], name="targets")
embedding = tf.get_variable("embedding", [5, 3])
loss = tf.reduce_mean(tf.square(tf.nn.embedding_lookup(embedding, ids) - targets))
train_op = tf.train.AdamOptimizer(0.1).minimize(loss)
feed = {ids: np.array([1, 1, 3], np.int32),
        targets: np.random.RandomState(0).randn(3, 3).astype(np.float32)}
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    _, value = sess.run([train_op, loss], feed_dict=feed)
    print("loss", repr(float(value)))
