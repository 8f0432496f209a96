"""Test-only reference: TF 1.15's ``clip_ops`` (``global_norm``, ``clip_by_global_norm``, ``clip_by_norm``).

Rewritten from TF 1.15's ``tensorflow/python/ops/clip_ops.py`` on ``tf.compat.v1`` ops, with
its op sequence: ``global_norm`` is ``sqrt(2 * reduce_sum(stack([l2_loss(v) ...])))`` over
``t.values if IndexedSlices else t``; ``clip_by_global_norm`` multiplies each value by
``where(is_finite(norm), clip_norm * minimum(1 / norm, 1 / clip_norm), nan)``; ``clip_by_norm``
divides ``t * clip_norm`` by ``maximum(l2norm, clip_norm)`` with the two-tap ``where`` for a
zero norm. The reference ``tf.contrib`` modules use these, so they do not depend on what a
later TF changed (TF 2 clamps a negative ``clip_norm`` of ``clip_by_norm`` to 0 and casts the
scale per dtype). Never imports ``tfclip_compat``.
"""

from __future__ import annotations

import tensorflow as tf

v1 = tf.compat.v1

__all__ = ["clip_by_global_norm", "clip_by_norm", "global_norm"]


def _value(t, i):
    if t is None:
        return None
    return tf.convert_to_tensor(t.values if isinstance(t, tf.IndexedSlices) else t, name="t_%d" % i)


def global_norm(t_list, name=None):
    """TF 1.15 ``tf.global_norm``."""
    t_list = list(t_list)
    with v1.name_scope(name, "global_norm", [t for t in t_list if t is not None]):
        values = [_value(t, i) for i, t in enumerate(t_list)]
        half_squared_norms = []
        for v in values:
            if v is not None:
                with v1.colocate_with(v):
                    half_squared_norms.append(tf.nn.l2_loss(v))
        half_squared_norm = tf.reduce_sum(tf.stack(half_squared_norms))
        return tf.sqrt(
            half_squared_norm * tf.constant(2.0, dtype=half_squared_norm.dtype), name="global_norm"
        )


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """TF 1.15 ``tf.clip_by_global_norm``."""
    t_list = list(t_list)
    if use_norm is None:
        use_norm = global_norm(t_list, name)
    with v1.name_scope(name, "clip_by_global_norm", [t for t in t_list if t is not None] + [clip_norm]) as name:
        scale_for_finite = clip_norm * tf.minimum(
            1.0 / use_norm, tf.constant(1.0, dtype=use_norm.dtype) / clip_norm
        )
        scale = v1.where(
            tf.math.is_finite(use_norm),
            scale_for_finite,
            tf.constant(float("nan"), dtype=use_norm.dtype),
        )
        values = [_value(t, i) for i, t in enumerate(t_list)]
        values_clipped = []
        for i, v in enumerate(values):
            if v is None:
                values_clipped.append(None)
            else:
                with v1.colocate_with(v):
                    values_clipped.append(tf.identity(v * scale, name="%s_%d" % (name, i)))
        list_clipped = [
            tf.IndexedSlices(c_v, t.indices, t.dense_shape) if isinstance(t, tf.IndexedSlices) else c_v
            for (c_v, t) in zip(values_clipped, t_list)
        ]
    return list_clipped, use_norm


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """TF 1.15 ``tf.clip_by_norm`` (an IndexedSlices is clipped by the norm of its values)."""
    with v1.name_scope(name, "clip_by_norm", [t, clip_norm]) as name:
        values = tf.convert_to_tensor(t.values if isinstance(t, tf.IndexedSlices) else t, name="t")
        l2sum = tf.reduce_sum(values * values, axes, keepdims=True)
        pred = l2sum > 0
        l2sum_safe = v1.where(pred, l2sum, tf.ones_like(l2sum))
        l2norm = v1.where(pred, tf.sqrt(l2sum_safe), l2sum)
        intermediate = values * clip_norm
        values.shape.merge_with(intermediate.shape)
        values_clip = tf.identity(intermediate / tf.maximum(l2norm, clip_norm), name=name)
        if isinstance(t, tf.IndexedSlices):
            return tf.IndexedSlices(values_clip, t.indices, t.dense_shape)
        return values_clip
