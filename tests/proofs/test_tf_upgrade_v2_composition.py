"""The TF 2 form rules compose with ``tf_upgrade_v2`` in either order: on TF1 programs written
with ``import tensorflow as tf``, ``tf_upgrade_v2`` then the engine, and the engine then
``tf_upgrade_v2``, both give programs that run on TF 2 and train exactly like the TF1 original."""

from __future__ import annotations

import pytest

from _equivalence import assert_equivalent, migrate, run_graph
from codemods.api import Options, migrate_source
from test_equivalence_tf2 import GRAPH_KINDS, _program

tf_upgrade_v2 = pytest.importorskip("tensorflow.tools.compatibility.tf_upgrade_v2")
ast_edits = pytest.importorskip("tensorflow.tools.compatibility.ast_edits")


def upgrade(source: str) -> str:
    """Run ``tf_upgrade_v2`` (the same change spec as the ``tf_upgrade_v2`` command) in-process."""
    upgrader = ast_edits.ASTCodeUpgrader(tf_upgrade_v2.TFAPIChangeSpec())
    ok, out, _logs, _errors = upgrader.update_string_pasta(source, "program.py")
    assert ok, _errors
    return out


def tf1_program(kind: str, optimizer: str) -> str:
    """The equivalence program of ``kind`` spelled as TF1 users wrote it (``import tensorflow as tf``,
    ``tf.contrib.estimator.clip_gradients_by_norm``)."""
    source = _program(kind, optimizer)
    source = source.replace("import tensorflow.compat.v1 as tf", "import tensorflow as tf")
    source = source.replace("from tensorflow.contrib.estimator import clip_gradients_by_norm\n", "")
    return source.replace("= clip_gradients_by_norm(", "= tf.contrib.estimator.clip_gradients_by_norm(")


CASES = [(kind, ["Adam", "Momentum", "Adagrad", "Ftrl"][i % 4]) for i, kind in enumerate(sorted(GRAPH_KINDS))]


@pytest.mark.parametrize("kind,optimizer", CASES)
def test_upgrade_then_codemods(kind: str, optimizer: str) -> None:
    """``tf_upgrade_v2`` first, then the engine: the TF 2 form applies to the upgraded code and the
    result trains like the TF1 original."""
    source = tf1_program(kind, optimizer)
    _, options, code = GRAPH_KINDS[kind]
    upgraded = upgrade(source)
    after = migrate(upgraded, expect=code, **options)
    assert "GradientTape" in after
    assert migrate_source(after, Options(**options)).code == after
    before_trace = run_graph(_program(kind, optimizer, reference=True)
                             .replace("import tensorflow.compat.v1 as tf", "import tensorflow as tf"), legacy=True)
    assert_equivalent(before_trace, run_graph(after, legacy=False))


@pytest.mark.parametrize("kind,optimizer", CASES)
def test_codemods_then_upgrade(kind: str, optimizer: str) -> None:
    """The engine first, then ``tf_upgrade_v2``: the upgraded output still trains like the original,
    and the engine has nothing left to do on it."""
    source = tf1_program(kind, optimizer)
    _, options, code = GRAPH_KINDS[kind]
    ours = migrate(source, expect=code, **options)
    after = upgrade(ours)
    assert "GradientTape" in after
    assert migrate_source(after, Options(**options)).code == after
    before_trace = run_graph(_program(kind, optimizer, reference=True)
                             .replace("import tensorflow.compat.v1 as tf", "import tensorflow as tf"), legacy=True)
    assert_equivalent(before_trace, run_graph(after, legacy=False))
