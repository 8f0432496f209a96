"""Carry a TF1 optimizer's state from an old checkpoint into the equivalent Keras optimizer.

TFC104 turns ``tf.compat.v1.train.AdamOptimizer(...)`` (and Momentum, Adagrad, Adadelta,
Ftrl, GradientDescent) in eager code into its Keras class. The optimizer's state then lives
under other checkpoint keys (``.OPTIMIZER_SLOT/optimizer/m`` -> ``optimizer/_variables/N``,
``optimizer/beta1_power`` -> ``optimizer/_iterations``), so restoring an old checkpoint
silently starts the Keras optimizer from zero. :func:`restore_v1_optimizer_state` reads the
old state and assigns it to the Keras optimizer's variables:

==============  =====================================  =======================================
Keras           TF1 slot -> Keras variable             conversion
==============  =====================================  =======================================
``Adam``        ``m`` -> momentum, ``v`` -> velocity    as is; ``iterations`` from ``beta1_power``
``SGD``         ``momentum`` -> momentum (momentum>0)   ``-learning_rate * accumulation``
``Adagrad``     ``accumulator`` -> accumulator          as is
``Adadelta``    ``accum`` / ``accum_update``            as is
``Ftrl``        ``accum`` / ``linear``                  as is
==============  =====================================  =======================================

Keras' SGD keeps ``momentum * m - lr * g`` where TF1's Momentum keeps ``momentum * a + g`` and
subtracts ``lr * a``: the same update for a constant learning rate, with ``m = -lr * a`` (the
Keras optimizer's learning rate at the restored step is used). Adam's ``iterations`` is the
number of steps TF1 applied, ``log(beta1_power) / log(beta1) - 1`` (``beta2_power`` when
``beta1_power`` has underflowed); the other optimizers take it from the checkpoint's global step.

Longer than ~400 lines because each optimizer's slot mapping and conversion is a short,
separately tested table entry, and they share the checkpoint reading and the error messages.
"""

from __future__ import annotations

import math
import os
import re
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from tfclip_compat._tf import is_keras_optimizer, tf

__all__ = ["restore_v1_optimizer_state"]

_v1 = tf.compat.v1
_OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
_VALUE_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"


class _Slot(NamedTuple):
    v1_name: str  # the TF1 slot name (``get_slot(var, name)``)
    keras_attr: str  # the Keras optimizer's list of per-variable state
    convert: Callable[[np.ndarray, Any], np.ndarray]


class _Spec(NamedTuple):
    v1_class: str
    slots: Tuple[_Slot, ...]
    make_v1: Callable[[Any], Any]  # a v1 optimizer of the class, for slot creation/naming


def _same(value: np.ndarray, _: Any) -> np.ndarray:
    return value


def _momentum_to_keras(accumulation: np.ndarray, keras_opt: Any) -> np.ndarray:
    lr = float(keras_opt.learning_rate)
    return (-np.float32(lr) * accumulation).astype(accumulation.dtype)


def _spec(keras_opt: Any) -> Optional[_Spec]:
    """The TF1 counterpart of ``keras_opt``'s class, or None."""
    k = tf.keras.optimizers
    if type(keras_opt) is k.Adam:
        if getattr(keras_opt, "amsgrad", False):
            raise ValueError("Keras Adam(amsgrad=True) has no TF1 counterpart: TF1's AdamOptimizer had no AMSGrad state.")
        return _Spec(
            "AdamOptimizer",
            (_Slot("m", "_momentums", _same), _Slot("v", "_velocities", _same)),
            lambda o: _v1.train.AdamOptimizer(beta1=float(o.beta_1), beta2=float(o.beta_2)),
        )
    if isinstance(keras_opt, k.SGD) and float(keras_opt.momentum) == 0.0:
        return _Spec("GradientDescentOptimizer", (), lambda o: _v1.train.GradientDescentOptimizer(0.1))
    if isinstance(keras_opt, k.SGD):
        return _Spec(
            "MomentumOptimizer",
            (_Slot("momentum", "momentums", _momentum_to_keras),),
            lambda o: _v1.train.MomentumOptimizer(0.1, float(o.momentum), use_nesterov=bool(o.nesterov)),
        )
    two = {
        k.Adagrad: ("AdagradOptimizer", (("accumulator", "_accumulators"),)),
        k.Adadelta: ("AdadeltaOptimizer", (("accum", "_accumulated_grads"), ("accum_update", "_accumulated_delta_vars"))),
        k.Ftrl: ("FtrlOptimizer", (("accum", "_accumulators"), ("linear", "_linears"))),
    }
    for cls, (v1_class, slots) in two.items():
        if isinstance(keras_opt, cls):
            make = getattr(_v1.train, v1_class)
            return _Spec(v1_class, tuple(_Slot(a, b, _same) for a, b in slots), lambda o, make=make: make(0.1))
    return None


def _unwrap(optimizer: Any) -> Tuple[Any, _Spec]:
    """The supported Keras optimizer inside tfclip_compat's wrappers or a LossScaleOptimizer."""
    for _ in range(8):
        spec = _spec(optimizer) if is_keras_optimizer(optimizer) else None
        if spec is not None:
            return optimizer, spec
        inner = [getattr(optimizer, a, None) for a in ("inner_optimizer", "optimizer", "_optimizer")]
        inner = [c for c in inner if c is not None and c is not optimizer and is_keras_optimizer(c)]
        if not inner:
            break
        optimizer = inner[0]
    if not is_keras_optimizer(optimizer):
        raise TypeError(
            "restore_v1_optimizer_state: optimizer must be a Keras optimizer (or a tfclip_compat / "
            f"LossScaleOptimizer wrapper of one), got {type(optimizer).__name__}."
        )
    raise TypeError(
        f"restore_v1_optimizer_state: no TF1 optimizer state maps to a Keras {type(optimizer).__name__}; "
        "supported: Adam, SGD (GradientDescent / Momentum), Adagrad, Adadelta, Ftrl — the classes "
        "TFC104 produces. (TFC104 keeps RMSProp as tf.compat.v1.train.RMSPropOptimizer.)"
    )


def _built(keras_opt: Any) -> bool:
    """Whether ``keras_opt`` has its state variables (Keras 3: ``built``; Keras 2: ``_built``)."""
    built = getattr(keras_opt, "built", None)
    return bool(getattr(keras_opt, "_built", False) if built is None else built)


def _variable_index(keras_opt: Any, var: Any) -> int:
    """The position of ``var``'s state in ``keras_opt``'s per-variable lists (Keras 3 or 2)."""
    if hasattr(keras_opt, "_get_variable_index"):
        return keras_opt._get_variable_index(var)
    return keras_opt._index_dict[keras_opt._var_key(var)]  # Keras 2 (TF 2.15)


def _checkpoint_path(checkpoint: Any) -> str:
    path = os.fspath(checkpoint)
    if os.path.isdir(path):
        latest = tf.train.latest_checkpoint(path)
        if latest is None:
            raise FileNotFoundError(
                f"restore_v1_optimizer_state: no checkpoint in directory {path!r} (no 'checkpoint' "
                "file): pass the checkpoint prefix, e.g. 'ckpt/model.ckpt-1000'."
            )
        return latest
    if tf.io.gfile.exists(path + ".index") or tf.io.gfile.exists(path):
        return path
    raise FileNotFoundError(
        f"restore_v1_optimizer_state: checkpoint {path!r} not found: pass the prefix that "
        "tf.train.Checkpoint.save / Saver.save returned (the path without .index), or its directory."
    )


def _plain_variable(var: Any) -> Any:
    """The tf.Variable a TF1 optimizer can slot (a Keras variable's ``.value``)."""
    return var.value if hasattr(var, "value") and not isinstance(var, tf.Variable) else var


def _name(var: Any) -> str:
    name = getattr(var, "path", None) or getattr(var, "name", None) or ""
    return re.sub(r":\d+$", "", str(name))


def _named(var_list: Union[Sequence[Any], Mapping[str, Any]]) -> List[Tuple[str, Any]]:
    if isinstance(var_list, Mapping):
        pairs = [(str(k), v) for k, v in var_list.items()]
    else:
        pairs = [(_name(v), v) for v in var_list]
        names = [n for n, _ in pairs]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(
                f"restore_v1_optimizer_state: several variables are named {dupes}; pass var_list as a "
                "dict {name in the old program: variable}."
            )
    if not pairs:
        raise ValueError("restore_v1_optimizer_state: var_list is empty; pass the variables the optimizer trains.")
    return pairs


def _read_object_based(
    reader: Any, path: str, spec: _Spec, keras_opt: Any, named: List[Tuple[str, Any]],
    objects: Mapping[str, Any], optimizer_key: str,
) -> Tuple[Dict[int, Dict[str, np.ndarray]], Dict[str, float]]:
    """Slots by position in ``named`` and non-slot values, via a throwaway TF1 optimizer that TF's
    own object-graph matching restores (slots attach to the variables of ``objects``)."""
    if not objects:
        raise ValueError(
            "restore_v1_optimizer_state: this is an object-based checkpoint (tf.train.Checkpoint): pass "
            "objects= with the other objects it was saved with, e.g. objects={'model': model}, so its "
            "slots can be matched to your variables. They are restored too."
        )
    if optimizer_key in objects:
        raise ValueError(f"restore_v1_optimizer_state: objects= must not contain the optimizer key {optimizer_key!r}.")
    if spec.slots and not any(
        k.startswith(optimizer_key + "/") or f"/.OPTIMIZER_SLOT/{optimizer_key}/" in k
        for k in reader.get_variable_to_shape_map()
    ):
        raise ValueError(
            f"restore_v1_optimizer_state: checkpoint {path!r} holds no optimizer under {optimizer_key!r}; "
            "pass optimizer_key= (the keyword the optimizer had in tf.train.Checkpoint(...))."
        )
    tmp = spec.make_v1(keras_opt)
    roots = dict(objects)
    roots[optimizer_key] = tmp
    tf.train.Checkpoint(**roots).restore(path).expect_partial()
    slots: Dict[int, Dict[str, np.ndarray]] = {}
    for i, (_, var) in enumerate(named):
        found = {}
        for slot in spec.slots:
            value = tmp.get_slot(_plain_variable(var), slot.v1_name)
            if value is not None:
                found[slot.v1_name] = value.numpy()
        slots[i] = found
    non_slots = {}
    for name in ("beta1_power", "beta2_power"):
        key = f"{optimizer_key}/{name}{_VALUE_SUFFIX}"
        if reader.has_tensor(key):
            non_slots[name] = float(reader.get_tensor(key))
    return slots, non_slots


def _v1_slot_op_names(spec: _Spec, keras_opt: Any, v1_name: Optional[str]) -> Tuple[Dict[str, str], str]:
    """{TF1 slot name: suffix in Saver keys} (``{"m": "Adam", "v": "Adam_1"}``), found by letting the
    TF1 optimizer create its slots in a scratch graph, and the optimizer's name."""
    with tf.Graph().as_default():
        probe = _v1.get_variable("probe", shape=[1], dtype=tf.float32)
        opt = spec.make_v1(keras_opt)
        if v1_name is not None:
            opt._name = v1_name
        opt._create_slots([probe])
        suffixes = {}
        for slot in spec.slots:
            var = opt.get_slot(probe, slot.v1_name)
            suffixes[slot.v1_name] = var.op.name[len("probe/"):]
        return suffixes, opt.get_name()


def _find_key(keys: Sequence[str], name: str) -> Optional[str]:
    """``name`` itself, else the one key that ends with ``/name`` (a scope prefix)."""
    if name in keys:
        return name
    matches = [k for k in keys if k.endswith("/" + name)]
    if len(matches) > 1:
        raise ValueError(
            f"restore_v1_optimizer_state: {len(matches)} checkpoint keys end with {name!r} "
            f"({sorted(matches)[:3]}...); pass var_list as a dict with the full names."
        )
    return matches[0] if matches else None


def _read_name_based(
    reader: Any, spec: _Spec, keras_opt: Any, named: List[Tuple[str, Any]], v1_name: Optional[str]
) -> Tuple[Dict[int, Dict[str, np.ndarray]], Dict[str, float]]:
    """Slots and beta powers from Saver keys: ``<var>/<OptimizerName>[_N]``, ``[scope/]beta1_power``."""
    keys = sorted(reader.get_variable_to_shape_map())
    suffixes, _ = _v1_slot_op_names(spec, keras_opt, v1_name) if spec.slots else ({}, "")
    slots: Dict[int, Dict[str, np.ndarray]] = {}
    for i, (name, _) in enumerate(named):
        found = {}
        for slot in spec.slots:
            key = _find_key(keys, f"{name}/{suffixes[slot.v1_name]}")
            if key is not None:
                found[slot.v1_name] = reader.get_tensor(key)
        slots[i] = found
    non_slots = {}
    if spec.v1_class == "AdamOptimizer":
        for power in ("beta1_power", "beta2_power"):
            key = _find_key(keys, power)
            if key is not None:
                non_slots[power] = float(reader.get_tensor(key))
    return slots, non_slots


def _step_in_checkpoint(reader: Any, object_based: bool) -> Optional[int]:
    keys = reader.get_variable_to_shape_map()
    candidates = (
        [f"global_step{_VALUE_SUFFIX}", f"step{_VALUE_SUFFIX}"] if object_based else ["global_step"]
    )
    for key in candidates:
        if key in keys and keys[key] == []:
            return int(reader.get_tensor(key))
    return None


def _adam_steps(non_slots: Mapping[str, float], keras_opt: Any) -> Optional[int]:
    """Steps TF1's Adam applied: ``beta1_power = beta1 ** (n + 1)`` (beta2 if beta1's underflowed)."""
    for power, beta in (("beta1_power", float(keras_opt.beta_1)), ("beta2_power", float(keras_opt.beta_2))):
        value = non_slots.get(power)
        if value is None or not value > 1e-30 or not 0.0 < beta < 1.0:
            continue
        exact = math.log(value) / math.log(beta) - 1.0
        steps = int(round(exact))
        if steps < 0 or abs(exact - steps) > 0.25:
            raise ValueError(
                f"restore_v1_optimizer_state: the checkpoint's {power}={value!r} is not a power of the "
                f"Keras optimizer's {'beta_1' if power == 'beta1_power' else 'beta_2'}={beta!r}: build "
                "the Keras Adam with the TF1 optimizer's beta1/beta2 (TFC104 does), or pass iterations=."
            )
        return steps
    return None


def restore_v1_optimizer_state(
    optimizer: Any,
    checkpoint: Any,
    var_list: Union[Sequence[Any], Mapping[str, Any]],
    *,
    objects: Optional[Mapping[str, Any]] = None,
    optimizer_key: str = "optimizer",
    v1_name: Optional[str] = None,
    global_step: Any = None,
    iterations: Optional[int] = None,
    allow_missing: bool = False,
) -> Dict[str, Any]:
    """Restore a TF1 optimizer's state from an old checkpoint into its Keras equivalent.

    For programs migrated by TFC104 (``tf.compat.v1.train.XOptimizer`` -> ``keras.optimizers.X``),
    which would otherwise resume with zero slots and ``iterations == 0``::

        opt = tf.keras.optimizers.Adam(learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-08)
        tfclip_compat.restore_v1_optimizer_state(
            opt, "ckpt/ckpt-5", model.trainable_variables, objects={"model": model})

    Reads both checkpoint formats: object-based (``tf.train.Checkpoint(optimizer=opt, ...)``:
    pass ``objects=`` — the checkpoint's other objects, which are restored as well, since the
    slots are matched to your variables through them) and name-based (``Saver``: slots are
    ``<variable name>/<optimizer name>[_N]``; variable names are ``var.path`` / ``var.name``, or
    the keys of a ``var_list`` dict). Builds the Keras optimizer for ``var_list`` if needed, then
    assigns each slot (see the module docstring for the conversions) and ``iterations``.

    Args:
      optimizer: the Keras optimizer (``Adam``, ``SGD``, ``Adagrad``, ``Adadelta``, ``Ftrl``), or
        a tfclip_compat / ``LossScaleOptimizer`` wrapper of one. Hyper-parameters must be the TF1
        optimizer's (TFC104 writes them out); Adam's betas are checked against the beta powers.
      checkpoint: a checkpoint prefix (``".../ckpt-5"``) or a directory (its latest checkpoint).
      var_list: the variables the optimizer trains, in any order; a dict maps each variable's
        name in the old program to it (name-based checkpoints, or ambiguous names).
      objects: object-based checkpoints: the other keyword arguments of the old program's
        ``tf.train.Checkpoint`` (e.g. ``{"model": model, "step": global_step}``).
      optimizer_key: the optimizer's keyword in that ``tf.train.Checkpoint`` (``"optimizer"``).
      v1_name: name-based checkpoints: the TF1 optimizer's ``name=`` if not its default.
      global_step: optional variable that receives the checkpoint's global step (name-based key
        ``global_step``; object-based key ``global_step`` or ``step``).
      iterations: the Keras ``iterations`` to set; default: Adam's beta powers, else the
        checkpoint's global step, else unchanged.
      allow_missing: keep the Keras initial state for variables the checkpoint has no slots for
        (TF1 created slots only for variables that got a gradient) instead of raising.

    Returns:
      A report: ``{"format": "object" | "name", "v1_optimizer": "AdamOptimizer", "iterations":
      int or None, "global_step": int or None, "restored": [names], "missing": [names]}``.

    Raises:
      TypeError: ``optimizer`` is not one of the supported Keras optimizers.
      FileNotFoundError: no checkpoint at ``checkpoint``.
      ValueError: missing state (unless ``allow_missing``), an object-based checkpoint without
        ``objects``, ambiguous variable names, or betas that do not match the beta powers.
      RuntimeError: called in graph mode or inside a ``tf.function``.
    """
    if not tf.executing_eagerly():
        raise RuntimeError(
            "restore_v1_optimizer_state runs eagerly (it assigns values): call it before training, "
            "outside tf.function and tf.compat.v1 graphs."
        )
    keras_opt, spec = _unwrap(optimizer)
    path = _checkpoint_path(checkpoint)
    reader = tf.train.load_checkpoint(path)
    named = _named(var_list)
    variables = [v for _, v in named]
    if not _built(keras_opt):
        keras_opt.build(variables)
    object_based = reader.has_tensor(_OBJECT_GRAPH_KEY)
    if object_based:
        slots, non_slots = _read_object_based(
            reader, path, spec, keras_opt, named, objects or {}, optimizer_key
        )
    else:
        slots, non_slots = _read_name_based(reader, spec, keras_opt, named, v1_name)

    wanted = {s.v1_name for s in spec.slots}
    missing = [named[i][0] for i, found in slots.items() if set(found) != wanted]
    if missing and not allow_missing:
        raise ValueError(
            f"restore_v1_optimizer_state: checkpoint {path!r} has no {spec.v1_class} state for "
            f"{missing}. Check var_list (names: {'object graph' if object_based else 'Saver keys'}), "
            "optimizer_key / v1_name, or pass allow_missing=True to keep their initial Keras state "
            "(TF1 created slots only for variables that received a gradient)."
        )

    step = _step_in_checkpoint(reader, object_based)
    if iterations is None and spec.v1_class == "AdamOptimizer":
        iterations = _adam_steps(non_slots, keras_opt)
    if iterations is None:
        iterations = step
    if iterations is not None:
        keras_opt.iterations.assign(int(iterations))
    if global_step is not None and step is not None:
        global_step.assign(step)

    restored = []
    for i, (name, var) in enumerate(named):
        if set(slots[i]) != wanted:
            continue
        index = _variable_index(keras_opt, var)
        for slot in spec.slots:
            state = getattr(keras_opt, slot.keras_attr)[index]
            value = slot.convert(np.asarray(slots[i][slot.v1_name]), keras_opt)
            if tuple(value.shape) != tuple(state.shape):
                raise ValueError(
                    f"restore_v1_optimizer_state: {name!r} has shape {tuple(state.shape)} but its "
                    f"checkpointed {slot.v1_name!r} slot has {tuple(value.shape)}: var_list does not "
                    "match the checkpoint."
                )
            state.assign(value)
        restored.append(name)
    return {
        "format": "object" if object_based else "name",
        "v1_optimizer": spec.v1_class,
        "iterations": None if iterations is None else int(iterations),
        "global_step": step,
        "restored": restored,
        "missing": missing,
    }
