"""Composable gradient transforms (``optax.chain`` style) for the tfclip_compat optimizer wrappers.

Every class here is a :class:`~tfclip_compat._transform.GradientTransform`: it maps
``grads_and_vars`` to ``TransformResult(grads_and_vars, skip, stats)``; compose them with
:class:`~tfclip_compat._transform.Chain` and hand the result to
:func:`~tfclip_compat._optimizer.wrap_optimizer`::

    transform = tfclip_compat.Chain(
        tfclip_compat.SkipNonFinite(),
        tfclip_compat.SkipOnSpike(std_factor=6.0, window=100),
        tfclip_compat.AutoClip(percentile=10.0),
    )
    opt = tfclip_compat.wrap_optimizer(tf.keras.optimizers.Adam(1e-3), transform)

State (norm histories, EMAs, counters) lives in non-trainable ``tf.Variable`` objects created
by ``build`` (the wrappers call it under ``init_scope``), with
``aggregation=ONLY_FIRST_REPLICA``: under tf.distribute the wrappers feed the transform the
cross-replica *aggregated* gradient, every replica computes the same update and the first
replica's value is written. State therefore checkpoints with ``tf.train.Checkpoint`` (through
the wrapper, under ``"gradient_transform"``) and with ``tf.compat.v1.train.Saver`` (the
variables are global variables in graph mode), and a run restored mid-way continues exactly.

Updates are pure graph code (``tf.where``, no ``tf.cond``, no host round-trip). In graph mode
the returned gradients carry control dependencies on the state updates, so running the train
op runs them. State is float32 (the norm of float64 gradients is cast to float32 for it).

Common stats (scalars, float32): ``global_norm`` (norm of the gradients the transform
received), ``clipped_global_norm`` (norm of what it returns) and ``clipped`` (1.0 when it
changed the gradients). Transform-specific ones are listed per class.

Non-finite norms (inf/NaN) are never recorded into a transform's statistics; the step itself
is left to :class:`SkipNonFinite` or the wrapper's ``nonfinite=`` policy.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from tfclip_compat import _clip
from tfclip_compat._fast_norm import fast_global_norm
from tfclip_compat._tf import tf
from tfclip_compat._transform import GradientTransform, TransformResult, check_clip_norm

GradsAndVars = List[Tuple[Any, Any]]
#: Transforms are plain graph code (no Python control flow on tensors): AutoGraph must not
#: rewrite them when a user's ``tf.function`` calls them.
_no_autograph = tf.autograph.experimental.do_not_convert
Patterns = Union[str, Sequence[str]]

__all__ = [
    "AdaptiveGradClip",
    "AutoClip",
    "ClipByNorm",
    "ClipByValue",
    "PerGroup",
    "Select",
    "SkipNonFinite",
    "SkipOnSpike",
    "ZClip",
    "state_variable",
    "variable_name",
]


# --------------------------------------------------------------------------- helpers
def variable_name(var: Any) -> str:
    """The name patterns are matched against: Keras ``path`` or ``tf.Variable.name`` without ``:0``."""
    name = getattr(var, "path", None) or getattr(var, "name", None) or ""
    return re.sub(r":\d+$", "", str(name))


def state_variable(initial_value: Any, name: str, dtype: Any = tf.float32) -> tf.Variable:
    """A non-trainable state variable, identical on every replica (``ONLY_FIRST_REPLICA``)."""
    return tf.Variable(
        np.asarray(initial_value, dtype=tf.as_dtype(dtype).as_numpy_dtype),
        trainable=False,
        name=name,
        dtype=dtype,
        aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
        synchronization=tf.VariableSynchronization.ON_WRITE,
    )


def _f32(x: Any) -> Any:
    return tf.cast(x, tf.float32)


def _grads(gvs: Sequence[Tuple[Any, Any]]) -> List[Any]:
    return [g for g, _ in gvs]


def _scale_grad(g: Any, scale: Any) -> Any:
    if g is None:
        return None
    if isinstance(g, tf.IndexedSlices):
        return tf.IndexedSlices(g.values * tf.cast(scale, g.values.dtype), g.indices, g.dense_shape)
    return g * tf.cast(scale, g.dtype)


def _identity(g: Any) -> Any:
    if g is None:
        return None
    if isinstance(g, tf.IndexedSlices):
        return tf.IndexedSlices(tf.identity(g.values), g.indices, g.dense_shape)
    return tf.identity(g)


def _after(updates: Sequence[Any], gvs: Sequence[Tuple[Any, Any]], stats: Dict[str, Any]) -> Tuple[GradsAndVars, Dict[str, Any]]:
    """Return gradients and stats that depend on ``updates`` (graph mode runs them)."""
    updates = [u for u in updates if u is not None]
    if not updates:
        return list(gvs), stats
    with tf.control_dependencies(updates):
        out = [(_identity(g), v) for g, v in gvs]
        stats = {k: tf.identity(s) for k, s in stats.items()}
    return out, stats


def _read(var: tf.Variable) -> Any:
    return tf.identity(var.read_value()) if hasattr(var, "read_value") else tf.identity(var)


def _check_positive(value: Any, argument: str, integer: bool = False) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{argument} must be a positive number, got {value!r}.")
    if integer and int(value) != value:
        raise ValueError(f"{argument} must be a positive integer, got {value!r}.")
    if not value > 0:
        raise ValueError(f"{argument} must be > 0, got {value!r}.")
    return int(value) if integer else float(value)


def _scale_all(gvs: Sequence[Tuple[Any, Any]], scale: Any) -> GradsAndVars:
    return [(_scale_grad(g, scale), v) for g, v in gvs]


def _min_scale(norm: Any, threshold: Any) -> Any:
    """``min(1, threshold / norm)``; 1 for a zero norm, NaN for a NaN norm."""
    norm = _f32(norm)
    threshold = _f32(threshold)
    safe = tf.where(norm > 0, norm, tf.ones_like(norm))
    return tf.where(norm > threshold, threshold / safe, tf.where(tf.math.is_nan(norm), norm, 1.0))


def _common_stats(pre: Any, post: Any, clipped: Any) -> Dict[str, Any]:
    return {
        "global_norm": _f32(pre),
        "clipped_global_norm": _f32(post),
        "clipped": _f32(clipped),
    }


class _RingBuffer(tf.Module):
    """A fixed-size history of scalars in a variable, plus the number of values ever added."""

    def __init__(self, size: int, name: str) -> None:
        super().__init__(name=name)
        self.size = size
        self.values = state_variable(np.zeros([size]), "history")
        self.count = state_variable(0, "count", dtype=tf.int64)

    def read(self) -> Tuple[Any, Any]:
        """(buffer values, number of valid entries)."""
        values = _read(self.values)
        count = _read(self.count)
        return values, tf.minimum(count, self.size)

    def appended(self, values: Any, count: Any, x: Any, record: Any) -> Tuple[Any, Any]:
        """The (buffer, count) after appending ``x`` when ``record``; pure, assigns nothing."""
        idx = tf.math.floormod(count, self.size)
        new_values = tf.tensor_scatter_nd_update(values, tf.reshape(idx, [1, 1]), tf.reshape(_f32(x), [1]))
        new_values = tf.where(record, new_values, values)
        return new_values, count + tf.cast(record, tf.int64)

    def valid(self, values: Any, n: Any) -> Any:
        """The first ``n`` (valid) entries of ``values``."""
        return values[: tf.cast(n, tf.int32)]


# --------------------------------------------------------------------------- stateless clips
class ClipByNorm(GradientTransform):
    """Clip each gradient to L2 norm ``max_norm`` on its own (``tf.clip_by_norm`` per tensor).

    ``g * max_norm / max(||g||, max_norm)`` — ``tf.contrib.training.clip_gradient_norms``'s
    rule, robust to float16 and duplicate ``IndexedSlices`` indices. Stateless.
    """

    def __init__(self, max_norm: Any, name: Optional[str] = None) -> None:
        super().__init__(name=name or "clip_by_norm")
        self.max_norm = check_clip_norm(max_norm, "max_norm")

    @_no_autograph
    def __call__(self, grads_and_vars: Sequence[Tuple[Any, Any]]) -> TransformResult:
        """Clip every gradient by its own norm."""
        gvs = list(grads_and_vars)
        pre = fast_global_norm(_grads(gvs))
        out = [(None if g is None else _clip.clip_by_norm(g, self.max_norm), v) for g, v in gvs]
        post = fast_global_norm(_grads(out))
        norms = [_f32(_clip.global_norm([g])) for g in _grads(gvs) if g is not None]
        clipped = tf.reduce_any(tf.stack(norms) > _f32(self.max_norm))
        return TransformResult(out, None, _common_stats(pre, post, clipped))


class ClipByValue(GradientTransform):
    """Clip every gradient element to ``[clip_value_min, clip_value_max]``.

    ``ClipByValue(0.5)`` means ``[-0.5, 0.5]``. Sparse gradients have repeated indices summed
    first (each dense element is clipped once). Stateless.
    """

    def __init__(
        self, clip_value_max: float, clip_value_min: Optional[float] = None, name: Optional[str] = None
    ) -> None:
        super().__init__(name=name or "clip_by_value")
        if clip_value_min is None:
            clip_value_max = _check_positive(clip_value_max, "clip_value_max")
            clip_value_min = -clip_value_max
        if not clip_value_min < clip_value_max:
            raise ValueError(
                f"clip_value_min ({clip_value_min!r}) must be < clip_value_max ({clip_value_max!r})."
            )
        self.clip_value_min = float(clip_value_min)
        self.clip_value_max = float(clip_value_max)

    @_no_autograph
    def __call__(self, grads_and_vars: Sequence[Tuple[Any, Any]]) -> TransformResult:
        """Clip every element."""
        gvs = list(grads_and_vars)
        out = []
        flags = []
        for g, v in gvs:
            if g is None:
                out.append((None, v))
                continue
            c = _clip.clip_by_value(g, self.clip_value_min, self.clip_value_max)
            vals = g.values if isinstance(g, tf.IndexedSlices) else g
            flags.append(tf.reduce_any((vals > self.clip_value_max) | (vals < self.clip_value_min)))
            out.append((c, v))
        pre = fast_global_norm(_grads(gvs))
        post = fast_global_norm(_grads(out))
        return TransformResult(out, None, _common_stats(pre, post, tf.reduce_any(tf.stack(flags))))


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


# --------------------------------------------------------------------------- skipping
class SkipNonFinite(GradientTransform):
    """Skip the whole update when any gradient contains inf or NaN.

    The same skip as the wrappers' ``nonfinite="skip"`` (variables, slots, optimizer
    counters and ``global_step`` untouched), as a transform so that it composes in a
    :class:`Chain` and is counted by :class:`ClipStatistics`. Stateless; stats:
    ``global_norm`` and ``nonfinite`` (1.0 when skipped).
    """

    def __init__(self, name: Optional[str] = None) -> None:
        super().__init__(name=name or "skip_nonfinite")

    @_no_autograph
    def __call__(self, grads_and_vars: Sequence[Tuple[Any, Any]]) -> TransformResult:
        """Flag non-finite gradients."""
        gvs = list(grads_and_vars)
        norm = fast_global_norm(_grads(gvs))
        skip = tf.logical_not(tf.math.is_finite(norm))
        return TransformResult(gvs, skip, {"global_norm": _f32(norm), "nonfinite": _f32(skip)})


class SkipOnSpike(GradientTransform):
    """Skip the update when the global norm spikes: ``norm > mean + std_factor * std`` over a
    rolling window of the last ``window`` accepted norms (population std).

    The practice of large-model training (skip the batch, keep optimizer state) rather than a
    paper's algorithm. No step is skipped until ``min_history`` norms are recorded.

    Skipped steps: a spike is *not* recorded into the window (it would inflate mean and std
    and let the next spike through); variables, slots and optimizer counters are untouched by
    the wrapper. ``max_consecutive_skips`` (optional) accepts and records a norm after that
    many consecutive spikes, so a lasting change of scale cannot block training forever.
    Non-finite norms: NaN never counts as a spike (chain :class:`SkipNonFinite`), +inf does;
    neither is recorded. Stats: ``global_norm``, ``spike`` (1.0 when skipped),
    ``spike_threshold``.
    """

    def __init__(
        self,
        std_factor: float = 6.0,
        window: int = 100,
        min_history: int = 10,
        max_consecutive_skips: Optional[int] = None,
        name: Optional[str] = None,
    ) -> None:
        super().__init__(name=name or "skip_on_spike")
        self.std_factor = _check_positive(std_factor, "std_factor")
        self.window = _check_positive(window, "window", integer=True)
        self.min_history = _check_positive(min_history, "min_history", integer=True)
        if self.min_history > self.window:
            raise ValueError(f"min_history ({min_history}) must be <= window ({window}).")
        self.max_consecutive_skips = (
            None if max_consecutive_skips is None
            else _check_positive(max_consecutive_skips, "max_consecutive_skips", integer=True)
        )
        self.history: Optional[_RingBuffer] = None

    @_no_autograph
    def build(self, var_list: Sequence[Any]) -> None:
        """Create the rolling window and the consecutive-skip counter."""
        if self.history is None:
            with tf.name_scope(self.name):
                self.history = _RingBuffer(self.window, "window")
                self.consecutive = state_variable(0, "consecutive_skips", dtype=tf.int64)

    @_no_autograph
    def __call__(self, grads_and_vars: Sequence[Tuple[Any, Any]]) -> TransformResult:
        """Decide whether this step is a spike, and record the norm when it is not."""
        self.build([v for _, v in grads_and_vars])
        assert self.history is not None
        gvs = list(grads_and_vars)
        norm = fast_global_norm(_grads(gvs))
        g = _f32(norm)
        values, n = self.history.read()
        count = _read(self.history.count)
        consecutive = _read(self.consecutive)
        valid = self.history.valid(values, n)
        mean = tf.reduce_mean(valid)
        std = tf.sqrt(tf.reduce_mean(tf.square(valid - mean)))
        threshold = mean + self.std_factor * std
        spike = tf.logical_and(n >= self.min_history, g > threshold)
        if self.max_consecutive_skips is not None:
            spike = tf.logical_and(spike, consecutive < self.max_consecutive_skips)
        record = tf.logical_and(tf.math.is_finite(g), tf.logical_not(spike))
        new_values, new_count = self.history.appended(values, count, g, record)
        new_consecutive = tf.where(spike, consecutive + 1, tf.zeros_like(consecutive))
        stats = {
            "global_norm": g,
            "spike": _f32(spike),
            "spike_threshold": tf.where(n >= self.min_history, threshold, tf.constant(float("inf"))),
        }
        with tf.control_dependencies([spike, threshold]):
            updates = [
                self.history.values.assign(new_values),
                self.history.count.assign(new_count),
                self.consecutive.assign(new_consecutive),
            ]
        out, stats = _after(updates, gvs, stats)
        with tf.control_dependencies(updates):
            spike = tf.identity(spike)
        return TransformResult(out, spike, stats)


# --------------------------------------------------------------------------- selection
def _compile(patterns: Optional[Patterns], argument: str) -> List[Any]:
    if patterns is None:
        return []
    if isinstance(patterns, str):
        patterns = [patterns]
    compiled = []
    for p in patterns:
        if not isinstance(p, str):
            raise TypeError(f"{argument} must be a regex string or a list of them, got {p!r}.")
        try:
            compiled.append(re.compile(p))
        except re.error as exc:
            raise ValueError(f"{argument}: invalid regular expression {p!r}: {exc}.") from None
    return compiled


def _matches(name: str, patterns: Sequence[Any]) -> bool:
    return any(p.search(name) for p in patterns)


def _check_transform(t: Any, argument: str) -> None:
    if t is not None and not isinstance(t, GradientTransform):
        raise TypeError(f"{argument} must be a GradientTransform or None, got {type(t).__name__}.")


class PerGroup(GradientTransform):
    """Route variables to transforms by name: per-group thresholds and exclusions.

    ``groups`` is a sequence of ``(patterns, transform)``; a variable goes to the FIRST group
    with a pattern (a regex, ``re.search`` on :func:`variable_name`, e.g. ``"dense_1/kernel"``)
    that matches; unmatched variables go to ``default``. A ``None`` transform leaves its
    gradients unchanged (an exclusion). Each transform sees only its own variables (e.g. its
    own global norm), skip flags are OR-ed, stats are prefixed ``"<transform name>/"``;
    ``global_norm`` / ``clipped_global_norm`` are those of all gradients::

        PerGroup([("embedding", ClipByGlobalNorm(10.0)), (["bias", "norm"], None)],
                 default=ClipByGlobalNorm(1.0))
    """

    def __init__(
        self,
        groups: Sequence[Tuple[Patterns, Optional[GradientTransform]]],
        default: Optional[GradientTransform] = None,
        name: Optional[str] = None,
    ) -> None:
        super().__init__(name=name or "per_group")
        self._patterns: List[List[Any]] = []
        transforms: List[Optional[GradientTransform]] = []
        for i, item in enumerate(groups):
            try:
                patterns, transform = item
            except (TypeError, ValueError):
                raise TypeError(f"groups[{i}] must be a (patterns, transform) pair, got {item!r}.") from None
            _check_transform(transform, f"groups[{i}] transform")
            self._patterns.append(_compile(patterns, f"groups[{i}] patterns"))
            transforms.append(transform)
        _check_transform(default, "default")
        self.group_transforms = transforms
        self.default = default

    def _route(self, variables: Sequence[Any]) -> List[int]:
        """Group index per variable (len(groups) = default)."""
        out = []
        for v in variables:
            name = variable_name(v)
            for i, pats in enumerate(self._patterns):
                if _matches(name, pats):
                    out.append(i)
                    break
            else:
                out.append(len(self._patterns))
        return out

    def _all(self) -> List[Optional[GradientTransform]]:
        return list(self.group_transforms) + [self.default]

    @_no_autograph
    def build(self, var_list: Sequence[Any]) -> None:
        """Build each transform with its own variables."""
        var_list = list(var_list)
        route = self._route(var_list)
        for i, t in enumerate(self._all()):
            if t is not None:
                t.build([v for v, r in zip(var_list, route) if r == i])

    @_no_autograph
    def __call__(self, grads_and_vars: Sequence[Tuple[Any, Any]]) -> TransformResult:
        """Run each group's transform on its own pairs."""
        gvs = list(grads_and_vars)
        route = self._route([v for _, v in gvs])
        out: List[Any] = list(gvs)
        skip = None
        stats: Dict[str, Any] = {}
        clipped = []
        for i, t in enumerate(self._all()):
            idx = [k for k, r in enumerate(route) if r == i and gvs[k][0] is not None]
            if t is None or not idx:
                continue
            result = t([gvs[k] for k in idx])
            for k, pair in zip(idx, result.grads_and_vars):
                out[k] = pair
            if result.skip is not None:
                skip = result.skip if skip is None else tf.logical_or(skip, result.skip)
            for key, value in result.stats.items():
                stats[f"{t.name}/{key}"] = value
            if "clipped" in result.stats:
                clipped.append(result.stats["clipped"] > 0)
        pre = fast_global_norm(_grads(gvs))
        post = fast_global_norm(_grads(out))
        any_clipped = tf.reduce_any(tf.stack(clipped)) if clipped else tf.constant(False)
        stats.update(_common_stats(pre, post, any_clipped))
        return TransformResult(out, skip, stats)


class Select(PerGroup):
    """Apply ``transform`` only to variables whose name matches ``include`` (all when None)
    and no ``exclude`` pattern; the others' gradients pass unchanged::

        Select(AdaptiveGradClip(0.01), exclude=["logits", "bias"])
    """

    def __init__(
        self,
        transform: GradientTransform,
        include: Optional[Patterns] = None,
        exclude: Optional[Patterns] = None,
        name: Optional[str] = None,
    ) -> None:
        _check_transform(transform, "transform")
        groups: List[Tuple[Patterns, Optional[GradientTransform]]] = []
        if exclude is not None:
            groups.append((exclude, None))
        groups.append((include if include is not None else [""], transform))
        super().__init__(groups, default=None, name=name or "select")
