"""Keras 3 internals the Keras wrapper (``_keras_optimizer``) relies on, in one place.

* Aggregation. A Keras 3 optimizer (TF backend) SUMs the gradients across replicas in
  ``_backend_update_step`` -> ``_all_reduce_sum_gradients``, after its own per-replica
  clipping. The wrapper all-reduces first, transforms, then must stop the wrapped optimizer
  from aggregating a second time: :func:`aggregation_switch` replaces that method *on the
  instance* by an :class:`AggregationSwitch` that passes gradients through while the wrapper
  is applying (``with switch:``) and calls Keras' method otherwise, so the optimizer used
  directly still aggregates. The switch is a counter, not a thread-local: MirroredStrategy
  runs replicas in threads, and ``LossScaleOptimizer`` re-enters them from a ``merge_call``.
  A class that overrides one of :data:`AGGREGATION_METHODS` (e.g. ``MultiOptimizer``) may
  aggregate some other way: no switch (None) and the wrapper uses its fallback.
* Loss scaling: the factor by which the wrapped optimizer expects its gradients to be scaled
  (``LossScaleOptimizer.dynamic_scale``, or ``loss_scale_factor``), looked through nested
  wrappers.
* XLA: whether the code being traced is XLA-compiled (summary ops and CheckNumerics are not).

A wrapper class marks itself with ``_tfclip_keras_wrapper = True`` and exposes the wrapped
optimizer as ``.optimizer``; it aggregates through its own ``_all_reduce_sum_gradients``.
"""

from __future__ import annotations

import threading
from typing import Any, Optional

import keras

from tfclip_compat._tf import tf

#: The Keras major version: 2 on TF 2.15 (and with tf-keras), 3 on TF >= 2.16.
KERAS_MAJOR: int = int(keras.__version__.split(".")[0])
KerasOptimizer: Any = keras.optimizers.Optimizer
#: Keras 3: keras.optimizers.LossScaleOptimizer; Keras 2: keras.mixed_precision.LossScaleOptimizer.
LossScaleOptimizer: Any = getattr(keras.optimizers, "LossScaleOptimizer", None) or getattr(
    keras.mixed_precision, "LossScaleOptimizer"
)
#: The methods through which a Keras 3 optimizer reaches ``_all_reduce_sum_gradients``.
AGGREGATION_METHODS = ("apply", "apply_gradients", "_backend_apply_gradients", "_all_reduce_sum_gradients")


def check_keras_version() -> None:
    """Raise a RuntimeError naming the Keras version when it lacks the aggregation hook."""
    if KERAS_MAJOR == 2:
        # Keras 2 (TF 2.15): apply_gradients(..., skip_gradients_aggregation=True) is the hook.
        if not callable(getattr(KerasOptimizer, "aggregate_gradients", None)):
            raise RuntimeError(
                f"tfclip_compat's Keras wrapper needs Keras 3, or Keras 2.11+ optimizers (with "
                f"aggregate_gradients); found Keras {keras.__version__}. Upgrade: pip install -U keras"
            )
        return
    if not callable(getattr(KerasOptimizer, "_all_reduce_sum_gradients", None)):
        raise RuntimeError(
            f"tfclip_compat's Keras wrapper needs Keras >= 3.2 with the TensorFlow backend (its "
            f"optimizers all-reduce in _all_reduce_sum_gradients); found Keras {keras.__version__} "
            f"with backend {keras.backend.backend()!r}. Upgrade with: pip install -U keras"
        )


def is_wrapper(optimizer: Any) -> bool:
    """True for a tfclip_compat Keras wrapper."""
    return bool(getattr(type(optimizer), "_tfclip_keras_wrapper", False))


class AggregationSwitch:
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


class NoSwitch:
    """The context manager used when there is no switch."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def _aggregating_optimizer(optimizer: Any) -> Optional[Any]:
    """The optimizer whose ``_all_reduce_sum_gradients`` aggregates for ``optimizer``, or None."""
    if isinstance(optimizer, LossScaleOptimizer):
        return _aggregating_optimizer(optimizer.inner_optimizer)
    if is_wrapper(optimizer):
        return optimizer
    cls = type(optimizer)
    for method in AGGREGATION_METHODS:
        if getattr(cls, method, None) is not getattr(KerasOptimizer, method, None):
            return None
    return optimizer


def aggregation_switch(optimizer: Any) -> Optional[AggregationSwitch]:
    """Install (once per instance) and return the switch of ``optimizer``'s aggregation, or None.

    Keras 2 needs none (its ``apply_gradients`` takes ``skip_gradients_aggregation=True``): None.
    """
    if KERAS_MAJOR < 3:
        return None
    target = _aggregating_optimizer(optimizer)
    if target is None:
        return None
    switch = target.__dict__.get("_all_reduce_sum_gradients")
    if not isinstance(switch, AggregationSwitch):
        switch = AggregationSwitch(target._all_reduce_sum_gradients)
        # object.__setattr__: a plain instance attribute, invisible to Keras/TF tracking.
        object.__setattr__(target, "_all_reduce_sum_gradients", switch)
    return switch


def loss_scale(optimizer: Any) -> Optional[Any]:
    """The factor by which ``optimizer`` expects its gradients to be scaled (None: unscaled).

    Keras 2's LossScaleOptimizer takes unscaled gradients in ``apply_gradients``: None.
    """
    if KERAS_MAJOR < 3:
        return None
    if isinstance(optimizer, LossScaleOptimizer):
        # Its variable once built (the scale changes during training), its initial value before.
        scale = getattr(optimizer, "dynamic_scale", None)
        return optimizer.initial_scale if scale is None else scale
    return getattr(optimizer, "loss_scale_factor", None)


def is_built(optimizer: Any) -> bool:
    """Whether ``optimizer`` has created its state (Keras 3: ``built``; Keras 2: ``_built``)."""
    built = getattr(optimizer, "built", None)
    return bool(getattr(optimizer, "_built", False) if built is None else built)


def has_dynamic_scale(optimizer: Any) -> bool:
    """True when ``optimizer`` is, or wraps, a LossScaleOptimizer."""
    if is_wrapper(optimizer):
        return has_dynamic_scale(optimizer.optimizer)
    return isinstance(optimizer, LossScaleOptimizer)


def scale_gradient(g: Any, factor: Any, divide: bool) -> Any:
    """``g / factor`` or ``g * factor`` (None stays None; IndexedSlices keep their indices)."""
    if g is None:
        return None
    values = g.values if isinstance(g, tf.IndexedSlices) else g
    factor = tf.cast(factor, values.dtype)
    values = values / factor if divide else values * factor
    if isinstance(g, tf.IndexedSlices):
        return tf.IndexedSlices(values, g.indices, g.dense_shape)
    return values


def in_xla() -> bool:
    """True while tracing XLA-compiled code (``jit_compile=True``)."""
    from tensorflow.python.ops import control_flow_util  # noqa: PLC0415 - no public equivalent

    return bool(control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph()))


__all__ = [
    "AGGREGATION_METHODS",
    "AggregationSwitch",
    "KERAS_MAJOR",
    "KerasOptimizer",
    "LossScaleOptimizer",
    "NoSwitch",
    "aggregation_switch",
    "check_keras_version",
    "has_dynamic_scale",
    "in_xla",
    "is_built",
    "is_wrapper",
    "loss_scale",
    "scale_gradient",
]
