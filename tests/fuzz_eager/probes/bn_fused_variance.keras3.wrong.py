import keras
import numpy as np
import tensorflow as tf

# A conversion to Keras 3's BatchNormalization (same name, momentum and epsilon): its moving
# variance follows the biased batch variance.
tf.random.set_seed(0)
bn = keras.layers.BatchNormalization(momentum=0.5, epsilon=1e-3, name="batch_normalization")
optimizer = keras.optimizers.SGD(0.1)


@tf.function
def train_step(images):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(bn(images, training=True)))
    variables = bn.trainable_variables
    optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
    return loss


data = np.random.RandomState(0).randn(2, 2, 2, 3).astype(np.float32) * 3.0
with tf.name_scope("model"):
    bn.build(data.shape)
print("loss", repr(float(train_step(data))))
