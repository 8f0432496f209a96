"""Issue 25: the planner's value kinds come from tables of proven TF APIs, never from spelling;
cached reads decline with that reason exactly where they occur; ``match`` captures bind.

(Engine-only checks; the executed programs are ``fixtures/*/soundness_*`` in
``test_soundness_classes.py`` and the fuzzer's ``kinds_*`` productions.)
"""

from __future__ import annotations

import pytest

from codemods.api import migrate_source
from codemods.rules.tape.tfapi import Api, classify

HEAD = '''import numpy as np
import tensorflow.compat.v1 as tf

x = tf.placeholder(tf.float32, [None, 3])
y = tf.placeholder(tf.float32, [None, 1])
'''
TRAIN = "train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)\n"


@pytest.mark.parametrize("name, api", [
    ("tf.distributions.Categorical", Api.PURE),  # a tensor of its arguments, not a variable object
    ("tf.Print", Api.PURE),
    ("tf.nn.rnn_cell.LSTMStateTuple", Api.PURE),
    ("tf.identity", Api.PURE),
    ("tf.SomeNewConstructor", Api.UNKNOWN),  # capitalised is not enough to be an object
    ("tf.nn.some_new_op", Api.UNKNOWN),  # lowercase is not enough to be a pure op
    ("tf.TensorArray", Api.UNKNOWN),
    ("tf.keras.layers.Dense", Api.OBJECT),
    ("tf.train.AdamOptimizer", Api.OBJECT),
    ("tf.nn.rnn_cell.GRUCell", Api.OBJECT),
    ("tf.Session", Api.OBJECT),
    ("tf.nn.static_rnn", Api.HAZARD),
    ("tf.nn.static_bidirectional_rnn", Api.HAZARD),
    ("tf.contrib.legacy_seq2seq.rnn_decoder", Api.HAZARD),
    ("tf.matmul", Api.PURE),
    ("tf.math.reduce_logsumexp", Api.PURE),
])
def test_classify_reads_the_tables_not_the_spelling(name: str, api: Api) -> None:
    """Each canonical name gets the kind its table proves, and a name no table lists is UNKNOWN."""
    assert classify(name) is api


def _reasons(source: str):
    result = migrate_source(source, path="m.py")
    return result, [d.message for d in result.diagnostics if d.code == "TFC202"]


def test_caching_device_declines_with_that_reason() -> None:
    """A ``caching_device`` scope declines the module, naming the cached reads."""
    source = HEAD + '''with tf.variable_scope("enc", caching_device="/cpu:0"):
    w = tf.get_variable("w", [3, 1])
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
''' + TRAIN
    result, reasons = _reasons(source)
    assert result.code == source
    assert any("cached reads" in r and "`caching_device`" in r for r in reasons), reasons


def test_cached_reads_reason_absent_without_cached_reads() -> None:
    """A program that only mentions caching in other senses (``dataset.cache()``, a string) is
    rewritten, and no decline speaks of cached reads."""
    source = HEAD + '''data = tf.data.Dataset.from_tensor_slices(np.ones((4, 3), np.float32)).cache()
note = "caching_device is not used here"
w = tf.get_variable("w", [3, 1])
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
''' + TRAIN
    result, reasons = _reasons(source)
    assert result.code != source and "GradientTape" in result.code
    assert not any("cached reads" in r for r in reasons), reasons


def test_static_rnn_declines_naming_it() -> None:
    """``tf.nn.static_rnn`` declines the module and the reason names it."""
    source = HEAD + '''cell = tf.nn.rnn_cell.BasicRNNCell(4)
outputs, state = tf.nn.static_rnn(cell, tf.unstack(tf.reshape(x, [-1, 3, 1]), axis=1), dtype=tf.float32)
loss = tf.reduce_mean(tf.square(state))
''' + TRAIN
    result, reasons = _reasons(source)
    assert result.code == source
    assert any("`tf.nn.static_rnn`" in r and "cached reads" in r for r in reasons), reasons


@pytest.mark.parametrize("read", ["wpe[:2]", "wpe[1]", "wpe.value()"])
def test_a_read_of_a_variable_moves_inside_the_tape(read: str) -> None:
    """A slice, item or method read of a variable computed before the loss goes inside the tape."""
    source = HEAD + f'''wpe = tf.get_variable("wpe", [4, 1])
pos = {read}
w = tf.get_variable("w", [3, 1])
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + tf.reduce_mean(pos) - y))
''' + TRAIN
    result, _ = _reasons(source)
    assert "with tf.GradientTape() as tape:\n" in result.code
    assert f"\n    pos = {read}\n" in result.code, result.code  # inside the `with`


@pytest.mark.parametrize("ctor", [
    "tf.distributions.Normal(loc=tf.matmul(x, w), scale=1.0)",
    "tf.nn.rnn_cell.LSTMStateTuple(tf.matmul(x, w), y)",
    "tf.Print(tf.matmul(x, w), [w])",
])
def test_a_constructor_of_tensors_moves_inside_the_tape(ctor: str) -> None:
    """An object a TF constructor builds from tensors is computed inside the tape, not left above it
    as if it were a variable object."""
    source = HEAD + f'''w = tf.get_variable("w", [3, 1])
obj = {ctor}
loss = tf.reduce_mean(tf.square(tf.add_n(list(obj)) if isinstance(obj, tuple) else obj))
''' + TRAIN
    source = source.replace("tf.add_n(list(obj)) if isinstance(obj, tuple) else obj",
                            "obj.mean()" if "distributions" in ctor else
                            ("obj.c" if "StateTuple" in ctor else "obj"))
    result, _ = _reasons(source)
    assert "with tf.GradientTape() as tape:\n" in result.code
    assert "\n    obj = " in result.code, result.code  # inside the `with`


def test_match_capture_is_a_binding() -> None:
    """A ``case loss:`` capture that rebinds the loss is wrapped by the tape with the first definition."""
    source = HEAD + '''w = tf.get_variable("w", [3, 1])
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
match 2.0 * loss:
    case loss:
        pass
''' + TRAIN
    result, _ = _reasons(source)
    assert "with tf.GradientTape() as tape:\n" in result.code
    assert "\n    match 2.0 * loss:\n        case loss:" in result.code, result.code  # inside the `with`
