"""TFC301 and ``tf.contrib.rnn`` (round 14): TF 1.15's ``tf.contrib.rnn`` re-exports the core RNN
cells and static RNNs, so ``from tensorflow.contrib import rnn`` + ``rnn.BasicLSTMCell`` /
``rnn.static_rnn`` (the TensorFlow-Examples RNN tutorials) migrate like ``tf.nn.rnn_cell`` /
``tf.nn.static_rnn``; the alias must be a module alias and nothing else, and contrib's own cells
and the random wrappers stay declined, each reported where the user wrote it. The executed proof
is the fixtures (``fixtures/TFC301/static_rnn_contrib_alias``...) and the eager fuzzer's round-14
stream."""

from __future__ import annotations

import re

import libcst as cst
import pytest

from codemods.api import Options, migrate_source
from codemods.rules.eager.contrib_rnn import contrib_rnn_as_tf

HEAD = "import numpy as np\nimport tensorflow as tf\n"
GRAPH = '''x = tf.placeholder(tf.float32, [None, 3, 2])
y = tf.placeholder(tf.float32, [None, 1])
steps = tf.unstack(x, 3, 1)
cell = {cell}
outputs, state = {static}(cell, steps, dtype=tf.float32)
loss = tf.reduce_mean(tf.square(tf.layers.dense(outputs[-1], 1) - y))
train_op = tf.train.AdamOptimizer(0.1).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(3):
        print(sess.run([train_op, loss], {{x: np.ones((2, 3, 2)), y: np.ones((2, 1))}})[1])
'''


def _tfc301(source: str):
    result = migrate_source(source, Options(select=frozenset({"TFC301"})))
    found = [d for d in result.diagnostics if d.code == "TFC301"]
    assert len(found) == 1, [d.format() for d in result.diagnostics]
    return result, found[0]


def _program(imports: str = "from tensorflow.contrib import rnn\n", cell: str = "rnn.BasicLSTMCell(4)",
             static: str = "rnn.static_rnn", extra: str = "") -> str:
    return HEAD + imports + extra + GRAPH.format(cell=cell, static=static)


@pytest.mark.parametrize("imports,cell,static", [
    ("from tensorflow.contrib import rnn\n", "rnn.BasicLSTMCell(4)", "rnn.static_rnn"),
    ("from tensorflow.contrib import rnn as contrib_rnn\n", "contrib_rnn.GRUCell(4)", "contrib_rnn.static_rnn"),
    ("", "tf.contrib.rnn.LSTMCell(4)", "tf.contrib.rnn.static_rnn"),
    ("", "tf.nn.rnn_cell.BasicRNNCell(4)", "tf.nn.static_rnn"),
])
def test_core_cells_and_static_rnn_migrate_under_every_spelling(imports, cell, static):
    """Each spelling becomes the ``tf.compat.v1`` core name; the contrib import is gone."""
    result, finding = _tfc301(_program(imports, cell, static))
    assert finding.applied, finding.format()
    code = re.sub(r'"""[\s\S]*?"""|#.*', "", result.code)  # the program, not its comments
    assert "contrib" not in code and "Session" not in code and "placeholder" not in code
    assert "tf.compat.v1.nn.static_rnn(cell, steps, dtype=tf.float32)" in result.code
    core = cell.split(".")[-1].split("(")[0]
    assert f"tf.compat.v1.nn.rnn_cell.{core}(4)" in result.code
    compile(result.code, "<out>", "exec")


def test_the_output_is_clean_and_idempotent():
    result, _ = _tfc301(_program())
    again = migrate_source(result.code, Options())
    assert not again.changed and again.diagnostics == []


@pytest.mark.parametrize("cell,named", [
    ("rnn.LayerNormBasicLSTMCell(4)", "tf.contrib.rnn.LayerNormBasicLSTMCell"),  # contrib's own cell
    ("rnn.DropoutWrapper(rnn.BasicLSTMCell(4), output_keep_prob=0.9)", "tf.nn.rnn_cell.DropoutWrapper"),
    ("tf.contrib.rnn.DropoutWrapper(tf.nn.rnn_cell.GRUCell(4))", "tf.nn.rnn_cell.DropoutWrapper"),
])
def test_names_outside_the_tables_decline_where_the_user_wrote_them(cell, named):
    source = _program(cell=cell)
    result, finding = _tfc301(source)
    assert not finding.applied and result.code == source
    assert f"`{named}` in the forward pass is outside the names" in finding.message
    assert (finding.line, finding.col) == (7, 8)  # `cell = <here>`


@pytest.mark.parametrize("extra,why", [
    ("cells = rnn\n", "`rnn` (from `tensorflow.contrib`) is bound or used other than as `rnn.<name>`"),
    ("def make(rnn):\n    return rnn\n\n\n", "`rnn` (from `tensorflow.contrib`) is bound or used other than"),
    ("rnn = None\n", "`rnn` (from `tensorflow.contrib`) is bound or used other than"),
])
def test_an_alias_that_may_be_anything_else_declines_naming_the_use(extra, why):
    source = _program(extra=extra)
    result, finding = _tfc301(source)
    assert not finding.applied and result.code == source
    assert why in finding.message
    assert finding.line == 3  # the import, which the rule could not read as `tf.contrib.rnn`


def test_without_a_plain_tensorflow_import_the_alias_is_not_read():
    source = ("import numpy as np\nimport tensorflow.compat.v1 as tf\nfrom tensorflow.contrib import rnn\n"
              + GRAPH.format(cell="rnn.BasicLSTMCell(4)", static="rnn.static_rnn"))
    result, finding = _tfc301(source)
    assert not finding.applied and result.code == source
    assert "without one `import tensorflow as tf`" in finding.message


def test_other_contrib_imports_keep_their_decline():
    source = _program(imports="from tensorflow.contrib import rnn, layers\n")
    _, finding = _tfc301(source)
    assert not finding.applied and "`from tensorflow... import`" in finding.message


def test_the_respelling_keeps_every_other_statement_and_maps_back_to_the_originals():
    module = cst.parse_module(_program())
    new, origin, why = contrib_rnn_as_tf(module)
    assert not why and len(new.body) == len(module.body) - 1
    assert "from tensorflow.contrib import rnn" not in new.code
    assert "tf.contrib.rnn.BasicLSTMCell(4)" in new.code and "tf.contrib.rnn.static_rnn(" in new.code
    originals = {id(s) for s in module.body}
    for stmt in new.body:  # every statement is the original or maps back to it
        assert id(stmt) in originals or id(origin[id(stmt)]) in originals


def test_a_module_without_the_import_is_returned_as_is():
    module = cst.parse_module(_program(imports="", cell="tf.nn.rnn_cell.GRUCell(4)", static="tf.nn.static_rnn"))
    assert contrib_rnn_as_tf(module) == (module, {}, {})
