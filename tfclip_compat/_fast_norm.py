"""A global norm (and global-norm clip) whose graph does not grow by an op chain per variable.

``tf.clip_by_global_norm`` builds about three ops per variable (``L2Loss``, ``Mul``,
``Identity``) plus a ``Pack`` over all of them; with many small variables the per-op
executor overhead, not the arithmetic, is the cost. Here tensors are grouped:

* small tensors (``<= stack_limit`` elements) with the same dtype and the same static shape
  (at least ``MIN_GROUP`` = 4 of them) are
  ``tf.stack``-ed into ONE tensor: one ``Pack``, one ``Square``/``Sum`` for the norm, one
  ``Mul`` for the clip and one ``Unpack`` back to the individual tensors — a handful of ops per
  *shape group*, whatever the number of variables;
* the remaining tensors (large ones, unknown shapes, singletons, ``IndexedSlices``) get one
  fused ``L2Loss`` op each (``sum(t**2) / 2``); one ``tf.add_n`` sums all partials.

Numerics are those of the exact norm: squares are summed in float32 (float64 if any input is
float64, as :mod:`tfclip_compat._clip`), half-precision inputs are cast before squaring, and
the clipped tensors keep their dtype. Only the summation order differs from
``tf.linalg.global_norm`` (differences of a few ulp). ``IndexedSlices`` count as their dense
value (repeated indices summed first) and stay sparse; ``None`` entries are ignored/returned.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from tfclip_compat import _clip
from tfclip_compat._tf import tf

_HALF = (tf.float16, tf.bfloat16)
#: Tensors with more elements than this are reduced on their own: stacking copies them, which
#: costs more than it saves above about a thousand elements (measured on CPU: ties at 10 and
#: 200 [128x128] variables, 16% faster than tf.clip_by_global_norm at 1,000 [16x16] ones;
#: with 1 << 16 the 10- and 200-variable models were 12-20% slower).
DEFAULT_STACK_LIMIT = 1 << 10
#: Smallest shape group worth stacking: Pack + Square + Sum + Mul + Unpack (5 ops) must beat
#: the loose path's 2 ops per tensor (L2Loss + Mul).
MIN_GROUP = 4


def _acc_dtype(tensors: Sequence[Any]) -> Any:
    for t in tensors:
        if t.dtype.base_dtype == tf.float64:
            return tf.float64
    return tf.float32


def _sq_sum(x: Any, acc: Any) -> Any:
    if x.dtype.base_dtype != acc:
        x = tf.cast(x, acc)
    return tf.reduce_sum(tf.square(x))


class _Plan:
    """How a list of tensors is grouped: stacked shape groups and loose tensors."""

    def __init__(self, t_list: Sequence[Any], stack_limit: int) -> None:
        self.groups: Dict[Tuple[Any, Tuple[int, ...]], List[int]] = {}
        self.loose: List[int] = []
        for i, t in enumerate(t_list):
            if t is None:
                continue
            if isinstance(t, tf.IndexedSlices):
                self.loose.append(i)
                continue
            shape = t.shape
            if shape.is_fully_defined() and shape.num_elements() <= stack_limit:
                self.groups.setdefault((t.dtype.base_dtype, tuple(shape.as_list())), []).append(i)
            else:
                self.loose.append(i)
        for key in [k for k, idx in self.groups.items() if len(idx) < MIN_GROUP]:
            self.loose.extend(self.groups.pop(key))


def _prepare(t_list: Sequence[Any], function: str) -> List[Any]:
    out: List[Any] = []
    for i, t in enumerate(t_list):
        if t is None:
            out.append(t)
        elif isinstance(t, tf.IndexedSlices):
            _clip.check_float(t.values, function, "t_list[%d]" % i, "tf.linalg.global_norm")
            out.append(t)
        else:
            value = tf.convert_to_tensor(t, name="t_%d" % i)
            out.append(_clip.check_float(value, function, "t_list[%d]" % i, "tf.linalg.global_norm"))
    return out


def _norm_parts(
    ts: Sequence[Any], plan: _Plan, need_norm: bool = True
) -> Tuple[Any, Dict[Tuple[Any, Tuple[int, ...]], Any], Any]:
    present = [t.values if isinstance(t, tf.IndexedSlices) else t for t in ts if t is not None]
    acc = _acc_dtype(present)
    partials: List[Any] = []
    stacked: Dict[Tuple[Any, Tuple[int, ...]], Any] = {}
    for key, idx in plan.groups.items():
        s = tf.stack([ts[i] for i in idx])
        stacked[key] = s
        if need_norm:
            partials.append(_sq_sum(s, acc))
    if not need_norm:
        return None, stacked, acc
    halves: List[Any] = []
    for i in plan.loose:
        t = ts[i]
        if isinstance(t, tf.IndexedSlices):
            t = _clip.dedupe_indexed_slices(t).values
        if t.dtype.base_dtype != acc:
            t = tf.cast(t, acc)
        # One fused op per loose tensor: sum(t**2) / 2 (halving is exact in binary floats).
        halves.append(tf.nn.l2_loss(t))
    if halves:
        half = halves[0] if len(halves) == 1 else tf.add_n(halves)
        partials.append(half * tf.constant(2.0, dtype=acc))
    if not partials:
        return tf.constant(0.0, dtype=tf.float32), stacked, acc
    total = partials[0] if len(partials) == 1 else tf.add_n(partials)
    return total, stacked, acc


def fast_global_norm(
    t_list: Sequence[Optional[Any]],
    name: Optional[str] = None,
    stack_limit: int = DEFAULT_STACK_LIMIT,
) -> Any:
    """Global L2 norm of ``t_list`` with one reduction per (dtype, shape) group.

    Same value as :func:`tfclip_compat.global_norm` up to summation order (float32
    accumulation for half precision, dense norm of ``IndexedSlices``, ``None`` ignored).

    Args:
      t_list: a list or tuple of Tensors, IndexedSlices or None.
      name: optional name scope.
      stack_limit: tensors with more elements are reduced on their own.

    Returns:
      A scalar float32 (float64 if any input is float64) tensor.

    Raises:
      TypeError: If ``t_list`` is not a sequence, or holds a tensor that is not float16,
        bfloat16, float32 or float64 (complex, integer, bool...).
    """
    _clip._check_sequence(t_list)
    with tf.name_scope(name or "fast_global_norm"):
        ts = _prepare(list(t_list), "fast_global_norm")
        plan = _Plan(ts, stack_limit)
        total, _, _ = _norm_parts(ts, plan)
        return tf.sqrt(total, name="global_norm")


def fast_clip_by_global_norm(
    t_list: Sequence[Optional[Any]],
    clip_norm: Any,
    use_norm: Optional[Any] = None,
    name: Optional[str] = None,
    stack_limit: int = DEFAULT_STACK_LIMIT,
) -> Tuple[List[Optional[Any]], Any]:
    """``tfclip_compat.clip_by_global_norm`` with the grouped norm and grouped scaling.

    ``t_list[i] * clip_norm / max(global_norm, clip_norm)``; NaN outputs when the norm is not
    finite (as TF). Returns ``(list_clipped, global_norm)``; tensors keep their dtype,
    ``IndexedSlices`` stay sparse with their own indices, ``None`` stays ``None``.
    ``clip_norm=inf`` means no clipping (every tensor unchanged); a NaN ``clip_norm`` and
    complex/integer tensors raise as in :func:`tfclip_compat.clip_by_global_norm`.
    """
    _clip._check_sequence(t_list)
    static = _clip.static_clip_norm(clip_norm, "fast_clip_by_global_norm")
    with tf.name_scope(name or "fast_clip_by_global_norm"):
        ts = _prepare(list(t_list), "fast_clip_by_global_norm")
        plan = _Plan(ts, stack_limit)
        total, stacked, acc = _norm_parts(ts, plan, need_norm=use_norm is None)
        if use_norm is None:
            norm = tf.sqrt(total, name="global_norm")
        else:
            norm = tf.convert_to_tensor(use_norm)
            if norm.dtype.base_dtype in _HALF:
                norm = tf.cast(norm, tf.float32)
        if static == float("inf"):
            out_unclipped: List[Optional[Any]] = []
            for t in ts:
                if isinstance(t, tf.IndexedSlices):
                    out_unclipped.append(tf.IndexedSlices(tf.identity(t.values), t.indices, t.dense_shape))
                else:
                    out_unclipped.append(None if t is None else tf.identity(t))
            return out_unclipped, norm
        clip_norm = tf.cast(clip_norm, norm.dtype)
        if static is None:
            clip_norm = _clip.guard_clip_norm(clip_norm, "fast_clip_by_global_norm")
        one = tf.constant(1.0, dtype=norm.dtype)
        scale = clip_norm * tf.minimum(one / norm, one / clip_norm) + (norm - norm)
        if static is None:
            scale = tf.where(tf.equal(clip_norm, float("inf")), tf.ones_like(scale), scale)
        out: List[Optional[Any]] = [None] * len(ts)
        scales: Dict[Any, Any] = {}

        def scale_as(dtype: Any) -> Any:
            if dtype not in scales:
                scales[dtype] = tf.cast(scale, dtype) if dtype != norm.dtype else scale
            return scales[dtype]

        for key, idx in plan.groups.items():
            parts = tf.unstack(stacked[key] * scale_as(key[0]), num=len(idx))
            for i, p in zip(idx, parts):
                out[i] = p
        for i in plan.loose:
            t = ts[i]
            if isinstance(t, tf.IndexedSlices):
                out[i] = tf.IndexedSlices(
                    t.values * scale_as(t.values.dtype.base_dtype), t.indices, t.dense_shape
                )
            else:
                out[i] = t * scale_as(t.dtype.base_dtype)
        return out, norm


__all__ = ["DEFAULT_STACK_LIMIT", "MIN_GROUP", "fast_clip_by_global_norm", "fast_global_norm"]
