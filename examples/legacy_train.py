"""A TF1-style training script (placeholders, Session) running on TF 2 through tfclip_compat.

Before TF 2 this script called ``tf.contrib.estimator.clip_gradients_by_norm``; the only change
needed is to take it from ``tfclip_compat`` instead. Run: ``python examples/legacy_train.py``.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import tfclip_compat  # noqa: E402

tf.compat.v1.disable_eager_execution()


def main(steps: int = 200) -> None:
    """Fit a tiny two-layer regression model with global-norm-clipped Adam and print the loss."""
    rng = np.random.RandomState(0)
    tf.compat.v1.set_random_seed(0)
    x_data = rng.randn(256, 8).astype(np.float32)
    true_w = rng.randn(8, 1).astype(np.float32)
    y_data = np.tanh(x_data @ true_w) * 3.0 + 0.05 * rng.randn(256, 1).astype(np.float32)

    x = tf.compat.v1.placeholder(tf.float32, [None, 8], name="x")
    y = tf.compat.v1.placeholder(tf.float32, [None, 1], name="y")
    w1 = tf.compat.v1.get_variable("w1", [8, 16], initializer=tf.compat.v1.glorot_uniform_initializer())
    b1 = tf.compat.v1.get_variable("b1", [16], initializer=tf.compat.v1.zeros_initializer())
    w2 = tf.compat.v1.get_variable("w2", [16, 1], initializer=tf.compat.v1.glorot_uniform_initializer())
    b2 = tf.compat.v1.get_variable("b2", [1], initializer=tf.compat.v1.zeros_initializer())
    hidden = tf.nn.tanh(tf.matmul(x, w1) + b1)
    pred = tf.matmul(hidden, w2) + b2
    loss = tf.reduce_mean(tf.square(pred - y))

    global_step = tf.compat.v1.train.get_or_create_global_step()
    optimizer = tf.compat.v1.train.AdamOptimizer(learning_rate=0.01)
    # TF1: optimizer = tf.contrib.estimator.clip_gradients_by_norm(optimizer, clip_norm=5.0)
    optimizer = tfclip_compat.clip_gradients_by_norm(optimizer, clip_norm=5.0)
    train_op = optimizer.minimize(loss, global_step=global_step)

    with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        for _ in range(steps):
            idx = rng.randint(0, 256, size=32)
            _, loss_value, step = sess.run(
                [train_op, loss, global_step], {x: x_data[idx], y: y_data[idx]}
            )
            if step == 1 or step % 50 == 0:
                print(f"step {step:4d}  loss {loss_value:.4f}")
        final = sess.run(loss, {x: x_data, y: y_data})
        print(f"final loss {final:.4f}")


if __name__ == "__main__":
    main()
