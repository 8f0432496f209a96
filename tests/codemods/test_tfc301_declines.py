"""A TFC301 decline is a finding in the file, never an internal error: the reader checks some
statements on a copy (``apply_gradients`` read as a plain call) and must decline on the statement
itself; a decline on a node that has no place in the file is reported at the first statement."""

from __future__ import annotations

import libcst as cst
import pytest

from codemods.cli import main
from codemods.rules.eager import model

# The policy-gradient "gradient buffer": gradients fetched in one run, summed in numpy, fed back
# through placeholders into `apply_gradients` (awjuliani's DeepRL notebooks).
BUFFER = '''import numpy as np
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 4])
W1 = tf.get_variable("W1", shape=[4, 1])
loss = tf.reduce_mean(tf.square(tf.matmul(x, W1)))
tvars = tf.trainable_variables()
adam = tf.train.AdamOptimizer(learning_rate=0.01)
W1Grad = tf.placeholder(tf.float32, name="batch_grad1")
batchGrad = [W1Grad]
newGrads = tf.gradients(loss, tvars)
updateGrads = adam.apply_gradients(zip(batchGrad, tvars))

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(3):
        g = sess.run(newGrads, feed_dict={x: np.ones((2, 4))})
        sess.run(updateGrads, feed_dict={W1Grad: g[0]})
'''


def check(tmp_path, capsys, source):
    path = tmp_path / "script.py"
    path.write_text(source)
    rc = main(["check", "--isolated", "--no-cache", "-j1", "--select", "TFC301", str(path)])
    out = capsys.readouterr()
    return rc, out.out, out.err, path


def test_a_gradient_buffer_is_declined_at_its_apply(tmp_path, capsys):
    rc, out, err, path = check(tmp_path, capsys, BUFFER)
    assert "internal error" not in err and rc == 1
    assert (f"{path}:12:1: TFC301 session script not migrated to eager TF 2: the gradient processing reads "
            "the tensor `batchGrad` (manual edit required)") in out
    assert path.read_text() == BUFFER


def test_a_decline_on_a_node_outside_the_file_is_still_a_finding(tmp_path, capsys, monkeypatch):
    def read(self):
        raise model.Decline(cst.parse_statement("x = 1\n"), "a reason on a copy")

    monkeypatch.setattr(model.Reader, "read", read)
    rc, out, err, path = check(tmp_path, capsys, BUFFER)
    assert "internal error" not in err and rc == 1
    assert f"{path}:1:1: TFC301 session script not migrated to eager TF 2: a reason on a copy" in out


# A variable's `assign` built in the graph and run after each step (manual weight decay).
ASSIGN = '''import numpy as np
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 2])
W = tf.get_variable("W", [2, 1])
loss = tf.reduce_mean(tf.square(tf.matmul(x, W)))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
{shrink}
xs = np.ones((4, 2), np.float32)


def normalize(m):
    return (m - m.min(axis=0)) / m.max(axis=0)


class Head(object):
    def __init__(self, units):
        self.units = units

    def _dense(self, h):
        return tf.layers.dense(h, self.units)

    def __call__(self, h):
        return self._dense(h)


with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(3):
        sess.run(train_op, feed_dict={{x: normalize(xs)}})
        sess.run(shrink, feed_dict={{x: xs}})
'''


def test_a_variables_assign_in_the_graph_is_declined(tmp_path, capsys):
    for shrink, method in [("shrink = W.assign(W * 0.9)", "assign"),
                           ("shrink = [v.assign_sub(v * 0.1) for v in tf.trainable_variables()]", "assign_sub"),
                           ("w_ref = W\nshrink = w_ref.assign(w_ref * 0.9)", "assign")]:
        rc, out, err, path = check(tmp_path, capsys, ASSIGN.format(shrink=shrink))
        assert f"TFC301 session script not migrated to eager TF 2: `.{method}(...)` in the forward pass on " in out, out
        assert "which may be a graph tensor or variable" in out


def test_numpy_helpers_shapes_and_a_class_calling_its_own_methods_are_not_declined(tmp_path, capsys):
    """The method check declines only on values that may be graph tensors: a numpy helper's
    `m.min()`, `W.get_shape().as_list()`, a variable's name's `v.name.startswith('W')` (a GAN's
    `var_list` filter) and `self._dense(h)` in a class do not decline
    (fixtures/TFC301/model_class uses its class in the forward pass)."""
    source = ASSIGN.format(shrink="shrink = tf.reshape(W, [W.get_shape().as_list()[0], 1])\n"
                                  "w_vars = [v for v in tf.trainable_variables() if v.name.startswith('W')]")
    rc, out, err, path = check(tmp_path, capsys, source)
    assert "TFC301 [*] TF 1 session script -> eager TF 2 program" in out, out


# A module-level object the graph reads, changed in place after the graph was built.
CHANGED = '''import argparse
import numpy as np
import tensorflow as tf


class Config(object):
    scale = 2.0


{setup}
x = tf.placeholder(tf.float32, [None, 2])
y = tf.placeholder(tf.float32, [None, 1])
W = tf.get_variable("W", [2, 1])
h = tf.matmul(x, W) * {read}
loss = tf.reduce_mean(tf.square(h - y))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
xs = np.ones((4, 2), np.float32)
ys = np.ones((4, 1), np.float32)
history = []

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    {change}
    for step in range(2):
        history.append(sess.run(train_op, feed_dict={{x: xs, y: ys}}))
'''


@pytest.mark.parametrize("setup, read, change, through", [
    ("hparams = {'scale': 2.0}", "hparams['scale']", "hparams['scale'] = 7.0", ""),
    ("hparams = {'scale': 2.0}\nalias = hparams", "hparams['scale']", "alias['scale'] = 7.0", "alias"),
    ("cfg = Config()", "cfg.scale", "setattr(cfg, 'scale', 7.0)", ""),
    ("cfg = Config()", "cfg.scale", "Config.scale = 7.0", "Config"),
    ("args = argparse.ArgumentParser().parse_args([])\nargs.scale = 2.0", "args.scale", "args.scale = 7.0", ""),
    ("table = np.array([2.0, 7.0], np.float32)", "table[0]", "np.random.shuffle(table)", ""),
    ("table = np.array([2.0, 7.0], np.float32)\nview = table[:]", "table[0]", "view[0] = 7.0", "view"),
])
def test_an_object_the_graph_read_changed_afterwards_is_declined(tmp_path, capsys, setup, read, change, through):
    rc, out, err, path = check(tmp_path, capsys, CHANGED.format(setup=setup, read=read, change=change))
    name = read.split("[")[0].split(".")[0]
    assert f"the forward pass reads `{name}`, which the program changes in place after the graph read it" in out, out
    assert (f"(through `{through}`, which may hold the same object)" in out) == bool(through)


def test_numbers_the_graph_read_and_lists_changed_later_are_not_confused(tmp_path, capsys):
    """An immutable constant (`D = 4`) shares no object with anything: appending to a list that
    holds it, or that a call was given it, changes nothing the graph read."""
    source = CHANGED.format(setup="D = 2.0\nrows = [1, D]", read="D", change="rows.append(D)")
    rc, out, err, path = check(tmp_path, capsys, source)
    assert "TFC301 [*] TF 1 session script -> eager TF 2 program" in out, out
