"""TFC002: ``tf.contrib.training`` and ``tf.contrib.slim.learning`` clipping helpers -> ``tfclip_compat``."""

from __future__ import annotations

from typing import ClassVar, FrozenSet, Mapping

from codemods.rules.tfnames import CONTRIB_TO_SHIM
from codemods.rules import Phase
from codemods.rules.compat.shim_rewrite import ShimRewrite

_TRAINING_HELPERS = frozenset(
    {
        "create_train_op",
        "clip_gradient_norms",
        "clip_gradient_norms_fn",
        "add_gradients_summaries",
        "multiply_gradients",
        "slim_create_train_op",
        "slim_add_gradients_summaries",
    }
)


class ContribTraining(ShimRewrite):
    """## What it does
    Replaces ``tf.contrib.training.create_train_op``, ``clip_gradient_norms``,
    ``clip_gradient_norms_fn``, ``add_gradients_summaries`` and ``multiply_gradients``
    (called, or passed as a value such as ``transform_grads_fn=``) with the
    ``tfclip_compat`` function of the same name, and adds ``import tfclip_compat``.

    TF-Slim's copies get their TF 1.15 twins: ``slim.learning.create_train_op`` ->
    ``tfclip_compat.slim_create_train_op`` (slim's signature: ``clip_gradient_norm``,
    ``gradient_multipliers``), ``slim.learning.add_gradients_summaries`` ->
    ``tfclip_compat.slim_add_gradients_summaries`` (slim's ``/gradient`` summary tags),
    ``slim.learning.clip_gradient_norms`` / ``multiply_gradients`` -> the contrib.training
    drop-ins (TF 1.15's slim versions compute the same ops). Every spelling is matched:
    ``import tensorflow.contrib.slim as slim``, ``from tensorflow.contrib import slim``,
    ``from tensorflow.contrib.slim import learning``, the deep
    ``tensorflow.contrib.slim.python.slim.learning``, and the alias
    ``slim = tf.contrib.slim`` (also ``learning = slim.learning``) when it is the name's only
    binding. Other slim uses (``slim.conv2d``, ``slim.arg_scope``...) are left alone; the slim
    import or alias goes only when the rewrite removed its last use.

    ## Why is this bad?
    ``tf.contrib`` was removed in TensorFlow 2: these calls raise ``AttributeError``.
    ``tf_upgrade_v2`` stops with "cannot be converted automatically". Note that
    ``clip_gradient_norms`` (and slim's ``clip_gradient_norm=``) clips each gradient by its own
    norm (``clip_by_norm``), not by the global norm; the shim keeps that.

    ## Example
    ```python
    import numpy as np
    import tensorflow as tf

    x = tf.constant(np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(8, 3))
    y = tf.constant(np.linspace(0.0, 1.0, 8, dtype=np.float32).reshape(8, 1))
    w = tf.get_variable("w", [3, 1])
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    optimizer = tf.train.GradientDescentOptimizer(0.1)
    train_op = tf.contrib.training.create_train_op(
        loss, optimizer, transform_grads_fn=tf.contrib.training.clip_gradient_norms_fn(1.0)
    )
    slim = tf.contrib.slim
    slim_train_op = slim.learning.create_train_op(loss, optimizer, clip_gradient_norm=1.0)
    ```

    ## Use instead
    ```python
    import numpy as np
    import tensorflow as tf
    import tfclip_compat

    x = tf.constant(np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(8, 3))
    y = tf.constant(np.linspace(0.0, 1.0, 8, dtype=np.float32).reshape(8, 1))
    w = tf.get_variable("w", [3, 1])
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    optimizer = tf.train.GradientDescentOptimizer(0.1)
    train_op = tfclip_compat.create_train_op(
        loss, optimizer, transform_grads_fn=tfclip_compat.clip_gradient_norms_fn(1.0)
    )
    slim_train_op = tfclip_compat.slim_create_train_op(loss, optimizer, clip_gradient_norm=1.0)
    ```

    ## Fix safety
    Safe: same signatures and numerics as TF 1.15 (executed equivalence tests). No fix
    when the arguments cannot be checked (``*args``/``**kwargs``, arguments TF 1.15 would
    reject), for ``from tensorflow.contrib.training import *`` (or ``slim.learning``'s),
    when the module is reached dynamically or through a name bound to anything else as well,
    or when a local ``tfclip_compat`` would be shadowed.
    """

    CODE: ClassVar[str] = "TFC002"
    PHASE: ClassVar[Phase] = Phase.COMPAT
    NAME: ClassVar[str] = "contrib-training-clipping"
    SUMMARY: ClassVar[str] = (
        "`tf.contrib.training` / `tf.contrib.slim.learning` clipping helpers -> `tfclip_compat`"
    )
    DESCRIPTION = SUMMARY
    TARGETS: ClassVar[Mapping[str, str]] = {
        name: shim for name, shim in CONTRIB_TO_SHIM.items() if shim in _TRAINING_HELPERS
    }
    NAMESPACES: ClassVar[FrozenSet[str]] = frozenset(
        {
            "tf.contrib.training",
            "tf.contrib.training.python.training.training",
            "tf.contrib.slim",
            "tf.contrib.slim.learning",
            "tf.contrib.slim.python.slim.learning",
        }
    )
    FOLLOW_ALIASES: ClassVar[bool] = True
