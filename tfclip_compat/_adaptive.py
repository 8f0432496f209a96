"""``adaptive_clipping_fn``: drop-in for TF 1.15 ``tf.contrib.layers.adaptive_clipping_fn``.

Adaptive clipping (arXiv:1412.1602, section 3.2.1): keep moving averages of ``log(norm)``
and ``log(norm)**2``; when the global norm exceeds ``exp(mean + std_factor * std)`` scale the
gradients down to norm ``exp(mean)``. Also available as a composable transform,
:class:`AdaptiveClipping`, for :func:`tfclip_compat.wrap_optimizer`.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple

from tfclip_compat import _clip
from tfclip_compat._tf import tf
from tfclip_compat._transform import GradientTransform, TransformResult
from tfclip_compat._transforms import _after, _f32, _no_autograph, _read, state_variable

_v1 = tf.compat.v1
GradsAndVars = List[Tuple[Any, Any]]

__all__ = ["AdaptiveClipping", "adaptive_clipping_fn"]


def _check_args(std_factor: Any, decay: Any, static_max_norm: Any, epsilon: Any) -> None:
    for argument, value in (("std_factor", std_factor), ("decay", decay), ("epsilon", epsilon)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{argument} must be a number, got {value!r}.")
    if not 0.0 <= decay <= 1.0:
        raise ValueError(f"decay must be in [0, 1], got {decay!r}.")
    if epsilon <= 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}.")
    if static_max_norm is not None:
        if isinstance(static_max_norm, bool) or not isinstance(static_max_norm, (int, float)):
            raise TypeError(f"static_max_norm must be a positive number or None, got {static_max_norm!r}.")
        if not static_max_norm > 0:
            raise ValueError(f"static_max_norm must be > 0, got {static_max_norm!r}.")


def _moving_average_update(variable: Any, value: Any, decay: Any) -> Any:
    """``assign_moving_average(..., zero_debias=False)``: ``v -= (v - x) * (1 - decay)``."""
    with _v1.name_scope(None, "AssignMovingAvg", [variable, value, decay]):
        one_minus = tf.convert_to_tensor(1.0 - decay, name="decay")
        if one_minus.dtype != variable.dtype.base_dtype:
            one_minus = tf.cast(one_minus, variable.dtype.base_dtype)
        return variable.assign_sub((variable - value) * one_minus)


def _max_norm(
    norm: Any, mean_var: Any, sq_var: Any, std_factor: float, decay: Any, step: Any, epsilon: float
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


def _apply_factor(grads: Sequence[Any], factor: Any) -> List[Any]:
    out: List[Any] = []
    for grad in grads:
        if grad is None:
            out.append(None)
        elif isinstance(grad, tf.IndexedSlices):
            f = tf.cast(factor, grad.values.dtype)
            out.append(tf.IndexedSlices(grad.values * f, grad.indices, grad.dense_shape))
        else:
            out.append(grad * tf.cast(factor, grad.dtype))
    return out


def _factor(norm: Any, max_norm: Any, log_mean: Any, static_max_norm: Optional[float]) -> Any:
    factor = tf.where(norm < max_norm, tf.ones_like(norm), tf.exp(log_mean) / norm)
    if static_max_norm is not None:
        factor = tf.minimum(static_max_norm / norm, factor)
    return factor


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
) -> Callable[[GradsAndVars], GradsAndVars]:
    """Adaptive gradient clipping, as TF 1.15 ``tf.contrib.layers.adaptive_clipping_fn``.

    Returns a function of a ``(gradient, variable)`` list, usable as
    ``optimize_loss(..., clip_gradients=adaptive_clipping_fn())``. Each call keeps moving
    averages of the log of the global gradient norm and of its square (variables ``mean`` and
    ``sq_mean`` under ``<name or AdaptiveMaxNorm>``, created with
    ``tf.compat.v1.get_variable`` in graph mode exactly as TF 1.15, so TF1 checkpoints
    restore); when the norm exceeds ``exp(mean + std_factor * std)`` the gradients are scaled
    to norm ``exp(mean)``. ``static_max_norm`` additionally caps the norm.

    Differences from TF 1.15, on purpose: the global norm is accumulated in float32 for
    float16/bfloat16 gradients and counts ``IndexedSlices`` with repeated indices as their dense
    value (same numbers otherwise); arguments are validated; in eager mode and in
    ``tf.function`` the returned function keeps its state in its own variables, created on the
    first call (``fn.state``), since ``get_variable`` does not share variables there.

    Args:
      std_factor: Python scalar, how many standard deviations above the mean are allowed.
      decay: moving-average decay in [0, 1].
      static_max_norm: optional hard maximum norm.
      global_step: optional step tensor/variable; then ``decay = min(decay, n / (n + 1))``
        for quicker adaptation at the start.
      report_summary: add the scalar summary ``global_norm/adaptive_max_gradient_norm``.
      epsilon: small constant in the log and the variance floor.
      name: variable scope name (default ``"AdaptiveMaxNorm"``).

    Returns:
      A function ``grads_and_vars -> grads_and_vars``.
    """
    _check_args(std_factor, decay, static_max_norm, epsilon)
    eager_state: List[_EagerState] = []

    @_no_autograph
    def gradient_clipping(grads_and_vars: GradsAndVars) -> GradsAndVars:
        """Clip ``grads_and_vars`` adaptively (TF 1.15 semantics)."""
        pairs = [tuple(p) for p in grads_and_vars]
        if not pairs:
            raise ValueError("adaptive_clipping_fn: grads_and_vars is empty; nothing to clip.")
        grads = [g for g, _ in pairs]
        variables = [v for _, v in pairs]
        norm = _clip.global_norm(grads)
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


class AdaptiveClipping(GradientTransform):
    """``adaptive_clipping_fn`` as a composable, checkpointable, distribution-safe transform.

    Same rule (arXiv:1412.1602 §3.2.1): moving averages of ``log(norm)`` and ``log(norm)**2``
    with ``decay``; scale to norm ``exp(mean)`` when the norm exceeds
    ``exp(mean + std_factor * std)``; ``static_max_norm`` caps it. ``quick_start=True`` uses
    the number of norms recorded so far as TF 1.15's ``global_step`` (``decay = min(decay,
    n / (n + 1))``), without needing a global step. Skipped steps: non-finite norms are not
    recorded (TF 1.15 recorded them and its averages became inf/NaN for good); a step skipped
    by another transform or the policy is still recorded. Stats: common ones plus
    ``clip_threshold`` (the adaptive max norm).
    """

    def __init__(
        self,
        std_factor: float = 2.0,
        decay: float = 0.95,
        static_max_norm: Optional[float] = None,
        epsilon: float = 1e-8,
        quick_start: bool = False,
        name: Optional[str] = None,
    ) -> None:
        super().__init__(name=name or "adaptive_clipping")
        _check_args(std_factor, decay, static_max_norm, epsilon)
        self.std_factor = float(std_factor)
        self.decay = float(decay)
        self.static_max_norm = None if static_max_norm is None else float(static_max_norm)
        self.epsilon = float(epsilon)
        self.quick_start = bool(quick_start)
        self.mean: Optional[tf.Variable] = None

    @_no_autograph
    def build(self, var_list: Sequence[Any]) -> None:
        """Create the moving averages and the count."""
        if self.mean is None:
            with tf.name_scope(self.name):
                self.mean = state_variable(0.0, "mean")
                self.sq_mean = state_variable(0.0, "sq_mean")
                self.count = state_variable(0, "count", dtype=tf.int64)

    @_no_autograph
    def __call__(self, grads_and_vars: Sequence[Tuple[Any, Any]]) -> TransformResult:
        """Clip adaptively and update the averages (finite norms only)."""
        self.build([v for _, v in grads_and_vars])
        assert self.mean is not None
        gvs = list(grads_and_vars)
        grads = [g for g, _ in gvs]
        norm = _f32(_clip.global_norm(grads))
        mean, sq_mean, count = _read(self.mean), _read(self.sq_mean), _read(self.count)
        decay: Any = tf.constant(self.decay)
        if self.quick_start:
            n = tf.cast(count, tf.float32)
            decay = tf.minimum(decay, n / (n + 1.0))
        log_norm = tf.math.log(norm + self.epsilon)
        finite = tf.math.is_finite(norm)
        new_mean = tf.where(finite, mean - (mean - log_norm) * (1.0 - decay), mean)
        new_sq = tf.where(finite, sq_mean - (sq_mean - tf.square(log_norm)) * (1.0 - decay), sq_mean)
        std = tf.sqrt(tf.maximum(self.epsilon, new_sq - tf.square(new_mean)))
        max_norm = tf.exp(new_mean + self.std_factor * std)
        factor = _factor(norm, max_norm, new_mean, self.static_max_norm)
        out = list(zip(_apply_factor(grads, factor), [v for _, v in gvs]))
        stats = {
            "global_norm": norm,
            "clipped_global_norm": norm * factor,
            "clipped": _f32(factor < 1.0),
            "clip_threshold": max_norm,
        }
        with tf.control_dependencies([factor, max_norm]):
            updates = [
                self.mean.assign(new_mean),
                self.sq_mean.assign(new_sq),
                self.count.assign(count + tf.cast(finite, tf.int64)),
            ]
        out, stats = _after(updates, out, stats)
        return TransformResult(out, None, stats)
