"""``clip_gradients_by_norm`` for v1 optimizers: drop-in for TF 1.15
``tf.contrib.estimator.clip_gradients_by_norm``.

TF 1.15 returned a ``tf.train.Optimizer`` named ``"ClipByNorm" + optimizer.get_name()`` that
delegates ``compute_gradients``, ``get_slot`` and ``get_slot_names`` to the optimizer and clips
the gradients with ``tf.clip_by_global_norm`` in ``apply_gradients``. Here that wrapper is the
shared v1 wrapper (:class:`tfclip_compat._pipeline.TransformedV1Optimizer`) around a
:class:`~tfclip_compat.ClipByGlobalNorm` transform, with TF 1.15's:

* numerics: ``norm="tf1"`` by default (TF 1.15's ops in TF 1.15's order: bit for bit, the norm
  of a sparse gradient being that of its ``.values``);
* ``variables()``: ``[]``, as TF 1.15 (its wrapper owned no variables), so the TF1 idiom
  ``Saver(tf.trainable_variables() + opt.variables())`` saves and restores exactly the keys an
  old checkpoint has. ``tf.train.Checkpoint`` still sees the inner optimizer's state (the
  wrapper presents the inner optimizer's children as its own), and ``get_slot`` delegates.

The public entry point, which also takes Keras optimizers, is
:func:`tfclip_compat.clip_gradients_by_norm`.
"""

from __future__ import annotations

from typing import Any, List

from tfclip_compat._pipeline import TransformedV1Optimizer
from tfclip_compat._tf import V1Optimizer
from tfclip_compat._transforms.clipping import ClipByGlobalNorm

__all__ = ["ContribClipByNormOptimizer", "clip_gradients_by_norm_v1"]


class ContribClipByNormOptimizer(TransformedV1Optimizer):
    """What ``clip_gradients_by_norm`` returns for a v1 optimizer (see the module docstring)."""

    def variables(self) -> List[Any]:
        """``[]``: the wrapper's own variables, as TF 1.15's contrib wrapper returned.

        The inner optimizer's slots and beta powers are ``wrapper.optimizer.variables()``.
        """
        return V1Optimizer.variables(self)


def clip_gradients_by_norm_v1(
    optimizer: Any,
    clip_norm: Any,
    *,
    nonfinite: str = "propagate",
    summaries: bool = False,
    norm: str = "tf1",
) -> ContribClipByNormOptimizer:
    """The v1 branch of :func:`tfclip_compat.clip_gradients_by_norm` (see there)."""
    return ContribClipByNormOptimizer(
        optimizer,
        ClipByGlobalNorm(clip_norm, norm=norm),
        nonfinite=nonfinite,
        summaries=summaries,
        name="ClipByNorm" + optimizer.get_name(),
    )
