"""TFC301's chain check (``Reader.check_arithmetic_chains``): the chains of arithmetic that grappler
regroups differently in TF 1's session and in the eager step's function are declined with that
cause; the chains measured to train the same are migrated. (The numbers: tests/fuzz_eager/
test_probes.py, and the fuzzer's ``sum_of_three_tensors`` / ``constant_in_chain`` programs.)"""

from __future__ import annotations

import libcst as cst
import pytest

from codemods.rules.eager.model import Decline, Reader

PROGRAM = '''import numpy as np
import tensorflow as tf

y_data = np.ones((4, 1), np.float32)
x = tf.placeholder(tf.float32, [None, 3])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.get_variable("w", [3, 1])
v = tf.get_variable("v", [3, 1])
b = tf.get_variable("b", [1])
h = tf.matmul(x, w)
{body}
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    sess.run(train_op, {{x: np.ones((4, 3), np.float32), y: y_data}})
'''


def read(body: str):
    return Reader(cst.parse_module(PROGRAM.format(body=body))).read()


def reason(body: str) -> str:
    with pytest.raises(Decline) as caught:
        read(body)
    return caught.value.reason


@pytest.mark.parametrize("body", [
    "out = h + b + tf.sigmoid(tf.matmul(x, v))\nloss = tf.reduce_mean(tf.square(out - y))",
    "out = h + b\nloss = tf.reduce_mean(tf.square(out + tf.matmul(x, v) - y))",  # through a name
    "loss = tf.reduce_mean(tf.square(tf.add(tf.add(h, b), tf.matmul(x, v)) - y))",
])
def test_a_sum_of_three_tensors_is_declined(body):
    assert "adds three or more tensors in one chain" in reason(body)


@pytest.mark.parametrize("body, constant", [
    ("loss = tf.reduce_mean(tf.square(h + b - y_data))", "data written into the graph"),
    ("loss = tf.reduce_mean(tf.square(h + b - 0.5 - y))", "a literal"),
    ("loss = tf.reduce_mean(tf.square(0.5 * (h * b) - y))", "a product"),
    ("c = tf.constant(2.0)\nloss = tf.reduce_mean(tf.square(c + h - b))", "tf.constant through a name"),
])
def test_a_constant_in_a_chain_with_two_tensors_is_declined(body, constant):
    assert "puts a constant in a chain" in reason(body), constant


def test_the_same_tensor_twice_is_declined():
    assert "uses the same tensor twice" in reason("loss = tf.reduce_mean(tf.square((h + h) - b - y))")


def test_an_operand_that_may_be_either_is_named():
    """A helper's parameter passed a tensor at one call and a number at another: unknown, and the
    reason says so (it does not claim a constant)."""
    body = ("def head(t, shift):\n    return t + b - shift\n\n\n"
            "other = head(h, 0.5)\nloss = tf.reduce_mean(tf.square(head(h, y)))")
    text = reason(body)
    assert "cannot tell whether `shift` is a constant or a tensor" in text and "puts a constant" not in text


@pytest.mark.parametrize("body", [
    "loss = tf.reduce_mean(tf.square(h + b - y))",  # a difference of a sum (measured: 0 of 180)
    "p = tf.sigmoid(h + b)\nloss = -tf.reduce_mean(y * tf.log(p + 1e-7) + (1 - y) * tf.log(1 - p + 1e-7))",
    "loss = tf.reduce_mean(tf.square(h + b - y)) + 0.01 * tf.nn.l2_loss(w) + 0.01 * tf.nn.l2_loss(v)",
    "l1 = tf.multiply(tf.constant(0.5), tf.reduce_mean(tf.abs(w)))\n"
    "loss = tf.add(tf.add(tf.reduce_mean(tf.square(h - y)), l1), tf.reduce_mean(tf.square(v)))",
    "def head(t, shift):\n    return t + b - shift\n\n\nloss = tf.reduce_mean(tf.square(head(h, y)))",  # every call: a tensor
    "loss = tf.reduce_mean(tf.square((h - y) * (h - y)))",  # a product of one tensor with itself
])
def test_chains_measured_to_train_the_same_are_migrated(body):
    assert read(body).train_ops


def test_numpy_arithmetic_outside_the_graph_is_not_checked():
    """Data prepared with numpy (module-level Python) is not graph code."""
    body = "scaled = y_data * 2.0 + y_data - 1.0\nloss = tf.reduce_mean(tf.square(h + b - y))"
    assert read(body).train_ops


def test_an_augmented_assignment_of_tensors_is_declined():
    """``h += b``: the chain it extends is not followed (its earlier terms), so it is declined."""
    assert "extends a chain of arithmetic" in reason("h += b\nloss = tf.reduce_mean(tf.square(h - y))")


def test_a_python_counter_in_a_helper_is_not_tensor_arithmetic():
    body = ("def head(t):\n    n = 0\n    n += 1\n    return t * n\n\n\n"
            "loss = tf.reduce_mean(tf.square(head(h) - y))")
    assert read(body).train_ops


@pytest.mark.parametrize("body", [
    "loss = tf.reduce_mean(tf.square(sum([b, tf.sigmoid(h), h]) - y))",  # 0 + b + sigmoid(h) + h (measured: differs)
    "loss = tf.reduce_mean(tf.square(sum(t for t in [b, h]) - y))",  # a sequence the rule does not follow
])
def test_pythons_sum_of_tensors_is_a_chain(body):
    assert "chain" in reason(body)


@pytest.mark.parametrize("body", [
    "loss = tf.reduce_mean(tf.square(h - y)) + 1e-3 * sum(tf.nn.l2_loss(v) for v in [w, v])",  # weight decay
    "loss = tf.reduce_mean(tf.square(h * sum([1.0, 2.0]) - y))",  # numbers
])
def test_pythons_sum_of_scalar_reductions_or_numbers_is_kept(body):
    assert read(body).train_ops


# (round 14) integer chains: exact arithmetic (wrapping too is associative), so grappler's regrouping
# cannot change them: TensorFlow-Examples' dynamic_rnn.py picks each sequence's last output with
# `tf.range(0, batch_size) * seq_max_len + (seqlen - 1)` (executed: tests/fuzz_eager, `rnn:sequence_length`)
INTEGER_PROGRAM = '''import numpy as np
import tensorflow as tf

seq_max_len = 4
x = tf.placeholder(tf.float32, [None, seq_max_len, 2])
seqlen = tf.placeholder(tf.int32, [None])
w = tf.get_variable("w", [2, 1])


def last_output(outputs, seqlen):
    batch_size = tf.shape(outputs)[0]
    {index}
    return tf.gather(tf.reshape(outputs, [-1, 2]), index)


loss = tf.reduce_mean(tf.matmul(last_output(x, {passed}), w))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    sess.run(train_op, {{x: np.ones((3, seq_max_len, 2), np.float32), seqlen: [1, 2, 3]}})
'''


def read_integer(index: str, passed: str = "seqlen"):
    return Reader(cst.parse_module(INTEGER_PROGRAM.format(index=index, passed=passed))).read()


@pytest.mark.parametrize("index", [
    "index = tf.range(0, batch_size) * seq_max_len + (seqlen - 1)",
    "index = tf.range(0, tf.shape(outputs)[0]) * 4 + (seqlen + seq_max_len - 1) % seq_max_len",
    "index = tf.cast(tf.range(batch_size), tf.int32) * seq_max_len + seqlen - 1",
    "index = tf.argmax(outputs[:, 0, :], 1, output_type=tf.int32) + seqlen - 1",
])
def test_a_chain_of_integers_is_migrated(index):
    read_integer(index)


@pytest.mark.parametrize("index, passed, why", [
    ("index = tf.cast(tf.cast(seqlen, tf.float32) * 2.0 + tf.cast(batch_size, tf.float32) - 1.0, tf.int32)",
     "seqlen", "floats inside the cast"),
    ("index = tf.range(0, batch_size) * seq_max_len + (seqlen - 1)", "tf.cast(seqlen, tf.float32)",
     "the helper's parameter is passed a float"),
    ("index = tf.range(0, batch_size, dtype=tf.float32) * seq_max_len + (seqlen - 1)", "seqlen",
     "a float range"),
])
def test_a_chain_with_a_float_operand_is_still_declined(index, passed, why):
    with pytest.raises(Decline) as caught:
        read_integer(index, passed)
    assert "puts a constant in a chain" in caught.value.reason, why
