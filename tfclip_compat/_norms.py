"""Which global norm a clip uses: TF 1.15's ops (the default of every drop-in), the exact one, or the fast one.

The ``norm=`` argument of the drop-ins (``clip_gradients_by_norm``, ``clip_gradient_norms``,
``optimize_loss``, ``adaptive_clipping_fn``...) and of :class:`~tfclip_compat.ClipByGlobalNorm`:

``"tf1"`` (default)
    TF 1.15's own ops in TF 1.15's order (:func:`tf1_global_norm`,
    :func:`tf1_clip_by_global_norm`, :func:`tf1_clip_by_norm`, rebuilt from TF 1.15's
    ``clip_ops.py``): one ``L2Loss`` per tensor, ``Pack``, ``Sum``, ``Sqrt(2 * half)``; the
    norm of an ``IndexedSlices`` is the norm of its ``.values`` (larger or smaller than the
    dense gradient's when indices repeat); half-precision gradients are squared and summed in
    their own dtype (they overflow above a norm of ~256 in float16, as in TF 1.15). A migrated
    program computes bit for bit what it computed on TF 1.15.
``"exact"``
    The robust norm of :func:`tfclip_compat.global_norm`: ``IndexedSlices`` count as the
    dense gradient they stand for (repeated indices summed first), float16/bfloat16 are
    accumulated in float32, mixed dtypes are allowed. Same ops and order as ``"tf1"``
    otherwise, so it is bit-identical to ``"tf1"`` for float32/float64 gradients without
    repeated sparse indices.
``"fast"``
    ``"exact"``'s semantics with the grouped summation of :mod:`tfclip_compat._fast_norm`
    (fewer ops for many small variables); differs from ``"exact"`` by the summation order
    (a few ulp of the norm).
"""

from __future__ import annotations

import collections.abc
from typing import Any, List, Optional, Sequence, Tuple

from tfclip_compat import _clip, _fast_norm
from tfclip_compat._tf import tf

NORM_MODES: Tuple[str, ...] = ("tf1", "exact", "fast")

__all__ = [
    "NORM_MODES",
    "check_norm_mode",
    "clip_by_global_norm",
    "clip_by_norm",
    "global_norm",
    "tf1_clip_by_global_norm",
    "tf1_clip_by_norm",
    "tf1_global_norm",
]


def check_norm_mode(norm: object, allowed: Sequence[str] = NORM_MODES) -> str:
    """Return ``norm`` if it is one of ``allowed``, else raise a ValueError naming ``norm=``."""
    if not isinstance(norm, str) or norm not in allowed:
        raise ValueError(
            f"norm={norm!r} is not a known norm; use one of {', '.join(repr(a) for a in allowed)} "
            "('tf1': TF 1.15's own ops, bit for bit; 'exact': the dense norm of sparse "
            "gradients, float32 accumulation of half precision"
            + ("; 'fast': 'exact' with grouped summation" if "fast" in allowed else "")
            + ")."
        )
    return norm


def _values(t: Any, i: int) -> Any:
    if t is None:
        return None
    return tf.convert_to_tensor(t.values if isinstance(t, tf.IndexedSlices) else t, name="t_%d" % i)


def _colocate(v: Any) -> Any:
    """TF 1.15's ``ops.colocate_with(v)``: in a graph, place the op with ``v``; eagerly, on its device."""
    if tf.executing_eagerly():
        return tf.device(v.device)
    return tf.compat.v1.get_default_graph().colocate_with(v)


def _check_sequence(t_list: object) -> None:
    if not isinstance(t_list, collections.abc.Sequence) or isinstance(t_list, (str, bytes)):
        raise TypeError(
            "`t_list` should be a sequence (list or tuple) of tensors, IndexedSlices or None. "
            f"Received {type(t_list).__name__}."
        )


def _check_one_dtype(values: Sequence[Any]) -> None:
    dtypes = sorted({v.dtype.base_dtype.name for v in values if v is not None})
    if len(dtypes) > 1:
        raise TypeError(
            f"TF 1.15's global norm cannot mix gradient dtypes ({', '.join(dtypes)}): TF 1.15 "
            "failed here too. Pass norm='exact' (float32/float64 accumulation of every dtype)."
        )


def tf1_global_norm(t_list: Sequence[Optional[Any]], name: Optional[str] = None) -> Any:
    """TF 1.15's ``tf.linalg.global_norm``: ``sqrt(2 * sum(l2_loss(t.values or t)))``.

    ``None`` entries are ignored; ``IndexedSlices`` contribute the norm of their ``.values``.
    Raises TypeError for a non-sequence or mixed dtypes (TF 1.15 failed on both).
    """
    _check_sequence(t_list)
    t_list = list(t_list)
    with tf.compat.v1.name_scope(name, "global_norm", [t for t in t_list if t is not None]):
        values = [_values(t, i) for i, t in enumerate(t_list)]
        _check_one_dtype(values)
        half_squared_norms = []
        for v in values:
            if v is not None:
                with _colocate(v):
                    half_squared_norms.append(tf.nn.l2_loss(v))
        half_squared_norm = tf.reduce_sum(tf.stack(half_squared_norms))
        return tf.sqrt(
            half_squared_norm * tf.constant(2.0, dtype=half_squared_norm.dtype), name="global_norm"
        )


def tf1_clip_by_global_norm(
    t_list: Sequence[Optional[Any]],
    clip_norm: Any,
    use_norm: Optional[Any] = None,
    name: Optional[str] = None,
) -> Tuple[List[Optional[Any]], Any]:
    """TF 1.15's ``tf.clip_by_global_norm``, op for op.

    ``scale = clip_norm * min(1 / norm, 1 / clip_norm)``, NaN when the norm is not finite;
    each tensor (``IndexedSlices``: its ``.values``, indices kept) is multiplied by ``scale``.
    Returns ``(list_clipped, norm)``.
    """
    _check_sequence(t_list)
    t_list = list(t_list)
    if use_norm is None:
        use_norm = tf1_global_norm(t_list, name)
    present = [t for t in t_list if t is not None]
    with tf.compat.v1.name_scope(name, "clip_by_global_norm", present + [clip_norm]) as scope:
        scale_for_finite = clip_norm * tf.minimum(
            1.0 / use_norm, tf.constant(1.0, dtype=use_norm.dtype) / clip_norm
        )
        scale = tf.where(
            tf.math.is_finite(use_norm),
            scale_for_finite,
            tf.constant(float("nan"), dtype=use_norm.dtype),
        )
        values = [_values(t, i) for i, t in enumerate(t_list)]
        values_clipped: List[Optional[Any]] = []
        for i, v in enumerate(values):
            if v is None:
                values_clipped.append(None)
            else:
                with _colocate(v):
                    values_clipped.append(tf.identity(v * scale, name="%s_%d" % (scope, i)))
        list_clipped = [
            tf.IndexedSlices(c, t.indices, t.dense_shape) if isinstance(t, tf.IndexedSlices) else c
            for c, t in zip(values_clipped, t_list)
        ]
    return list_clipped, use_norm


def tf1_clip_by_norm(t: Any, clip_norm: Any, axes: Optional[Any] = None, name: Optional[str] = None) -> Any:
    """TF 1.15's ``tf.clip_by_norm``: ``t * clip_norm / max(l2norm(t), clip_norm)``.

    An ``IndexedSlices`` is clipped by the norm of its ``.values`` and stays sparse. Unlike TF 2
    a negative ``clip_norm`` is not raised to 0 (TF 1.15 did not either; the drop-ins reject it
    before it gets here).
    """
    with tf.compat.v1.name_scope(name, "clip_by_norm", [t, clip_norm]) as scope:
        values = tf.convert_to_tensor(t.values if isinstance(t, tf.IndexedSlices) else t, name="t")
        l2sum = tf.reduce_sum(values * values, axes, keepdims=True)
        pred = l2sum > 0
        l2sum_safe = tf.where(pred, l2sum, tf.ones_like(l2sum))
        l2norm = tf.where(pred, tf.sqrt(l2sum_safe), l2sum)
        intermediate = values * clip_norm
        values.shape.assert_is_compatible_with(intermediate.shape)
        values_clip = tf.identity(intermediate / tf.maximum(l2norm, clip_norm), name=scope)
        if isinstance(t, tf.IndexedSlices):
            return tf.IndexedSlices(values_clip, t.indices, t.dense_shape)
        return values_clip


def global_norm(t_list: Sequence[Optional[Any]], norm: str = "tf1") -> Any:
    """The global norm of ``t_list`` computed the ``norm`` way (see the module docstring)."""
    if norm == "tf1":
        return tf1_global_norm(t_list)
    if norm == "fast":
        return _fast_norm.fast_global_norm(t_list)
    return _clip.global_norm(t_list)


def clip_by_global_norm(
    t_list: Sequence[Optional[Any]], clip_norm: Any, norm: str = "tf1"
) -> Tuple[List[Optional[Any]], Any]:
    """Clip ``t_list`` by its global norm computed the ``norm`` way; returns ``(clipped, norm)``."""
    if norm == "tf1":
        return tf1_clip_by_global_norm(t_list, clip_norm)
    if norm == "fast":
        return _fast_norm.fast_clip_by_global_norm(t_list, clip_norm)
    return _clip.clip_by_global_norm(t_list, clip_norm)


def clip_by_norm(t: Any, clip_norm: Any, norm: str = "tf1") -> Any:
    """Clip one tensor by its own norm, the ``"tf1"`` or the ``"exact"`` way."""
    if norm == "tf1":
        return tf1_clip_by_norm(t, clip_norm)
    return _clip.clip_by_norm(t, clip_norm)
