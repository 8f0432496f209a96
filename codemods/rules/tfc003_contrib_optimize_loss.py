"""TFC003: ``tf.contrib.layers`` (and ``tf.contrib.slim``) ``optimize_loss`` / ``adaptive_clipping_fn`` -> ``tfclip_compat``."""

from __future__ import annotations

from typing import ClassVar, FrozenSet, Mapping

from codemods.rules.tfnames import CONTRIB_TO_SHIM
from codemods.rules import Phase
from codemods.rules.compat.shim_rewrite import ShimRewrite


class ContribOptimizeLoss(ShimRewrite):
    """## What it does
    Replaces ``tf.contrib.layers.optimize_loss(loss, global_step, learning_rate,
    optimizer, ..., clip_gradients=...)`` and ``tf.contrib.layers.adaptive_clipping_fn``
    with the ``tfclip_compat`` functions of the same name, and adds ``import
    tfclip_compat``. TF-Slim's re-exports of the same two functions
    (``slim.optimize_loss``, ``slim.adaptive_clipping_fn``: in TF 1.15 ``tf.contrib.slim``
    star-imported ``tf.contrib.layers.python.layers``) and the deep
    ``tensorflow.contrib.layers.python.layers[.optimizers]`` paths are matched too. A plain
    module alias (``L = tf.contrib.layers``, ``slim = tf.contrib.slim``, chains of them) is
    followed when every binding of the name that reaches the call is such an alias of the
    same module; the alias goes only when the rewrite used up its last reader
    (``L.fully_connected`` keeps it).

    ## Why is this bad?
    ``tf.contrib.layers`` was removed in TensorFlow 2. ``optimize_loss`` bundles the
    optimizer lookup by name (``"Adam"``, ``"SGD"``, ...), learning-rate decay, gradient
    multipliers, global-norm clipping and the global-step increment; rewriting that by
    hand is where numerics silently change.

    ## Example
    ```python
    import numpy as np
    import tensorflow as tf

    x = tf.constant(np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(8, 3))
    y = tf.constant(np.linspace(0.0, 1.0, 8, dtype=np.float32).reshape(8, 1))
    w = tf.get_variable("w", [3, 1])
    global_step = tf.train.get_or_create_global_step()
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    train_op = tf.contrib.layers.optimize_loss(
        loss, global_step, learning_rate=0.01, optimizer="Adam", clip_gradients=5.0
    )
    ```

    ## Use instead
    ```python
    import numpy as np
    import tensorflow as tf
    import tfclip_compat

    x = tf.constant(np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(8, 3))
    y = tf.constant(np.linspace(0.0, 1.0, 8, dtype=np.float32).reshape(8, 1))
    w = tf.get_variable("w", [3, 1])
    global_step = tf.train.get_or_create_global_step()
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    train_op = tfclip_compat.optimize_loss(
        loss, global_step, learning_rate=0.01, optimizer="Adam", clip_gradients=5.0
    )
    ```

    ## Fix safety
    Safe for every TF 1.15 argument except ``gradient_noise_scale`` (not ``None``): the
    noise is random, the shim draws from the same distribution but not necessarily the
    same numbers, so that fix is unsafe. No fix when the arguments cannot be checked
    (``*args``/``**kwargs``, arguments TF 1.15 would reject), for a star import from
    ``tf.contrib.layers`` or ``tf.contrib.slim``, when the module is used as a value that
    cannot be followed (``L = tf.contrib.layers if cond else other``, a name also bound to
    something else) in a file that names these helpers, or when a local ``tfclip_compat``
    would be shadowed.
    """

    CODE: ClassVar[str] = "TFC003"
    PHASE: ClassVar[Phase] = Phase.COMPAT
    NAME: ClassVar[str] = "contrib-optimize-loss"
    SUMMARY: ClassVar[str] = "`tf.contrib.layers.optimize_loss` -> `tfclip_compat.optimize_loss`"
    DESCRIPTION = SUMMARY
    TARGETS: ClassVar[Mapping[str, str]] = {
        name: shim
        for name, shim in CONTRIB_TO_SHIM.items()
        if shim in ("optimize_loss", "adaptive_clipping_fn")
    }
    NAMESPACES: ClassVar[FrozenSet[str]] = frozenset(
        {
            "tf.contrib.layers",
            "tf.contrib.layers.python.layers",
            "tf.contrib.layers.python.layers.optimizers",
            "tf.contrib.slim",
        }
    )
    FOLLOW_ALIASES: ClassVar[bool] = True
