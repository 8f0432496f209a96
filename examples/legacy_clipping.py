"""A TensorFlow 1 training script with the gradient-clipping idioms of its era.

It does not run on TensorFlow 2 as written (``tf.contrib`` is gone, sessions and placeholders
need graph mode). See what ``tfclip-migrate`` does with it:

    tfclip-migrate fix --diff examples/legacy_clipping.py

The whole script becomes an eager TF 2 program (TFC301, TensorFlow's "model mapping" recipe):
the forward pass moves into a Keras layer whose ``call`` keeps the ``get_variable`` names, the
``sess.run`` of the loop becomes one ``tf.function`` step (``tf.compat.v1.gradients``, TF 1's
gradient algorithm), and the clipping is kept exactly:

* the encoder's ``compute_gradients`` -> ``tf.clip_by_global_norm`` -> ``apply_gradients``
  (seed 000) runs on the step's gradients;
* the decoder's ``tf.contrib.estimator.clip_gradients_by_norm`` optimizer, built in a helper
  (seed 002), becomes ``tfclip_compat.clip_gradients_by_norm`` around the same Adam;
* ``tf.clip_by_value`` on the *inputs* is not gradient clipping: left alone.

The result runs on TF 2 with no hand edit (no ``tf_upgrade_v2``, no
``disable_eager_execution``; it needs ``tf-keras``), and ``tf_upgrade_v2`` before or after
``fix`` gives the same program. Weights and data are seeded, so every run prints the same
figures (TF 2.21, x86-64 CPU). As TF 1 ran it (graph mode): encoder loss 1.6761 at step 0,
0.0810 at step 150. The eager program: encoder loss 1.2689 at step 0, 0.0887 at step 150 (the
seed draws other initial weights eagerly; from the same weights both print the same losses and
end with the same variables, ``tests/proofs/test_eager_migration.py``; ``tests/proofs/test_examples.py`` runs it).
"""
import numpy as np
import tensorflow as tf

tf.set_random_seed(0)  # reproducible initial weights (the data below is seeded too)

x = tf.placeholder(tf.float32, [None, 8], name="x")
y = tf.placeholder(tf.float32, [None, 1], name="y")

# The encoder: loss and clipped update in one place (seed 000's global-norm answer).
with tf.variable_scope("encoder"):
    w_enc = tf.get_variable("w", [8, 16])
    w_out = tf.get_variable("w_out", [16, 1])
# Inputs are clipped to [-1, 1]: a clip of activations, not of gradients.
x_clipped = tf.clip_by_value(x, -1, 1, name=None)
hidden = tf.tanh(tf.matmul(x_clipped, w_enc))
encoder_loss = tf.reduce_mean(tf.square(tf.matmul(hidden, w_out) - y))

optimizer = tf.train.AdamOptimizer(1e-3)
gradients, variables = zip(*optimizer.compute_gradients(encoder_loss))
gradients, _ = tf.clip_by_global_norm(gradients, 5.0)
encoder_train_op = optimizer.apply_gradients(zip(gradients, variables))


def decoder_loss(hidden, targets):
    """The decoder's loss, built in its own function (a tape cannot see it from the caller)."""
    with tf.variable_scope("decoder"):
        w = tf.get_variable("w", [16, 1])
        b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    prediction = tf.matmul(tf.stop_gradient(hidden), w) + b
    return tf.reduce_mean(tf.square(prediction - targets))


def build_decoder_train_op(loss, learning_rate):
    original_optimizer = tf.train.AdamOptimizer(learning_rate=learning_rate)
    optimizer = tf.contrib.estimator.clip_gradients_by_norm(original_optimizer, clip_norm=5.0)
    return optimizer.minimize(loss)


decoder_train_op = build_decoder_train_op(decoder_loss(hidden, y), learning_rate=1e-2)

if __name__ == "__main__":
    rng = np.random.RandomState(0)
    x_data = rng.randn(256, 8).astype(np.float32)
    y_data = np.tanh(x_data[:, :1]) * 2.0
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(200):
            _, _, loss_value = sess.run(
                [encoder_train_op, decoder_train_op, encoder_loss], {x: x_data, y: y_data}
            )
            if step % 50 == 0:
                print("step %d  encoder loss %.4f" % (step, loss_value))
