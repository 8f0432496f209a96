"""TFC101: ``compute_gradients`` -> clip -> ``apply_gradients`` becomes the TF 2 tape form."""

from __future__ import annotations

from typing import ClassVar, FrozenSet

from codemods._gradsites import GradientSiteRule


class ComputeApplyToTape(GradientSiteRule):
    """## What it does
    Rewrites the TF1 three-step training idiom, ``opt.compute_gradients(loss)`` -> clip each
    gradient (``tf.clip_by_value``/``clip_by_norm``/``clip_by_average_norm``, in a list
    comprehension, with or without ``None`` checks) or all of them (``zip(*...)`` +
    ``tf.clip_by_global_norm``) -> ``opt.apply_gradients(...)``, into the TF 2 idiom: the
    statements that compute the loss go inside ``with tf.GradientTape() as tape:``, the
    gradients come from ``tape.gradient(loss, variables)``, the *same* clipping is applied,
    and ``opt.apply_gradients(zip(gradients, variables))`` applies them.

    ## Why is this bad?
    ``compute_gradients`` exists only on ``tf.compat.v1`` optimizers and only builds graph
    ops: it is the part of a TF1 program that keeps it from moving to TF 2 optimizers,
    ``tf.function`` and eager debugging.

    ## Example
    ```python
    import tensorflow.compat.v1 as tf

    logits = tf.matmul(x, w)
    loss = tf.reduce_mean(tf.square(logits - y))
    optimizer = tf.train.AdamOptimizer(1e-3)
    gradients, variables = zip(*optimizer.compute_gradients(loss))
    gradients, _ = tf.clip_by_global_norm(gradients, 5.0)
    optimize = optimizer.apply_gradients(zip(gradients, variables))
    ```

    ## Use instead
    ```python
    import tensorflow.compat.v1 as tf

    with tf.GradientTape() as tape:
        logits = tf.matmul(x, w)
        loss = tf.reduce_mean(tf.square(logits - y))
    optimizer = tf.train.AdamOptimizer(1e-3)
    variables = tf.trainable_variables()
    gradients = tape.gradient(loss, variables)
    gradients, _ = tf.clip_by_global_norm(gradients, 5.0)
    optimize = optimizer.apply_gradients(zip(gradients, variables))
    ```
    In graph-mode modules the optimizer stays a ``tf.compat.v1.train`` optimizer (spelled with
    the module's own alias); ``global_step=`` and ``var_list`` are kept. With
    ``--add-clip-norm X`` a bare ``compute_gradients`` -> ``apply_gradients`` also gets
    ``tf.clip_by_global_norm(gradients, X)``.

    ## Fix safety
    Safe when the loss is computed in the same block from values a tape can see and the
    variable list is provably trainable: executed equivalence tests compare every trained
    variable, the loss and the global step with the TF1 program (rtol 1e-5). Unsafe when the
    loss reads a function parameter (a caller may have computed it from variables outside the
    tape) or a comment inside a rewritten statement would be dropped. Anything else
    (a custom gradient transform such as ``MyCapper(gv[0])``, a loss from elsewhere,
    ``gate_gradients=``...) is reported as TFC202 and left untouched.
    """

    CODE: ClassVar[str] = "TFC101"
    NAME: ClassVar[str] = "compute-apply-to-tape"
    SUMMARY: ClassVar[str] = "`compute_gradients` + clipping + `apply_gradients` -> `tf.GradientTape` form"
    DESCRIPTION = SUMMARY
    TOKENS: ClassVar[tuple] = ("compute_gradients",)
    REQUIRES: ClassVar[tuple] = (("apply_gradients",),)
    KINDS: ClassVar[FrozenSet[str]] = frozenset({"compute_apply"})
