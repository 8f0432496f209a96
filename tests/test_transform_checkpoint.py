"""Transform state checkpoints: save/restore mid-run reproduces an uninterrupted run exactly."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

import tfclip_compat as tfc

V1 = tf.compat.v1
RNG = np.random.RandomState(5)
X = RNG.randn(16, 3).astype(np.float32)
Y = (RNG.randn(16, 2) * 2).astype(np.float32)
# Target scales per step: spikes (skipped / clipped) and one NaN step (skipped).
SCALES = [1.0, 1.1, 0.9, 1.0, 20.0, 1.0, float("nan"), 1.2, 30.0, 0.9, 1.0, 1.1]
HALF = len(SCALES) // 2


def make_transform():
    """Every stateful transform at once, measured by ClipStatistics."""
    return tfc.ClipStatistics(
        tfc.Chain(
            tfc.SkipNonFinite(),
            tfc.SkipOnSpike(std_factor=3.0, window=5, min_history=3),
            tfc.AutoClip(percentile=30.0, history_size=6),
            tfc.ZClip(alpha=0.9, warmup_steps=3),
            tfc.AdaptiveClipping(quick_start=True),
            tfc.Select(tfc.AdaptiveGradClip(0.05), exclude="bias"),
        )
    )


# ------------------------------------------------------------------------ tf.train.Checkpoint
class _Run:
    """A Keras Adam wrapped with the transform, trained by a tf.function step."""

    def __init__(self, build: bool = True) -> None:
        self.kernel = tf.Variable(np.ones((3, 2), np.float32), name="kernel")
        self.bias = tf.Variable(np.zeros((2,), np.float32), name="bias")
        self.transform = make_transform()
        self.opt = tfc.wrap_optimizer(tf.keras.optimizers.Adam(0.05), self.transform)
        if build:
            self.opt.build([self.kernel, self.bias])
        self.ckpt = tf.train.Checkpoint(opt=self.opt, kernel=self.kernel, bias=self.bias)
        self._step = tf.function(self._step_fn)

    def _step_fn(self, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(X, self.kernel) + self.bias - y))
        grads = tape.gradient(loss, [self.kernel, self.bias])
        self.opt.apply_gradients(zip(grads, [self.kernel, self.bias]))

    def steps(self, scales):
        for s in scales:
            self._step(tf.constant(Y * s))

    def state(self):
        values = [self.kernel.numpy(), self.bias.numpy()]
        values += [v.numpy() for v in self.opt.variables]
        return values


@pytest.mark.parametrize("build_before_restore", [True, False])
def test_checkpoint_restore_mid_run_equals_uninterrupted(tmp_path, build_before_restore):
    """tf.train.Checkpoint: 6 steps, save, restore into fresh objects, 6 more == 12 straight."""
    straight = _Run()
    straight.steps(SCALES)

    first = _Run()
    first.steps(SCALES[:HALF])
    path = first.ckpt.save(str(tmp_path / "ckpt"))

    second = _Run(build=build_before_restore)
    second.ckpt.restore(path).assert_existing_objects_matched()
    second.steps(SCALES[HALF:])

    got, want = second.state(), straight.state()
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    counts = second.transform.result()
    assert int(counts["skip_count"]) >= 2 and int(counts["steps"]) == len(SCALES)


def test_checkpoint_contains_transform_state(tmp_path):
    """The checkpoint holds the transforms' variables under the wrapper's gradient_transform."""
    run = _Run()
    run.steps(SCALES[:2])
    path = run.ckpt.save(str(tmp_path / "ckpt"))
    keys = [k for k, _ in tf.train.list_variables(path)]
    assert any(k.startswith("opt/gradient_transform/") for k in keys), keys
    assert sum("history" in k for k in keys) >= 3  # spike window, AutoClip history, ZClip warm-up


# ------------------------------------------------------------------------ tf.compat.v1.train.Saver
def _graph_run(scales, save_to=None, restore_from=None):
    """v1 Adam + wrapper in graph mode; optional Saver save after / restore before the steps."""
    with tf.Graph().as_default():
        y = V1.placeholder(tf.float32, [None, 2])
        kernel = V1.get_variable("kernel", initializer=np.ones((3, 2), np.float32))
        bias = V1.get_variable("bias", initializer=np.zeros((2,), np.float32))
        loss = tf.reduce_mean(tf.square(tf.matmul(X, kernel) + bias - y))
        gs = V1.train.get_or_create_global_step()
        opt = tfc.wrap_optimizer(V1.train.AdamOptimizer(0.05), make_transform())
        train = opt.minimize(loss, global_step=gs)
        saver = V1.train.Saver()
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            if restore_from:
                saver.restore(sess, restore_from)
            for s in scales:
                sess.run(train, {y: Y * s})
            if save_to:
                saver.save(sess, save_to)
            names = [v.op.name for v in V1.global_variables()]
            return dict(zip(names, sess.run(V1.global_variables())))


def test_saver_restore_mid_run_equals_uninterrupted(tmp_path):
    """tf.compat.v1.train.Saver: transform state is saved; resumed run == uninterrupted run."""
    straight = _graph_run(SCALES)
    path = str(tmp_path / "model")
    _graph_run(SCALES[:HALF], save_to=path)
    resumed = _graph_run(SCALES[HALF:], restore_from=path)
    assert straight.keys() == resumed.keys()
    assert sum("history" in k for k in straight) >= 3
    for name in straight:
        np.testing.assert_array_equal(resumed[name], straight[name], err_msg=name)
    # Two skipped steps (spike + NaN) did not move global_step.
    assert straight["global_step"] < len(SCALES)
