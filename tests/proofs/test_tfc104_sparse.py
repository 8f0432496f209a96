"""TFC104 and sparse gradients (``IndexedSlices``): every difference the rule page states between a
TF 1 optimizer and the Keras class TFC104 writes is measured here, dense and sparse with repeated
ids, and the rule keeps every class but GradientDescent wherever a variable may receive one."""

from __future__ import annotations

import inspect

import pytest

import _sparse_optimizers as sparse
from codemods.api import Options, migrate_source
from codemods.rules.tfc104_keras_optimizer import SPARSE_DIFFERS, KerasOptimizerInEagerCode

# What the rule page states (dense, sparse with repeated ids): the largest absolute difference of
# the model's variables after 20 steps, TF 1 against the Keras class.
DOCUMENTED = {
    "GradientDescent": ("0", "0"),
    "Adagrad": ("6.0e-8", "0.039"),
    "Adadelta": ("0", "5.0e-4"),
    "Ftrl": ("3.0e-8", "1.0"),
    "Adam": ("2.0e-6", "0.065"),
    "Momentum": ("1.2e-7", "0.27"),
    "RMSProp": ("0.11", "0.13"),
}
DOC = inspect.cleandoc(KerasOptimizerInEagerCode.__doc__ or "")


def _close(measured: float, documented: str) -> bool:
    value = float(documented)
    return abs(measured - value) <= 0.1 * value + 1e-7


@pytest.mark.parametrize("optimizer", sorted(sparse.OPTIMIZERS))
def test_documented_differences_are_measured(optimizer: str) -> None:
    """The dense and sparse differences the rule page states for ``optimizer`` are what TF 1 and the
    Keras class give after 20 steps (within 10 %)."""
    dense, sparse_figure = DOCUMENTED[optimizer]
    assert f"| {optimizer} |" in DOC and f"| {dense} | {sparse_figure} |" in DOC.split(f"| {optimizer} |")[1]
    measured_dense = sparse.max_abs_difference(*sparse.runs(optimizer, sparse.DENSE))
    measured_sparse = sparse.max_abs_difference(*sparse.runs(optimizer, sparse.SPARSE))
    assert _close(measured_dense, dense), (optimizer, measured_dense)
    assert _close(measured_sparse, sparse_figure), (optimizer, measured_sparse)


def test_decline_messages_quote_the_measured_figures() -> None:
    """Each class's decline message quotes the sparse figure the test measures and the page states."""
    for cls, (_, figure) in SPARSE_DIFFERS.items():
        assert DOCUMENTED[cls[: -len("Optimizer")]][1] == figure


@pytest.mark.parametrize("optimizer", sorted(SPARSE_DIFFERS))
def test_sparse_program_keeps_the_tf1_optimizer(optimizer: str) -> None:
    """On the embedding-lookup program every class but GradientDescent stays ``tf.train`` with a
    TFC104 reason naming the lookup; the tape rewrite (TFC103) still happens."""
    source = sparse.program(optimizer[: -len("Optimizer")], sparse.SPARSE)
    result = migrate_source(source, Options(unsafe_fixes=True))
    assert "keras" not in result.code and f"tf.train.{optimizer}(" in result.code
    assert "tape.gradient" in result.code
    [finding] = [d for d in result.diagnostics if d.code == "TFC104"]
    assert "`tf.nn.embedding_lookup` (line 16) gives the variable it reads a sparse gradient" \
        in finding.message and not finding.applied


def test_sparse_gradient_descent_is_converted_and_trains_identically() -> None:
    """GradientDescent -> SGD is converted on the sparse program too: TF 1 and Keras agree exactly."""
    result = migrate_source(sparse.program("GradientDescent", sparse.SPARSE), Options())
    assert "tf.keras.optimizers.SGD(learning_rate=0.1)" in result.code
    before = sparse.run_eager(sparse.program("GradientDescent", sparse.SPARSE), legacy=True)
    after = sparse.run_eager(result.code, legacy=False)
    assert sparse.max_abs_difference(before, after) == 0.0
