"""Drop-in replacements for TF 1.15 ``tf.contrib.training`` gradient helpers.

``create_train_op``, ``clip_gradient_norms``, ``clip_gradient_norms_fn``,
``add_gradients_summaries`` and ``multiply_gradients`` keep TF 1.15's names, signatures and
numerics (bit for bit, sparse gradients with repeated indices included) for
``tf.compat.v1`` optimizers in graph mode and inside ``tf.function``.

Opt-in beyond TF 1.15 (keyword-only, so TF 1.15 calls are unchanged):

- ``clip_gradient_norms(..., norm="exact")`` / ``clip_gradient_norms_fn(..., norm="exact")``
  clip an ``IndexedSlices`` by the norm of the *dense* gradient it stands for (TF 1.15 used the
  norm of ``.values``, wrong when indices repeat) and accumulate float16/bfloat16 norms in
  float32; ``add_gradients_summaries(..., norm="exact")`` reports that norm;
- ``create_train_op(..., nonfinite="skip" | "raise")``.

Differences on purpose (only where TF 1.15 crashed, corrupted weights or cannot apply):

- ``create_train_op`` raises ``ValueError`` naming the variable where TF 1.15 had bare ``assert``
  statements (which ``python -O`` removes), and says what is wrong for an empty
  ``variables_to_train``;
- ``max_norm`` must be a finite number > 0 (TF 1.15 turned ``inf`` into NaN gradients and a
  negative value into reversed ones); a tensor ``max_norm`` is checked when the step runs;
- inside ``tf.function`` the default variable list (TF 1.15: the graph's trainable variables)
  is the trainable variables the function has read, in creation order, since a function graph
  holds no collection of the variables created outside it;
- in eager mode ``create_train_op`` raises ``RuntimeError``: TF 1.15 returned a loss *tensor*
  whose evaluation runs a step, which has no eager meaning (see the function's docstring).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import math

from tfclip_compat import _nonfinite, _norms
from tfclip_compat._contrib._graph import default_trainable_variables, var_name, with_dependencies
from tfclip_compat._tf import tf
from tfclip_compat._transforms.base import runtime_checks

_v1 = tf.compat.v1

GradsAndVars = List[Tuple[Any, Any]]

#: TF 1.15's sentinel: ``global_step`` left at it means "the graph's global step, created if
#: missing"; ``None`` means "do not increment any step".
_USE_GLOBAL_STEP = 0

#: Graph-building code: AutoGraph must not convert it when a ``tf.function`` calls it.
_no_autograph = tf.autograph.experimental.do_not_convert

__all__ = [
    "add_gradients_summaries",
    "clip_gradient_norms",
    "clip_gradient_norms_fn",
    "create_train_op",
    "multiply_gradients",
]


@_no_autograph
def add_gradients_summaries(
    grads_and_vars: Sequence[Tuple[Any, Any]], *, norm: str = "tf1"
) -> List[Any]:
    """Add a histogram and a norm summary for each gradient; return the summary ops.

    Same summary names as TF 1.15 (``<var op name>_gradient`` histogram of the gradient values,
    ``<var op name>_gradient_norm`` scalar). Variables without a gradient are logged at INFO
    level and skipped, as in TF 1.15.

    Args:
      grads_and_vars: A list of (gradient, variable) pairs.
      norm: ``"tf1"`` (default: TF 1.15's norm of the gradient's values) or ``"exact"`` (the
        norm of the dense gradient, float32 accumulation for half precision).

    Returns:
      The list of created summary tensors.
    """
    return gradient_summaries(grads_and_vars, norm, "_")


def gradient_summaries(grads_and_vars, norm: str, separator: str) -> List[Any]:
    """The histogram + norm summaries of contrib.training (``separator="_"``) and of slim
    (``"/"``): ``<var op name><separator>gradient`` and ``...gradient_norm``."""
    norm = _norms.check_norm_mode(norm, ("tf1", "exact"))
    summaries = []
    for grad, var in grads_and_vars:
        if grad is not None:
            grad_values = grad.values if isinstance(grad, tf.IndexedSlices) else grad
            name = var_name(var)
            summaries.append(_v1.summary.histogram(name + separator + "gradient", grad_values))
            value = grad_values if norm == "tf1" else grad
            summaries.append(
                _v1.summary.scalar(name + separator + "gradient_norm", _norms.global_norm([value], norm))
            )
        else:
            _v1.logging.info("Var %s has no gradient", var_name(var))
    return summaries


def _check_max_norm(max_norm: Any) -> None:
    """Reject a Python ``max_norm`` that is not a finite positive number (tensors: at run time)."""
    if isinstance(max_norm, bool) or (
        isinstance(max_norm, (int, float)) and not (math.isfinite(max_norm) and max_norm > 0)
    ):
        raise ValueError(
            f"max_norm must be a finite number > 0, got {max_norm!r}; "
            "pass the largest allowed L2 norm of each gradient, e.g. max_norm=5.0."
        )
    if isinstance(max_norm, (list, tuple, dict, str)) or max_norm is None:
        raise ValueError(
            f"max_norm must be a positive scalar, got {max_norm!r} of type "
            f"{type(max_norm).__name__}; e.g. max_norm=5.0."
        )


@_no_autograph
def clip_gradient_norms(
    gradients_to_variables: Sequence[Tuple[Any, Any]], max_norm: Any, *, norm: str = "tf1"
) -> GradsAndVars:
    """Clip each gradient to an L2 norm of at most ``max_norm`` (per tensor, NOT the global norm).

    Replaces ``tf.contrib.training.clip_gradient_norms``: ``tf.clip_by_norm`` on each gradient as
    TF 1.15 computed it (an ``IndexedSlices`` is clipped by the norm of its ``.values`` and stays
    sparse). ``None`` gradients pass through.

    Args:
      gradients_to_variables: A list of (gradient, variable) pairs.
      max_norm: The maximum norm value (a finite float > 0 or a scalar tensor, checked when the
        step runs).
      norm: ``"tf1"`` (default, TF 1.15 bit for bit) or ``"exact"``: clip an ``IndexedSlices``
        by the norm of the dense gradient it stands for (repeated indices summed, the result
        has unique indices) and reduce float16/bfloat16 in float32
        (``tfclip_compat.clip_by_norm``).

    Returns:
      A list of clipped (gradient, variable) pairs.
    """
    _check_max_norm(max_norm)
    norm = _norms.check_norm_mode(norm, ("tf1", "exact"))
    checks = runtime_checks(max_norm, "max_norm")
    clipped_grads_and_vars = []
    for grad, var in gradients_to_variables:
        if grad is not None:
            with tf.control_dependencies(checks):
                grad = _norms.clip_by_norm(grad, max_norm, norm)
        clipped_grads_and_vars.append((grad, var))
    return clipped_grads_and_vars


def clip_gradient_norms_fn(
    max_norm: Any, *, norm: str = "tf1"
) -> Callable[[Sequence[Tuple[Any, Any]]], GradsAndVars]:
    """Return a ``transform_grads_fn`` for ``create_train_op`` that calls ``clip_gradient_norms``.

    Args:
      max_norm: The maximum norm value of each gradient.
      norm: ``"tf1"`` (default) or ``"exact"``, passed to ``clip_gradient_norms``.

    Returns:
      A function mapping a (gradient, variable) list to its per-tensor clipped version.
    """
    _check_max_norm(max_norm)
    norm = _norms.check_norm_mode(norm, ("tf1", "exact"))

    def clip_norms(gradients_to_variables: Sequence[Tuple[Any, Any]]) -> GradsAndVars:
        return clip_gradient_norms(gradients_to_variables, max_norm, norm=norm)

    return clip_norms


@_no_autograph
def multiply_gradients(
    grads_and_vars: GradsAndVars, gradient_multipliers: Dict[Any, Any]
) -> GradsAndVars:
    """Multiply the gradients of the given variables by constants (TF 1.15 semantics).

    Replaces ``tf.contrib.training.multiply_gradients``.

    Args:
      grads_and_vars: A list of (gradient, variable) pairs.
      gradient_multipliers: A dict from ``Variable`` objects or variable op names (``"dense/kernel"``,
        no ``:0``) to the coefficient the gradient is multiplied by. ``IndexedSlices`` stay sparse.

    Returns:
      The updated list of (gradient, variable) pairs.

    Raises:
      ValueError: If ``grads_and_vars`` is not a list, ``gradient_multipliers`` is empty or not a
        dict, or a multiplier is requested for a variable whose gradient is None.
    """
    if not isinstance(grads_and_vars, list):
        raise ValueError(
            "`grads_and_vars` must be a list of (gradient, variable) pairs, got "
            f"{type(grads_and_vars).__name__}; wrap it with list(...)."
        )
    if not gradient_multipliers:
        raise ValueError(
            "`gradient_multipliers` is empty: pass a dict {variable or variable op name: factor}."
        )
    if not isinstance(gradient_multipliers, dict):
        raise ValueError(
            "`gradient_multipliers` must be a dict {variable or variable op name: factor}, got "
            f"{type(gradient_multipliers).__name__}."
        )

    multiplied_grads_and_vars = []
    for grad, var in grads_and_vars:
        op_name = var_name(var)
        if var in gradient_multipliers or op_name in gradient_multipliers:
            key = var if var in gradient_multipliers else op_name
            if grad is None:
                raise ValueError(
                    f"Requested multiple of `None` gradient: variable {op_name!r} in "
                    "`gradient_multipliers` has no gradient (it does not affect the loss)."
                )
            factor = tf.convert_to_tensor(gradient_multipliers[key], dtype=grad.dtype)
            if isinstance(grad, tf.IndexedSlices):
                grad = tf.IndexedSlices(grad.values * factor, grad.indices, grad.dense_shape)
            else:
                grad = grad * factor
        multiplied_grads_and_vars.append((grad, var))
    return multiplied_grads_and_vars


def _is_v1_style_optimizer(optimizer: Any) -> bool:
    """True for ``tf.compat.v1.train.Optimizer`` and look-alikes (Horovod, wrappers)."""
    return callable(getattr(optimizer, "compute_gradients", None)) and callable(
        getattr(optimizer, "apply_gradients", None)
    )


@_no_autograph
def create_train_op(
    total_loss: Any,
    optimizer: Any,
    global_step: Any = _USE_GLOBAL_STEP,
    update_ops: Optional[Sequence[Any]] = None,
    variables_to_train: Optional[Sequence[Any]] = None,
    transform_grads_fn: Optional[Callable[[GradsAndVars], GradsAndVars]] = None,
    summarize_gradients: bool = False,
    gate_gradients: int = _v1.train.Optimizer.GATE_OP,
    aggregation_method: Any = None,
    colocate_gradients_with_ops: bool = False,
    check_numerics: bool = True,
    *,
    nonfinite: str = "propagate",
) -> Any:
    """Create a tensor that computes the gradients, applies them and returns the loss.

    Replaces ``tf.contrib.training.create_train_op`` with TF 1.15 semantics, for graph mode
    (``tf.compat.v1`` graphs and ``tf.function``) with a ``tf.compat.v1.train.Optimizer`` (or an
    object with its ``compute_gradients``/``apply_gradients``, e.g. ``clip_gradients_by_norm``'s
    wrapper or Horovod's). Steps, in TF 1.15's order: the update ops run before the loss; the
    gradients of ``total_loss`` w.r.t. ``variables_to_train`` are computed, passed through
    ``transform_grads_fn``, optionally summarized, and applied (incrementing ``global_step``); the
    returned tensor is ``total_loss`` (checked for inf/NaN when ``check_numerics``) with a control
    dependency on the update. It is also added to the ``TRAIN_OP`` collection.

    Eager mode is refused with a ``RuntimeError``: the TF 1.15 contract is a tensor whose
    evaluation runs a training step, which eager execution cannot express (a tensor is a value).
    In TF 2, wrap the step in ``tf.function`` or use ``tfclip_compat.clip_gradients_by_norm`` with a
    Keras optimizer and ``tf.GradientTape``.

    Args:
      total_loss: A ``Tensor``: the total loss (normally a scalar; a non-scalar loss is
        differentiated as its sum, as in TF 1.15).
      optimizer: A ``tf.compat.v1.train.Optimizer`` used to compute and apply the gradients.
      global_step: The step variable to increment. Left at its default, the graph's global step
        (created when missing); ``None``: no step is incremented.
      update_ops: Ops to run before the loss. ``None``: the ``UPDATE_OPS`` collection. A list that
        misses some of that collection logs a warning, as TF 1.15 did.
      variables_to_train: Variables to train (default: all trainable variables; inside a
        ``tf.function``, see :func:`default_trainable_variables`).
      transform_grads_fn: Function mapping the (gradient, variable) list to a new one (clipping,
        multipliers), e.g. ``clip_gradient_norms_fn(5.0)``.
      summarize_gradients: Whether to add gradient summaries (``add_gradients_summaries``).
      gate_gradients: How to gate the gradient computation (see ``tf.compat.v1.train.Optimizer``).
      aggregation_method: How gradient terms are combined (``tf.AggregationMethod``).
      colocate_gradients_with_ops: Whether to colocate gradients with the ops that made them.
      check_numerics: Whether to raise when the loss is inf or NaN. With ``nonfinite="skip"``,
        pass ``False`` to keep training through non-finite steps.
      nonfinite: What to do with a step whose gradients are not all finite: ``"propagate"`` (TF
        1.15: apply them), ``"skip"`` (leave variables and optimizer slots unchanged) or
        ``"raise"`` (an error naming the offending variable).

    Returns:
      A ``Tensor`` that, when evaluated, runs one training step and returns the total loss.

    Raises:
      ValueError: On a bad argument (named in the message) or when there is nothing to train.
      TypeError: If ``optimizer`` has no ``compute_gradients``/``apply_gradients``.
      RuntimeError: In eager mode.
    """
    _nonfinite.check_policy(nonfinite)
    if tf.executing_eagerly():
        raise RuntimeError(
            "create_train_op builds a graph: it returns a loss tensor whose evaluation runs one "
            "training step, which has no meaning in eager mode. Call it in graph mode "
            "(tf.compat.v1 Graph/Session, or inside a tf.function), or in TF 2 compute the "
            "gradients with tf.GradientTape and apply them with "
            "tfclip_compat.clip_gradients_by_norm(keras_optimizer, clip_norm)."
        )
    if not _is_v1_style_optimizer(optimizer):
        raise TypeError(
            "optimizer must be a tf.compat.v1.train.Optimizer (an object with compute_gradients "
            f"and apply_gradients), got {type(optimizer).__name__}. For a Keras optimizer use "
            "tf.GradientTape + tfclip_compat.clip_gradients_by_norm(optimizer, clip_norm)."
        )
    if transform_grads_fn is not None and not callable(transform_grads_fn):
        raise ValueError(
            "transform_grads_fn must be a function taking and returning a list of "
            f"(gradient, variable) pairs, got {transform_grads_fn!r}."
        )
    # TF 1.15 accepted a non-scalar loss (its gradients are those of the sum): so do we.
    total_loss = tf.convert_to_tensor(total_loss)

    if global_step is _USE_GLOBAL_STEP:
        global_step = _v1.train.get_or_create_global_step()

    # Update ops use the UPDATE_OPS collection if update_ops is None.
    global_update_ops = set(_v1.get_collection(_v1.GraphKeys.UPDATE_OPS))
    if update_ops is None:
        update_ops_set = global_update_ops
    else:
        update_ops_set = set(update_ops)
    if not global_update_ops.issubset(update_ops_set):
        _v1.logging.warning(
            "update_ops in create_train_op does not contain all the update_ops in "
            "GraphKeys.UPDATE_OPS"
        )

    # Make sure update_ops are computed before total_loss.
    if update_ops_set:
        with tf.control_dependencies(update_ops_set):
            barrier = tf.no_op(name="update_barrier")
        total_loss = with_dependencies([barrier], total_loss)

    trainable = default_trainable_variables()
    if variables_to_train is None:
        variables_to_train = trainable
        if not variables_to_train:
            raise ValueError(
                "create_train_op has no variables to train: the graph has no trainable "
                "variables (and inside a tf.function the loss read none). Build the model "
                "before calling it, or pass variables_to_train=."
            )
    else:
        variables_to_train = list(variables_to_train)
        if not variables_to_train:
            raise ValueError(
                "create_train_op(variables_to_train=[]): the list of variables to train is "
                "empty. Pass the variables to train, or leave variables_to_train=None for all "
                "trainable variables."
            )
        for v in variables_to_train:
            if not (getattr(v, "trainable", False) or any(v is t for t in trainable)):
                raise ValueError(
                    f"variables_to_train contains {var_name(v)!r}, which is not a trainable "
                    "variable; create it with trainable=True or leave it out."
                )

    grads = optimizer.compute_gradients(
        total_loss,
        variables_to_train,
        gate_gradients=gate_gradients,
        aggregation_method=aggregation_method,
        colocate_gradients_with_ops=colocate_gradients_with_ops,
    )

    if transform_grads_fn:
        grads = transform_grads_fn(grads)

    if summarize_gradients:
        with tf.name_scope("summarize_grads"):
            add_gradients_summaries(grads)

    def apply_fn(grads_and_vars: GradsAndVars) -> Any:
        return optimizer.apply_gradients(grads_and_vars, global_step=global_step)

    grad_updates = _nonfinite.apply_with_policy(apply_fn, list(grads), nonfinite)

    with tf.name_scope("train_op"):
        if check_numerics:
            total_loss = tf.debugging.check_numerics(total_loss, "LossTensor is inf or nan")
        train_op = with_dependencies([grad_updates], total_loss)

    train_ops = _v1.get_collection_ref(_v1.GraphKeys.TRAIN_OP)
    if not any(train_op is t for t in train_ops):
        train_ops.append(train_op)

    return train_op
