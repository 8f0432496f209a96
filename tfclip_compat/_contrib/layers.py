"""Drop-in replacement for TF 1.15 ``tf.contrib.layers.optimize_loss``.

Same signature, variable scope (``OptimizeLoss``), ``learning_rate`` variable, summary names and
numerics as TF 1.15 — bit for bit, sparse gradients with repeated indices included — for
``tf.compat.v1`` optimizers in graph mode and inside ``tf.function``.

Opt-in beyond TF 1.15 (keyword-only): ``norm="exact"`` (a numeric ``clip_gradients`` and the
norm summaries use the dense norm of sparse gradients and float32 accumulation of half
precision; TF 1.15 normed ``IndexedSlices.values``) or ``norm="fast"``; ``nonfinite=``.

Differences on purpose (only where TF 1.15 crashed, corrupted weights or cannot apply):

- an ``int`` ``clip_gradients`` (TF 1.15: "Unknown type") is accepted as a float;
  ``clip_gradients`` must be finite and > 0 (TF 1.15 produced NaN or unclipped gradients);
- ``gradient_multipliers`` and ``gradient_noise_scale`` use the gradient's dtype (TF 1.15 used
  float32 and failed on float16 gradients; float32 results are identical); multiplier keys
  that match no variable are logged;
- errors name the argument and the remedy;
- inside ``tf.function`` the default ``variables`` are those of
  :func:`tfclip_compat._contrib._graph.default_trainable_variables`;
- eager mode raises ``RuntimeError`` (the TF 1.15 contract is a graph tensor).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import math

from tfclip_compat import _nonfinite, _norms
from tfclip_compat._contrib._graph import default_trainable_variables, with_dependencies
from tfclip_compat._tf import tf

_v1 = tf.compat.v1

GradsAndVars = List[Tuple[Any, Any]]

#: TF 1.15's optimizer names (``"Momentum"`` uses momentum 0.9, as TF 1.15 did).
OPTIMIZER_CLS_NAMES: Dict[str, Callable[..., Any]] = {
    "Adagrad": _v1.train.AdagradOptimizer,
    "Adam": _v1.train.AdamOptimizer,
    "Ftrl": _v1.train.FtrlOptimizer,
    "Momentum": lambda learning_rate: _v1.train.MomentumOptimizer(learning_rate, momentum=0.9),
    "RMSProp": _v1.train.RMSPropOptimizer,
    "SGD": _v1.train.GradientDescentOptimizer,
}

#: The summaries ``optimize_loss`` can add (``summaries=``).
OPTIMIZER_SUMMARIES: List[str] = [
    "learning_rate",
    "loss",
    "gradients",
    "gradient_norm",
    "global_gradient_norm",
]

__all__ = ["OPTIMIZER_CLS_NAMES", "OPTIMIZER_SUMMARIES", "optimize_loss"]

#: Graph-building code: AutoGraph must not convert it when a ``tf.function`` calls it.
_no_autograph = tf.autograph.experimental.do_not_convert


def _is_v1_optimizer(obj: Any) -> bool:
    return isinstance(obj, _v1.train.Optimizer)


def _learning_rate_tensor(learning_rate: Any) -> Any:
    """TF 1.15's learning-rate handling: a 0-d tensor as is, a float as a variable."""
    if isinstance(learning_rate, tf.Tensor) and learning_rate.shape.ndims == 0:
        return learning_rate
    if isinstance(learning_rate, float):
        if learning_rate < 0.0:
            raise ValueError(
                f"Invalid learning_rate {learning_rate}: it must be >= 0 (e.g. learning_rate=0.01)."
            )
        return _v1.get_variable(
            "learning_rate",
            [],
            trainable=False,
            initializer=_v1.constant_initializer(learning_rate),
        )
    raise ValueError(
        "Learning rate should be 0d Tensor or float. "
        f"Got {learning_rate!r} of type {type(learning_rate)}; pass learning_rate as a Python "
        "float (e.g. 0.1, not 1) or a scalar Tensor, or None with a no-argument optimizer function."
    )


def _make_optimizer(optimizer: Any, lr: Any, learning_rate: Any) -> Any:
    """Resolve ``optimizer`` (name, class, instance or function) as TF 1.15 did."""
    if isinstance(optimizer, str):
        if optimizer not in OPTIMIZER_CLS_NAMES:
            raise ValueError(
                "Optimizer name should be one of [%s], you provided %s."
                % (", ".join(OPTIMIZER_CLS_NAMES), optimizer)
            )
        if lr is None:
            raise ValueError(
                f"Learning rate is None, but should be specified if optimizer is string "
                f"({optimizer}): pass learning_rate=<float or scalar Tensor>."
            )
        return OPTIMIZER_CLS_NAMES[optimizer](learning_rate=lr)
    if isinstance(optimizer, type) and issubclass(optimizer, _v1.train.Optimizer):
        if lr is None:
            raise ValueError(
                f"Learning rate is None, but should be specified if optimizer is class "
                f"({optimizer.__name__}): pass learning_rate=<float or scalar Tensor>."
            )
        return optimizer(learning_rate=lr)
    if _is_v1_optimizer(optimizer):
        return optimizer
    if callable(optimizer) and not isinstance(optimizer, type):
        opt = optimizer(lr) if learning_rate is not None else optimizer()
        if not _is_v1_optimizer(opt):
            raise ValueError(
                "Unrecognized optimizer: function should return subclass of Optimizer "
                f"(tf.compat.v1.train.Optimizer). Got {opt!r}."
            )
        return opt
    raise ValueError(
        "Unrecognized optimizer: should be string (one of %s), subclass of "
        "tf.compat.v1.train.Optimizer, instance of such a subclass or function with one argument "
        "(the learning rate). Got %r. Keras optimizers have no graph-mode compute_gradients: use "
        "tf.GradientTape with tfclip_compat.clip_gradients_by_norm instead."
        % (", ".join(OPTIMIZER_CLS_NAMES), optimizer)
    )


def _add_scaled_noise_to_gradients(grads_and_vars: GradsAndVars, scale: Any) -> GradsAndVars:
    """Add truncated-normal noise times ``scale`` to each gradient (TF 1.15; dtype-preserving)."""
    noisy: GradsAndVars = []
    for gradient, variable in grads_and_vars:
        if gradient is None:
            noisy.append((None, variable))
            continue
        if isinstance(gradient, tf.IndexedSlices):
            shape = gradient.dense_shape
        else:
            shape = gradient.shape
        noise = _v1.truncated_normal(shape) * scale
        noisy.append((gradient + tf.cast(noise, gradient.dtype), variable))
    return noisy


def _multiply_gradients(grads_and_vars: GradsAndVars, multipliers: Dict[Any, Any]) -> GradsAndVars:
    """Scale gradients whose variable (or ``variable.name``, e.g. ``"w:0"``) is a key (TF 1.15)."""
    used = set()
    out: GradsAndVars = []
    for grad, var in grads_and_vars:
        if grad is not None and (var in multipliers or var.name in multipliers):
            key = var if var in multipliers else var.name
            used.add(id(key) if not isinstance(key, str) else key)
            factor = tf.constant(multipliers[key], dtype=grad.dtype)
            if isinstance(grad, tf.IndexedSlices):
                grad = tf.IndexedSlices(grad.values * factor, grad.indices, grad.dense_shape)
            else:
                grad = grad * factor
        out.append((grad, var))
    unused = [k for k in multipliers if (k if isinstance(k, str) else id(k)) not in used]
    if unused:
        _v1.logging.warning(
            "optimize_loss: gradient_multipliers keys %s match no variable with a gradient "
            "(keys are variables or variable.name such as 'dense/kernel:0'); they are ignored, as "
            "in TF 1.15.",
            [k if isinstance(k, str) else getattr(k, "name", k) for k in unused],
        )
    return out


def _check_clip_gradients(clip_gradients: Any) -> Any:
    """Return a float clip norm, the callable, or None; raise on anything else."""
    if clip_gradients is None or callable(clip_gradients):
        return clip_gradients
    if isinstance(clip_gradients, (int, float)) and not isinstance(clip_gradients, bool):
        if not (math.isfinite(clip_gradients) and clip_gradients > 0):
            raise ValueError(
                f"clip_gradients={clip_gradients!r} must be a finite number > 0 (the largest "
                "global gradient norm); TF 1.15 turned an infinite one into NaN gradients."
            )
        return float(clip_gradients)
    raise ValueError(
        f"Unknown type {type(clip_gradients)} for clip_gradients: pass a float (clip by the global "
        "norm), a function of the (gradient, variable) list, or None."
    )


@_no_autograph
def optimize_loss(
    loss: Any,
    global_step: Any,
    learning_rate: Any,
    optimizer: Any,
    gradient_noise_scale: Optional[float] = None,
    gradient_multipliers: Optional[Dict[Any, float]] = None,
    clip_gradients: Any = None,
    learning_rate_decay_fn: Optional[Callable[[Any, Any], Any]] = None,
    update_ops: Optional[Sequence[Any]] = None,
    variables: Optional[Sequence[Any]] = None,
    name: Optional[str] = None,
    summaries: Optional[Sequence[str]] = None,
    colocate_gradients_with_ops: bool = False,
    increment_global_step: bool = True,
    *,
    nonfinite: str = "propagate",
    norm: str = "tf1",
) -> Any:
    """Build a training op for ``loss``: TF 1.15's ``tf.contrib.layers.optimize_loss``.

    Under variable scope ``name`` (default ``"OptimizeLoss"``): runs ``update_ops`` (default: the
    ``UPDATE_OPS`` collection) before the loss; makes a float ``learning_rate`` a non-trainable
    variable ``<scope>/learning_rate``, optionally decayed by ``learning_rate_decay_fn(lr,
    global_step)``; builds the optimizer; computes the gradients of ``variables`` (default: all
    trainable), adds noise, multiplies, clips; adds summaries; applies the gradients (incrementing
    ``global_step`` unless ``increment_global_step=False``) and returns the loss with a control
    dependency on that update.

    Args:
      loss: Scalar ``Tensor``.
      global_step: Scalar int step variable, or None to use the graph's (no step is incremented
        when the graph has none). Required by ``learning_rate_decay_fn``.
      learning_rate: float or scalar ``Tensor``; None when ``optimizer`` is a no-argument function
        or an instance.
      optimizer: ``"Adagrad"``, ``"Adam"``, ``"Ftrl"``, ``"Momentum"`` (momentum 0.9),
        ``"RMSProp"``, ``"SGD"``; a ``tf.compat.v1.train.Optimizer`` subclass (built with
        ``learning_rate=lr``) or instance; or a function of the learning rate returning one.
      gradient_noise_scale: Adds 0-mean truncated-normal noise scaled by this value.
      gradient_multipliers: Dict of variables or variable names (``"w:0"``) to gradient factors.
      clip_gradients: float: clip by the global norm; callable: transform of the
        (gradient, variable) list (e.g. adaptive clipping); None: no clipping.
      learning_rate_decay_fn: Function ``(learning_rate, global_step) -> Tensor``.
      update_ops: Ops run before the loss (default: the ``UPDATE_OPS`` collection).
      variables: Variables to optimize (default: all trainable variables; inside a
        ``tf.function``, those of ``default_trainable_variables``).
      name: Variable scope name (default ``"OptimizeLoss"``).
      summaries: Subset of ``OPTIMIZER_SUMMARIES`` (default: loss, learning rate, global norm).
      colocate_gradients_with_ops: Colocate gradients with their ops.
      increment_global_step: Whether the update increments ``global_step``.
      nonfinite: ``"propagate"`` (TF 1.15), ``"skip"`` (a step with inf/NaN gradients changes no
        variable, slot or step) or ``"raise"`` (an error naming the variable; nothing changes).
      norm: how a float ``clip_gradients`` and the norm summaries compute norms: ``"tf1"``
        (default, TF 1.15 bit for bit), ``"exact"`` or ``"fast"`` (``tfclip_compat._norms``).

    Returns:
      The loss ``Tensor``; evaluating it runs one training step.

    Raises:
      ValueError: On a bad argument, named in the message (TF 1.15's cases plus ``nonfinite``).
      RuntimeError: In eager mode.
    """
    _nonfinite.check_policy(nonfinite)
    norm = _norms.check_norm_mode(norm)
    if tf.executing_eagerly():
        raise RuntimeError(
            "optimize_loss builds a graph: it returns a loss tensor whose evaluation runs one "
            "training step, which has no meaning in eager mode. Call it in graph mode "
            "(tf.compat.v1 Graph/Session, or inside a tf.function), or in TF 2 use "
            "tf.GradientTape with tfclip_compat.clip_gradients_by_norm(keras_optimizer, clip_norm)."
        )
    clip_gradients = _check_clip_gradients(clip_gradients)
    if gradient_multipliers is not None and not isinstance(gradient_multipliers, dict):
        raise ValueError(
            "gradient_multipliers must be a dict {variable or variable name: factor}, got "
            f"{type(gradient_multipliers).__name__}."
        )
    loss = tf.convert_to_tensor(loss)
    if loss.shape.ndims not in (None, 0):
        raise ValueError(
            f"loss must be a scalar Tensor, got shape {loss.shape}; reduce it first "
            "(e.g. tf.reduce_mean)."
        )
    if global_step is None:
        global_step = _v1.train.get_global_step()
    else:
        _v1.train.assert_global_step(global_step)
    with _v1.variable_scope(name, "OptimizeLoss", [loss, global_step]):
        if update_ops is None:
            update_ops = set(_v1.get_collection(_v1.GraphKeys.UPDATE_OPS))
        if update_ops:
            loss = with_dependencies(list(update_ops), loss)

        lr = None
        if learning_rate is not None:
            lr = _learning_rate_tensor(learning_rate)
        if summaries is None:
            summaries = ["loss", "learning_rate", "global_gradient_norm"]
        else:
            for summ in summaries:
                if summ not in OPTIMIZER_SUMMARIES:
                    raise ValueError(
                        "Summaries should be one of [%s], you provided %s."
                        % (", ".join(OPTIMIZER_SUMMARIES), summ)
                    )
        if learning_rate is not None and learning_rate_decay_fn is not None:
            if global_step is None:
                raise ValueError(
                    "global_step is required for learning_rate_decay_fn: pass global_step= or "
                    "create one with tf.compat.v1.train.get_or_create_global_step()."
                )
            lr = learning_rate_decay_fn(lr, global_step)
            if "learning_rate" in summaries:
                _v1.summary.scalar("learning_rate", lr)

        opt = _make_optimizer(optimizer, lr, learning_rate)

        if variables is None:
            variables = default_trainable_variables()
            if not variables:
                raise ValueError(
                    "optimize_loss has no variables to optimize: the graph has no trainable "
                    "variables (and inside a tf.function the loss read none). Build the model "
                    "first, or pass variables=."
                )
        variables = list(variables)
        if not variables:
            raise ValueError(
                "optimize_loss(variables=[]): the list of variables to optimize is empty. Pass "
                "the variables, or leave variables=None for all trainable variables."
            )

        gradients = opt.compute_gradients(
            loss, variables, colocate_gradients_with_ops=colocate_gradients_with_ops
        )

        if gradient_noise_scale is not None:
            gradients = _add_scaled_noise_to_gradients(gradients, gradient_noise_scale)

        if gradient_multipliers is not None:
            gradients = _multiply_gradients(gradients, gradient_multipliers)
            if not gradients:
                raise ValueError(
                    "Empty list of (gradient, var) pairs encountered. This is most likely to be "
                    "caused by an improper value of gradient_multipliers."
                )

        if "global_gradient_norm" in summaries or "gradient_norm" in summaries:
            _v1.summary.scalar(
                "global_norm/gradient_norm", _norms.global_norm([g for g, _ in gradients], norm)
            )

        if isinstance(clip_gradients, float):
            clipped, _ = _norms.clip_by_global_norm(
                [g for g, _ in gradients], clip_gradients, norm
            )
            gradients = list(zip(clipped, [v for _, v in gradients]))
        elif callable(clip_gradients):
            gradients = clip_gradients(gradients)

        if "loss" in summaries:
            _v1.summary.scalar("loss", loss)

        for gradient, variable in gradients:
            grad_values = gradient.values if isinstance(gradient, tf.IndexedSlices) else gradient
            if grad_values is not None:
                var_name = variable.name.replace(":", "_")
                if "gradients" in summaries:
                    _v1.summary.histogram("gradients/%s" % var_name, grad_values)
                if "gradient_norm" in summaries:
                    value = grad_values if norm == "tf1" else gradient
                    _v1.summary.scalar(
                        "gradient_norm/%s" % var_name, _norms.global_norm([value], norm)
                    )

        if clip_gradients is not None and (
            "global_gradient_norm" in summaries or "gradient_norm" in summaries
        ):
            _v1.summary.scalar(
                "global_norm/clipped_gradient_norm",
                _norms.global_norm([g for g, _ in gradients], norm),
            )

        step = global_step if increment_global_step else None

        def apply_fn(grads_and_vars: GradsAndVars) -> Any:
            return opt.apply_gradients(grads_and_vars, global_step=step, name="train")

        grad_updates = _nonfinite.apply_with_policy(apply_fn, list(gradients), nonfinite)

        return with_dependencies([grad_updates], loss)
