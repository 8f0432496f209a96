"""Helpers shared by the transforms: state variables, control dependencies, scaling, stats.

State (norm histories, EMAs, counters) lives in non-trainable ``tf.Variable`` objects created
by ``build`` (the wrappers call it under ``init_scope``), with
``aggregation=ONLY_FIRST_REPLICA``: under tf.distribute the wrappers feed the transform the
cross-replica *aggregated* gradient, every replica computes the same update and the first
replica's value is written. State therefore checkpoints with ``tf.train.Checkpoint`` (through
the wrapper, under ``"gradient_transform"``) and with ``tf.compat.v1.train.Saver`` (the
variables are global variables in graph mode), and a run restored mid-way continues exactly.

Updates are pure graph code (``tf.where``, no ``tf.cond``, no host round-trip). In graph mode
the returned gradients carry control dependencies on the state updates (:func:`_after`), so
running the train op runs them. State is float32 (the norm of float64 gradients is cast to
float32 for it).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

from tfclip_compat._tf import tf

GradsAndVars = List[Tuple[Any, Any]]
#: Transforms are plain graph code (no Python control flow on tensors): AutoGraph must not
#: rewrite them when a user's ``tf.function`` calls them.
_no_autograph = tf.autograph.experimental.do_not_convert

__all__ = ["GradsAndVars", "state_variable", "variable_name"]


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
