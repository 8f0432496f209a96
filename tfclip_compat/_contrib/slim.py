"""Drop-in twins of TF 1.15 ``tf.contrib.slim.learning``'s gradient helpers.

TF 1.15's ``slim.learning`` (``tensorflow/contrib/slim/python/slim/learning.py``) had four
gradient helpers. Two are the ``tf.contrib.training`` ones under another name, so their
twins are the existing drop-ins:

- ``slim.learning.clip_gradient_norms`` was a copy of contrib.training's (same body, the same
  ``clip_by_norm`` of ``IndexedSlices.values``): ``tfclip_compat.clip_gradient_norms``;
- ``slim.learning.multiply_gradients`` differed from contrib.training's only in how it built the
  multiplier tensor (``constant(m, dtype=grad.dtype)`` unless ``m`` is already a ``Tensor``;
  contrib.training: ``convert_to_tensor(m, dtype=grad.dtype)``): the same op and value for every
  multiplier both accept, so ``tfclip_compat.multiply_gradients`` (which also takes a ``Variable``
  multiplier, where slim's ``constant`` failed).

Two are slim's own, and have twins here:

- :func:`slim_create_train_op` -- slim's signature (``clip_gradient_norm``,
  ``gradient_multipliers``); TF 1.15 implemented it by calling contrib.training's
  ``create_train_op`` with a ``transform_grads_fn`` that multiplies (name scope
  ``multiply_grads``) then clips each gradient by its own norm (``clip_grads``, only when
  ``clip_gradient_norm > 0``), and so does the twin, on ``tfclip_compat.create_train_op``;
- :func:`slim_add_gradients_summaries` -- slim's summary tags (``<var>/gradient``,
  ``<var>/gradient_norm``; contrib.training's are ``<var>_gradient``...).

Differences on purpose, as for the contrib.training drop-ins (``_contrib/training.py``): a
``clip_gradient_norm`` that is inf or NaN (TF 1.15: NaN weights, or silently no clipping) or
not a Python number (TF 1.15: ``TypeError`` from ``if tensor > 0``) raises ``ValueError``
naming it; zero and negative values mean "no clipping", as slim documented. Opt-ins,
keyword-only: ``nonfinite=`` and ``norm=``.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Dict, List, Optional, Sequence, Tuple

from tfclip_compat import _norms
from tfclip_compat._contrib.training import (
    GradsAndVars,
    _USE_GLOBAL_STEP,
    _no_autograph,
    clip_gradient_norms,
    create_train_op,
    gradient_summaries,
    multiply_gradients,
)
from tfclip_compat._tf import tf

_v1 = tf.compat.v1

__all__ = ["slim_add_gradients_summaries", "slim_create_train_op"]


@_no_autograph
def slim_add_gradients_summaries(
    grads_and_vars: Sequence[Tuple[Any, Any]], *, norm: str = "tf1"
) -> List[Any]:
    """Add a histogram and a norm summary for each gradient; return the summary ops.

    Replaces ``tf.contrib.slim.learning.add_gradients_summaries``: slim's tags,
    ``<var op name>/gradient`` (histogram of the gradient values) and
    ``<var op name>/gradient_norm`` (scalar), as TF 1.15. (``tfclip_compat.add_gradients_summaries``
    is contrib.training's, whose tags end in ``_gradient``.) Variables without a gradient are
    logged at INFO level and skipped.

    Args:
      grads_and_vars: A list of (gradient, variable) pairs.
      norm: ``"tf1"`` (default: TF 1.15's norm of the gradient's values) or ``"exact"`` (the
        norm of the dense gradient, float32 accumulation for half precision).

    Returns:
      The list of created summary tensors.
    """
    return gradient_summaries(grads_and_vars, norm, "/")


def _check_clip_gradient_norm(value: Any) -> None:
    """Slim's ``clip_gradient_norm``: a Python number; > 0 clips, <= 0 does not (TF 1.15)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(
            f"clip_gradient_norm must be a Python number, got {value!r} of type "
            f"{type(value).__name__} (TF 1.15 tested `clip_gradient_norm > 0` in Python); "
            "e.g. clip_gradient_norm=5.0, or 0 for no clipping."
        )
    if math.isnan(value) or math.isinf(value):
        raise ValueError(
            f"clip_gradient_norm must be finite, got {value!r} (TF 1.15: inf turned every "
            "gradient into NaN, NaN silently disabled clipping); pass the largest allowed L2 "
            "norm of each gradient, e.g. 5.0, or 0 for no clipping."
        )


@_no_autograph
def slim_create_train_op(
    total_loss: Any,
    optimizer: Any,
    global_step: Any = _USE_GLOBAL_STEP,
    update_ops: Optional[Sequence[Any]] = None,
    variables_to_train: Optional[Sequence[Any]] = None,
    clip_gradient_norm: Any = 0,
    summarize_gradients: bool = False,
    gate_gradients: int = _v1.train.Optimizer.GATE_OP,
    aggregation_method: Any = None,
    colocate_gradients_with_ops: bool = False,
    gradient_multipliers: Optional[Dict[Any, Any]] = None,
    check_numerics: bool = True,
    *,
    nonfinite: str = "propagate",
    norm: str = "tf1",
) -> Any:
    """Create a tensor that computes the gradients, applies them and returns the loss.

    Replaces ``tf.contrib.slim.learning.create_train_op`` (TF 1.15 signature and numerics, bit
    for bit). As in TF 1.15 it is ``tfclip_compat.create_train_op`` with a gradient transform
    that first multiplies the gradients named in ``gradient_multipliers`` (name scope
    ``multiply_grads``), then clips each gradient by its own L2 norm to ``clip_gradient_norm``
    (name scope ``clip_grads``; an ``IndexedSlices`` by the norm of its values, as TF 1.15).
    Graph mode and ``tf.function``; eager mode raises ``RuntimeError`` (see
    ``tfclip_compat.create_train_op``).

    Args:
      total_loss: A ``Tensor``: the total loss.
      optimizer: A ``tf.compat.v1.train.Optimizer``.
      global_step: The step variable to increment. Left at its default, the graph's global step
        (created when missing); ``None``: no step is incremented.
      update_ops: Ops to run before the loss. ``None``: the ``UPDATE_OPS`` collection (batch
        norm's moving averages).
      variables_to_train: Variables to train (default: all trainable variables).
      clip_gradient_norm: If > 0, clip each gradient to this L2 norm; 0 (default) or less: no
        clipping. A finite Python number.
      summarize_gradients: Whether to add gradient summaries. As in TF 1.15 these are
        contrib.training's (``<var>_gradient``), not :func:`slim_add_gradients_summaries`'.
      gate_gradients: How to gate the gradient computation (see ``tf.compat.v1.train.Optimizer``).
      aggregation_method: How gradient terms are combined (``tf.AggregationMethod``).
      colocate_gradients_with_ops: Whether to colocate gradients with the ops that made them.
      gradient_multipliers: A dict from ``Variable`` objects or variable op names to the factor
        their gradient is multiplied by (``tfclip_compat.multiply_gradients``).
      check_numerics: Whether to raise when the loss is inf or NaN.
      nonfinite: ``"propagate"`` (TF 1.15), ``"skip"`` or ``"raise"``: see
        ``tfclip_compat.create_train_op``.
      norm: ``"tf1"`` (default, TF 1.15) or ``"exact"``: the clip's norm of an ``IndexedSlices``
        (see ``tfclip_compat.clip_gradient_norms``).

    Returns:
      A ``Tensor`` that, when evaluated, runs one training step and returns the total loss.

    Raises:
      ValueError: On a bad argument (named in the message) or when there is nothing to train.
      TypeError: If ``optimizer`` has no ``compute_gradients``/``apply_gradients``.
      RuntimeError: In eager mode.
    """
    _check_clip_gradient_norm(clip_gradient_norm)
    norm = _norms.check_norm_mode(norm, ("tf1", "exact"))

    def transform_grads_fn(grads: GradsAndVars) -> GradsAndVars:
        if gradient_multipliers:
            with tf.name_scope("multiply_grads"):
                grads = multiply_gradients(grads, gradient_multipliers)
        if clip_gradient_norm > 0:
            with tf.name_scope("clip_grads"):
                grads = clip_gradient_norms(grads, clip_gradient_norm, norm=norm)
        return grads

    return create_train_op(
        total_loss,
        optimizer,
        global_step=global_step,
        update_ops=update_ops,
        variables_to_train=variables_to_train,
        transform_grads_fn=transform_grads_fn,
        summarize_gradients=summarize_gradients,
        gate_gradients=gate_gradients,
        aggregation_method=aggregation_method,
        colocate_gradients_with_ops=colocate_gradients_with_ops,
        check_numerics=check_numerics,
        nonfinite=nonfinite,
    )
