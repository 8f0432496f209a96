"""Executed equivalence of a rewrite on an optimizer held in a field (``self.optimizer =
tf.train.XOptimizer(...)``, then ``self.optimizer.minimize(...)``): the class-based TF1 program and
the engine's rewrite train identically (rtol 1e-5) for 20 steps."""

from __future__ import annotations

import pytest

from _equivalence import assert_equivalent, migrate, run_graph

PROGRAM = '''
import numpy as np
import tensorflow.compat.v1 as tf

rng = np.random.RandomState(0)
X = rng.randn(20, 8, 3).astype(np.float32)
Y = (rng.randn(20, 8, 2) * 5.0).astype(np.float32)


def feeds(step):
    return {{"x": X[step % 20], "y": Y[step % 20]}}


class Model(object):
    def __init__(self, lr):
        self.x = tf.placeholder(tf.float32, [None, 3])
        self.y = tf.placeholder(tf.float32, [None, 2])
        self.w = tf.Variable(np.linspace(-1.0, 1.0, 6).reshape(3, 2).astype(np.float32), name="w")
        self.b = tf.Variable(np.full(2, 0.1, np.float32), name="b")
        self.global_step = tf.train.get_or_create_global_step()
{init}
    def build(self):
        h = tf.tanh(tf.matmul(self.x, self.w) + self.b)
        self.loss = tf.reduce_mean(tf.square(h * 3.0 - self.y))
{build}

model = Model(0.05)
model.build()
x, y = model.x, model.y
loss, train_op = model.loss, model.train_op
'''

KINDS = {
    # set in `__init__`, used in `build`
    "minimize_init": ("        self.optimizer = tf.train.AdamOptimizer(lr)\n",
                      "        self.train_op = self.optimizer.minimize(self.loss, global_step=self.global_step)\n",
                      "TFC103"),
    # set on the line above the call, in the same method
    "minimize_same_method": ("        self.lr = lr\n",
                             "        self.trainer = tf.train.MomentumOptimizer(self.lr, momentum=0.9)\n"
                             "        self.train_op = self.trainer.minimize(self.loss)\n",
                             "TFC103"),
    "compute_apply_clip": ("        self.optimizer = tf.train.RMSPropOptimizer(0.01)\n",
                           "        gvs = self.optimizer.compute_gradients(self.loss)\n"
                           "        capped = [(tf.clip_by_norm(g, 0.5), v) for g, v in gvs]\n"
                           "        self.train_op = self.optimizer.apply_gradients(capped, "
                           "global_step=self.global_step)\n",
                           "TFC101"),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_field_optimizer_rewrite_trains_identically(kind: str) -> None:
    """A class that keeps its `tf.train` optimizer in a field and its rewrite train identically for 20 steps."""
    init, build, code = KINDS[kind]
    source = PROGRAM.format(init=init, build=build)
    after = migrate(source, expect=code)
    assert "GradientTape" in after
    assert "compute_gradients" not in after and ".minimize(" not in after
    before_trace = run_graph(source, legacy=True)
    after_trace = run_graph(after, legacy=False)
    assert before_trace.losses[0] != before_trace.losses[-1], "training did not move the loss"
    assert_equivalent(before_trace, after_trace)
