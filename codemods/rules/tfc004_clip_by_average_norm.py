"""TFC004: ``tf.clip_by_average_norm`` (``tf.compat.v1`` only in TF 2) -> ``tfclip_compat``."""

from __future__ import annotations

from typing import ClassVar, FrozenSet, Mapping

from codemods.rules import Phase
from codemods.rules.compat.shim_rewrite import ShimRewrite


class ClipByAverageNorm(ShimRewrite):
    """## What it does
    Replaces ``tf.clip_by_average_norm(t, clip_norm, name=None)`` — also spelled
    ``tf.compat.v1.clip_by_average_norm`` (``tf_upgrade_v2`` output) — with
    ``tfclip_compat.clip_by_average_norm`` and adds ``import tfclip_compat``.

    ## Why is this bad?
    TensorFlow 2 has no ``tf.clip_by_average_norm``: with ``import tensorflow as tf``
    the call raises ``AttributeError``; the ``tf.compat.v1`` spelling is deprecated and
    lives in the namespace every migration is trying to leave.

    ## Example
    ```python
    import numpy as np
    import tensorflow.compat.v1 as tf

    x = tf.constant(np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(8, 3))
    y = tf.constant(np.linspace(0.0, 1.0, 8, dtype=np.float32).reshape(8, 1))
    w = tf.get_variable("w", [3, 1])
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    optimizer = tf.train.GradientDescentOptimizer(0.1)
    gradients = [tf.clip_by_average_norm(g, 0.1) for g in tf.gradients(loss, [w])]
    train_op = optimizer.apply_gradients(zip(gradients, [w]))
    ```

    ## Use instead
    ```python
    import numpy as np
    import tensorflow.compat.v1 as tf
    import tfclip_compat

    x = tf.constant(np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(8, 3))
    y = tf.constant(np.linspace(0.0, 1.0, 8, dtype=np.float32).reshape(8, 1))
    w = tf.get_variable("w", [3, 1])
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    optimizer = tf.train.GradientDescentOptimizer(0.1)
    gradients = [tfclip_compat.clip_by_average_norm(g, 0.1) for g in tf.gradients(loss, [w])]
    train_op = optimizer.apply_gradients(zip(gradients, [w]))
    ```

    ## Fix safety
    Safe: for finite float32 tensors the shim computes ``t * clip_norm *
    min(n / ||t||, 1 / clip_norm)`` exactly as ``tensorflow/python/ops/clip_ops.py``
    does, bit for bit (tested), and trains identically (executed equivalence tests).
    Unsafe when ``name=`` is passed: the shim's output tensor is ``<name>/clipped:0``
    where TF's was ``<name>:0``, which a graph-mode ``get_tensor_by_name`` would notice.
    No fix when the arguments cannot be checked or a local ``tfclip_compat`` would be
    shadowed.
    """

    CODE: ClassVar[str] = "TFC004"
    PHASE: ClassVar[Phase] = Phase.COMPAT
    NAME: ClassVar[str] = "clip-by-average-norm"
    SUMMARY: ClassVar[str] = "`tf.clip_by_average_norm` -> `tfclip_compat.clip_by_average_norm`"
    DESCRIPTION = SUMMARY
    GONE: ClassVar[str] = "is not in TensorFlow 2 (only as deprecated `tf.compat.v1`)"
    TARGETS: ClassVar[Mapping[str, str]] = {"tf.clip_by_average_norm": "clip_by_average_norm"}
    NAMESPACES: ClassVar[FrozenSet[str]] = frozenset()
