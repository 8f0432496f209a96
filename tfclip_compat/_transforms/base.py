"""Gradient transforms: the internal API the optimizer wrappers are built around.

A *gradient transform* maps a list of ``(gradient, variable)`` pairs to a
:class:`TransformResult` ``(grads_and_vars, skip, stats)``:

* ``grads_and_vars`` — the new pairs, same length and order, ``None`` gradients kept as ``None``;
* ``skip`` — ``None``, or a scalar bool tensor: True asks the wrapper to skip the whole update
  (variables, slots, optimizer counters untouched; see ``_nonfinite``);
* ``stats`` — ``dict[str, Tensor]`` of scalars for summaries (e.g. ``"global_norm"``,
  ``"clipped_global_norm"``). The wrappers' non-finite policies do not read them: they test
  the gradients the transform returns, i.e. what is applied.

Contract for implementers (subclass :class:`GradientTransform`, a ``tf.Module``):

* ``build(var_list)`` creates the transform's state variables (histories, EMAs, counters) once;
  the wrappers call it under ``tf.init_scope`` before any ``tf.cond``, so creating
  ``tf.Variable`` objects there is safe in graph mode, ``tf.function`` and under a
  tf.distribute strategy scope. It must be idempotent. Decorate ``build`` and ``__call__``
  with ``tf.autograph.experimental.do_not_convert``: they are graph-building code. State variables are ``tf.Module``
  attributes, so ``variables`` lists them and ``tf.train.Checkpoint`` / ``Saver`` save them
  (the wrappers add the transform as a checkpoint dependency named ``"gradient_transform"``
  when it has variables).
* ``__call__(grads_and_vars)`` is pure graph code: no Python branching on tensor values, no
  host round-trip. Under tf.distribute the wrappers call it in the replica context on the
  cross-replica *aggregated* gradients, so every replica computes the same result; state
  updates must therefore be identical on every replica (they are, given identical inputs).
* State updates made inside ``__call__`` happen even when the step is then skipped (by the
  transform's own ``skip`` or by the non-finite policy); a transform whose method says
  otherwise must gate its updates on its own flag. ``ClipByGlobalNorm`` is stateless; the
  stateful transforms (``tfclip_compat._transforms``: AutoClip, ZClip, SkipOnSpike, ...) keep
  their state in ``ONLY_FIRST_REPLICA`` variables and state per class what a skipped step does.

Transforms compose with :class:`Chain` (in order; ``skip`` flags are OR-ed, later stats
override earlier ones with the same key).
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from tfclip_compat._tf import tf

#: Transforms are graph-building code: AutoGraph must not convert them (it warns on the
#: docstring-only ``GradientTransform.build``).
_no_autograph = tf.autograph.experimental.do_not_convert

GradsAndVars = List[Tuple[Any, Any]]


class TransformResult(NamedTuple):
    """What a :class:`GradientTransform` returns."""

    grads_and_vars: GradsAndVars
    skip: Optional[Any]
    stats: Dict[str, Any]


class GradientTransform(tf.Module):
    """Base class of gradient transforms (see the module docstring for the contract)."""

    @_no_autograph
    def build(self, var_list: Sequence[Any]) -> None:
        """Create state variables for ``var_list`` (once). Stateless transforms do nothing."""

    def __call__(self, grads_and_vars: Sequence[Tuple[Any, Any]]) -> TransformResult:
        """Transform ``grads_and_vars``; subclasses implement this."""
        raise NotImplementedError


def _bad_value(argument: str, value: float) -> ValueError:
    hint = ""
    if value == float("inf"):
        hint = (
            " TF 1.15 turned every gradient into NaN with an infinite threshold; to not clip, "
            "do not wrap the optimizer."
        )
    return ValueError(f"{argument} must be a finite number > 0, got {value!r}.{hint}")


def check_clip_norm(clip_norm: Any, argument: str = "clip_norm") -> Any:
    """Validate a clipping threshold: a finite positive scalar number or a scalar tensor.

    Python numbers and constant tensors are checked at once (``inf``, NaN, 0 and negative
    values are rejected: with them TF 1.15 produced NaN, zero or unclipped gradients); a
    non-constant scalar tensor (e.g. a placeholder or a variable) is accepted and checked at
    run time by :func:`runtime_checks`. Raises ValueError/TypeError naming ``argument``.
    """
    if isinstance(clip_norm, bool) or clip_norm is None:
        raise TypeError(f"{argument} must be a positive scalar number or tensor, got {clip_norm!r}.")
    if isinstance(clip_norm, (int, float)):
        if not (math.isfinite(clip_norm) and clip_norm > 0):
            raise _bad_value(argument, float(clip_norm))
        return float(clip_norm)
    try:
        shape = tf.TensorShape(clip_norm.shape)
    except (AttributeError, TypeError, ValueError):
        try:
            import numpy as np

            arr = np.asarray(clip_norm)
        except Exception:  # pragma: no cover - exotic objects
            arr = None
        if arr is None or arr.dtype.kind not in "iuf":
            raise TypeError(
                f"{argument} must be a positive scalar number or tensor, got {type(clip_norm).__name__}."
            ) from None
        shape = tf.TensorShape(arr.shape)
        clip_norm = arr
    if shape.rank is not None and shape.rank != 0:
        raise ValueError(f"{argument} must be a scalar (0-D), got shape {shape}.")
    value = tf.get_static_value(clip_norm) if not isinstance(clip_norm, tf.Variable) else None
    if value is not None and not (math.isfinite(float(value)) and float(value) > 0):
        raise _bad_value(argument, float(value))
    return clip_norm


def runtime_checks(clip_norm: Any, argument: str = "clip_norm") -> List[Any]:
    """Run-time checks of a threshold that :func:`check_clip_norm` could not check statically.

    Empty for Python numbers and constants; for a placeholder, a variable or a computed tensor,
    one assertion (finite and > 0) that fails naming ``argument``. Make the clipped gradients
    depend on it (``tf.control_dependencies``); it does not change their values.
    """
    if isinstance(clip_norm, (int, float)):
        return []
    if not isinstance(clip_norm, tf.Variable) and tf.get_static_value(clip_norm) is not None:
        return []
    value = tf.convert_to_tensor(clip_norm)
    ok = tf.logical_and(tf.math.is_finite(value), value > 0)
    return [tf.debugging.Assert(ok, [f"{argument} must be a finite number > 0, got", value])]


class Chain(GradientTransform):
    """Apply several transforms in order (``optax.chain`` style)."""

    def __init__(self, *transforms: GradientTransform, name: Optional[str] = None) -> None:
        super().__init__(name=name or "chain")
        for t in transforms:
            if not isinstance(t, GradientTransform):
                raise TypeError(f"Chain() takes GradientTransform objects, got {type(t).__name__}.")
        self.transforms = list(transforms)

    @_no_autograph
    def build(self, var_list: Sequence[Any]) -> None:
        """Build every transform of the chain."""
        for t in self.transforms:
            t.build(var_list)

    @_no_autograph
    def __call__(self, grads_and_vars: Sequence[Tuple[Any, Any]]) -> TransformResult:
        """Run the transforms in order, OR-ing skip flags and merging stats."""
        gvs = list(grads_and_vars)
        skip: Optional[Any] = None
        stats: Dict[str, Any] = {}
        for t in self.transforms:
            result = t(gvs)
            gvs = list(result.grads_and_vars)
            if result.skip is not None:
                skip = result.skip if skip is None else tf.logical_or(skip, result.skip)
            stats.update(result.stats)
        return TransformResult(gvs, skip, stats)


__all__ = ["Chain", "GradientTransform", "TransformResult", "check_clip_norm", "runtime_checks"]
