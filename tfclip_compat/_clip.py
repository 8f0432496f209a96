"""Robust drop-in replacements for TensorFlow's clip functions.

Same names, signatures and return values as ``tf.clip_by_value``, ``tf.clip_by_norm``,
``tf.clip_by_global_norm``, ``tf.compat.v1.clip_by_average_norm`` and ``tf.linalg.global_norm``,
and the same numerics (the same ops, in the same order) for finite float32/float64 tensors.
Where TensorFlow is wrong, these are not:

* float16 / bfloat16 inputs: squared norms are accumulated in float32 (TF accumulates in the
  input dtype and overflows: 1,000 float16 values of 300.0 give norm ``inf`` and NaN gradients);
  clipped tensors keep their own dtype; one list may mix dtypes (TF raises on mixed dtypes).
  The returned norm has the accumulation dtype: float64 if any input is float64, else float32.
* ``tf.IndexedSlices`` stay sparse, and norms are norms of the *dense* gradient even when
  indices repeat (TF squares each slice separately: 4.24 where the true norm is 6.0). Duplicate
  rows are summed with ``tf.math.unsorted_segment_sum`` over the unique indices, so the whole
  variable is never densified.
* ``None`` entries are ignored and returned as ``None``; a list of only ``None`` has norm 0.
* Only float16/bfloat16/float32/float64 tensors have a norm here: a complex, integer or bool
  tensor raises ``TypeError`` naming it (TF raises too; before, ``[3+4j]`` had norm 3.0 and an
  int32 gradient was silently clipped to zeros). ``clip_by_value`` also takes integers, as TF.
* ``clip_norm=inf`` means "no clipping": the tensors come back unchanged (TF turns every value
  into NaN). A NaN ``clip_norm`` raises ``ValueError`` when its value is known at the call (a
  Python or NumPy number, a constant or eager tensor); when only the running graph knows it (a
  placeholder, a variable, a computed tensor in a graph or ``tf.function``), ``inf`` still means
  no clipping and NaN fails the step with ``tf.errors.InvalidArgumentError`` (an assertion that
  the results depend on; it adds no arithmetic).
"""

from __future__ import annotations

import collections.abc
import math
import numbers
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from tfclip_compat._tf import tf

TensorLike = Any
_HALF = (tf.float16, tf.bfloat16)
_FLOATS = (tf.float16, tf.bfloat16, tf.float32, tf.float64)
_INF = float("inf")


def check_float(value: Any, function: str, where: str, tf_name: str) -> Any:
    """Return ``value`` (a Tensor) if its dtype has a norm, else raise a TypeError naming it.

    ``function`` is the public function called, ``where`` the argument (``"t_list[2]"``),
    ``tf_name`` TensorFlow's function that raises on the same dtype.
    """
    dtype = value.dtype.base_dtype
    if dtype not in _FLOATS:
        raise TypeError(
            f"tfclip_compat.{function}: {where} has dtype {dtype.name}; a gradient to clip must be "
            "float16, bfloat16, float32 or float64 (a complex value's norm is not the norm of its "
            "real part, and an integer tensor cannot be scaled by a fraction). "
            f"TensorFlow's {tf_name} raises on this dtype too."
        )
    return value


def static_clip_norm(clip_norm: Any, function: str) -> Optional[float]:
    """The value of ``clip_norm`` when it is known now, else None; NaN raises ValueError.

    Known now: a Python or NumPy real number, a 0-D NumPy array, a constant or eager tensor.
    Not known: a variable, a placeholder, a computed tensor of a graph or ``tf.function``.
    """
    value: Any = None
    if isinstance(clip_norm, bool):
        value = None
    elif isinstance(clip_norm, (numbers.Real, np.ndarray, np.generic)):
        value = clip_norm
    elif tf.is_tensor(clip_norm) and not isinstance(clip_norm, tf.Variable):
        try:
            value = tf.get_static_value(clip_norm)
        except (TypeError, ValueError):  # pragma: no cover - exotic tensor types
            value = None
    if value is None:
        return None
    arr = np.asarray(value)
    if arr.ndim != 0 or arr.dtype.kind not in "iuf":
        return None
    number = float(arr)
    if math.isnan(number):
        raise ValueError(
            f"tfclip_compat.{function}: clip_norm is NaN; pass a number > 0, or inf for no "
            "clipping (TensorFlow turns every value into NaN with a NaN clip_norm)."
        )
    return number


def guard_clip_norm(clip_norm: Any, function: str) -> Any:
    """``clip_norm`` (a float Tensor known only at run time) behind an assertion that it is not NaN.

    The assertion fails the step with InvalidArgumentError (eagerly: at once); the returned
    tensor has the same value and depends on it.
    """
    ok = tf.logical_not(tf.reduce_any(tf.math.is_nan(clip_norm)))
    check = tf.debugging.Assert(
        ok, [f"tfclip_compat.{function}: clip_norm is NaN; pass a number > 0, or inf for no clipping"]
    )
    with tf.control_dependencies([check]):
        return tf.identity(clip_norm)


def _is_inf(clip_norm: Any) -> Any:
    return tf.equal(clip_norm, tf.constant(_INF, dtype=clip_norm.dtype))


def _check_sequence(t_list: object) -> None:
    if not isinstance(t_list, collections.abc.Sequence) or isinstance(t_list, (str, bytes)):
        raise TypeError(
            "`t_list` should be a sequence (list or tuple) of tensors, IndexedSlices or None. "
            f"Received {type(t_list).__name__}."
        )


def dedupe_indexed_slices(slices: tf.IndexedSlices) -> tf.IndexedSlices:
    """Sum the rows of ``slices`` that share an index; unique indices keep first-seen order.

    The result represents the same dense tensor with every index present once, so norms of its
    ``values`` are norms of the dense gradient. Without duplicates, values are unchanged.
    """
    unique, positions = tf.unique(slices.indices)
    values = tf.math.unsorted_segment_sum(slices.values, positions, tf.shape(unique)[0])
    return tf.IndexedSlices(values, unique, slices.dense_shape)


def _accumulation_dtype(values: Sequence[Any]) -> tf.DType:
    dtypes = {v.dtype.base_dtype for v in values}
    if tf.float64 in dtypes:
        return tf.float64
    return tf.float32


def _as_values(t: TensorLike, i: int, function: str = "global_norm") -> Any:
    """Values whose squared sum is the squared L2 norm of the dense tensor ``t``."""
    if isinstance(t, tf.IndexedSlices):
        check_float(t.values, function, "t_list[%d]" % i, "tf.linalg.global_norm")
        return dedupe_indexed_slices(t).values
    value = tf.convert_to_tensor(t, name="t_%d" % i)
    return check_float(value, function, "t_list[%d]" % i, "tf.linalg.global_norm")


def global_norm(
    t_list: Sequence[Optional[TensorLike]], name: Optional[str] = None, _function: str = "global_norm"
) -> tf.Tensor:
    """Compute the global L2 norm of several tensors, like ``tf.linalg.global_norm``.

    ``global_norm = sqrt(sum([l2norm(t)**2 for t in t_list]))``, accumulated in float32 for
    half-precision inputs (float64 if any input is float64). IndexedSlices count as their dense
    value (duplicate indices summed first). ``None`` entries are ignored.

    Args:
      t_list: A tuple or list of mixed Tensors, IndexedSlices, or None.
      name: A name for the operation (optional).

    Returns:
      A 0-D (scalar) float Tensor.

    Raises:
      TypeError: If ``t_list`` is not a sequence, or holds a tensor that is not float16,
        bfloat16, float32 or float64 (complex, integer, bool...).
    """
    _check_sequence(t_list)
    t_list = list(t_list)
    with tf.name_scope(name or "global_norm"):
        values = [_as_values(t, i, _function) for i, t in enumerate(t_list) if t is not None]
        if not values:
            return tf.constant(0.0, dtype=tf.float32, name="global_norm")
        acc = _accumulation_dtype(values)
        half_squared_norms = []
        for v in values:
            half_squared_norms.append(tf.nn.l2_loss(tf.cast(v, acc)))
        half_squared_norm = tf.reduce_sum(tf.stack(half_squared_norms))
        return tf.sqrt(half_squared_norm * tf.constant(2.0, dtype=acc), name="global_norm")


def clip_by_global_norm(
    t_list: Sequence[Optional[TensorLike]],
    clip_norm: TensorLike,
    use_norm: Optional[TensorLike] = None,
    name: Optional[str] = None,
) -> Tuple[List[Optional[TensorLike]], tf.Tensor]:
    """Clip several tensors by the ratio of ``clip_norm`` to their global norm.

    Like ``tf.clip_by_global_norm``: ``t_list[i] * clip_norm / max(global_norm, clip_norm)``;
    when the norm is inf or NaN every output is NaN (TF's behaviour, kept on purpose so that
    non-finite policies see it). Robust to float16/bfloat16 (float32 norm, outputs keep their
    dtype), mixed dtypes, duplicate IndexedSlices indices (outputs stay sparse, with the input's
    indices) and ``None`` entries (returned as ``None``).

    ``clip_norm=inf`` means no clipping: every tensor comes back unchanged, whatever the norm.

    Args:
      t_list: A tuple or list of mixed Tensors, IndexedSlices, or None.
      clip_norm: A 0-D (scalar) Tensor > 0. The clipping ratio; ``inf`` for no clipping.
      use_norm: A 0-D (scalar) float Tensor (optional): the global norm to use instead of
        computing it.
      name: A name for the operation (optional).

    Returns:
      ``(list_clipped, global_norm)``: the clipped tensors (same types as ``t_list``) and the
      0-D global norm.

    Raises:
      TypeError: If ``t_list`` is not a sequence, or holds a tensor that is not float16,
        bfloat16, float32 or float64.
      ValueError: If ``clip_norm`` is NaN (a tensor known only at run time fails the step
        with InvalidArgumentError instead).
    """
    _check_sequence(t_list)
    t_list = list(t_list)
    static = static_clip_norm(clip_norm, "clip_by_global_norm")
    if use_norm is None:
        use_norm = global_norm(t_list, name, _function="clip_by_global_norm")
    with tf.name_scope(name or "clip_by_global_norm"):
        use_norm = tf.convert_to_tensor(use_norm)
        if use_norm.dtype.base_dtype in _HALF:
            use_norm = tf.cast(use_norm, tf.float32)
        if static == _INF:
            scale = None
        else:
            clip_norm = tf.cast(clip_norm, use_norm.dtype)
            if static is None:
                clip_norm = guard_clip_norm(clip_norm, "clip_by_global_norm")
            scale_for_finite = clip_norm * tf.minimum(
                1.0 / use_norm, tf.constant(1.0, dtype=use_norm.dtype) / clip_norm
            )
            # A no-op for a finite norm; makes the scale NaN for an inf/-inf/NaN norm (as TF).
            scale = scale_for_finite + (use_norm - use_norm)
            if static is None:
                scale = tf.where(_is_inf(clip_norm), tf.ones_like(scale), scale)
        list_clipped: List[Optional[TensorLike]] = []
        for i, t in enumerate(t_list):
            if t is None:
                list_clipped.append(None)
                continue
            v = t.values if isinstance(t, tf.IndexedSlices) else tf.convert_to_tensor(t, name="t_%d" % i)
            check_float(v, "clip_by_global_norm", "t_list[%d]" % i, "tf.clip_by_global_norm")
            if scale is None:
                clipped = tf.identity(v, name="clipped_%d" % i)
            else:
                clipped = tf.identity(v * tf.cast(scale, v.dtype), name="clipped_%d" % i)
            if isinstance(t, tf.IndexedSlices):
                clipped = tf.IndexedSlices(clipped, t.indices, t.dense_shape)
            list_clipped.append(clipped)
    return list_clipped, use_norm


def clip_by_norm(
    t: TensorLike, clip_norm: TensorLike, axes: Optional[Any] = None, name: Optional[str] = None
) -> TensorLike:
    """Clip a tensor to a maximum L2 norm, like ``tf.clip_by_norm``.

    ``t * clip_norm / max(l2norm(t, axes), clip_norm)``. Half-precision inputs are reduced in
    float32 and returned in their own dtype. An IndexedSlices input is returned as IndexedSlices
    whose repeated indices have been summed (the same dense value), so its norm is the norm of
    the dense tensor.

    ``clip_norm=inf`` means no clipping (the values come back unchanged).

    Args:
      t: A Tensor or IndexedSlices.
      clip_norm: A 0-D (scalar) Tensor > 0. A maximum clipping value; ``inf`` for no clipping.
      axes: A 1-D (vector) int32 Tensor of dimensions to compute the L2 norm over (all if None).
      name: A name for the operation (optional).

    Returns:
      A clipped Tensor or IndexedSlices.

    Raises:
      TypeError: If ``t`` is not float16, bfloat16, float32 or float64.
      ValueError: If ``clip_norm`` is NaN (a tensor known only at run time fails the step
        with InvalidArgumentError instead).
    """
    static = static_clip_norm(clip_norm, "clip_by_norm")
    with tf.name_scope(name or "clip_by_norm"):
        sparse = isinstance(t, tf.IndexedSlices)
        if sparse:
            check_float(t.values, "clip_by_norm", "t", "tf.clip_by_norm")
            t = dedupe_indexed_slices(t)
        values = tf.convert_to_tensor(t.values if sparse else t, name="t")
        check_float(values, "clip_by_norm", "t", "tf.clip_by_norm")
        out_dtype = values.dtype
        if static == _INF:
            values_clip = tf.identity(values, name="clipped")
            if sparse:
                return tf.IndexedSlices(values_clip, t.indices, t.dense_shape)
            return values_clip
        if out_dtype.base_dtype in _HALF:
            values = tf.cast(values, tf.float32)
        if isinstance(clip_norm, (int, float)):
            clip_norm = max(clip_norm, 0)
        else:
            clip_norm = tf.cast(tf.maximum(clip_norm, 0), dtype=values.dtype)
            if static is None:
                clip_norm = guard_clip_norm(clip_norm, "clip_by_norm")
        l2sum = tf.reduce_sum(values * values, axes, keepdims=True)
        pred = l2sum > 0
        l2sum_safe = tf.where(pred, l2sum, tf.ones_like(l2sum))
        l2norm = tf.where(pred, tf.sqrt(l2sum_safe), l2sum)
        intermediate = values * clip_norm
        values.shape.assert_is_compatible_with(intermediate.shape)
        values_clip = intermediate / tf.maximum(l2norm, clip_norm)
        if static is None:
            values_clip = tf.where(_is_inf(clip_norm), values, values_clip)
        values_clip = tf.identity(tf.cast(values_clip, out_dtype), name="clipped")
        if sparse:
            return tf.IndexedSlices(values_clip, t.indices, t.dense_shape)
        return values_clip


def clip_by_average_norm(t: TensorLike, clip_norm: TensorLike, name: Optional[str] = None) -> tf.Tensor:
    """Clip a tensor to a maximum *average* L2 norm, exactly as TF1's ``tf.clip_by_average_norm``.

    ``t * clip_norm * min(n_elements / l2norm(t), 1 / clip_norm)`` — the same ops as
    ``tf.compat.v1.clip_by_average_norm`` for float32. Half-precision inputs are computed in
    float32 and returned in their dtype (TF raises a dtype error for them).

    ``clip_norm=inf`` means no clipping (the values come back unchanged).

    Args:
      t: A Tensor (an IndexedSlices is converted to a dense Tensor, as TF did).
      clip_norm: A 0-D (scalar) Tensor > 0. A maximum clipping value; ``inf`` for no clipping.
      name: A name for the operation (optional).

    Returns:
      A clipped Tensor.

    Raises:
      TypeError: If ``t`` is not float16, bfloat16, float32 or float64.
      ValueError: If ``clip_norm`` is NaN (a tensor known only at run time fails the step
        with InvalidArgumentError instead).
    """
    static = static_clip_norm(clip_norm, "clip_by_average_norm")
    with tf.name_scope(name or "clip_by_average_norm"):
        t = tf.convert_to_tensor(t, name="t")
        check_float(t, "clip_by_average_norm", "t", "tf.compat.v1.clip_by_average_norm")
        out_dtype = t.dtype
        if static == _INF:
            return tf.identity(t, name="clipped")
        if out_dtype.base_dtype in _HALF:
            t = tf.cast(t, tf.float32)
        if static is None:
            clip_norm = guard_clip_norm(tf.cast(clip_norm, t.dtype), "clip_by_average_norm")
        n_element = tf.cast(tf.size(t), tf.float32)
        l2norm_inv = tf.math.rsqrt(tf.reduce_sum(t * t, tf.range(tf.rank(t))))
        tclip = t * clip_norm * tf.minimum(l2norm_inv * n_element, tf.constant(1.0) / clip_norm)
        if static is None:
            tclip = tf.where(_is_inf(clip_norm), t, tclip)
        return tf.identity(tf.cast(tclip, out_dtype), name="clipped")


def clip_by_value(
    t: TensorLike,
    clip_value_min: TensorLike,
    clip_value_max: TensorLike,
    name: Optional[str] = None,
) -> Union[tf.Tensor, tf.IndexedSlices]:
    """Clip tensor values to ``[clip_value_min, clip_value_max]``, like ``tf.clip_by_value``.

    An IndexedSlices input has its repeated indices summed first, so each element of the dense
    gradient is clipped once (TF clips every repeated slice separately, letting the dense sum
    exceed the bounds); the result stays IndexedSlices.

    Args:
      t: A Tensor or IndexedSlices.
      clip_value_min: The minimum value (scalar or broadcastable to ``t``).
      clip_value_max: The maximum value (scalar or broadcastable to ``t``).
      name: A name for the operation (optional).

    Returns:
      A clipped Tensor or IndexedSlices.

    Raises:
      TypeError: If ``t`` is not a real number type (complex, bool, string...).
    """
    values = t.values if isinstance(t, tf.IndexedSlices) else tf.convert_to_tensor(t)
    dtype = values.dtype.base_dtype
    if not (dtype.is_floating or dtype.is_integer):
        raise TypeError(
            f"tfclip_compat.clip_by_value: t has dtype {dtype.name}; clip_by_value needs a real "
            "number type (floating point or integer): values of this dtype have no order. "
            "TensorFlow's tf.clip_by_value raises on this dtype too."
        )
    if isinstance(t, tf.IndexedSlices):
        with tf.name_scope(name or "clip_by_value"):
            deduped = dedupe_indexed_slices(t)
            values = tf.clip_by_value(deduped.values, clip_value_min, clip_value_max)
            return tf.IndexedSlices(values, deduped.indices, deduped.dense_shape)
    return tf.clip_by_value(values, clip_value_min, clip_value_max, name=name)


__all__ = [
    "check_float",
    "clip_by_average_norm",
    "clip_by_global_norm",
    "clip_by_norm",
    "clip_by_value",
    "dedupe_indexed_slices",
    "global_norm",
    "guard_clip_norm",
    "static_clip_norm",
]
