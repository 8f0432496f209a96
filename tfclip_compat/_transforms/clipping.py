"""Stateless clipping transforms: by the global norm, by each tensor's norm, by value."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

from tfclip_compat import _clip, _norms
from tfclip_compat._fast_norm import fast_global_norm
from tfclip_compat._tf import tf
from tfclip_compat._transforms._util import (
    _after,
    _check_positive,
    _common_stats,
    _f32,
    _grads,
    _no_autograph,
)
from tfclip_compat._transforms.base import (
    GradientTransform,
    TransformResult,
    check_clip_norm,
    runtime_checks,
)

__all__ = ["ClipByGlobalNorm", "ClipByNorm", "ClipByValue"]


class ClipByGlobalNorm(GradientTransform):
    """Clip all gradients by their global norm: ``g * clip_norm / max(global_norm, clip_norm)``.

    ``norm`` chooses how the global norm is computed (``tfclip_compat._norms``):

    * ``"tf1"`` (default): ``tf.clip_by_global_norm`` as TF 1.15 computed it, op for op (sparse
      gradients by the norm of their ``.values``, half precision summed in its own dtype) —
      what ``clip_gradients_by_norm`` must do to be a drop-in;
    * ``"exact"``: :func:`tfclip_compat.clip_by_global_norm` (the dense norm of sparse
      gradients, float32 accumulation of half precision, mixed dtypes); bit-identical to
      ``"tf1"`` for float32/float64 gradients without repeated sparse indices;
    * ``"fast"``: ``"exact"`` with the grouped summation of
      :func:`tfclip_compat.fast_clip_by_global_norm` (fewer ops for many small variables;
      a few ulp from ``"exact"``, see ``benchmarks/fast_norm.py``).

    A non-finite norm gives NaN gradients (as TF), which the wrappers' ``nonfinite=`` policies
    see. ``clip_norm`` must be a finite number > 0 (checked at construction, or at run time for
    a placeholder/variable). Stateless. Stats: ``global_norm`` (before clipping) and
    ``clipped_global_norm`` (after).
    """

    def __init__(self, clip_norm: Any, name: Optional[str] = None, *, norm: str = "tf1") -> None:
        super().__init__(name=name or "clip_by_global_norm")
        self.clip_norm = check_clip_norm(clip_norm)
        self.norm = _norms.check_norm_mode(norm)

    @_no_autograph
    def __call__(self, grads_and_vars: Sequence[Tuple[Any, Any]]) -> TransformResult:
        """Clip by the global norm; see the class docstring."""
        grads_and_vars = list(grads_and_vars)
        grads = [g for g, _ in grads_and_vars]
        clipped, norm = _norms.clip_by_global_norm(grads, self.clip_norm, self.norm)
        clip_norm = tf.cast(self.clip_norm, norm.dtype)
        stats = {"global_norm": norm, "clipped_global_norm": tf.minimum(norm, clip_norm)}
        out = list(zip(clipped, [v for _, v in grads_and_vars]))
        out, stats = _after(runtime_checks(self.clip_norm), out, stats)
        return TransformResult(out, None, stats)


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
        out, stats = _after(runtime_checks(self.max_norm, "max_norm"), out, _common_stats(pre, post, clipped))
        return TransformResult(out, None, stats)


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
