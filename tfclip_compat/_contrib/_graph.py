"""Graph helpers the contrib drop-ins share: TF 1.15's ``with_dependencies``, variable names, and
the default variable list (``tf.compat.v1.trainable_variables()``) that also works in ``tf.function``."""

from __future__ import annotations

from typing import Any, List, Sequence

from tfclip_compat._tf import tf

_v1 = tf.compat.v1

__all__ = ["default_trainable_variables", "var_name", "with_dependencies"]


def with_dependencies(dependencies: Sequence[Any], output_tensor: Any) -> Any:
    """Return ``tf.identity(output_tensor)`` run after ``dependencies`` (TF's with_dependencies)."""
    with _v1.name_scope(None, "control_dependency", list(dependencies) + [output_tensor]) as name:
        with tf.control_dependencies(dependencies):
            return tf.identity(output_tensor, name=name)


def var_name(var: Any) -> str:
    """Return a readable name for a variable in graph or eager mode."""
    try:
        return str(var.op.name)
    except (AttributeError, ValueError):
        return str(getattr(var, "name", var))


def _creation_order(var: Any) -> int:
    """The creation counter TF puts at the end of an eager variable's unique id (``kernel_7``)."""
    try:
        return int(str(var._unique_id).rsplit("_", 1)[1])
    except (AttributeError, IndexError, ValueError):
        return -1


def default_trainable_variables() -> List[Any]:
    """TF 1.15's default variable list, ``tf.compat.v1.trainable_variables()``, in TF 2 too.

    In a graph (``tf.compat.v1`` mode) that is the ``TRAINABLE_VARIABLES`` collection, in
    creation order. Inside a ``tf.function`` the function graph's collection misses every
    variable created outside it (Keras layers, ``tf.Variable``, a model built before the
    first call), so the list is that collection (plus the enclosing graphs') followed by the
    trainable variables the function has read so far, in creation order.
    """
    graph = tf.compat.v1.get_default_graph()
    found: List[Any] = []
    seen = set()

    def add(v: Any) -> None:
        if id(v) not in seen:
            seen.add(id(v))
            found.append(v)

    g = graph
    chain = []
    while g is not None:
        chain.append(g)
        g = getattr(g, "outer_graph", None)
    for g in reversed(chain):
        for v in g.get_collection(tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES):
            add(v)
    watched = getattr(graph, "_watched_variables", None)
    if watched is not None:
        for v in sorted((v for v in watched if getattr(v, "trainable", False)), key=_creation_order):
            add(v)
    return found
