import numpy as np
import tensorflow as tf

# One step of a conv net with batch normalization on a batch of 2 images of 2x2 pixels: TF 1's
# fused batch norm moves the moving variance towards the unbiased batch variance (n/(n-1) = 8/7).
tf.set_random_seed(0)
images = tf.placeholder(tf.float32, [None, 2, 2, 3], name="images")
is_training = tf.placeholder(tf.bool, [], name="is_training")
with tf.variable_scope("model"):
    h = tf.layers.batch_normalization(images, momentum=0.5, training=is_training)
loss = tf.reduce_mean(tf.square(h))
update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
with tf.control_dependencies(update_ops):
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
data = np.random.RandomState(0).randn(2, 2, 2, 3).astype(np.float32) * 3.0
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    _, value = sess.run([train_op, loss], feed_dict={images: data, is_training: True})
    print("loss", repr(float(value)))
