"""TFC301, round 14: a training run may leave unfed a placeholder that only evaluation tensors read
(the cookbook SVMs' `prediction_grid`): TF 1 runs the pruned graph, the eager training step passes
None and the model skips the statements that need it. What the training op reads -- its loss,
variable lists, gradient processing -- must not need it. (Executed: the fixture
`training_run_leaves_prediction_input_unfed`, the fuzzer's `placeholder:unfed_in_training`.)"""

from __future__ import annotations

import libcst as cst
import pytest

from codemods.rules.eager.model import Decline, Reader

PROGRAM = '''import numpy as np
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 3])
y = tf.placeholder(tf.float32, [None, 1])
grid = tf.placeholder(tf.float32, [None, 3])
w = tf.get_variable("w", [3, 1])
out = tf.matmul(x, w)
loss = tf.reduce_mean(tf.square(out - y))
score = tf.reduce_mean(tf.matmul(grid, w))
{train}

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(3):
        sess.run(train_op, {{x: np.ones((4, 3)), y: np.ones((4, 1))}})
    print(sess.run(score, {{grid: np.ones((2, 3))}}))
'''


def read(train: str):
    return Reader(cst.parse_module(PROGRAM.format(train=train))).read()


def test_a_training_run_may_leave_an_evaluation_input_unfed():
    program = read("train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)")
    trains = [run for run in program.runs if "train_op" in run.names]
    assert trains and trains[0].unfed == ["grid"]
    assert program.guarded  # the score's statement is skipped when grid is None


@pytest.mark.parametrize("train, needs", [
    ("train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss + score)", "`grid`"),
    ("opt = tf.train.GradientDescentOptimizer(0.1)\ngvs = opt.compute_gradients(loss)\n"
     "train_op = opt.apply_gradients([(tf.clip_by_norm(g, score), v) for g, v in gvs])",
     "the gradient processing reads the tensor `score`"),  # declined before the feeds are checked
])
def test_what_the_training_op_reads_must_not_need_it(train, needs):
    with pytest.raises(Decline) as caught:
        read(train)
    assert needs in caught.value.reason
    if needs == "`grid`":
        assert "placeholder `grid` is not fed by this training `run`, and `loss`" not in caught.value.reason
        assert "placeholder `grid` is not fed by this training `run`" in caught.value.reason


def test_an_optimizer_input_left_unfed_is_still_declined():
    source = PROGRAM.format(train="lr = tf.placeholder(tf.float32, [])\n"
                                  "train_op = tf.train.GradientDescentOptimizer(lr).minimize(loss)")
    with pytest.raises(Decline) as caught:
        Reader(cst.parse_module(source)).read()
    assert "is not fed by this `run`" in caught.value.reason
