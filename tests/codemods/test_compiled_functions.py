"""Inside a ``tf.function`` the tape rules see TF 2 code: ``tf.gradients`` (or ``tf.compat.v1.gradients``)
is valid there, in a graph context (TFC301 writes its steps so, to sum gradients in TF 1's order), not
a TF 1 site to rewrite into a tape; the same statements in a plain function are reported as before."""

from __future__ import annotations

import pytest

from codemods.cli import main

STEP = '''import tensorflow as tf

w = tf.Variable(1.0)
opt = tf.compat.v1.train.GradientDescentOptimizer(0.1)


{decorator}def step(x):
    loss = tf.reduce_sum(x * w)
    grads = tf.gradients(loss, [w])
    grads, _ = tf.clip_by_global_norm(grads, 1.0)
    opt.apply_gradients(zip(grads, [w]))
    return loss
'''


def findings(tmp_path, capsys, decorator):
    path = tmp_path / "step.py"
    path.write_text(STEP.format(decorator=decorator))
    main(["check", "--isolated", "--no-cache", "-j1", str(path)])
    out = capsys.readouterr()
    return [line for line in (out.out + out.err).splitlines() if line.startswith(str(path))]


@pytest.mark.parametrize("decorator", ["@tf.function\n", "@tf.function(input_signature=[tf.TensorSpec(None, tf.float32)])\n",
                                       "@tf.compat.v1.function\n"])
def test_gradients_in_a_compiled_step_are_tf2(tmp_path, capsys, decorator):
    assert findings(tmp_path, capsys, decorator) == []


def test_gradients_in_a_plain_function_are_still_reported(tmp_path, capsys):
    found = findings(tmp_path, capsys, "")
    assert any("TFC102" in line or "TFC202" in line for line in found), found
