"""Transforms that skip the whole update: on non-finite gradients, or on a norm spike."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

from tfclip_compat._fast_norm import fast_global_norm
from tfclip_compat._tf import tf
from tfclip_compat._transforms._util import (
    _after,
    _check_positive,
    _f32,
    _grads,
    _no_autograph,
    _read,
    _RingBuffer,
    state_variable,
)
from tfclip_compat._transforms.base import GradientTransform, TransformResult

__all__ = ["SkipNonFinite", "SkipOnSpike"]


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
