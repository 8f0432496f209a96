"""Clip statistics: norms, clip coefficient, clipped/skipped flags and counts, as tensors and summaries.

:class:`ClipStatistics` wraps any transform (usually a :class:`~tfclip_compat.Chain`) and
measures it from the outside, so the numbers mean the same whatever is inside:

* ``global_norm`` — norm of the gradients *before* the wrapped transform (aggregated across
  replicas under tf.distribute, float32);
* ``clipped_global_norm`` — norm of what it returns;
* ``clip_coefficient`` — ``clipped_global_norm / global_norm`` (1 for a zero norm);
* ``clipped`` / ``skipped`` — 1.0 when the transform clipped (the norm fell by more than
  1e-6 relative, or it reports its own ``clipped`` stat) / asked
  to skip the step (plus non-finite gradients when ``count_nonfinite_as_skipped``, for use
  with the wrappers' ``nonfinite="skip"``);
* ``steps``, ``clip_count``, ``skip_count`` — running totals in int64 variables
  (checkpointed with the transform);
* ``norm/<variable name>`` — per-variable gradient norms when ``per_variable_norms``.

The wrapped transform's own stats are kept (e.g. ``clip_threshold``), the ones above take
precedence. With ``wrap_optimizer(..., summaries=True)`` every stat is written as a scalar
summary ``<wrapper name>/<key>`` (``tf.compat.v1.summary`` in graph mode, ``tf.summary`` in
eager / ``tf.function`` with a default writer). The last step's values and the totals are
also kept in variables, readable at any time with :meth:`ClipStatistics.result` (no summary
writer needed).
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Tuple

from tfclip_compat import _clip
from tfclip_compat._fast_norm import fast_global_norm
from tfclip_compat._tf import tf
from tfclip_compat._transforms._util import (
    _after,
    _f32,
    _no_autograph,
    _read,
    state_variable,
    variable_name,
)
from tfclip_compat._transforms.base import GradientTransform, TransformResult

__all__ = ["ClipStatistics"]

_LAST = ("global_norm", "clipped_global_norm", "clip_coefficient", "clipped", "skipped")
_COUNTS = ("steps", "clip_count", "skip_count")


class ClipStatistics(GradientTransform):
    """Wrap ``transform`` and report clip statistics (see the module docstring).

    Counting is done whether or not the step is applied (that is what ``skip_count``
    counts). The statistics never change the gradients or the skip decision.
    """

    def __init__(
        self,
        transform: GradientTransform,
        per_variable_norms: bool = False,
        count_nonfinite_as_skipped: bool = False,
        name: Optional[str] = None,
    ) -> None:
        super().__init__(name=name or "clip_statistics")
        if not isinstance(transform, GradientTransform):
            raise TypeError(f"transform must be a GradientTransform, got {type(transform).__name__}.")
        self.transform = transform
        self.per_variable_norms = bool(per_variable_norms)
        self.count_nonfinite_as_skipped = bool(count_nonfinite_as_skipped)
        self._last: Optional[Dict[str, tf.Variable]] = None

    @_no_autograph
    def build(self, var_list: Sequence[Any]) -> None:
        """Build the wrapped transform and the statistics variables."""
        self.transform.build(var_list)
        if self._last is None:
            with tf.name_scope(self.name):
                self._last = {k: state_variable(0.0, "last_" + k) for k in _LAST}
                self._counts = {k: state_variable(0, k, dtype=tf.int64) for k in _COUNTS}
                # tf.Module tracks dict attributes, so Checkpoint and ``variables`` see them.
                self.last_values = self._last
                self.counts = self._counts

    def result(self) -> Dict[str, Any]:
        """The last step's statistics and the running counts, read from the variables."""
        if self._last is None:
            raise ValueError("ClipStatistics.result(): no step has run yet (the transform is not built).")
        out = {k: _read(v) for k, v in self._last.items()}
        out.update({k: _read(v) for k, v in self._counts.items()})
        return out

    @_no_autograph
    def __call__(self, grads_and_vars: Sequence[Tuple[Any, Any]]) -> TransformResult:
        """Run the wrapped transform and measure it."""
        gvs = list(grads_and_vars)
        self.build([v for _, v in gvs])
        assert self._last is not None
        pre = _f32(fast_global_norm([g for g, _ in gvs]))
        result = self.transform(gvs)
        out = list(result.grads_and_vars)
        post = _f32(fast_global_norm([g for g, _ in out]))
        safe_pre = tf.where(pre > 0, pre, tf.ones_like(pre))
        coefficient = tf.where(pre > 0, post / safe_pre, tf.ones_like(pre))
        # A Chain keeps only its last transform's "clipped": OR it with the norm test.
        clipped = post < pre * (1.0 - 1e-6)
        if "clipped" in result.stats:
            clipped = tf.logical_or(clipped, tf.cast(result.stats["clipped"], tf.float32) > 0)
        skipped = tf.constant(False) if result.skip is None else tf.convert_to_tensor(result.skip)
        if self.count_nonfinite_as_skipped:
            skipped = tf.logical_or(skipped, tf.logical_not(tf.math.is_finite(pre)))
        stats: Dict[str, Any] = dict(result.stats)
        values = {
            "global_norm": pre,
            "clipped_global_norm": post,
            "clip_coefficient": coefficient,
            "clipped": _f32(clipped),
            "skipped": _f32(skipped),
        }
        stats.update(values)
        counts = {k: _read(v) for k, v in self._counts.items()}
        new_counts = {
            "steps": counts["steps"] + 1,
            "clip_count": counts["clip_count"] + tf.cast(clipped, tf.int64),
            "skip_count": counts["skip_count"] + tf.cast(skipped, tf.int64),
        }
        stats.update({k: _f32(v) for k, v in new_counts.items()})
        if self.per_variable_norms:
            for i, (g, v) in enumerate(gvs):
                if g is not None:
                    key = "norm/" + variable_name(v)
                    if key in stats:  # unnamed eager variables all share "Variable"
                        key = f"{key}_{i}"
                    stats[key] = _f32(_clip.global_norm([g]))
        deps = list(values.values()) + list(new_counts.values())
        with tf.control_dependencies(deps):
            updates = [self._last[k].assign(values[k]) for k in _LAST]
            updates += [self._counts[k].assign(new_counts[k]) for k in _COUNTS]
        out, stats = _after(updates, out, stats)
        skip = result.skip
        if skip is not None:
            with tf.control_dependencies(updates):
                skip = tf.identity(skip)
        return TransformResult(out, skip, stats)
