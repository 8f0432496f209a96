"""TFC104's sparse-gradient gate (``codemods.rules.tape.sparse_gradients``) on small eager programs: each
cause a variable may receive ``IndexedSlices`` from keeps the optimizer with that cause named, and a
program without one is converted."""

from __future__ import annotations

import pytest

from codemods.api import Options, migrate_source

PROGRAM = '''import numpy as np
import tensorflow as tf
{imports}
tf.enable_eager_execution()
table = tf.Variable(np.ones((6, 2), np.float32))
w = tf.Variable(np.ones((2, 2), np.float32))
IDS = np.array([1, 1, 3], np.int32)
{helpers}

def make_trainer():
    optimizer = tf.train.AdagradOptimizer(0.1)

    def train_step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square({rows}))
        variables = [table, w]
        gradients = tape.gradient(loss, variables)
        optimizer.apply_gradients(zip(gradients, variables))

    return train_step
'''


def tfc104(rows: str, imports: str = "", helpers: str = ""):
    """The TFC104 diagnostic and the new code for the program reading ``rows``."""
    result = migrate_source(PROGRAM.format(rows=rows, imports=imports, helpers=helpers), Options())
    [finding] = [d for d in result.diagnostics if d.code == "TFC104"]
    return finding, result.code


@pytest.mark.parametrize("rows, imports, helpers, cause", [
    pytest.param("tf.gather(table, IDS)", "", "", "`tf.gather` (line 15) gives the variable it reads a sparse gradient",
                 id="gather"),
    pytest.param("tf.keras.layers.Embedding(6, 2)(IDS)", "", "",
                 "`tf.keras.layers.Embedding` (line 15) gives the variable it reads", id="keras-embedding"),
    pytest.param("table.sparse_read(IDS)", "", "", "`table.sparse_read` (line 15) may read rows of a variable",
                 id="sparse-read-method"),
    pytest.param("lookup(table, IDS)", "from embeddings import lookup", "",
                 "the module imports from `embeddings`, whose code is not seen", id="imported-function"),
    pytest.param("tf.unsorted_segment_sum(table, IDS, 4)", "", "",
                 "`tf.unsorted_segment_sum` (line 15) is not known to give dense gradients only", id="unknown-tf-api"),
    pytest.param("read(table)", "", "\n\ndef read(t, reader=tf.identity):\n    return reader(t)\n",
                 "calls into the parameter `reader`", id="parameter-called"),
])
def test_a_possible_sparse_gradient_keeps_the_optimizer(rows: str, imports: str, helpers: str, cause: str) -> None:
    """A cause of ``IndexedSlices`` keeps ``AdagradOptimizer``, with the cause in the message."""
    finding, code = tfc104(rows, imports, helpers)
    assert "keras.optimizers" not in code and not finding.applied
    assert "a variable may receive a sparse gradient (`IndexedSlices`)" in finding.message
    assert cause in finding.message, finding.message
    assert "Keras `Adagrad` adds the square of each repeated id's gradient apart" in finding.message


@pytest.mark.parametrize("helpers", ["", "\ninit = tf.keras.initializers.GlorotUniform()\n"], ids=["plain", "initializer"])
def test_dense_program_is_converted(helpers: str) -> None:
    """A loss built only from APIs known to give dense gradients gets the Keras class (an
    initializer, which only makes a first value, does not count)."""
    finding, code = tfc104("tf.matmul(tf.nn.relu(table), w)", helpers=helpers)
    assert finding.applied and "tf.keras.optimizers.Adagrad(learning_rate=0.1" in code


def test_gradient_descent_is_converted_with_a_gather() -> None:
    """GradientDescent has no sparse gate: Keras SGD applies ``IndexedSlices`` as TF 1 does."""
    source = PROGRAM.format(rows="tf.gather(table, IDS)", imports="", helpers="").replace(
        "AdagradOptimizer(0.1)", "GradientDescentOptimizer(0.1)")
    result = migrate_source(source, Options())
    assert "tf.keras.optimizers.SGD(learning_rate=0.1)" in result.code


MODEL = '''

class Net(tf.keras.Model):
    def __init__(self{extra}):
        super().__init__()
        self.dense = {layer}

    def call(self, x):
        return self.dense(x)


net = Net({arg})
'''


def test_keras_model_of_this_module_is_converted() -> None:
    """``self.dense(x)`` in a Keras model built by this module's code is seen: converted."""
    helpers = MODEL.format(extra="", layer="tf.keras.layers.Dense(2)", arg="")
    finding, code = tfc104("tf.matmul(net(table), w)", helpers=helpers)
    assert finding.applied and "tf.keras.optimizers.Adagrad(" in code


def test_layer_passed_in_by_a_caller_keeps_the_optimizer() -> None:
    """A layer the constructor takes as a parameter (``self.dense = layer``) may be any code, an
    ``Embedding`` from another module included: the optimizer is kept."""
    helpers = MODEL.format(extra=", layer", layer="layer", arg="tf.keras.layers.Dense(2)")
    finding, code = tfc104("tf.matmul(net(table), w)", helpers=helpers)
    assert not finding.applied and "keras.optimizers" not in code
    assert "calls into the parameter `self`" in finding.message, finding.message
