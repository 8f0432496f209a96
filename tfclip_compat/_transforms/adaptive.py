"""Adaptive clipping transforms: the threshold follows the gradients' own history or scale.

``AdaptiveGradClip`` (AGC, unit-wise, relative to the weights), ``AutoClip`` (a percentile of
the norm history), ``ZClip`` (z-score of the norm against EMA statistics) and
``AdaptiveClipping`` (TF 1.15 ``adaptive_clipping_fn``'s rule as a checkpointable transform).
Each states what a skipped step does to its state.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

from tfclip_compat import _clip
from tfclip_compat._fast_norm import fast_global_norm
from tfclip_compat._tf import tf
from tfclip_compat._transforms._util import (
    GradsAndVars,
    _after,
    _check_positive,
    _common_stats,
    _f32,
    _grads,
    _min_scale,
    _no_autograph,
    _read,
    _RingBuffer,
    _scale_all,
    state_variable,
)
from tfclip_compat._transforms.base import GradientTransform, TransformResult

__all__ = ["AdaptiveClipping", "AdaptiveGradClip", "AutoClip", "ZClip"]


# --------------------------------------------------------------------------- AGC
def _unitwise_norm(x: Any) -> Any:
    """Per-unit L2 norm (Brock et al. 2021 / optax): whole tensor for scalars and vectors,
    else over every axis but the last (output units), kept for broadcasting."""
    squeezed_rank = sum(1 for d in x.shape.as_list() if d != 1)
    if x.shape.rank is None or x.shape.rank <= 1 or squeezed_rank <= 1:
        return tf.sqrt(tf.reduce_sum(tf.square(x)))
    return tf.sqrt(tf.reduce_sum(tf.square(x), axis=list(range(x.shape.rank - 1)), keepdims=True))


class AdaptiveGradClip(GradientTransform):
    """Unit-wise Adaptive Gradient Clipping, AGC (Brock et al. 2021, "High-Performance
    Large-Scale Image Recognition Without Normalization", eq. 3).

    For every unit i (output unit: all axes but the last of a kernel; the whole tensor for
    biases/scalars): ``G_i <- G_i * lambda * max(||W_i||, eps) / ||G_i||`` when
    ``||G_i|| / max(||W_i||, eps) > lambda`` (the ``||G_i||`` denominator floored at 1e-6 as in
    the reference implementation). ``clipping`` is lambda, ``eps`` is 1e-3 as in the paper.
    The paper does not clip the final classifier layer: exclude it with
    ``Select(AdaptiveGradClip(0.01), exclude=["logits"])``. Sparse gradients are densified
    (the unit norm needs every row). Stateless; stats: the common ones.
    """

    def __init__(self, clipping: float = 0.01, eps: float = 1e-3, name: Optional[str] = None) -> None:
        super().__init__(name=name or "adaptive_grad_clip")
        self.clipping = _check_positive(clipping, "clipping")
        self.eps = _check_positive(eps, "eps")

    @_no_autograph
    def __call__(self, grads_and_vars: Sequence[Tuple[Any, Any]]) -> TransformResult:
        """Clip each unit relative to its parameter norm."""
        gvs = list(grads_and_vars)
        out: GradsAndVars = []
        flags = []
        for g, v in gvs:
            if g is None:
                out.append((None, v))
                continue
            dense = tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g
            g32 = _f32(dense)
            p32 = _f32(tf.convert_to_tensor(v))
            max_norm = tf.maximum(_unitwise_norm(p32), self.eps) * self.clipping
            g_norm = _unitwise_norm(g32)
            trigger = g_norm > max_norm
            clipped = g32 * (max_norm / tf.maximum(g_norm, 1e-6))
            flags.append(tf.reduce_any(trigger))
            out.append((tf.cast(tf.where(trigger, clipped, g32), dense.dtype), v))
        pre = fast_global_norm(_grads(gvs))
        post = fast_global_norm(_grads(out))
        return TransformResult(out, None, _common_stats(pre, post, tf.reduce_any(tf.stack(flags))))


# --------------------------------------------------------------------------- AutoClip
def _percentile(sorted_values: Any, n: Any, q: float) -> Any:
    """numpy's default (linear) percentile of the first ``n`` entries of ``sorted_values``."""
    nf = _f32(n)
    pos = (q / 100.0) * (nf - 1.0)
    lo = tf.floor(pos)
    hi = tf.math.ceil(pos)
    lo_i = tf.cast(lo, tf.int32)
    hi_i = tf.cast(hi, tf.int32)
    v_lo = tf.gather(sorted_values, lo_i)
    v_hi = tf.gather(sorted_values, hi_i)
    return v_lo + (v_hi - v_lo) * (pos - lo)


class AutoClip(GradientTransform):
    """AutoClip (Seetharaman et al. 2020, "AutoClip: Adaptive Gradient Clipping for Source
    Separation Networks"): clip by the global norm at the ``percentile``-th percentile of the
    history of observed gradient norms, the current one included.

    Each step appends the (finite) global norm to the history, then clips with threshold
    ``np.percentile(history, percentile)`` (linear interpolation, numpy's default):
    ``g * min(1, threshold / norm)``. The paper keeps the whole history; here it is the last
    ``history_size`` norms (a ring buffer in a variable; the default 10,000 is 40 KB). The
    paper's recommended percentile is 10.

    Skipped steps: the history records every finite norm the transform sees, whether or not
    the step is then skipped (as the paper's code, which records before anything else);
    non-finite norms are not recorded.

    Stats: common ones plus ``clip_threshold``.
    """

    def __init__(self, percentile: float = 10.0, history_size: int = 10000, name: Optional[str] = None) -> None:
        super().__init__(name=name or "autoclip")
        if isinstance(percentile, bool) or not isinstance(percentile, (int, float)) or not 0 <= percentile <= 100:
            raise ValueError(f"percentile must be a number in [0, 100], got {percentile!r}.")
        self.percentile = float(percentile)
        self.history_size = _check_positive(history_size, "history_size", integer=True)
        self.history: Optional[_RingBuffer] = None

    @_no_autograph
    def build(self, var_list: Sequence[Any]) -> None:
        """Create the norm history."""
        if self.history is None:
            with tf.name_scope(self.name):
                self.history = _RingBuffer(self.history_size, "history")

    @_no_autograph
    def __call__(self, grads_and_vars: Sequence[Tuple[Any, Any]]) -> TransformResult:
        """Record the norm, clip at the history's percentile."""
        self.build([v for _, v in grads_and_vars])
        assert self.history is not None
        gvs = list(grads_and_vars)
        norm = fast_global_norm(_grads(gvs))
        norm32 = _f32(norm)
        values, _ = self.history.read()
        count = _read(self.history.count)
        record = tf.math.is_finite(norm32)
        new_values, new_count = self.history.appended(values, count, norm32, record)
        n = tf.minimum(new_count, self.history_size)
        valid = self.history.valid(new_values, n)
        threshold = tf.where(n > 0, _percentile(tf.sort(valid), tf.maximum(n, 1), self.percentile), norm32)
        scale = _min_scale(norm32, threshold)
        out = _scale_all(gvs, scale)
        stats = _common_stats(norm, norm32 * scale, scale < 1.0)
        stats["clip_threshold"] = threshold
        with tf.control_dependencies([threshold, scale]):
            updates = [
                self.history.values.assign(new_values),
                self.history.count.assign(new_count),
            ]
        out, stats = _after(updates, out, stats)
        return TransformResult(out, None, stats)


# --------------------------------------------------------------------------- ZClip
class ZClip(GradientTransform):
    """ZClip (Kumar et al. 2025, "ZClip: Adaptive Spike Mitigation for LLM Pre-Training"),
    z-score mode as in the authors' reference implementation.

    * Warm-up: the first ``warmup_steps`` finite norms are collected without adaptive clipping
      (only ``max_norm``, if given); then ``mean`` = their mean, ``var`` = their population
      variance.
    * Then ``z = (g - mean) / (sqrt(var) + eps)``; when ``z > z_thresh`` the norm is clipped to
      ``mean + z_thresh**2 * std / z`` (``clip_option="adaptive_scaling"``, the paper's
      reciprocal clipping, times ``clip_factor``) or to ``mean`` (``"mean"``); ``max_norm``
      caps the threshold. Scale ``threshold / (g + 1e-6)`` when ``g > threshold``.
    * EMA update with the *clipped* norm on a spike (the original norm otherwise):
      ``mean <- a*mean + (1-a)*x``; ``var <- a*var + (1-a)*(x - mean_new)**2``, a = ``alpha``.
      With ``skip_update_on_spike=True`` a spike leaves mean/var unchanged.

    Skipped steps: statistics are updated from every finite norm whether or not the step is
    skipped later (the method never skips; ZClip's statistics describe the gradient stream).
    Non-finite norms are not recorded. Stats: common ones plus ``zscore``, ``clip_threshold``,
    ``ema_mean``, ``ema_std`` (after the update).
    """

    def __init__(
        self,
        alpha: float = 0.97,
        z_thresh: float = 2.5,
        max_norm: Optional[float] = None,
        eps: float = 1e-6,
        warmup_steps: int = 25,
        clip_option: str = "adaptive_scaling",
        clip_factor: float = 1.0,
        skip_update_on_spike: bool = False,
        name: Optional[str] = None,
    ) -> None:
        super().__init__(name=name or "zclip")
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha!r}.")
        if clip_option not in ("adaptive_scaling", "mean"):
            raise ValueError(f"clip_option must be 'adaptive_scaling' or 'mean', got {clip_option!r}.")
        self.alpha = float(alpha)
        self.z_thresh = _check_positive(z_thresh, "z_thresh")
        self.max_norm = None if max_norm is None else _check_positive(max_norm, "max_norm")
        self.eps = _check_positive(eps, "eps")
        self.warmup_steps = _check_positive(warmup_steps, "warmup_steps", integer=True)
        self.clip_option = clip_option
        self.clip_factor = _check_positive(clip_factor, "clip_factor")
        self.skip_update_on_spike = bool(skip_update_on_spike)
        self.mean: Optional[tf.Variable] = None

    @_no_autograph
    def build(self, var_list: Sequence[Any]) -> None:
        """Create the warm-up buffer, EMA mean/variance and the initialised flag."""
        if self.mean is None:
            with tf.name_scope(self.name):
                self.warmup = _RingBuffer(self.warmup_steps, "warmup")
                self.mean = state_variable(0.0, "ema_mean")
                self.var = state_variable(0.0, "ema_var")
                self.initialized = state_variable(False, "initialized", dtype=tf.bool)

    @_no_autograph
    def __call__(self, grads_and_vars: Sequence[Tuple[Any, Any]]) -> TransformResult:
        """Clip on a z-score spike and update the EMA statistics."""
        self.build([v for _, v in grads_and_vars])
        assert self.mean is not None
        gvs = list(grads_and_vars)
        norm = fast_global_norm(_grads(gvs))
        g = _f32(norm)
        finite = tf.math.is_finite(g)
        mean, var, init = _read(self.mean), _read(self.var), _read(self.initialized)
        buf, _ = self.warmup.read()
        count = _read(self.warmup.count)

        # Warm-up branch (not initialised yet).
        collect = tf.logical_and(finite, tf.logical_not(init))
        new_buf, new_count = self.warmup.appended(buf, count, g, collect)
        ready = tf.logical_and(collect, new_count >= self.warmup_steps)
        wm = tf.reduce_mean(new_buf)
        wv = tf.reduce_mean(tf.square(new_buf - wm))

        # Initialised branch.
        std = tf.sqrt(var)
        z = (g - mean) / (std + self.eps)
        spike = tf.logical_and(init, z > self.z_thresh)
        if self.clip_option == "adaptive_scaling":
            adaptive = (mean + (self.z_thresh * std) / (z / self.z_thresh)) * self.clip_factor
        else:
            adaptive = mean
        clip_val = tf.where(spike, adaptive, g)
        threshold = clip_val if self.max_norm is None else tf.minimum(clip_val, self.max_norm)
        scale = tf.where(g > threshold, threshold / (g + 1e-6), tf.ones_like(g))
        out = _scale_all(gvs, scale)

        a = self.alpha
        ema_update = tf.logical_and(tf.logical_and(init, finite),
                                    tf.logical_not(tf.logical_and(spike, self.skip_update_on_spike)))
        upd_mean = a * mean + (1 - a) * clip_val
        upd_var = a * var + (1 - a) * tf.square(clip_val - upd_mean)
        new_mean = tf.where(ready, wm, tf.where(ema_update, upd_mean, mean))
        new_var = tf.where(ready, wv, tf.where(ema_update, upd_var, var))
        new_init = tf.logical_or(init, ready)

        stats = _common_stats(norm, g * scale, scale < 1.0)
        stats.update(
            zscore=tf.where(init, z, tf.zeros_like(z)),
            clip_threshold=threshold,
            ema_mean=new_mean,
            ema_std=tf.sqrt(new_var),
        )
        with tf.control_dependencies([scale, new_mean, new_var, new_buf, new_count]):
            updates = [
                self.warmup.values.assign(new_buf),
                self.warmup.count.assign(new_count),
                self.mean.assign(new_mean),
                self.var.assign(new_var),
                self.initialized.assign(new_init),
            ]
        out, stats = _after(updates, out, stats)
        return TransformResult(out, None, stats)


# --------------------------------------------------------------------------- adaptive_clipping_fn
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
