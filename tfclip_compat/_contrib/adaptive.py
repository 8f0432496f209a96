"""``adaptive_clipping_fn``: drop-in for TF 1.15 ``tf.contrib.layers.adaptive_clipping_fn``.

Adaptive clipping (arXiv:1412.1602, section 3.2.1): keep moving averages of ``log(norm)``
and ``log(norm)**2``; when the global norm exceeds ``exp(mean + std_factor * std)`` scale the
gradients down to norm ``exp(mean)``. The same rule as a composable, checkpointable transform
is :class:`tfclip_compat.AdaptiveClipping` (``tfclip_compat._transforms.adaptive``).
"""

from __future__ import annotations

import math
from typing import Any, Callable, List, Optional, Tuple

from tfclip_compat import _norms
from tfclip_compat._tf import tf
from tfclip_compat._transforms._util import _f32, _no_autograph
from tfclip_compat._transforms.adaptive import _apply_factor, _factor

_v1 = tf.compat.v1
GradsAndVars = List[Tuple[Any, Any]]

__all__ = ["adaptive_clipping_fn"]


def _is_tensor_like(value: Any) -> bool:
    return hasattr(value, "dtype") and hasattr(value, "shape")


def _check_tf1_args(std_factor: Any, decay: Any, static_max_norm: Any, epsilon: Any) -> None:
    """Accept what TF 1.15 accepted (numbers or tensors, any decay/epsilon); reject nonsense.

    Rejected, with the argument named: non-numbers (TF 1.15 crashed at graph build), Python NaN,
    and a Python ``static_max_norm`` <= 0 (TF 1.15 then zeroed or reversed every gradient).
    """
    for argument, value in (("std_factor", std_factor), ("decay", decay), ("epsilon", epsilon)):
        if _is_tensor_like(value):
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{argument} must be a number or a scalar tensor, got {value!r}.")
        if math.isnan(value):
            raise ValueError(f"{argument} must be a number, got NaN.")
    if static_max_norm is None or _is_tensor_like(static_max_norm):
        return
    if isinstance(static_max_norm, bool) or not isinstance(static_max_norm, (int, float)):
        raise TypeError(
            f"static_max_norm must be a number > 0, a scalar tensor or None, got {static_max_norm!r}."
        )
    if not static_max_norm > 0:
        raise ValueError(
            f"static_max_norm must be > 0 (or None for no cap), got {static_max_norm!r}: TF 1.15 "
            "zeroed (0) or reversed (negative) every gradient with it."
        )


def _moving_average_update(variable: Any, value: Any, decay: Any) -> Any:
    """``assign_moving_average(..., zero_debias=False)``: ``v -= (v - x) * (1 - decay)``."""
    with _v1.name_scope(None, "AssignMovingAvg", [variable, value, decay]):
        one_minus = tf.convert_to_tensor(1.0 - decay, name="decay")
        if one_minus.dtype != variable.dtype.base_dtype:
            one_minus = tf.cast(one_minus, variable.dtype.base_dtype)
        return variable.assign_sub((variable - value) * one_minus)


def _max_norm(
    norm: Any, mean_var: Any, sq_var: Any, std_factor: Any, decay: Any, step: Any, epsilon: Any
) -> Tuple[Any, Any]:
    """TF 1.15 ``_adaptive_max_norm`` on given variables: ``(max_norm, new log mean)``."""
    log_norm = tf.math.log(norm + epsilon)
    if step is not None:
        n = tf.cast(step, tf.float32)
        decay = tf.minimum(decay, n / (n + 1.0))
    mean = _moving_average_update(mean_var, log_norm, decay)
    sq_mean = _moving_average_update(sq_var, tf.square(log_norm), decay)
    variance = sq_mean - tf.square(mean)
    std = tf.sqrt(tf.maximum(epsilon, variance))
    return tf.exp(mean + std_factor * std), mean


class _EagerState(tf.Module):
    def __init__(self) -> None:
        super().__init__(name="AdaptiveMaxNorm")
        self.mean = tf.Variable(0.0, trainable=False, name="mean")
        self.sq_mean = tf.Variable(0.0, trainable=False, name="sq_mean")


def adaptive_clipping_fn(
    std_factor: float = 2.0,
    decay: float = 0.95,
    static_max_norm: Optional[float] = None,
    global_step: Any = None,
    report_summary: bool = False,
    epsilon: float = 1e-8,
    name: Optional[str] = None,
    *,
    norm: str = "tf1",
) -> Callable[[GradsAndVars], GradsAndVars]:
    """Adaptive gradient clipping, as TF 1.15 ``tf.contrib.layers.adaptive_clipping_fn``.

    Returns a function of a ``(gradient, variable)`` list, usable as
    ``optimize_loss(..., clip_gradients=adaptive_clipping_fn())``. Each call keeps moving
    averages of the log of the global gradient norm and of its square (variables ``mean`` and
    ``sq_mean`` under ``<name or AdaptiveMaxNorm>``, created with
    ``tf.compat.v1.get_variable`` in graph mode exactly as TF 1.15, so TF1 checkpoints
    restore); when the norm exceeds ``exp(mean + std_factor * std)`` the gradients are scaled
    to norm ``exp(mean)``. ``static_max_norm`` additionally caps the norm.

    Numerics are TF 1.15's, bit for bit (``norm="tf1"``: the global norm of TF 1.15's
    ``tf.global_norm``, where an ``IndexedSlices`` counts by its ``.values``), and so are the
    accepted arguments: numbers or scalar tensors for ``std_factor``, ``decay``,
    ``static_max_norm`` and ``epsilon``, any ``decay`` (e.g. 1.5 with a ``global_step``, which
    caps it at ``n / (n + 1)``) and ``epsilon=0``. Rejected on purpose: non-numbers, NaN and a
    ``static_max_norm`` <= 0. In eager mode and in ``tf.function`` (no TF 1.15 counterpart) the
    returned function keeps its state in its own variables, created on the first call
    (``fn.state()``), since ``get_variable`` does not share variables there.

    Args:
      std_factor: how many standard deviations above the mean are allowed (number or tensor).
      decay: moving-average decay (number or tensor).
      static_max_norm: optional hard maximum norm (number > 0 or tensor).
      global_step: optional step tensor/variable; then ``decay = min(decay, n / (n + 1))``
        for quicker adaptation at the start.
      report_summary: add the scalar summary ``global_norm/adaptive_max_gradient_norm``.
      epsilon: small constant in the log and the variance floor (number or tensor).
      name: variable scope name (default ``"AdaptiveMaxNorm"``).
      norm: ``"tf1"`` (default), ``"exact"`` (the dense norm of sparse gradients with repeated
        indices, float32 accumulation for half precision) or ``"fast"``; see
        ``tfclip_compat._norms``.

    Returns:
      A function ``grads_and_vars -> grads_and_vars``.
    """
    _check_tf1_args(std_factor, decay, static_max_norm, epsilon)
    norm_mode = _norms.check_norm_mode(norm)
    eager_state: List[_EagerState] = []

    @_no_autograph
    def gradient_clipping(grads_and_vars: GradsAndVars) -> GradsAndVars:
        """Clip ``grads_and_vars`` adaptively (TF 1.15 semantics)."""
        pairs = [tuple(p) for p in grads_and_vars]
        if not pairs:
            raise ValueError("adaptive_clipping_fn: grads_and_vars is empty; nothing to clip.")
        grads = [g for g, _ in pairs]
        variables = [v for _, v in pairs]
        norm = _norms.global_norm(grads, norm_mode)
        graph_mode = not tf.executing_eagerly() and not tf.inside_function()
        if graph_mode:
            with _v1.variable_scope(name, "AdaptiveMaxNorm", [norm]):
                mean_var = _v1.get_variable(
                    "mean", shape=norm.shape, dtype=norm.dtype,
                    initializer=_v1.zeros_initializer(), trainable=False,
                )
                sq_var = _v1.get_variable(
                    "sq_mean", shape=norm.shape, dtype=norm.dtype,
                    initializer=_v1.zeros_initializer(), trainable=False,
                )
                max_norm, log_mean = _max_norm(
                    norm, mean_var, sq_var, std_factor, decay, global_step, epsilon
                )
        else:
            if not eager_state:
                with tf.init_scope():
                    eager_state.append(_EagerState())
            state = eager_state[0]
            max_norm, log_mean = _max_norm(
                _f32(norm), state.mean, state.sq_mean, std_factor, decay, global_step, epsilon
            )
            max_norm = tf.cast(max_norm, norm.dtype)
            log_mean = tf.cast(log_mean, norm.dtype)
        if report_summary:
            if graph_mode:
                _v1.summary.scalar("global_norm/adaptive_max_gradient_norm", max_norm)
            elif tf.summary.experimental.get_step() is not None:
                tf.summary.scalar("global_norm/adaptive_max_gradient_norm", max_norm)
        factor = _factor(norm, max_norm, log_mean, static_max_norm)
        return list(zip(_apply_factor(grads, factor), variables))

    def state() -> Optional[_EagerState]:
        return eager_state[0] if eager_state else None

    gradient_clipping.state = state  # type: ignore[attr-defined]
    return gradient_clipping
