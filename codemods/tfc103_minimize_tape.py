"""TFC103: ``opt.minimize(loss, ...)`` on a ``tf.train`` optimizer -> the TF 2 tape form."""

from __future__ import annotations

from typing import ClassVar, FrozenSet

from codemods._gradsites import GradientSiteRule


class MinimizeToTape(GradientSiteRule):
    """## What it does
    Rewrites ``opt.minimize(loss, global_step=..., var_list=..., name=...)`` on a
    ``tf.train.*Optimizer`` (tensor loss, lambda or function) into ``with
    tf.GradientTape() as tape:`` around the statements computing the loss,
    ``tape.gradient`` and ``opt.apply_gradients(zip(gradients, variables), global_step=...)``.
    When ``opt`` is ``tf.contrib.estimator.clip_gradients_by_norm(inner, clip_norm)`` (same
    block), the wrapper disappears and ``tf.clip_by_global_norm(gradients, clip_norm)`` is
    applied before ``inner.apply_gradients``. With ``--add-clip-norm X`` a bare ``minimize``
    gets ``tf.clip_by_global_norm(gradients, X)``.

    ## Why is this bad?
    ``minimize`` hides the gradients, so they cannot be clipped, inspected or aggregated,
    and ``tf.contrib`` (the usual way to clip them) does not exist in TF 2.

    ## Example
    ```python
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    original_optimizer = tf.train.AdamOptimizer(learning_rate=0.01)
    optimizer = tf.contrib.estimator.clip_gradients_by_norm(original_optimizer, clip_norm=5.0)
    train_op = optimizer.minimize(loss, global_step=global_step)
    ```

    ## Use instead
    ```python
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    original_optimizer = tf.compat.v1.train.AdamOptimizer(learning_rate=0.01)
    variables = tf.compat.v1.trainable_variables()
    gradients = tape.gradient(loss, variables)
    gradients, _ = tf.clip_by_global_norm(gradients, 5.0)
    train_op = original_optimizer.apply_gradients(zip(gradients, variables), global_step=global_step)
    ```

    ## Fix safety
    Safe when the loss is computed in the same block (or is a callable) and the variable
    list is absent or provably trainable; proven by executed equivalence tests for every
    ``tf.train`` optimizer class. Unsafe when the loss reads a function parameter or a
    comment would be dropped. ``minimize`` inside ``tf.cond``, under a
    ``control_dependencies`` block that does not also compute the loss, on CrossShard/
    SyncReplicas/Horovod wrappers or custom optimizer subclasses, with ``gate_gradients``/
    ``aggregation_method``/``colocate_gradients_with_ops``/``grad_loss``, or with a loss from
    another file is reported as TFC202 and left untouched.
    """

    CODE: ClassVar[str] = "TFC103"
    NAME: ClassVar[str] = "minimize-to-tape"
    SUMMARY: ClassVar[str] = "`optimizer.minimize` -> `tf.GradientTape` + `apply_gradients`"
    DESCRIPTION = SUMMARY
    TOKENS: ClassVar[tuple] = ("minimize",)
    KINDS: ClassVar[FrozenSet[str]] = frozenset({"minimize"})
