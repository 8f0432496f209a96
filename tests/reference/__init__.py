"""Test-only TF 1.15 ``tf.contrib`` reference, to execute legacy "before" programs on TF 2.

Nothing here imports ``tfclip_compat``: these modules are the ground truth the shim and the
codemods are compared against. They are rewritten from the TF 1.15 sources:

- ``reference.contrib_training``: ``tf.contrib.training`` (``create_train_op``,
  ``clip_gradient_norms``, ``clip_gradient_norms_fn``, ``add_gradients_summaries``,
  ``multiply_gradients``);
- ``reference.contrib_layers``: ``tf.contrib.layers`` (``optimize_loss``,
  ``adaptive_clipping_fn``, ``OPTIMIZER_CLS_NAMES``, ``OPTIMIZER_SUMMARIES``);
- ``reference.contrib_estimator`` (shim-core's): ``tf.contrib.estimator.clip_gradients_by_norm``,
  loaded lazily on first use of ``contrib.estimator``;
- ``reference.contrib_slim``: ``tf.contrib.slim.learning`` (``create_train_op``,
  ``clip_gradient_norms``, ``multiply_gradients``, ``add_gradients_summaries``), also reached as
  ``tf.contrib.slim.python.slim.learning``; ``tf.contrib.slim.optimize_loss`` /
  ``adaptive_clipping_fn`` are ``reference.contrib_layers``' functions, as in TF 1.15;
- ``reference.mnist_input_data``: ``tensorflow.examples.tutorials.mnist.input_data`` (the MNIST
  tutorial loader), reached at that path too; ``write_fake_mnist`` makes files for it to read;
- ``reference.clip_ops``: TF 1.15's ``global_norm``, ``clip_by_global_norm``, ``clip_by_norm``,
  which the three above use (not TF 2's, which changed details).

Import it from a test as ``from reference import legacy_tf, run_legacy, contrib`` (pytest puts
``tests/`` on ``sys.path`` because ``tests/`` has a ``conftest.py`` and no ``__init__.py``).

Running a legacy program (what the codemod equivalence tests do)::

    from reference import run_legacy

    BEFORE = '''
    import tensorflow as tf
    x = tf.placeholder(tf.float32, [None, 3])
    w = tf.get_variable("w", [3, 1])
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w)))
    opt = tf.contrib.estimator.clip_gradients_by_norm(tf.train.AdamOptimizer(0.1), 1.0)
    train_op = opt.minimize(loss)
    '''
    with tf.Graph().as_default():
        ns = run_legacy(BEFORE)          # executes the source; returns its globals
        train_op, w = ns["train_op"], ns["w"]
        with tf.compat.v1.Session() as sess: ...

``run_legacy`` only reroutes the imports of the executed source: ``import tensorflow as tf``,
``import tensorflow.compat.v1 as tf``, ``from tensorflow.contrib import layers``,
``from tensorflow.contrib.training import create_train_op`` etc. all resolve to the legacy
namespace below; every other import is the real one. Nothing global is patched. Graph mode is the
caller's job (``with tf.Graph().as_default():``), as it was TF1's default.

``legacy_tf()`` returns that namespace directly: a module-like object whose attributes are those of
``tf.compat.v1`` (``tf.train.AdamOptimizer``, ``tf.placeholder``, ``tf.Session``...) plus
``.contrib`` (``contrib.estimator``, ``contrib.training``, ``contrib.layers``,
``contrib.slim.learning``), i.e. TF 1.15's
``import tensorflow as tf`` for the parts this project covers. Pass it in place of ``tf`` to a
function written against TF 1.
"""

from __future__ import annotations

import builtins
import importlib
import textwrap
import types
from typing import Any, Dict, Optional

import tensorflow as _tf

from . import clip_ops, contrib_layers, contrib_slim, contrib_training, mnist_input_data

__all__ = [
    "clip_ops",
    "contrib",
    "contrib_layers",
    "contrib_slim",
    "contrib_training",
    "legacy_tf",
    "mnist_input_data",
    "run_legacy",
]


class _LazyEstimator(types.ModuleType):
    """``tf.contrib.estimator`` whose attributes come from ``reference.contrib_estimator``."""

    def __getattr__(self, attr: str) -> Any:
        module = importlib.import_module(__name__ + ".contrib_estimator")
        return getattr(module, attr)


def _slim() -> types.ModuleType:
    """``tf.contrib.slim`` for the parts this project covers: ``learning`` (and its deep path),
    and ``optimize_loss`` / ``adaptive_clipping_fn``, which TF 1.15's slim star-imported from
    ``tf.contrib.layers.python.layers``: the very same functions as ``contrib.layers``'."""
    slim = types.ModuleType("tensorflow.contrib.slim", "Reference of TF 1.15 tf.contrib.slim.")
    slim.learning = contrib_slim.learning
    slim.optimize_loss = contrib_layers.optimize_loss
    slim.adaptive_clipping_fn = contrib_layers.adaptive_clipping_fn
    slim.python = types.ModuleType("tensorflow.contrib.slim.python")
    slim.python.slim = types.ModuleType("tensorflow.contrib.slim.python.slim")
    slim.python.slim.learning = contrib_slim.learning
    return slim


def _rnn() -> types.ModuleType:
    """``tf.contrib.rnn`` for the names that are TF 1's core objects: TF 1.15's
    ``tensorflow/contrib/rnn/__init__.py`` star-imports ``tensorflow.python.ops.rnn_cell`` (after
    contrib's own cells, so the core classes win) and imports ``static_rnn`` and
    ``static_bidirectional_rnn`` from ``tensorflow.python.ops.rnn``. Contrib's own cells
    (``LayerNormBasicLSTMCell``...) are not here."""
    rnn = types.ModuleType("tensorflow.contrib.rnn", "Reference of TF 1.15 tf.contrib.rnn (core names).")
    for cell in ("BasicLSTMCell", "BasicRNNCell", "GRUCell", "LSTMCell", "MultiRNNCell", "LSTMStateTuple",
                 "DropoutWrapper", "RNNCell"):
        setattr(rnn, cell, getattr(_tf.compat.v1.nn.rnn_cell, cell))
    rnn.static_rnn = _tf.compat.v1.nn.static_rnn
    rnn.static_bidirectional_rnn = _tf.compat.v1.nn.static_bidirectional_rnn
    return rnn


class _Contrib(types.ModuleType):
    """The ``tf.contrib`` namespace: ``estimator``, ``training``, ``layers``, ``slim``, ``rnn``."""

    def __init__(self) -> None:
        super().__init__("tensorflow.contrib", "Reference of TF 1.15 tf.contrib (tests only).")
        self.estimator = _LazyEstimator("tensorflow.contrib.estimator")
        self.training = contrib_training
        self.layers = contrib_layers
        self.slim = _slim()

    def __getattr__(self, attr: str) -> Any:
        if attr == "rnn":  # built on first use: the RNN cells need tf-keras (TF_USE_LEGACY_KERAS=1)
            self.rnn = _rnn()
            return self.rnn
        raise AttributeError(attr)


contrib = _Contrib()


class _LegacyTF(types.ModuleType):
    """``tf.compat.v1`` plus ``.contrib``: TF 1.15's ``tensorflow`` module for legacy programs."""

    def __init__(self) -> None:
        super().__init__("tensorflow", "TF 1.15 namespace: tf.compat.v1 + reference tf.contrib.")
        self.contrib = contrib
        # ``tensorflow.examples.tutorials.mnist.input_data``: the MNIST tutorial loader
        self.examples = types.ModuleType("tensorflow.examples")
        self.examples.tutorials = types.ModuleType("tensorflow.examples.tutorials")
        self.examples.tutorials.mnist = types.ModuleType("tensorflow.examples.tutorials.mnist")
        self.examples.tutorials.mnist.input_data = mnist_input_data
        # TF 1.15's clip ops, not TF 2's (bit-identical for valid float inputs; TF 2 changed edges).
        self.clip_by_global_norm = clip_ops.clip_by_global_norm
        self.clip_by_norm = clip_ops.clip_by_norm
        self.global_norm = clip_ops.global_norm

    def __getattr__(self, attr: str) -> Any:
        return getattr(_tf.compat.v1, attr)


_LEGACY = _LegacyTF()


def legacy_tf() -> types.ModuleType:
    """Return TF 1.15's ``tensorflow`` namespace: ``tf.compat.v1`` plus the reference ``contrib``."""
    return _LEGACY


def _resolve(dotted: str) -> Any:
    """Walk ``tensorflow.a.b`` from the legacy namespace (``compat.v1`` -> real ``compat.v1``)."""
    obj: Any = _LEGACY
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def _legacy_import(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002
    """``__import__`` that sends ``tensorflow`` and its submodules to the legacy namespace."""
    if level == 0 and (name == "tensorflow" or name.startswith("tensorflow.")):
        # ``import tensorflow.x.y`` binds the top package; ``from tensorflow.x import y`` wants x.
        # ``tensorflow.compat.v1`` keeps working: the legacy namespace has ``compat`` (v1's).
        return _resolve(name) if fromlist else _LEGACY
    return builtins.__import__(name, globals, locals, fromlist, level)


def run_legacy(source: str, namespace: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Execute TF1 ``source`` against the legacy namespace; return its globals.

    ``source`` is dedented first. ``namespace`` seeds the globals (e.g. a loss built elsewhere);
    ``tf`` is pre-bound to ``legacy_tf()`` unless the namespace already binds it.
    """
    scope: Dict[str, Any] = {"tf": _LEGACY, "__name__": "__legacy__"}
    scope.update(namespace or {})
    legacy_builtins = dict(vars(builtins))
    legacy_builtins["__import__"] = _legacy_import
    scope["__builtins__"] = legacy_builtins
    exec(compile(textwrap.dedent(source), "<legacy>", "exec"), scope)  # noqa: S102 - test helper
    return scope
