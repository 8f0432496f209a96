"""A real Keras optimizer that transforms the cross-replica aggregated gradient (``model.fit`` ready).

:class:`TransformedKerasOptimizer` is a ``keras.optimizers.Optimizer`` subclass wrapping any
Keras optimizer; ``tfclip_compat.clip_gradients_by_norm(keras_opt, c)`` and
``wrap_optimizer(keras_opt, transform)`` return it, so ``model.compile(optimizer=...)``,
``model.save`` / ``keras.models.load_model`` and ``tf.train.Checkpoint`` accept it.

Where the all-reduce goes (Keras 3, TF backend). A Keras optimizer's ``apply`` runs, per
replica: ``loss_scale_factor`` unscaling, ``clipnorm`` / ``global_clipnorm`` /
``clipvalue`` (``_clip_gradients``), weight decay, then ``_backend_update_step``, which
all-reduces (SUMs) the gradients (``_all_reduce_sum_gradients``) and updates the variables in
a ``merge_call``. So Keras clips each replica's *partial* gradient. This wrapper, per replica:

1. all-reduces (SUM) the gradients with the same Keras method, so every replica holds the
   aggregated gradient, and divides by the wrapped optimizer's loss scale if it has one;
2. ``nonfinite="raise"`` checks, then runs the transform (identical inputs on every replica,
   so identical outputs and identical state updates);
3. applies the result with the wrapped optimizer, *telling it not to aggregate again*: the
   wrapped optimizer's ``_all_reduce_sum_gradients`` is replaced, on that instance only, by a
   switch that passes the gradients through while this wrapper applies them (a counter, not a
   thread-local: MirroredStrategy runs replicas in threads and ``LossScaleOptimizer`` re-enters
   them from a ``merge_call``) and calls Keras' method otherwise. Used directly, the wrapped
   optimizer still aggregates. An optimizer class that overrides ``apply`` /
   ``apply_gradients`` / ``_backend_apply_gradients`` / ``_all_reduce_sum_gradients`` (e.g.
   ``MultiOptimizer``) gets the fallback instead: replica 0 passes the result and the others
   pass zeros, so its own SUM returns the result exactly (one more all-reduce per step).

Skips (a transform's ``skip``, ``nonfinite="skip"``) are a ``tf.cond`` built in cross-replica
context when the strategy uses ``merge_call`` (as Keras' ``LossScaleOptimizer`` does), a plain
``tf.cond`` otherwise; the predicate comes from aggregated gradients, so every replica agrees.

Loss scaling (mixed precision): see ``docs/keras.md``. ``LossScaleOptimizer(wrapper)`` is the
right order and what ``model.compile`` builds under a ``mixed_float16`` policy; a wrapper
around a ``LossScaleOptimizer`` unscales before the transform and rescales after it (exact
for power-of-two scales, the default), always lets non-finite steps reach the
``LossScaleOptimizer`` (it must see them to lower its scale), refuses ``nonfinite="raise"``,
and raises if a second ``LossScaleOptimizer`` is put around it.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any, Dict, List, Optional, Sequence

import keras
import numpy as np

from tfclip_compat import _nonfinite
from tfclip_compat._optimizer import _keep_on_first_replica, _validate_grads_and_vars
from tfclip_compat._optimizer import _SCALAR_METADATA, _TRANSFORM_CHECKPOINT_NAME
from tfclip_compat._tf import tf
from tfclip_compat._transform import GradientTransform
from tfclip_compat._transform_config import deserialize_transform, serialize_transform

_KerasOptimizer: Any = keras.optimizers.Optimizer
_LossScaleOptimizer: Any = keras.optimizers.LossScaleOptimizer
#: Methods through which a Keras 3 optimizer aggregates; a class overriding one of them may
#: aggregate some other way, so its aggregation is not switched off (the fallback is used).
_AGGREGATION_METHODS = ("apply", "apply_gradients", "_backend_apply_gradients", "_all_reduce_sum_gradients")
# Constructor arguments of keras.optimizers.Optimizer that the wrapper accepts only at their
# defaults (get_config of older versions, or a generic caller, may pass them).
_BASE_DEFAULTS = {
    "learning_rate": None, "weight_decay": None, "clipnorm": None, "clipvalue": None,
    "global_clipnorm": None, "use_ema": False, "ema_momentum": 0.99,
    "ema_overwrite_frequency": None, "loss_scale_factor": None, "gradient_accumulation_steps": None,
}


class _AggregationSwitch:
    """Stands in for one optimizer instance's ``_all_reduce_sum_gradients``."""

    def __init__(self, method: Any) -> None:
        self.method = method
        self.depth = 0
        self.lock = threading.Lock()

    def __call__(self, grads_and_vars: Any) -> Any:
        if self.depth > 0:
            return list(grads_and_vars)
        return self.method(grads_and_vars)

    def __enter__(self) -> None:
        with self.lock:
            self.depth += 1

    def __exit__(self, *exc: Any) -> None:
        with self.lock:
            self.depth -= 1


def _aggregating_optimizer(optimizer: Any) -> Optional[Any]:
    """The optimizer whose ``_all_reduce_sum_gradients`` aggregates for ``optimizer``, or None."""
    if isinstance(optimizer, _LossScaleOptimizer):
        return _aggregating_optimizer(optimizer.inner_optimizer)
    if isinstance(optimizer, TransformedKerasOptimizer):
        return optimizer
    cls = type(optimizer)
    for method in _AGGREGATION_METHODS:
        if getattr(cls, method, None) is not getattr(_KerasOptimizer, method, None):
            return None
    return optimizer


def _aggregation_switch(optimizer: Any) -> Optional[_AggregationSwitch]:
    """Install (once per instance) and return the switch of ``optimizer``'s aggregation."""
    target = _aggregating_optimizer(optimizer)
    if target is None:
        return None
    switch = target.__dict__.get("_all_reduce_sum_gradients")
    if not isinstance(switch, _AggregationSwitch):
        switch = _AggregationSwitch(target._all_reduce_sum_gradients)
        # object.__setattr__: a plain instance attribute, invisible to Keras/TF tracking.
        object.__setattr__(target, "_all_reduce_sum_gradients", switch)
    return switch


def _loss_scale(optimizer: Any) -> Optional[Any]:
    """The factor by which ``optimizer`` expects its gradients to be scaled (None: unscaled)."""
    if isinstance(optimizer, _LossScaleOptimizer):
        # Its variable once built (the scale changes during training), its initial value before.
        scale = getattr(optimizer, "dynamic_scale", None)
        return optimizer.initial_scale if scale is None else scale
    return getattr(optimizer, "loss_scale_factor", None)


def _has_dynamic_scale(optimizer: Any) -> bool:
    if isinstance(optimizer, TransformedKerasOptimizer):
        return _has_dynamic_scale(optimizer.optimizer)
    return isinstance(optimizer, _LossScaleOptimizer)


def _scale(g: Any, factor: Any, divide: bool) -> Any:
    if g is None:
        return None
    values = g.values if isinstance(g, tf.IndexedSlices) else g
    factor = tf.cast(factor, values.dtype)
    values = values / factor if divide else values * factor
    return tf.IndexedSlices(values, g.indices, g.dense_shape) if isinstance(g, tf.IndexedSlices) else values


def _in_xla() -> bool:
    from tensorflow.python.ops import control_flow_util  # noqa: PLC0415 - no public equivalent

    return bool(control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph()))


@keras.saving.register_keras_serializable(package="tfclip_compat")
class TransformedKerasOptimizer(_KerasOptimizer):
    """A Keras optimizer that runs a gradient transform on the cross-replica aggregated gradient.

    ``TransformedKerasOptimizer(optimizer, transform, nonfinite="propagate", summaries=False,
    name=None)`` wraps any Keras optimizer instance: ``model.compile(optimizer=...)`` /
    ``model.fit``, custom loops (``apply_gradients`` / ``apply``), eager, ``tf.function``,
    ``jit_compile=True``, MirroredStrategy and MultiWorkerMirroredStrategy (N replicas train
    like one device on the same global batch), ``model.save`` / ``load_model`` (the wrapped
    optimizer and the transform are in ``get_config``; registered as
    ``"tfclip_compat>TransformedKerasOptimizer"``) and ``tf.train.Checkpoint`` (the wrapped
    optimizer's slots and ``iterations`` appear as the wrapper's own, so checkpoints are
    interchangeable with the bare optimizer's, plus the transform's state under
    ``"gradient_transform"``).

    ``learning_rate`` (get/set, schedules), ``iterations``, ``scale_loss`` and
    ``finalize_variable_values`` are the wrapped optimizer's; ``variables`` are its variables
    followed by the transform's. ``nonfinite``: ``"propagate"`` (apply as is), ``"skip"``
    (variables, slots, ``iterations`` untouched) or ``"raise"`` (InvalidArgumentError naming
    the variable; nothing is updated). ``summaries=True`` writes the transform's stats as
    scalars ``<name>/<stat>`` at step ``iterations`` to the default ``tf.summary`` writer
    (skipped inside XLA, which cannot compile summary ops). See the module docstring for how
    aggregation works and ``docs/keras.md`` for mixed precision.
    """

    def __init__(
        self,
        optimizer: Any,
        transform: GradientTransform,
        nonfinite: str = "propagate",
        summaries: bool = False,
        name: Optional[str] = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(optimizer, _KerasOptimizer):
            raise TypeError(f"optimizer must be a Keras optimizer instance, got {optimizer!r}.")
        if not isinstance(transform, GradientTransform):
            raise TypeError(f"transform must be a GradientTransform, got {type(transform).__name__}.")
        nonfinite = _nonfinite.check_policy(nonfinite)
        for key, value in kwargs.items():
            if key not in _BASE_DEFAULTS or value != _BASE_DEFAULTS[key]:
                raise ValueError(
                    f"TransformedKerasOptimizer does not take {key}={value!r}: set it on the wrapped "
                    "optimizer (clipping: use a transform, e.g. tfclip_compat.ClipByNorm)."
                )
        if nonfinite == "raise" and _has_dynamic_scale(optimizer):
            raise ValueError(
                "nonfinite='raise' cannot wrap a LossScaleOptimizer: its scaled gradients overflow "
                "by design (that is how it finds its scale). Use nonfinite='propagate' (the "
                "LossScaleOptimizer skips those steps) or put the LossScaleOptimizer outside: "
                "LossScaleOptimizer(clip_gradients_by_norm(optimizer, clip_norm, nonfinite='raise'))."
            )
        # The wrapped optimizer's learning rate and iterations are the wrapper's: a callable
        # learning rate creates no variable of its own.
        super().__init__(learning_rate=lambda: 0.0, name=name or "Transform" + type(optimizer).__name__)
        self._untrack_variable(self._iterations)
        self._optimizer = optimizer
        self._transform = transform
        self.nonfinite = nonfinite
        self.summaries = bool(summaries)
        self._switch = _aggregation_switch(optimizer)
        self._transform_built = False

    # --- what users touch --------------------------------------------------------
    @property
    def optimizer(self) -> Any:
        """The wrapped Keras optimizer."""
        return self._optimizer

    @property
    def transform(self) -> GradientTransform:
        """The gradient transform."""
        return self._transform

    @property
    def learning_rate(self) -> Any:
        """The wrapped optimizer's learning rate (settable; schedules allowed)."""
        return self._optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, value: Any) -> None:
        self._optimizer.learning_rate = value

    @property
    def iterations(self) -> Any:
        """The wrapped optimizer's step counter (not advanced by skipped steps)."""
        return self._optimizer.iterations

    @property
    def variables(self) -> List[Any]:
        """The wrapped optimizer's variables followed by the transform's state variables."""
        return list(self._optimizer.variables) + list(self._transform.variables)

    @property
    def loss_scale_factor(self) -> Any:
        """The scale the wrapped optimizer divides gradients by: its ``loss_scale_factor``, a
        LossScaleOptimizer's ``dynamic_scale``, or None. Setting it sets the wrapped optimizer's
        (None, as a LossScaleOptimizer around the wrapper does, is refused when the wrapped
        optimizer is a LossScaleOptimizer: the loss would be scaled twice)."""
        inner = self.__dict__.get("_optimizer")
        return None if inner is None else _loss_scale(inner)

    @loss_scale_factor.setter
    def loss_scale_factor(self, value: Any) -> None:
        inner = self.__dict__.get("_optimizer")
        if inner is None:  # keras.optimizers.Optimizer.__init__ sets None
            return
        if _has_dynamic_scale(inner):
            raise ValueError(
                f"{self.name} wraps a LossScaleOptimizer and is being given another loss scale "
                "(e.g. model.compile wraps it in a LossScaleOptimizer under a mixed_float16 "
                "policy): gradients would be scaled twice. Wrap the plain optimizer and let "
                "compile add the LossScaleOptimizer: compile(optimizer=clip_gradients_by_norm("
                "Adam(...), clip_norm)), or compile(..., auto_scale_loss=False)."
            )
        inner.loss_scale_factor = value

    def scale_loss(self, loss: Any) -> Any:
        """The wrapped optimizer's ``scale_loss`` (a LossScaleOptimizer's dynamic scale)."""
        return self._optimizer.scale_loss(loss)

    def finalize_variable_values(self, var_list: Sequence[Any]) -> None:
        """The wrapped optimizer's (EMA weights, when it keeps them)."""
        self._optimizer.finalize_variable_values(var_list)

    def exclude_from_weight_decay(self, var_list: Any = None, var_names: Any = None) -> None:
        """The wrapped optimizer's (weight decay is its business)."""
        self._optimizer.exclude_from_weight_decay(var_list=var_list, var_names=var_names)

    def set_weights(self, weights: Sequence[Any]) -> None:
        """Assign ``weights`` to :attr:`variables` (the wrapped optimizer's, then the transform's)."""
        variables = self.variables
        if not self.built or len(weights) != len(variables):
            raise ValueError(
                f"{self.name}.set_weights needs a built optimizer and one array per variable: "
                f"got {len(weights)} arrays for {len(variables)} variables (built={self.built})."
            )
        for variable, weight in zip(variables, weights):
            if tuple(variable.shape) != tuple(np.shape(weight)):
                raise ValueError(
                    f"{self.name}.set_weights: shape {np.shape(weight)} for variable "
                    f"{getattr(variable, 'path', variable.name)} of shape {tuple(variable.shape)}."
                )
            variable.assign(weight)

    def build(self, var_list: Sequence[Any]) -> None:
        """Create the wrapped optimizer's and the transform's variables for ``var_list``."""
        var_list = list(var_list)
        if not self._optimizer.built:
            self._optimizer.build(var_list)
        if not self._transform_built:
            with tf.init_scope():
                self._transform.build(var_list)
            self._transform_built = True
        super().build(var_list)

    def apply_gradients(self, grads_and_vars: Any) -> Any:
        """Transform the (aggregated) gradients, then apply them; returns ``iterations``."""
        gvs = _validate_grads_and_vars(grads_and_vars)
        self.apply([g for g, _ in gvs], [v for _, v in gvs])
        return self.iterations

    def apply(self, grads: Sequence[Any], trainable_variables: Optional[Sequence[Any]] = None) -> None:
        """Keras' ``apply(grads, trainable_variables=None)`` with the transform in front."""
        grads = list(grads)
        if trainable_variables is None:
            if not self.built:
                raise ValueError(
                    f"{self.name}.apply(grads) without trainable_variables needs a built optimizer: "
                    "call build(model.trainable_variables) first, or pass trainable_variables."
                )
            trainable_variables = self._trainable_variables
        trainable_variables = list(trainable_variables)
        if len(grads) != len(trainable_variables):
            raise ValueError(
                f"{self.name}.apply got {len(grads)} gradients for {len(trainable_variables)} variables."
            )
        gvs = _validate_grads_and_vars(list(zip(grads, trainable_variables)))
        if not self.built:
            with tf.name_scope(self.name):
                self.build([v for _, v in gvs])
        self._apply_transformed(gvs)

    # --- the pipeline -------------------------------------------------------------
    def _apply_transformed(self, gvs: List[Any]) -> None:
        ctx = None
        if tf.distribute.has_strategy() and not tf.distribute.in_cross_replica_context():
            ctx = tf.distribute.get_replica_context()
        if ctx is not None:
            idx = [i for i, (g, _) in enumerate(gvs) if g is not None]
            reduced = self._all_reduce_sum_gradients([gvs[i] for i in idx])
            for i, (g, _) in zip(idx, reduced):
                gvs[i] = (g, gvs[i][1])
        scale = _loss_scale(self._optimizer)
        dynamic = _has_dynamic_scale(self._optimizer)
        if scale is not None:
            gvs = [(_scale(g, scale, divide=True), v) for g, v in gvs]
        if self.nonfinite == "raise":
            if _in_xla():
                raise ValueError(
                    f"{self.name}: nonfinite='raise' cannot raise inside an XLA-compiled step (XLA "
                    "drops CheckNumerics, so the step would be skipped silently). Compile with "
                    "jit_compile=False (Keras turns XLA on by default on GPUs), or use nonfinite='skip'."
                )
            gvs = _nonfinite.assert_finite(gvs)
        result = self._transform(gvs)
        out = list(result.grads_and_vars)
        self._write_summaries(result.stats)

        pred = None
        if self.nonfinite in ("skip", "raise") and not dynamic:
            # "raise": the checked gradients feed the predicate, so the check runs before
            # anything is applied, and a non-finite step could not be applied anyway.
            norm = result.stats.get("global_norm")
            grads = [g for g, _ in (gvs if self.nonfinite == "raise" else out)]
            pred = tf.math.is_finite(norm) if norm is not None and self.nonfinite == "skip" else _nonfinite.all_finite(grads)
        if result.skip is not None:
            keep = tf.logical_not(result.skip)
            pred = keep if pred is None else tf.logical_and(pred, keep)
        if scale is not None:
            out = [(_scale(g, scale, divide=False), v) for g, v in out]
        if ctx is not None and self._switch is None:
            out = [(_keep_on_first_replica(g, ctx), v) for g, v in out]

        def apply_fn(pairs: Sequence[Any]) -> None:
            pairs = list(pairs)
            self._optimizer.apply([g for g, _ in pairs], [v for _, v in pairs])

        switch = self._switch if self._switch is not None else _NullContext()
        with switch:
            if pred is None:
                apply_fn(out)
            elif ctx is not None and not tf.__internal__.distribute.strategy_supports_no_merge_call():
                _nonfinite.cross_replica_cond(pred, apply_fn, out)
            else:
                _nonfinite.apply_with_policy(apply_fn, out, "skip", finite=pred, name=self.name)

    def _write_summaries(self, stats: Dict[str, Any]) -> None:
        if not self.summaries or not stats:
            return
        if _in_xla():
            warnings.warn(
                f"{self.name}: summaries=True writes nothing inside an XLA-compiled step (XLA cannot "
                "compile summary ops); use ClipStatistics(...).result() or jit_compile=False.",
                stacklevel=3,
            )
            return
        step = self._optimizer.iterations
        for key in sorted(stats):
            # tf.summary.write + the "scalars" plugin metadata is what tf.summary.scalar writes.
            tf.summary.write(
                f"{self.name}/{key}", tf.cast(stats[key], tf.float32), step=step, metadata=_SCALAR_METADATA
            )

    # --- serialisation and checkpoints ---------------------------------------------
    def get_config(self) -> Dict[str, Any]:
        """The wrapped optimizer and the transform, serialised (state is in the variables)."""
        return {
            "name": self.name,
            "optimizer": keras.saving.serialize_keras_object(self._optimizer),
            "transform": serialize_transform(self._transform),
            "nonfinite": self.nonfinite,
            "summaries": self.summaries,
        }

    @classmethod
    def from_config(cls, config: Dict[str, Any], custom_objects: Optional[Dict[str, Any]] = None) -> "TransformedKerasOptimizer":
        """Rebuild the wrapper from :meth:`get_config`."""
        config = dict(config)
        optimizer = keras.saving.deserialize_keras_object(config.pop("optimizer"), custom_objects=custom_objects)
        transform = deserialize_transform(config.pop("transform"), custom_objects)
        return cls(optimizer, transform, **config)

    def _trackable_children(self, save_type: Any = "checkpoint", **kwargs: Any) -> Dict[str, Any]:
        children = dict(self._optimizer._trackable_children(save_type, **kwargs))
        if self._transform.variables:
            children[_TRANSFORM_CHECKPOINT_NAME] = self._transform
        return children

    def _lookup_dependency(self, name: str, cached_dependencies: Any = None) -> Any:
        inner = self.__dict__.get("_optimizer")
        if inner is None:  # during __init__: tracking of our own attributes
            return super()._lookup_dependency(name, cached_dependencies)
        if name == _TRANSFORM_CHECKPOINT_NAME:
            return self._transform
        return inner._lookup_dependency(name, cached_dependencies)

    @property
    def _deferred_dependencies(self) -> Any:
        inner = self.__dict__.get("_optimizer")
        if inner is None:  # during __init__: tracking of our own attributes
            return self._self_unconditional_deferred_dependencies
        return inner._deferred_dependencies

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} wrapping {self._optimizer!r}, transform {self._transform.name}>"


class _NullContext:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


__all__ = ["TransformedKerasOptimizer"]
