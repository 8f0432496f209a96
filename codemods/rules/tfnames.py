"""Qualified-name tables (data, apart from the engine) and the canonicalisation that
makes every import form of TensorFlow look the same to the rules.

``canonical("tensorflow.compat.v1.train.AdamOptimizer") == "tf.train.AdamOptimizer"``;
``canonical("tensorflow.contrib.estimator.clip_gradients_by_norm")
== "tf.contrib.estimator.clip_gradients_by_norm"``; non-TensorFlow names give None.
"""

from __future__ import annotations

from typing import Iterable, Optional, Set

import libcst as cst
from libcst.metadata import QualifiedName, QualifiedNameProvider, QualifiedNameSource

# Longest first: tf_upgrade_v2 output (tf.compat.v1.*) and `import tensorflow.compat.v1 as tf`
# both name the same TF1 symbols.
_TF_PREFIXES = (
    "tensorflow.compat.v1.",
    "tensorflow.compat.v2.",
    "tensorflow._api.v2.compat.v1.",
    "tensorflow._api.v2.",
    "tensorflow.",
)


def canonical(qualified: str) -> Optional[str]:
    """``tensorflow[.compat.v1].X`` -> ``tf.X``; None for anything else."""
    for prefix in _TF_PREFIXES:
        if qualified.startswith(prefix):
            return "tf." + qualified[len(prefix):]
    if qualified == "tensorflow":
        return "tf"
    return None


def canonical_names(names: Iterable[QualifiedName]) -> Set[str]:
    """Canonical TF names among libcst qualified names (imports only, never locals)."""
    out = set()
    for qn in names:
        if qn.source is QualifiedNameSource.LOCAL:
            continue
        name = canonical(qn.name)
        if name is not None:
            out.add(name)
    return out


def tf_names_of(command: cst.MetadataDependent, node: cst.CSTNode) -> Set[str]:
    """Canonical TF names a node (a Name/Attribute/Call.func) refers to; needs
    ``QualifiedNameProvider`` in the rule's METADATA_DEPENDENCIES."""
    try:
        names = command.get_metadata(QualifiedNameProvider, node, set())
    except KeyError:
        return set()
    return canonical_names(names)


# -- removed contrib helpers -> tfclip_compat replacements (same signature & numerics) --
CONTRIB_TO_SHIM = {
    "tf.contrib.estimator.clip_gradients_by_norm": "clip_gradients_by_norm",
    # where contrib.estimator defined it (deep imports in real repositories)
    "tf.contrib.estimator.python.estimator.extenders.clip_gradients_by_norm": "clip_gradients_by_norm",
    "tf.contrib.training.create_train_op": "create_train_op",
    "tf.contrib.training.clip_gradient_norms": "clip_gradient_norms",
    "tf.contrib.training.clip_gradient_norms_fn": "clip_gradient_norms_fn",
    "tf.contrib.training.add_gradients_summaries": "add_gradients_summaries",
    "tf.contrib.training.multiply_gradients": "multiply_gradients",
    "tf.contrib.layers.optimize_loss": "optimize_loss",
    "tf.contrib.layers.adaptive_clipping_fn": "adaptive_clipping_fn",
    # tf.contrib.layers re-exported optimize_loss from contrib.layers.python.layers.optimizers
    "tf.contrib.layers.python.layers.optimizers.optimize_loss": "optimize_loss",
    "tf.contrib.layers.python.layers.optimizers.adaptive_clipping_fn": "adaptive_clipping_fn",
    # ... through the package that star-imports optimizers.py (TF 1.15 layers/python/layers/__init__.py)
    "tf.contrib.layers.python.layers.optimize_loss": "optimize_loss",
    "tf.contrib.layers.python.layers.adaptive_clipping_fn": "adaptive_clipping_fn",
    # TF 1.15's tf.contrib.slim star-imported that package: slim.optimize_loss and
    # slim.adaptive_clipping_fn are the same function objects as contrib.layers'.
    "tf.contrib.slim.optimize_loss": "optimize_loss",
    "tf.contrib.slim.adaptive_clipping_fn": "adaptive_clipping_fn",
    "tf.contrib.training.python.training.training.create_train_op": "create_train_op",
    "tf.contrib.training.python.training.training.clip_gradient_norms": "clip_gradient_norms",
    "tf.contrib.training.python.training.training.clip_gradient_norms_fn": "clip_gradient_norms_fn",
    "tf.contrib.training.python.training.training.add_gradients_summaries": "add_gradients_summaries",
    "tf.contrib.training.python.training.training.multiply_gradients": "multiply_gradients",
    # tf.contrib.slim.learning (TF 1.15 learning.py): clip_gradient_norms is a copy of
    # contrib.training's, multiply_gradients builds the same multiplier op; create_train_op and
    # add_gradients_summaries are slim's own (other signature / summary tags): slim_* twins.
    "tf.contrib.slim.learning.create_train_op": "slim_create_train_op",
    "tf.contrib.slim.learning.clip_gradient_norms": "clip_gradient_norms",
    "tf.contrib.slim.learning.multiply_gradients": "multiply_gradients",
    "tf.contrib.slim.learning.add_gradients_summaries": "slim_add_gradients_summaries",
    "tf.contrib.slim.python.slim.learning.create_train_op": "slim_create_train_op",
    "tf.contrib.slim.python.slim.learning.clip_gradient_norms": "clip_gradient_norms",
    "tf.contrib.slim.python.slim.learning.multiply_gradients": "multiply_gradients",
    "tf.contrib.slim.python.slim.learning.add_gradients_summaries": "slim_add_gradients_summaries",
}

# -- gradient clipping functions (still in TF 2, except clip_by_average_norm: compat.v1 only) --
CLIP_FUNCTIONS = {
    "tf.clip_by_value",
    "tf.clip_by_norm",
    "tf.clip_by_global_norm",
    "tf.clip_by_average_norm",
    "tf.contrib.training.clip_gradient_norms",
    "tf.contrib.slim.learning.clip_gradient_norms",
}

# -- TF1 optimizers (tf.train.* == tf.compat.v1.train.*) --
TF1_OPTIMIZERS = {
    "tf.train.GradientDescentOptimizer",
    "tf.train.MomentumOptimizer",
    "tf.train.AdamOptimizer",
    "tf.train.AdagradOptimizer",
    "tf.train.AdadeltaOptimizer",
    "tf.train.RMSPropOptimizer",
    "tf.train.FtrlOptimizer",
    "tf.train.ProximalGradientDescentOptimizer",
    "tf.train.ProximalAdagradOptimizer",
    "tf.train.AdagradDAOptimizer",
}

# Wrappers whose minimize/apply_gradients do more than the inner optimizer: never rewrite.
OPTIMIZER_WRAPPERS = {
    "tf.tpu.CrossShardOptimizer",
    "tf.contrib.tpu.CrossShardOptimizer",
    "tf.train.SyncReplicasOptimizer",
    "tf.contrib.opt.MovingAverageOptimizer",
    "tf.train.experimental.MixedPrecisionLossScaleOptimizer",
    "tf.train.experimental.enable_mixed_precision_graph_rewrite",
}

# Graph-mode markers: their presence means the module builds a TF1 graph (Keras 3
# optimizers do not work there, so TF1 optimizers are kept as tf.compat.v1.train.*).
GRAPH_MODE_MARKERS = {
    "tf.Session",
    "tf.InteractiveSession",
    "tf.placeholder",
    "tf.disable_eager_execution",
    "tf.disable_v2_behavior",
    "tf.train.MonitoredTrainingSession",
    "tf.train.MonitoredSession",
    "tf.Graph",
    "tf.get_variable",
    "tf.estimator.Estimator",
    "tf.estimator.EstimatorSpec",
    "tf.global_variables_initializer",
}
