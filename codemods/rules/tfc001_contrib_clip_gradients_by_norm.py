"""TFC001: ``tf.contrib.estimator.clip_gradients_by_norm`` -> ``tfclip_compat``."""

from __future__ import annotations

from typing import ClassVar, FrozenSet, Mapping

from codemods.rules.tfnames import CONTRIB_TO_SHIM
from codemods.rules import Phase
from codemods.rules.compat.shim_rewrite import ShimRewrite


class ContribClipGradientsByNorm(ShimRewrite):
    """## What it does
    Replaces calls to ``tf.contrib.estimator.clip_gradients_by_norm(optimizer, clip_norm)``
    (under any import form) with ``tfclip_compat.clip_gradients_by_norm(optimizer,
    clip_norm)`` and adds ``import tfclip_compat``. The contrib import is removed when
    its last use was rewritten. A plain module alias (``est = tf.contrib.estimator``,
    ``contrib = tf.contrib``, chains of them) is followed when every binding of the name that
    reaches the call is such an alias of the same module, and dropped once the rewrite used
    up its last reader.

    ## Why is this bad?
    ``tf.contrib`` does not exist in TensorFlow 2, so the script dies with
    ``AttributeError`` before training starts; ``tf_upgrade_v2`` only prints "cannot be
    converted automatically" at this call. The wrapper clips the *global* norm of all
    gradients before applying them, which a plain TF 2 optimizer does not do.

    ## Example
    ```python
    import numpy as np
    import tensorflow as tf

    x = tf.constant(np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(8, 3))
    y = tf.constant(np.linspace(0.0, 1.0, 8, dtype=np.float32).reshape(8, 1))
    w = tf.get_variable("w", [3, 1])
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))


    def build_train_op(loss):
        optimizer = tf.contrib.estimator.clip_gradients_by_norm(tf.train.AdamOptimizer(1e-3), clip_norm=5.0)
        return optimizer.minimize(loss)


    train_op = build_train_op(loss)
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


    def build_train_op(loss):
        optimizer = tfclip_compat.clip_gradients_by_norm(tf.train.AdamOptimizer(1e-3), clip_norm=5.0)
        return optimizer.minimize(loss)


    train_op = build_train_op(loss)
    ```
    Where the loss can be wrapped in a ``tf.GradientTape``, the TF 2 rules (TFC1xx) run
    first and produce the ``tf.clip_by_global_norm`` form instead.

    ## Fix safety
    Safe: the shim has the same signature, the same global-norm clipping and the same
    slot variables, proven by executed equivalence tests. No fix (diagnostic only) when
    the arguments cannot be checked (``*args``, ``**kwargs``, arguments TF 1.15 would
    reject), when ``tf.contrib.estimator`` is reached dynamically
    (``getattr(tf.contrib, name)``) or through a name bound to anything else as well
    (``est = tf.contrib.estimator`` rebound under an ``if``), or when a local name
    ``tfclip_compat`` would be shadowed. Unsafe when a comment inside the callee
    expression would be dropped.
    """

    CODE: ClassVar[str] = "TFC001"
    PHASE: ClassVar[Phase] = Phase.COMPAT
    NAME: ClassVar[str] = "contrib-clip-gradients-by-norm"
    SUMMARY: ClassVar[str] = (
        "`tf.contrib.estimator.clip_gradients_by_norm` -> `tfclip_compat.clip_gradients_by_norm`"
    )
    DESCRIPTION = SUMMARY
    TARGETS: ClassVar[Mapping[str, str]] = {
        name: shim for name, shim in CONTRIB_TO_SHIM.items() if shim == "clip_gradients_by_norm"
    }
    NAMESPACES: ClassVar[FrozenSet[str]] = frozenset(
        {"tf.contrib", "tf.contrib.estimator", "tf.contrib.estimator.python.estimator.extenders"}
    )
    FOLLOW_ALIASES: ClassVar[bool] = True
