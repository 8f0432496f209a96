"""Public entry points of the optimizer wrappers, and the Keras wrapper.

:func:`wrap_optimizer` puts any :class:`~tfclip_compat.GradientTransform` in front of a
``tf.compat.v1.train.Optimizer`` (:class:`~tfclip_compat._pipeline.TransformedV1Optimizer`)
or a Keras optimizer (:class:`~tfclip_compat._keras_optimizer.TransformedKerasOptimizer`);
:func:`clip_gradients_by_norm` is ``tf.contrib.estimator.clip_gradients_by_norm``'s drop-in (its
v1 wrapper lives with the other contrib drop-ins, ``tfclip_compat._contrib.estimator``). The
shared pipeline is in ``tfclip_compat._pipeline``.
"""

from __future__ import annotations

from typing import Any, Optional

from tfclip_compat import _nonfinite
from tfclip_compat._contrib.estimator import clip_gradients_by_norm_v1
from tfclip_compat._pipeline import GradsAndVars, TransformedV1Optimizer
from tfclip_compat._tf import V1Optimizer, is_keras_optimizer
from tfclip_compat._transforms.base import GradientTransform
from tfclip_compat._transforms.clipping import ClipByGlobalNorm


def wrap_optimizer(
    optimizer: Any,
    transform: GradientTransform,
    *,
    nonfinite: str = "propagate",
    summaries: bool = False,
    name: Optional[str] = None,
) -> Any:
    """Wrap a v1 or Keras optimizer so that ``transform`` runs on the gradients before applying.

    Raises TypeError naming ``optimizer`` for anything else, ValueError naming ``nonfinite``
    for an unknown policy.
    """
    _nonfinite.check_policy(nonfinite)
    if not isinstance(transform, GradientTransform):
        raise TypeError(f"transform must be a GradientTransform, got {type(transform).__name__}.")
    if isinstance(optimizer, V1Optimizer):
        return TransformedV1Optimizer(
            optimizer, transform, nonfinite=nonfinite, summaries=summaries, name=name
        )
    if is_keras_optimizer(optimizer):
        from tfclip_compat._keras_optimizer import TransformedKerasOptimizer  # noqa: PLC0415 - cycle

        return TransformedKerasOptimizer(
            optimizer, transform, nonfinite=nonfinite, summaries=summaries, name=name
        )
    hint = ""
    if isinstance(optimizer, (str, type)) or callable(optimizer):
        hint = " Pass an optimizer *instance*, e.g. tf.compat.v1.train.AdamOptimizer(1e-3)."
    raise TypeError(
        "optimizer must be a tf.compat.v1.train.Optimizer or a Keras optimizer instance, "
        f"got {optimizer!r}.{hint}"
    )


def clip_gradients_by_norm(
    optimizer: Any,
    clip_norm: Any,
    *,
    nonfinite: str = "propagate",
    summaries: bool = False,
    norm: str = "tf1",
) -> Any:
    """Return an optimizer that clips gradients by their GLOBAL norm before applying them.

    Drop-in for ``tf.contrib.estimator.clip_gradients_by_norm``::

        optimizer = tf.compat.v1.train.AdamOptimizer(1e-3)
        optimizer = tfclip_compat.clip_gradients_by_norm(optimizer, clip_norm=5.0)
        train_op = optimizer.minimize(loss, global_step=global_step)

    Given a ``tf.compat.v1.train.Optimizer`` it returns a ``tf.compat.v1.train.Optimizer`` named
    ``"ClipByNorm" + optimizer.get_name()`` that trains bit for bit as TF 1.15's did
    (``tf.clip_by_global_norm``'s ops; a sparse gradient counts by the norm of its
    ``.values``) and whose ``variables()`` is ``[]`` as TF 1.15's, so
    ``Saver(tf.trainable_variables() + opt.variables())`` matches old checkpoints;
    ``tf.train.Checkpoint`` and ``get_slot`` see the inner optimizer's state. Given a Keras
    optimizer, a Keras optimizer (``TransformedKerasOptimizer``, named ``"ClipByNorm" + class
    name``) that ``model.compile`` accepts and that clips the cross-replica aggregated gradient. Beyond
    TF 1.15: in a tf.distribute replica context the norm is that of the cross-replica
    aggregated gradient; ``nonfinite=`` policies; ``norm="exact"`` / ``"fast"``.

    Args:
      optimizer: a ``tf.compat.v1.train.Optimizer`` or Keras optimizer instance.
      clip_norm: a finite scalar > 0 (number or 0-D tensor): the global-norm threshold.
      nonfinite: ``"propagate"`` (TF1 behaviour), ``"skip"`` or ``"raise"``; see
        ``tfclip_compat._nonfinite``.
      summaries: write the pre- and post-clip global norm as scalar summaries
        (``<name>/global_norm``, ``<name>/clipped_global_norm``).
      norm: ``"tf1"`` (default, TF 1.15 bit for bit), ``"exact"`` (the dense norm of sparse
        gradients with repeated indices, float32 accumulation for float16/bfloat16) or
        ``"fast"`` (``"exact"`` with grouped summation); see ``tfclip_compat._norms``.

    Raises:
      TypeError: ``optimizer`` is not an optimizer instance, or ``clip_norm`` is not a number.
      ValueError: ``clip_norm`` is not a finite positive scalar, or ``nonfinite`` / ``norm``
        is unknown.
    """
    _nonfinite.check_policy(nonfinite)
    if isinstance(optimizer, V1Optimizer):
        return clip_gradients_by_norm_v1(
            optimizer, clip_norm, nonfinite=nonfinite, summaries=summaries, norm=norm
        )
    transform = ClipByGlobalNorm(clip_norm, norm=norm)
    if is_keras_optimizer(optimizer):
        name = "ClipByNorm" + type(optimizer).__name__
    else:
        name = None
    return wrap_optimizer(optimizer, transform, nonfinite=nonfinite, summaries=summaries, name=name)


__all__ = [
    "GradsAndVars",
    "TransformedV1Optimizer",
    "clip_gradients_by_norm",
    "wrap_optimizer",
]
