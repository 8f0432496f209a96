"""Write gradient-clipping statistics to TensorBoard event files, in TF 2 eager and in TF1 graph mode.

    python examples/clip_stats_tensorboard.py --logdir /tmp/clipstats
    tensorboard --logdir /tmp/clipstats

Trains a tiny linear model with ``ClipStatistics(Chain(SkipNonFinite(), SkipOnSpike(),
AutoClip()))`` behind ``tfclip_compat.wrap_optimizer(..., summaries=True)``; one batch has its
targets multiplied by 1,000 (a loss spike), which is skipped. Scalars written under
``<optimizer name>/``: ``global_norm``, ``clipped_global_norm``, ``clip_coefficient``,
``clipped``, ``skipped``, ``steps``, ``clip_count``, ``skip_count``, ``clip_threshold``,
``spike_threshold``, ``norm/<variable>``. Eager run in ``<logdir>/eager`` (``tf.summary``),
graph run in ``<logdir>/graph`` (``tf.compat.v1.summary`` + ``FileWriter``).
"""

from __future__ import annotations

import argparse
import os
from typing import List, Optional

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402 - after the TF log level
import tensorflow as tf  # noqa: E402

import tfclip_compat as tfc  # noqa: E402

V1 = tf.compat.v1
RNG = np.random.RandomState(0)
X = RNG.randn(32, 4).astype(np.float32)
Y = (X @ RNG.randn(4, 1) + 0.1 * RNG.randn(32, 1)).astype(np.float32)
SPIKE_STEP = 8


def make_transform() -> tfc.ClipStatistics:
    """Skip non-finite and spiking steps, AutoClip the rest, and measure it all."""
    return tfc.ClipStatistics(
        tfc.Chain(
            tfc.SkipNonFinite(),
            tfc.SkipOnSpike(std_factor=4.0, window=50, min_history=4),
            tfc.AutoClip(percentile=50.0),
        ),
        per_variable_norms=True,
    )


def _targets(step: int) -> np.ndarray:
    return Y * (1000.0 if step == SPIKE_STEP else 1.0)


def run_eager(logdir: str, steps: int) -> None:
    """TF 2: Keras optimizer, tf.function step, tf.summary writer."""
    w = tf.Variable(np.zeros((4, 1), np.float32), name="w")
    b = tf.Variable(np.zeros((1,), np.float32), name="b")
    transform = make_transform()
    opt = tfc.wrap_optimizer(tf.keras.optimizers.SGD(0.1), transform, summaries=True, name="clip")
    writer = tf.summary.create_file_writer(logdir)

    @tf.function
    def step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
        opt.apply_gradients(zip(tape.gradient(loss, [w, b]), [w, b]))
        return loss

    with writer.as_default():
        for i in range(steps):
            step(tf.constant(X), tf.constant(_targets(i)))
    writer.flush()
    stats = {k: float(v) for k, v in transform.result().items()}
    print("eager:", {k: round(v, 4) for k, v in sorted(stats.items())})


def run_graph(logdir: str, steps: int) -> None:
    """TF1 style: placeholders, tf.compat.v1 optimizer, merged summaries, FileWriter."""
    with tf.Graph().as_default():
        x = V1.placeholder(tf.float32, [None, 4])
        y = V1.placeholder(tf.float32, [None, 1])
        w = V1.get_variable("w", initializer=np.zeros((4, 1), np.float32))
        b = V1.get_variable("b", initializer=np.zeros((1,), np.float32))
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
        global_step = V1.train.get_or_create_global_step()
        transform = make_transform()
        opt = tfc.wrap_optimizer(V1.train.GradientDescentOptimizer(0.1), transform, summaries=True, name="clip")
        train_op = opt.minimize(loss, global_step=global_step)
        summary_op = V1.summary.merge_all()
        calls = V1.Variable(0, dtype=tf.int64, trainable=False, name="calls")
        count_call = calls.assign_add(1)
        result = transform.result()
        with V1.Session() as sess, V1.summary.FileWriter(logdir) as writer:
            sess.run(V1.global_variables_initializer())
            for i in range(steps):
                # Fetch the train op and its summaries in one run; step = number of calls, since
                # global_step does not move on a skipped step.
                _, summary, n = sess.run([train_op, summary_op, count_call], {x: X, y: _targets(i)})
                writer.add_summary(summary, int(n))
            stats = sess.run(result)
    print("graph:", {k: round(float(v), 4) for k, v in sorted(stats.items())})


def main(argv: Optional[List[str]] = None) -> int:
    """Run both examples into ``--logdir``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logdir", required=True, help="directory for the event files")
    parser.add_argument("--steps", type=int, default=20, help="training steps per run")
    args = parser.parse_args(argv)
    if args.steps <= SPIKE_STEP:
        parser.error(f"--steps must be > {SPIKE_STEP} (the spike is injected at step {SPIKE_STEP})")
    run_eager(os.path.join(args.logdir, "eager"), args.steps)
    run_graph(os.path.join(args.logdir, "graph"), args.steps)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
