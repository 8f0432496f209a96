"""TFC102: ``tf.gradients`` + ``clip_by_global_norm`` + ``apply_gradients`` -> tape form."""

from __future__ import annotations

from typing import ClassVar, FrozenSet

from codemods._gradsites import GradientSiteRule


class TfGradientsToTape(GradientSiteRule):
    """## What it does
    Rewrites the BERT ``create_optimizer`` shape: ``grads = tf.gradients(loss, tvars)``,
    optionally ``(grads, _) = tf.clip_by_global_norm(grads, clip_norm=1.0)``, then
    ``optimizer.apply_gradients(zip(grads, tvars), global_step=global_step)``, into
    ``with tf.GradientTape() as tape:`` around the statements computing ``loss`` and
    ``grads = tape.gradient(loss, tvars)``. Clipping and ``apply_gradients`` (any
    optimizer, ``global_step`` included) are untouched.

    ## Why is this bad?
    ``tf.gradients`` only works in graph mode; it raises inside eager code and is the one
    line that keeps such a training function from running under TF 2 ``tf.function``.

    ## Example
    ```python
    tvars = tf.trainable_variables()
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    grads = tf.gradients(loss, tvars)
    (grads, _) = tf.clip_by_global_norm(grads, clip_norm=1.0)
    train_op = optimizer.apply_gradients(zip(grads, tvars), global_step=global_step)
    ```

    ## Use instead
    ```python
    tvars = tf.trainable_variables()
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    grads = tape.gradient(loss, tvars)
    (grads, _) = tf.clip_by_global_norm(grads, clip_norm=1.0)
    train_op = optimizer.apply_gradients(zip(grads, tvars), global_step=global_step)
    ```

    ## Fix safety
    Safe when the loss is computed in the same block and ``tvars`` is provably trainable
    (proven by executed equivalence tests). ``tf.gradients`` whose result never reaches
    ``apply_gradients`` (a gradient penalty, a saliency map) is a look-alike and is left
    alone without a diagnostic. A loss passed in as a parameter (the real BERT function),
    ``grad_ys=``/``stop_gradients=``/``gate_gradients=`` and other unprovable shapes are
    reported as TFC202 and left untouched.
    """

    CODE: ClassVar[str] = "TFC102"
    NAME: ClassVar[str] = "tf-gradients-to-tape"
    SUMMARY: ClassVar[str] = "`tf.gradients` + `apply_gradients` -> `tf.GradientTape` form"
    DESCRIPTION = SUMMARY
    TOKENS: ClassVar[tuple] = ("gradients(",)
    REQUIRES: ClassVar[tuple] = (("apply_gradients",),)
    KINDS: ClassVar[FrozenSet[str]] = frozenset({"tf_gradients"})
