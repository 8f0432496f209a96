import numpy as np
import tensorflow as tf

tf.set_random_seed(3)
z = tf.placeholder(tf.float32, [None, 3], name="z")
real = tf.placeholder(tf.float32, [None, 2], name="real")


def generator(noise):
    with tf.variable_scope("generator"):
        h = tf.layers.dense(noise, 8, activation=tf.nn.leaky_relu)
        return tf.layers.dense(h, 2)


def discriminator(samples, reuse=False):
    with tf.variable_scope("discriminator", reuse=reuse):
        h = tf.layers.dense(samples, 8, activation=tf.nn.leaky_relu, name="h")
        return tf.layers.dense(h, 1, name="logit")


fake = generator(z)
d_real = discriminator(real)
d_fake = discriminator(fake, reuse=True)
d_loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.ones_like(d_real), logits=d_real)) + \
    tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.zeros_like(d_fake), logits=d_fake))
g_loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.ones_like(d_fake), logits=d_fake))
d_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="discriminator")
g_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="generator")
d_train = tf.train.AdamOptimizer(1e-3, beta1=0.5).minimize(d_loss, var_list=d_vars)
g_train = tf.train.AdamOptimizer(2e-3, beta1=0.5).minimize(g_loss, var_list=g_vars)

rng = np.random.RandomState(5)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(4):
        noise = rng.randn(16, 3).astype(np.float32)
        batch = (rng.randn(16, 2) * 0.5 + 1.0).astype(np.float32)
        _, dl = sess.run([d_train, d_loss], feed_dict={z: noise, real: batch})
        _, gl = sess.run([g_train, g_loss], feed_dict={z: noise})
        print("step", step, "d", repr(float(dl)), "g", repr(float(gl)))
