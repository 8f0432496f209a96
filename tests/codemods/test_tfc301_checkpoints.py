"""TFC301 and ``tf.train.Saver`` (round 14): which saves the program model lets through. The eager
optimizer makes its slots at its first step, so each save must come after every training op has
run, every time it runs; a saver must see the whole graph; restoring is not migrated. (Executed:
tests/fuzz_eager/test_checkpoints.py, the fixtures, the fuzzer's `saver:` programs.)"""

from __future__ import annotations

import libcst as cst
import pytest

from codemods.rules.eager.model import Decline, Reader

PROGRAM = '''import numpy as np
import tensorflow as tf

steps = 3
x = tf.placeholder(tf.float32, [None, 3])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.get_variable("w", [3, 1])
v = tf.get_variable("v", [3, 1])
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
loss2 = tf.reduce_mean(tf.square(tf.matmul(x, v) - y))
train_op = tf.train.AdamOptimizer(0.1).minimize(loss, var_list=[w])
{graph}
saver = tf.train.Saver({saver_args})

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    feed = {{x: np.ones((4, 3)), y: np.ones((4, 1))}}
{block}
'''


def read(block: str, graph: str = "", saver_args: str = ""):
    source = PROGRAM.format(block=block, graph=graph, saver_args=saver_args)
    return Reader(cst.parse_module(source)).read()


def reason(block: str, graph: str = "", saver_args: str = "") -> str:
    with pytest.raises(Decline) as caught:
        read(block, graph, saver_args)
    return caught.value.reason


@pytest.mark.parametrize("block", [
    "    for step in range(steps):\n        sess.run(train_op, feed)\n    saver.save(sess, 'ckpt/model')",
    "    for step in range(1, steps + 1):\n        sess.run(train_op, feed)\n"
    "        if step % 2 == 0:\n            saver.save(sess, 'ckpt/model', global_step=step)",
    "    sess.run(train_op, feed)\n    path = saver.save(sess, 'ckpt/model')\n    print(path)",
    "    while True:\n        sess.run(train_op, feed)\n        saver.save(sess, 'ckpt/model')\n        break",
])
def test_a_save_after_every_training_op_has_run_is_migrated(block):
    program = read(block)
    assert len(program.saver_calls) == 1 and "saver" in program.savers


@pytest.mark.parametrize("block, why", [
    ("    for step in range(steps):\n        saver.save(sess, 'ckpt/model')\n        sess.run(train_op, feed)",
     "before the run in the loop"),
    ("    for step in range(0):\n        sess.run(train_op, feed)\n    saver.save(sess, 'ckpt/model')",
     "a loop that runs no step"),
    ("    while step < steps:\n        sess.run(train_op, feed)\n    saver.save(sess, 'ckpt/model')",
     "a while loop may run no step"),
    ("    for step in range(int(input())):\n        sess.run(train_op, feed)\n    saver.save(sess, 'ckpt/model')",
     "a range the rule cannot count"),
    ("    for step in range(steps):\n        if step % 2:\n            sess.run(train_op, feed)\n"
     "    saver.save(sess, 'ckpt/model')", "a conditional training run"),
])
def test_a_save_that_may_come_before_the_first_step_is_declined(block, why):
    assert "may not have run yet" in reason(block), why


def test_every_training_op_must_have_run():
    graph = "train2 = tf.train.AdamOptimizer(0.1).minimize(loss2, var_list=[v])"
    block = ("    for step in range(steps):\n        sess.run(train_op, feed)\n    saver.save(sess, 'ckpt/model')\n"
             "    sess.run(train2, feed)")
    assert "the training op `train2` may not have run yet" in reason(block, graph)


def test_a_saver_built_before_the_graph_is_complete_is_declined():
    source = PROGRAM.format(block="    sess.run(train_op, feed)\n    saver.save(sess, 'ckpt/model')", graph="",
                            saver_args="").replace("saver = tf.train.Saver()\n", "")
    source = source.replace("train_op = tf.train", "saver = tf.train.Saver()\ntrain_op = tf.train")
    with pytest.raises(Decline) as caught:
        Reader(cst.parse_module(source)).read()
    assert "built before the graph is complete" in caught.value.reason


@pytest.mark.parametrize("saver_args", ["var_list=[w]", "{'w': w}", "max_to_keep=keep", "sharded=True"])
def test_a_saver_of_chosen_variables_or_options_is_declined(saver_args):
    assert "`tf.train.Saver` with" in reason("    sess.run(train_op, feed)\n    saver.save(sess, 'ckpt/model')",
                                             saver_args=saver_args)


@pytest.mark.parametrize("block", [
    "    saver.restore(sess, 'ckpt/model')\n    sess.run(train_op, feed)",
    "    sess.run(train_op, feed)\n    keep = saver\n    keep.save(sess, 'ckpt/model')",
    "    sess.run(train_op, feed)\n    print(saver.last_checkpoints)",
])
def test_other_uses_of_the_saver_are_declined(block):
    assert "restoring a checkpoint is not migrated" in reason(block)


@pytest.mark.parametrize("call", ["saver.save(sess)", "saver.save(sess, 'p', latest_filename='x')",
                                  "saver.save(other, 'p')", "saver.save(sess, 'p', global_step=loss)"])
def test_saves_other_than_sess_path_global_step_are_declined(call):
    assert "saver.save" in reason(f"    sess.run(train_op, feed)\n    {call}") or "checkpoint saved other" in \
        reason(f"    sess.run(train_op, feed)\n    {call}")
