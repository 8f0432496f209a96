import numpy as np
import tensorflow as tf

tf.random.set_seed(3)


class Generator(tf.keras.layers.Layer):
    @tf.compat.v1.keras.utils.track_tf1_style_variables
    def call(self, noise):
        with tf.compat.v1.variable_scope("generator"):
            h = tf.compat.v1.layers.dense(noise, 8, activation=tf.nn.leaky_relu)
            return tf.compat.v1.layers.dense(h, 2)


class Discriminator(tf.keras.layers.Layer):
    @tf.compat.v1.keras.utils.track_tf1_style_variables
    def call(self, samples):
        with tf.compat.v1.variable_scope("discriminator", reuse=tf.compat.v1.AUTO_REUSE):
            h = tf.compat.v1.layers.dense(samples, 8, activation=tf.nn.leaky_relu, name="h")
            return tf.compat.v1.layers.dense(h, 1, name="logit")


generator = Generator()
discriminator = Discriminator()
d_opt = tf.compat.v1.train.AdamOptimizer(1e-3, beta1=0.5)
g_opt = tf.compat.v1.train.AdamOptimizer(2e-3, beta1=0.5)


def losses(noise, batch):
    fake = generator(noise)
    d_fake = discriminator(fake)
    g_loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.ones_like(d_fake), logits=d_fake))
    if batch is None:
        return None, g_loss
    d_real = discriminator(batch)
    d_loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.ones_like(d_real), logits=d_real)) + \
        tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.zeros_like(d_fake), logits=d_fake))
    return d_loss, g_loss


@tf.function
def d_step(noise, batch):
    with tf.GradientTape() as tape:
        d_loss, _ = losses(noise, batch)
    d_vars = discriminator.trainable_variables
    d_opt.apply_gradients(zip(tape.gradient(d_loss, d_vars), d_vars))
    return d_loss


@tf.function
def g_step(noise):
    with tf.GradientTape() as tape:
        _, g_loss = losses(noise, None)
    g_vars = generator.trainable_variables
    g_opt.apply_gradients(zip(tape.gradient(g_loss, g_vars), g_vars))
    return g_loss


rng = np.random.RandomState(5)
for step in range(4):
    noise = rng.randn(16, 3).astype(np.float32)
    batch = (rng.randn(16, 2) * 0.5 + 1.0).astype(np.float32)
    dl = d_step(noise, batch)
    gl = g_step(noise)
    print("step", step, "d", repr(float(dl)), "g", repr(float(gl)))
