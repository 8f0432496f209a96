"""Optimizer wrappers that transform gradients before applying them.

Public: :func:`clip_gradients_by_norm` (replaces ``tf.contrib.estimator.clip_gradients_by_norm``).

Internal design (what issue 6 builds on)::

    wrap_optimizer(optimizer, transform, *, nonfinite="propagate", summaries=False, name=None)

returns a wrapper around a ``tf.compat.v1.train.Optimizer`` (:class:`TransformedV1Optimizer`,
itself a v1 ``Optimizer``) that, on every ``apply_gradients``, runs the pipeline
(:class:`_Pipeline`) below; given a Keras optimizer it returns a real Keras optimizer,
``tfclip_compat._keras_optimizer.TransformedKerasOptimizer`` (the same steps, for ``model.fit``):

1. validate ``grads_and_vars`` (non-empty, at least one gradient; ``None`` gradients pass
   through untouched);
2. in a tf.distribute replica context, all-reduce (SUM) the gradients across replicas, so
   the transform sees the *aggregated* gradient, identical on every replica;
3. ``nonfinite="raise"``: check every gradient, naming the variable;
4. run the :class:`~tfclip_compat._transform.GradientTransform` (built once, under
   ``init_scope``, before any cond) -> ``(grads_and_vars, skip, stats)``;
5. optional summaries of ``stats`` (``tf.compat.v1.summary`` in graph mode, ``tf.summary``
   in eager / ``tf.function``);
6. apply with the inner optimizer, conditionally when the transform asked to skip or
   ``nonfinite="skip"`` and the gradients are not finite (``_nonfinite``).

Replica context: the inner optimizer always all-reduces (SUMs) what it is given. To make it
apply the already aggregated, transformed gradient exactly once, replica 0 passes the
transformed gradient and every other replica passes zeros (``x + 0 == x`` exactly, so N
replicas apply bit-for-bit what one device applies to the aggregated gradient). This costs a
second all-reduce per step. The skip cond is built in cross-replica context (like Keras'
``LossScaleOptimizer``), because strategies forbid a replica-context cond around ``merge_call``.

So ``clip_gradients_by_norm(opt, c)`` is ``wrap_optimizer(opt, ClipByGlobalNorm(c))`` and new
transforms (AGC, AutoClip, ZClip, skip-on-spike, ``Chain`` of them) plug in without touching
the wrappers.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from tfclip_compat import _nonfinite
from tfclip_compat._tf import V1Optimizer, is_keras_optimizer, tf
from tfclip_compat._transform import ClipByGlobalNorm, GradientTransform, TransformResult

GradsAndVars = List[Tuple[Any, Any]]
_TRANSFORM_CHECKPOINT_NAME = "gradient_transform"


def _scalar_metadata() -> Any:
    from tensorflow.core.framework import summary_pb2  # noqa: PLC0415 - proto only

    return summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars", content=b"")
    )


_SCALAR_METADATA = _scalar_metadata().SerializeToString()


def _replica_context() -> Optional[Any]:
    """The replica context when running under a (non-default) strategy's replica fn."""
    if not tf.distribute.has_strategy():
        return None
    if tf.distribute.in_cross_replica_context():
        raise RuntimeError(
            "apply_gradients()/minimize() of a tfclip_compat optimizer wrapper must be called "
            "in a replica context (inside strategy.run), not in cross-replica context."
        )
    return tf.distribute.get_replica_context()


def _values(g: Any) -> Any:
    return g.values if isinstance(g, tf.IndexedSlices) else g


def _keep_on_first_replica(g: Any, ctx: Any) -> Any:
    """``g`` on replica 0, zeros elsewhere, so that a SUM all-reduce returns ``g`` exactly."""
    if g is None:
        return None
    replica_id = ctx.replica_id_in_sync_group
    static_id = tf.get_static_value(replica_id)
    values = _values(g)
    if static_id is not None:
        masked = values if int(static_id) == 0 else tf.zeros_like(values)
    else:
        masked = tf.where(tf.equal(replica_id, 0), values, tf.zeros_like(values))
    if isinstance(g, tf.IndexedSlices):
        return tf.IndexedSlices(masked, g.indices, g.dense_shape)
    return masked


def _validate_grads_and_vars(grads_and_vars: Any) -> GradsAndVars:
    try:
        pairs = [tuple(p) for p in grads_and_vars]
    except TypeError:
        raise TypeError(
            "grads_and_vars must be an iterable of (gradient, variable) pairs, "
            f"got {type(grads_and_vars).__name__}."
        ) from None
    if not pairs:
        raise ValueError(
            "grads_and_vars is empty: there are no (gradient, variable) pairs to apply. Check "
            "that the loss depends on trainable variables (or pass var_list)."
        )
    for p in pairs:
        if len(p) != 2:
            raise ValueError(f"grads_and_vars must contain (gradient, variable) pairs, got {p!r}.")
    if all(g is None for g, _ in pairs):
        names = [getattr(v, "name", repr(v)) for _, v in pairs]
        raise ValueError(f"No gradients provided for any variable: {names}.")
    return pairs


class _Pipeline:
    """The transform-then-apply pipeline shared by the v1 and Keras wrappers."""

    def __init__(
        self, transform: GradientTransform, nonfinite: str, summaries: bool, name: str
    ) -> None:
        self.transform = transform
        self.nonfinite = _nonfinite.check_policy(nonfinite)
        self.summaries = bool(summaries)
        self.name = name
        self._built = False

    def build(self, var_list: Sequence[Any]) -> None:
        if not self._built:
            with tf.init_scope():
                self.transform.build(list(var_list))
            self._built = True

    def _write_summaries(self, stats: Dict[str, Any], step: Any) -> None:
        if not self.summaries:
            return
        for key in sorted(stats):
            tag = f"{self.name}/{key}"
            if not tf.executing_eagerly() and not tf.inside_function():
                tf.compat.v1.summary.scalar(tag, stats[key])
            else:
                step = step if step is not None else tf.summary.experimental.get_step()
                if step is not None:
                    # tf.summary.write + the "scalars" plugin metadata is what tf.summary.scalar
                    # writes, without needing the tensorboard package at run time.
                    tf.summary.write(
                        tag, tf.cast(stats[key], tf.float32), step=step, metadata=_SCALAR_METADATA
                    )

    def run(
        self,
        grads_and_vars: Any,
        apply_fn: Callable[[GradsAndVars], Any],
        summary_step: Any = None,
    ) -> Any:
        gvs = _validate_grads_and_vars(grads_and_vars)
        self.build([v for _, v in gvs])
        ctx = _replica_context()
        if ctx is not None:
            idx = [i for i, (g, _) in enumerate(gvs) if g is not None]
            reduced = ctx.all_reduce(tf.distribute.ReduceOp.SUM, [gvs[i][0] for i in idx])
            for i, r in zip(idx, reduced):
                gvs[i] = (r, gvs[i][1])
        if self.nonfinite == "raise":
            gvs = _nonfinite.assert_finite(gvs)
        result: TransformResult = self.transform(gvs)
        out = list(result.grads_and_vars)
        self._write_summaries(result.stats, summary_step)

        apply_pred = None
        if self.nonfinite == "skip":
            norm = result.stats.get("global_norm")
            apply_pred = (
                tf.math.is_finite(norm)
                if norm is not None
                else _nonfinite.all_finite([g for g, _ in out])
            )
        if result.skip is not None:
            keep = tf.logical_not(result.skip)
            apply_pred = keep if apply_pred is None else tf.logical_and(apply_pred, keep)

        if ctx is not None:
            out = [(_keep_on_first_replica(g, ctx), v) for g, v in out]
        if apply_pred is None:
            return apply_fn(out)
        if ctx is not None:
            return _nonfinite.cross_replica_cond(apply_pred, apply_fn, out)
        return _nonfinite.apply_with_policy(apply_fn, out, "skip", finite=apply_pred, name=self.name)


class _WrapsOptimizer:
    """What both wrappers share: the ``optimizer`` / ``transform`` accessors, and
    checkpointing: the inner optimizer's state (slots, beta powers, iterations) is presented
    as the wrapper's own, so a checkpoint of the wrapper is interchangeable with one of the
    bare optimizer; the transform's state, when it has any, is one more child named
    ``gradient_transform``."""

    _optimizer: Any
    _transform: GradientTransform

    @property
    def optimizer(self) -> Any:
        """The wrapped optimizer."""
        return self._optimizer

    @property
    def transform(self) -> GradientTransform:
        """The gradient transform."""
        return self._transform

    def _trackable_children(self, save_type: Any = None, **kwargs: Any) -> Dict[str, Any]:
        if save_type is None:
            children = dict(self._optimizer._trackable_children(**kwargs))
        else:
            children = dict(self._optimizer._trackable_children(save_type, **kwargs))
        if self._transform.variables:
            children[_TRANSFORM_CHECKPOINT_NAME] = self._transform
        return children

    def _lookup_dependency(self, name: str, cached_dependencies: Any = None) -> Any:
        if name == _TRANSFORM_CHECKPOINT_NAME:
            return self._transform
        return self._optimizer._lookup_dependency(name, cached_dependencies)

    @property
    def _deferred_dependencies(self) -> Any:
        return self._optimizer._deferred_dependencies


class TransformedV1Optimizer(_WrapsOptimizer, V1Optimizer):  # type: ignore[misc,valid-type]
    """A ``tf.compat.v1.train.Optimizer`` that transforms gradients before the inner one applies them.

    Works with ``minimize(loss, global_step=, var_list=)``, ``compute_gradients`` /
    ``apply_gradients``, graph mode, eager and tf.distribute replica contexts. ``get_slot``,
    ``get_slot_names`` and ``variables()`` delegate to the inner optimizer; for
    ``tf.train.Checkpoint`` the wrapper *is* the inner optimizer (same children and slot
    variables), so checkpoints are interchangeable with the unwrapped optimizer (plus the
    transform's state, if it has any, under ``"gradient_transform"``).
    """

    def __init__(
        self,
        optimizer: Any,
        transform: GradientTransform,
        *,
        nonfinite: str = "propagate",
        summaries: bool = False,
        name: Optional[str] = None,
    ) -> None:
        if not isinstance(optimizer, V1Optimizer):
            raise TypeError(
                "optimizer must be a tf.compat.v1.train.Optimizer, "
                f"got {type(optimizer).__name__}."
            )
        name = name or "Transform" + optimizer.get_name()
        super().__init__(use_locking=False, name=name)
        self._optimizer = optimizer
        self._transform = transform
        self._pipeline = _Pipeline(transform, nonfinite, summaries, name)

    def compute_gradients(self, *args: Any, **kwargs: Any) -> Any:
        """See ``tf.compat.v1.train.Optimizer.compute_gradients`` (delegated)."""
        return self._optimizer.compute_gradients(*args, **kwargs)

    def apply_gradients(
        self, grads_and_vars: Any, global_step: Any = None, name: Optional[str] = None
    ) -> Any:
        """Transform the gradients (aggregated across replicas), then apply them.

        Returns the inner optimizer's apply op (or the conditional op under a skip policy).
        ``global_step`` is incremented when, and only when, the update is applied.
        """

        def apply_fn(gvs: GradsAndVars) -> Any:
            return self._optimizer.apply_gradients(gvs, global_step=global_step, name=name)

        step = global_step
        if step is None and (tf.executing_eagerly() or tf.inside_function()):
            step = tf.summary.experimental.get_step()
        return self._pipeline.run(grads_and_vars, apply_fn, summary_step=step)

    def get_slot(self, *args: Any, **kwargs: Any) -> Any:
        """See ``tf.compat.v1.train.Optimizer.get_slot`` (delegated)."""
        return self._optimizer.get_slot(*args, **kwargs)

    def get_slot_names(self, *args: Any, **kwargs: Any) -> Any:
        """See ``tf.compat.v1.train.Optimizer.get_slot_names`` (delegated)."""
        return self._optimizer.get_slot_names(*args, **kwargs)

    def variables(self) -> List[Any]:
        """The inner optimizer's variables (slots, beta powers...) and the transform's state."""
        return list(self._optimizer.variables()) + list(self._transform.variables)

    def _create_or_restore_slot_variable(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer._create_or_restore_slot_variable(*args, **kwargs)


def wrap_optimizer(
    optimizer: Any,
    transform: GradientTransform,
    *,
    nonfinite: str = "propagate",
    summaries: bool = False,
    name: Optional[str] = None,
) -> Any:
    """Wrap a v1 or Keras optimizer so that ``transform`` runs on the gradients before applying.

    Raises TypeError naming ``optimizer`` for anything else, ValueError naming ``nonfinite``
    for an unknown policy.
    """
    _nonfinite.check_policy(nonfinite)
    if not isinstance(transform, GradientTransform):
        raise TypeError(f"transform must be a GradientTransform, got {type(transform).__name__}.")
    if isinstance(optimizer, V1Optimizer):
        return TransformedV1Optimizer(
            optimizer, transform, nonfinite=nonfinite, summaries=summaries, name=name
        )
    if is_keras_optimizer(optimizer):
        from tfclip_compat._keras_optimizer import TransformedKerasOptimizer  # noqa: PLC0415 - cycle

        return TransformedKerasOptimizer(
            optimizer, transform, nonfinite=nonfinite, summaries=summaries, name=name
        )
    hint = ""
    if isinstance(optimizer, (str, type)) or callable(optimizer):
        hint = " Pass an optimizer *instance*, e.g. tf.compat.v1.train.AdamOptimizer(1e-3)."
    raise TypeError(
        "optimizer must be a tf.compat.v1.train.Optimizer or a Keras optimizer instance, "
        f"got {optimizer!r}.{hint}"
    )


def clip_gradients_by_norm(
    optimizer: Any, clip_norm: Any, *, nonfinite: str = "propagate", summaries: bool = False
) -> Any:
    """Return an optimizer that clips gradients by their GLOBAL norm before applying them.

    Drop-in for ``tf.contrib.estimator.clip_gradients_by_norm``::

        optimizer = tf.compat.v1.train.AdamOptimizer(1e-3)
        optimizer = tfclip_compat.clip_gradients_by_norm(optimizer, clip_norm=5.0)
        train_op = optimizer.minimize(loss, global_step=global_step)

    Given a ``tf.compat.v1.train.Optimizer`` it returns a ``tf.compat.v1.train.Optimizer`` named
    ``"ClipByNorm" + optimizer.get_name()``; given a Keras optimizer, a Keras optimizer
    (``TransformedKerasOptimizer``, named ``"ClipByNorm" + class name``) that ``model.compile``
    accepts. Unlike contrib:
    ``variables()`` and ``tf.train.Checkpoint`` see the inner optimizer's state; the norm is
    robust (float32 accumulation for float16/bfloat16, duplicate IndexedSlices indices); in a
    tf.distribute replica context the norm is that of the cross-replica aggregated gradient.

    Args:
      optimizer: a ``tf.compat.v1.train.Optimizer`` or Keras optimizer instance.
      clip_norm: a positive scalar (number or 0-D tensor): the global-norm threshold.
      nonfinite: ``"propagate"`` (TF1 behaviour), ``"skip"`` or ``"raise"``; see
        ``tfclip_compat._nonfinite``.
      summaries: write the pre- and post-clip global norm as scalar summaries
        (``<name>/global_norm``, ``<name>/clipped_global_norm``).

    Raises:
      TypeError: ``optimizer`` is not an optimizer instance, or ``clip_norm`` is not a number.
      ValueError: ``clip_norm`` is not a positive scalar, or ``nonfinite`` is unknown.
    """
    _nonfinite.check_policy(nonfinite)
    transform = ClipByGlobalNorm(clip_norm)
    if isinstance(optimizer, V1Optimizer):
        name = "ClipByNorm" + optimizer.get_name()
    elif is_keras_optimizer(optimizer):
        name = "ClipByNorm" + type(optimizer).__name__
    else:
        name = None
    return wrap_optimizer(optimizer, transform, nonfinite=nonfinite, summaries=summaries, name=name)


__all__ = [
    "TransformedV1Optimizer",
    "clip_gradients_by_norm",
    "wrap_optimizer",
]
