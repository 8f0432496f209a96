"""Serialise gradient transforms to JSON-able configs and back (for ``model.save`` / ``load_model``).

Keras saves an optimizer as ``get_config()`` and rebuilds it with ``from_config()``; the Keras
wrapper (:class:`~tfclip_compat._keras_optimizer.TransformedKerasOptimizer`) stores its
transform with :func:`serialize_transform` and rebuilds it with :func:`deserialize_transform`.
State (norm histories, EMAs, counters) is not part of the config: it is saved with the
optimizer's variables.

A config is ``{"class_name": ..., "config": {...}}``:

* the transforms exported by ``tfclip_compat`` are serialised from their constructor
  arguments, read back from the attributes of the same name (``ClipByGlobalNorm.clip_norm``,
  ``AutoClip.percentile``...); ``Chain``, ``PerGroup``, ``Select`` and ``ClipStatistics``
  serialise the transforms they hold, recursively;
* any other transform must define ``get_config()`` (and ``from_config(config)`` when its
  constructor does not take the config as keyword arguments) and be registered with
  ``keras.saving.register_keras_serializable()`` or passed in ``custom_objects``; otherwise
  serialising raises a TypeError that says so.

Scalar tensors are saved as numbers; a ``tf.Variable`` argument (e.g. a ``clip_norm`` changed
during training) is saved as ``{"variable": value, "dtype": ...}`` and recreated as a variable
(its current value is also saved with the optimizer's variables).
"""

from __future__ import annotations

import inspect
from typing import Any, Dict, Optional

import keras

from tfclip_compat._tf import tf
from tfclip_compat._transforms.base import GradientTransform

Config = Dict[str, Any]


def _builtin_classes() -> Dict[str, type]:
    """The GradientTransform classes exported by ``tfclip_compat`` (imported lazily: no cycle)."""
    import tfclip_compat  # noqa: PLC0415 - the package imports this module's users

    out = {}
    for name in tfclip_compat.__all__:
        obj = getattr(tfclip_compat, name)
        if isinstance(obj, type) and issubclass(obj, GradientTransform):
            out[obj.__name__] = obj
    return out


def _value_to_config(value: Any, where: str) -> Any:
    """A constructor argument as JSON-able data."""
    if isinstance(value, GradientTransform):
        return {"transform": serialize_transform(value)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_value_to_config(v, where) for v in value]
    if isinstance(value, tf.Variable):
        return {"variable": value.numpy().item(), "dtype": value.dtype.name}
    static = tf.get_static_value(value) if tf.is_tensor(value) else None
    if static is not None and getattr(static, "shape", None) == ():
        return static.item()
    raise TypeError(
        f"Cannot serialise {where} = {value!r}: only numbers, strings, None, tf.Variable, "
        "constant scalar tensors, GradientTransforms and lists of them can be saved."
    )


def _value_from_config(value: Any, custom_objects: Optional[Dict[str, Any]]) -> Any:
    if isinstance(value, dict) and set(value) == {"transform"}:
        return deserialize_transform(value["transform"], custom_objects)
    if isinstance(value, dict) and set(value) == {"variable", "dtype"}:
        return tf.Variable(value["variable"], dtype=value["dtype"], trainable=False)
    if isinstance(value, list):
        return [_value_from_config(v, custom_objects) for v in value]
    return value


def _patterns(compiled: Any) -> Any:
    return [p.pattern for p in compiled]


def _builtin_arguments(transform: GradientTransform) -> Config:
    """Constructor arguments of a ``tfclip_compat`` transform, read from its attributes."""
    cls = type(transform)
    kind = cls.__name__
    if kind in ("PerGroup", "Select"):
        groups = [
            (_patterns(p), t) for p, t in zip(transform._patterns, transform.group_transforms)
        ]
        if kind == "Select":
            exclude = groups[0][0] if len(groups) == 2 else None
            include = groups[-1][0]
            return {
                "transform": groups[-1][1],
                "include": None if include == [""] else include,
                "exclude": exclude,
                "name": transform.name,
            }
        return {"groups": groups, "default": transform.default, "name": transform.name}
    args: Config = {}
    for param in inspect.signature(cls.__init__).parameters.values():
        if param.name == "self":
            continue
        if not hasattr(transform, param.name):
            raise TypeError(
                f"Cannot serialise {kind}: its constructor argument {param.name!r} is not kept "
                f"as an attribute of the same name. Give {kind} a get_config() method."
            )
        value = getattr(transform, param.name)
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            args["*" + param.name] = list(value)
        else:
            args[param.name] = value
    return args


def serialize_transform(transform: GradientTransform) -> Config:
    """``{"class_name", "config"}`` for ``transform``; TypeError when it cannot be saved."""
    if not isinstance(transform, GradientTransform):
        raise TypeError(f"transform must be a GradientTransform, got {type(transform).__name__}.")
    cls = type(transform)
    builtin = _builtin_classes()
    if builtin.get(cls.__name__) is cls:
        args = _builtin_arguments(transform)
        class_name = cls.__name__
    elif callable(getattr(transform, "get_config", None)):
        args = dict(transform.get_config())
        class_name = keras.saving.get_registered_name(cls)
    else:
        raise TypeError(
            f"Cannot serialise the gradient transform {cls.__name__}: define get_config() (and "
            "from_config() if needed) and register the class with "
            "keras.saving.register_keras_serializable(), so that model.save() can store it."
        )
    config = {k: _value_to_config(v, f"{cls.__name__}.{k}") for k, v in args.items()}
    return {"class_name": class_name, "config": config}


def deserialize_transform(config: Config, custom_objects: Optional[Dict[str, Any]] = None) -> GradientTransform:
    """Rebuild a transform from :func:`serialize_transform`'s output."""
    try:
        class_name = config["class_name"]
        arguments = dict(config["config"])
    except (KeyError, TypeError):
        raise ValueError(
            f"Not a serialised gradient transform (expected {{'class_name', 'config'}}): {config!r}."
        ) from None
    builtin = _builtin_classes()
    cls = builtin.get(class_name)
    if cls is None:
        cls = (custom_objects or {}).get(class_name) or keras.saving.get_registered_object(
            class_name, custom_objects
        )
    if cls is None:
        raise ValueError(
            f"Unknown gradient transform {class_name!r}: register it with "
            "keras.saving.register_keras_serializable() or pass it in custom_objects."
        )
    values = {k: _value_from_config(v, custom_objects) for k, v in arguments.items()}
    if class_name not in builtin and hasattr(cls, "from_config"):
        return cls.from_config(values)
    positional = []
    for key in [k for k in values if k.startswith("*")]:
        positional = list(values.pop(key))
    if class_name == "PerGroup":
        values["groups"] = [tuple(g) for g in values["groups"]]
    return cls(*positional, **values)


__all__ = ["deserialize_transform", "serialize_transform"]
