"""A real Keras optimizer that transforms the cross-replica aggregated gradient (``model.fit`` ready).

:class:`TransformedKerasOptimizer` is a ``keras.optimizers.Optimizer`` subclass wrapping any
Keras optimizer; ``tfclip_compat.clip_gradients_by_norm(keras_opt, c)`` and
``wrap_optimizer(keras_opt, transform)`` return it, so ``model.compile(optimizer=...)``,
``model.save`` / ``keras.models.load_model`` and ``tf.train.Checkpoint`` accept it.

Keras' own ``clipnorm`` / ``global_clipnorm`` run inside the wrapped optimizer's ``apply``,
per replica, *before* its all-reduce: they clip each replica's partial gradient. Per replica,
this wrapper instead:

1. all-reduces (SUMs) the gradients with Keras' own method, so every replica holds the
   aggregated gradient, and divides by the wrapped optimizer's loss scale if it has one;
2. ``nonfinite="raise"``: checks them (before anything, transform state included, changes);
3. runs the transform (identical inputs on every replica: identical outputs and state);
4. applies the result with the wrapped optimizer, its own all-reduce switched off
   (``_keras_support``: one gradient all-reduce per step, as plain Keras); for optimizer
   classes whose aggregation cannot be switched off, replica 0 passes the result and the
   others zeros, so that their SUM is the result exactly (a second all-reduce per step).

A skip (the transform's ``skip``, ``nonfinite="skip"``, and ``"raise"`` as a second guard)
tests what is *applied*; it is a ``tf.cond`` built in cross-replica context when the strategy
uses ``merge_call`` (as Keras' ``LossScaleOptimizer`` does), a plain ``tf.cond`` otherwise;
the predicate comes from aggregated gradients, so every replica agrees.

Mixed precision (``docs/keras.md``): ``LossScaleOptimizer(wrapper)`` is what ``model.compile``
builds under ``mixed_float16``. A wrapper *around* a ``LossScaleOptimizer`` unscales before
the transform and rescales after it (exact for power-of-two scales, the default), always
lets non-finite steps reach the ``LossScaleOptimizer`` (it must see them to lower its scale),
refuses ``nonfinite="raise"`` and a second ``LossScaleOptimizer`` around it.
"""

from __future__ import annotations

import warnings
from typing import Any, Dict, List, Optional, Sequence

import keras
import numpy as np

from tfclip_compat import _keras_support as ks
from tfclip_compat import _nonfinite
from tfclip_compat._pipeline import _keep_on_first_replica, _validate_grads_and_vars
from tfclip_compat._pipeline import _SCALAR_METADATA, _TRANSFORM_CHECKPOINT_NAME
from tfclip_compat._tf import tf
from tfclip_compat._transforms.base import GradientTransform
from tfclip_compat._transform_config import deserialize_transform, serialize_transform

# Constructor arguments of keras.optimizers.Optimizer that the wrapper accepts only at their
# defaults (get_config of older versions, or a generic caller, may pass them).
_BASE_DEFAULTS = {
    "learning_rate": None, "weight_decay": None, "clipnorm": None, "clipvalue": None,
    "global_clipnorm": None, "use_ema": False, "ema_momentum": 0.99,
    "ema_overwrite_frequency": None, "loss_scale_factor": None, "gradient_accumulation_steps": None,
}


@keras.saving.register_keras_serializable(package="tfclip_compat")
class TransformedKerasOptimizer(ks.KerasOptimizer):
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

    _tfclip_keras_wrapper = True

    def __init__(
        self,
        optimizer: Any,
        transform: GradientTransform,
        nonfinite: str = "propagate",
        summaries: bool = False,
        name: Optional[str] = None,
        **kwargs: Any,
    ) -> None:
        ks.check_keras_version()
        if not isinstance(optimizer, ks.KerasOptimizer):
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
        if nonfinite == "raise" and ks.has_dynamic_scale(optimizer):
            raise ValueError(
                "nonfinite='raise' cannot wrap a LossScaleOptimizer: its scaled gradients overflow "
                "by design (that is how it finds its scale). Use nonfinite='propagate' (the "
                "LossScaleOptimizer skips those steps) or put the LossScaleOptimizer outside: "
                "LossScaleOptimizer(clip_gradients_by_norm(optimizer, clip_norm, nonfinite='raise'))."
            )
        if ks.KERAS_MAJOR < 3 and ks.has_dynamic_scale(optimizer):
            raise ValueError(
                "On Keras 2 (TensorFlow 2.15) the wrapper cannot wrap a LossScaleOptimizer (not "
                "tested there); put the LossScaleOptimizer outside, or upgrade to Keras 3."
            )
        # The wrapped optimizer's learning rate and iterations are the wrapper's: a callable
        # learning rate creates no variable of its own.
        if ks.KERAS_MAJOR < 3:
            # Keras 2's base takes no learning rate; its own iteration counter stays unused
            # (``iterations`` and the checkpointed children are the wrapped optimizer's).
            super().__init__(name=name or "Transform" + type(optimizer).__name__)
        else:
            super().__init__(learning_rate=lambda: 0.0, name=name or "Transform" + type(optimizer).__name__)
            self._untrack_variable(self._iterations)
        self._optimizer = optimizer
        self._transform = transform
        self.nonfinite = nonfinite
        self.summaries = bool(summaries)
        self._switch = ks.aggregation_switch(optimizer)
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
        return None if inner is None else ks.loss_scale(inner)

    @loss_scale_factor.setter
    def loss_scale_factor(self, value: Any) -> None:
        inner = self.__dict__.get("_optimizer")
        if inner is None:  # keras.optimizers.Optimizer.__init__ sets None
            return
        if ks.has_dynamic_scale(inner):
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
        if not ks.is_built(self) or len(weights) != len(variables):
            raise ValueError(
                f"{self.name}.set_weights needs a built optimizer and one array per variable: "
                f"got {len(weights)} arrays for {len(variables)} variables (built={ks.is_built(self)})."
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
        if not ks.is_built(self._optimizer):
            self._optimizer.build(var_list)
        if not self._transform_built:
            with tf.init_scope():
                self._transform.build(var_list)
            self._transform_built = True
        super().build(var_list)
        if ks.KERAS_MAJOR < 3:
            self._built = True

    def apply_gradients(
        self, grads_and_vars: Any, name: Optional[str] = None, skip_gradients_aggregation: bool = False,
        **kwargs: Any,
    ) -> Any:
        """Transform the (aggregated) gradients, then apply them; returns ``iterations``.

        ``name``, ``skip_gradients_aggregation`` and ``experimental_aggregate_gradients`` are
        Keras 2's (TF 2.15): with ``skip_gradients_aggregation=True`` the caller has summed the
        gradients across replicas already (Keras 2's LossScaleOptimizer does).
        """
        gvs = _validate_grads_and_vars(grads_and_vars)
        if ks.KERAS_MAJOR < 3:
            aggregate = not skip_gradients_aggregation and kwargs.pop("experimental_aggregate_gradients", True)
            if not ks.is_built(self):
                with tf.init_scope(), tf.name_scope(name or self.name):
                    self.build([v for _, v in gvs])
            self._apply_transformed(gvs, aggregate=bool(aggregate))
            return self.iterations
        self.apply([g for g, _ in gvs], [v for _, v in gvs])
        return self.iterations

    def apply(self, grads: Sequence[Any], trainable_variables: Optional[Sequence[Any]] = None) -> None:
        """Keras' ``apply(grads, trainable_variables=None)`` with the transform in front."""
        grads = list(grads)
        if trainable_variables is None:
            if not ks.is_built(self):
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
        if not ks.is_built(self):
            with tf.name_scope(self.name):
                self.build([v for _, v in gvs])
        self._apply_transformed(gvs)

    # --- the pipeline -------------------------------------------------------------
    def _apply_transformed(self, gvs: List[Any], aggregate: bool = True) -> None:
        ctx = None
        if tf.distribute.has_strategy() and not tf.distribute.in_cross_replica_context():
            ctx = tf.distribute.get_replica_context()
        if ctx is not None and aggregate:
            idx = [i for i, (g, _) in enumerate(gvs) if g is not None]
            if ks.KERAS_MAJOR < 3:
                reduced = self._optimizer.aggregate_gradients([gvs[i] for i in idx])
            else:
                reduced = self._all_reduce_sum_gradients([gvs[i] for i in idx])
            for i, (g, _) in zip(idx, reduced):
                gvs[i] = (g, gvs[i][1])
        scale = ks.loss_scale(self._optimizer)
        if scale is not None:
            gvs = [(ks.scale_gradient(g, scale, divide=True), v) for g, v in gvs]
        if self.nonfinite == "raise":
            if ks.in_xla():
                raise ValueError(
                    f"{self.name}: nonfinite='raise' cannot raise inside an XLA-compiled step (XLA "
                    "drops CheckNumerics, so the step would be skipped silently). Compile with "
                    "jit_compile=False (Keras turns XLA on by default on GPUs), or use nonfinite='skip'."
                )
            gvs = _nonfinite.assert_finite(gvs)  # before the transform updates any state
        result = self._transform(gvs)
        out = list(result.grads_and_vars)
        if self.nonfinite == "raise":
            out = _nonfinite.assert_finite(out)  # what a transform made of finite gradients
        self._write_summaries(result.stats)
        pred = self._apply_predicate(out, result.skip)
        if scale is not None:
            out = [(ks.scale_gradient(g, scale, divide=False), v) for g, v in out]
        if ctx is not None and self._switch is None and ks.KERAS_MAJOR >= 3:
            out = [(_keep_on_first_replica(g, ctx), v) for g, v in out]

        def apply_fn(pairs: Sequence[Any]) -> None:
            pairs = list(pairs)
            if ks.KERAS_MAJOR < 3:
                # Keras 2: the gradients are aggregated already; skip_gradients_aggregation
                # stops the wrapped optimizer from summing them across replicas again.
                self._optimizer.apply_gradients(pairs, skip_gradients_aggregation=True)
                return
            self._optimizer.apply([g for g, _ in pairs], [v for _, v in pairs])

        with self._switch if self._switch is not None else ks.NoSwitch():
            if pred is None:
                apply_fn(out)
            elif ctx is not None and not tf.__internal__.distribute.strategy_supports_no_merge_call():
                _nonfinite.cross_replica_cond(pred, apply_fn, out)
            else:
                _nonfinite.apply_with_policy(apply_fn, out, "skip", finite=pred, name=self.name)

    def _apply_predicate(self, out: List[Any], skip: Any) -> Any:
        """When to apply ``out`` (None: always), from what is applied, not from the stats."""
        keep = None if skip is None else tf.logical_not(skip)
        if ks.has_dynamic_scale(self._optimizer):
            # Non-finite steps go to the LossScaleOptimizer, whatever the policy or the
            # transform says: it skips them itself and must see them to lower its scale.
            if keep is None:
                return None
            return tf.logical_or(keep, tf.logical_not(_nonfinite.all_finite([g for g, _ in out])))
        if self.nonfinite == "propagate":
            return keep
        finite = _nonfinite.all_finite([g for g, _ in out])
        return finite if keep is None else tf.logical_and(finite, keep)

    def _write_summaries(self, stats: Dict[str, Any]) -> None:
        if not self.summaries or not stats:
            return
        if ks.in_xla():
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
    def from_config(
        cls, config: Dict[str, Any], custom_objects: Optional[Dict[str, Any]] = None
    ) -> "TransformedKerasOptimizer":
        """Rebuild the wrapper from :meth:`get_config`."""
        config = dict(config)
        optimizer = keras.saving.deserialize_keras_object(
            config.pop("optimizer"), custom_objects=custom_objects
        )
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
        return (
            f"<{type(self).__name__} {self.name} wrapping {self._optimizer!r}, "
            f"transform {self._transform.name}>"
        )


__all__ = ["TransformedKerasOptimizer"]
