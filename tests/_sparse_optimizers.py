"""Programs and runs for TFC104's sparse-gradient measurements (``test_tfc104_sparse.py``): one
eager TF 1 program per optimizer class, in a dense form (a one-hot ``matmul`` reads an embedding
table: a dense gradient) and a sparse form (``tf.nn.embedding_lookup`` of the same rows: an
``IndexedSlices`` gradient, ids repeated within a batch and rows absent from some batches), run as
TF 1 ran it (``tf.compat.v1.train`` in eager on ``tf.Variable``) and with the Keras class TFC104
writes for that optimizer."""

from __future__ import annotations

from typing import Dict, Tuple

import numpy as np

from _equivalence import Trace, migrate, run_eager

STEPS = 20
# TF 1 constructor per optimizer (the learning rates make every class move the rows visibly).
OPTIMIZERS = {
    "GradientDescent": "tf.train.GradientDescentOptimizer(0.1)",
    "Adagrad": "tf.train.AdagradOptimizer(0.1)",
    "Adadelta": "tf.train.AdadeltaOptimizer(1.0)",
    "Ftrl": "tf.train.FtrlOptimizer(0.1)",
    "Adam": "tf.train.AdamOptimizer(0.05)",
    "Momentum": "tf.train.MomentumOptimizer(0.1, momentum=0.9)",
    "RMSProp": "tf.train.RMSPropOptimizer(0.01)",
}
# TFC104 keeps RMSProp (no Keras class is written): the Keras class its TF 1 arguments map to.
KERAS_BY_HAND = {"RMSProp": "tf.keras.optimizers.RMSprop(learning_rate=0.01, rho=0.9, momentum=0.0, epsilon=1e-10)"}

PROGRAM = '''import numpy as np
import tensorflow.compat.v1 as tf

tf.enable_eager_execution()
# Six rows; each batch repeats an id and leaves rows out (row 5 is never read).
IDS = np.array([[1, 1, 3], [0, 2, 2], [4, 4, 4], [1, 3, 0]], np.int32)
ONE_HOT = np.eye(6, dtype=np.float32)[IDS]
Y = np.linspace(-2.0, 2.0, 4 * 3 * 2).reshape(4, 3, 2).astype(np.float32)
table = tf.Variable(np.linspace(-1.0, 1.0, 12).reshape(6, 2).astype(np.float32), name="table")
w = tf.Variable(np.array([[0.5, -0.3], [0.2, 0.8]], np.float32), name="w")
state = {"step": 0}


def compute_loss():
    i = state["step"] % 4
    rows = LOOKUP
    return tf.reduce_mean(tf.square(tf.matmul(rows, w) - Y[i]))


def make_trainer():
    optimizer = OPTIMIZER

    def train_step():
        value = compute_loss()
        optimizer.minimize(compute_loss, var_list=[table, w])
        state["step"] += 1
        return value

    return train_step


train_step = make_trainer()
'''
DENSE = "tf.matmul(ONE_HOT[i], table)"
SPARSE = "tf.nn.embedding_lookup(table, IDS[i])"


def program(optimizer: str, lookup: str) -> str:
    """The TF 1 program for ``optimizer`` reading the table through ``lookup``."""
    return PROGRAM.replace("OPTIMIZER", OPTIMIZERS[optimizer]).replace("LOOKUP", lookup)


def keras_program(optimizer: str, lookup: str) -> str:
    """The program with the Keras class TFC104 writes for ``optimizer`` (the engine's rewrite of
    the dense program, whose table TFC104 converts), reading the table through ``lookup``."""
    if optimizer in KERAS_BY_HAND:  # the tape form TFC103 writes, with the Keras class by hand
        after = migrate(program(optimizer, DENSE), expect="TFC103")
        assert OPTIMIZERS[optimizer] in after, after
        return after.replace(OPTIMIZERS[optimizer], KERAS_BY_HAND[optimizer]).replace(DENSE, lookup)
    after = migrate(program(optimizer, DENSE), expect="TFC104", unsafe_fixes=True)
    assert "tf.keras.optimizers." in after, after
    return after.replace(DENSE, lookup)


def runs(optimizer: str, lookup: str) -> Tuple[Trace, Trace]:
    """(TF 1, Keras) traces of ``STEPS`` steps."""
    return (run_eager(program(optimizer, lookup), legacy=True, steps=STEPS),
            run_eager(keras_program(optimizer, lookup), legacy=False, steps=STEPS))


def max_abs_difference(before: Trace, after: Trace) -> float:
    """The largest absolute difference of the model variables (table and w) after training."""
    return max(float(np.max(np.abs(before.variables[name] - after.variables[name]))) for name in ("table", "w"))


def absent_row_moved(trace: Trace) -> float:
    """How far row 5 (never in a batch) moved from its initial value."""
    initial = np.linspace(-1.0, 1.0, 12).reshape(6, 2).astype(np.float32)[5]
    return float(np.max(np.abs(trace.variables["table"][5] - initial)))


def measure() -> Dict[str, Dict[str, float]]:
    """Max abs difference TF 1 vs Keras, dense and sparse, per optimizer."""
    table: Dict[str, Dict[str, float]] = {}
    for optimizer in OPTIMIZERS:
        row = {}
        for kind, lookup in (("dense", DENSE), ("sparse", SPARSE)):
            before, after = runs(optimizer, lookup)
            row[kind] = max_abs_difference(before, after)
            row[kind + " absent row TF1"] = absent_row_moved(before)
            row[kind + " absent row Keras"] = absent_row_moved(after)
        table[optimizer] = row
    return table


if __name__ == "__main__":
    for name, row in measure().items():
        print(name, {k: f"{v:.3g}" for k, v in row.items()})
