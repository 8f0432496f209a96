"""``clip_gradients_by_norm`` for v1 optimizers: drop-in for TF 1.15
``tf.contrib.estimator.clip_gradients_by_norm``.

TF 1.15 returned a ``tf.train.Optimizer`` named ``"ClipByNorm" + optimizer.get_name()`` that
delegates ``compute_gradients``, ``get_slot`` and ``get_slot_names`` to the optimizer and clips
the gradients by their global norm in ``apply_gradients``. Here that wrapper is the shared v1
wrapper (:class:`tfclip_compat._pipeline.TransformedV1Optimizer`) around a
:class:`~tfclip_compat.ClipByGlobalNorm` transform; the public entry point, which also takes
Keras optimizers, is :func:`tfclip_compat.clip_gradients_by_norm`.
"""

from __future__ import annotations

from typing import Any

from tfclip_compat._pipeline import TransformedV1Optimizer
from tfclip_compat._transforms.clipping import ClipByGlobalNorm

__all__ = ["clip_gradients_by_norm_v1"]


def clip_gradients_by_norm_v1(
    optimizer: Any, clip_norm: Any, *, nonfinite: str = "propagate", summaries: bool = False
) -> TransformedV1Optimizer:
    """The v1 branch of :func:`tfclip_compat.clip_gradients_by_norm` (see there)."""
    return TransformedV1Optimizer(
        optimizer,
        ClipByGlobalNorm(clip_norm),
        nonfinite=nonfinite,
        summaries=summaries,
        name="ClipByNorm" + optimizer.get_name(),
    )
