"""libcst traversals without rebuilding the tree, for visitors (read-only passes).

libcst visits a node by calling its ``_visit_and_replace_children``, which visits each child
field in a fixed order and then *constructs a new node* from the results, even for a
``CSTVisitor`` that never changes anything (libcst's own comment: "TODO: provide traversal
where children are not replaced"). On training code, read-only passes (metadata providers:
scopes, qualified names, expression contexts; the analysis' own visitors and ``children``
walks) are most of a file's analysis time, and most of that is the rebuilding.

:func:`fast_visits` makes, for its duration, ``CSTNode.visit`` with a ``CSTVisitor`` and
``CSTNode.children`` skip the rebuilding. They make exactly the calls libcst makes, in the
same order: ``on_visit(node)``, then for each child field ``on_visit_attribute(node, name)``,
the children's visits, ``on_leave_attribute(node, name)``, and ``on_leave(node)``; the field
order of each node class is recorded from libcst itself (one run of its own
``_visit_and_replace_children`` with a recorder, the first time a class is seen).
Transformers are untouched (they rebuild by design). Classes whose field visits depend on
the values (f-string expressions visit ``format_spec`` only when present) keep libcst's
code. ``tests/test_fastvisit.py`` compares the full callback traces and ``children`` of both
paths on every fixture.
"""

from __future__ import annotations

import re
import weakref
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Optional, Tuple

import libcst as cst
from libcst import CSTVisitor
from libcst._batched_visitor import _BatchedCSTVisitor
from libcst._metadata_dependent import MetadataDependent
from libcst._typed_visitor import CSTTypedVisitorFunctions

__all__ = ["fast_visits"]

# Classes whose ``_visit_and_replace_children`` visits a field only for some values.
_VALUE_DEPENDENT = frozenset({"FormattedStringExpression", "TemplatedStringExpression"})

_ORDER: Dict[type, Optional[Tuple[str, ...]]] = {}
_ORIGINAL_VISIT = cst.CSTNode.visit
_ORIGINAL_CHILDREN = cst.CSTNode.children
_SENTINEL = cst.MaybeSentinel


class _Recorder(cst.CSTVisitor):
    """Records the field names libcst visits on ``root``, without descending."""

    def __init__(self, root: cst.CSTNode) -> None:
        self.root = root
        self.names: List[str] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        if node is self.root:
            self.names.append(attribute)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        return None

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        return None


def _order(node: cst.CSTNode) -> Optional[Tuple[str, ...]]:
    kind = type(node)
    try:
        return _ORDER[kind]
    except KeyError:
        pass
    order: Optional[Tuple[str, ...]] = None
    if kind.__name__ not in _VALUE_DEPENDENT and kind.__module__.startswith("libcst."):
        recorder = _Recorder(node)
        node._visit_and_replace_children(recorder)
        order = tuple(recorder.names)
    _ORDER[kind] = order
    return order


# A visitor's hooks on a node's fields (``visit_<Node>_<field>`` / ``leave_<Node>_<field>``).
_FIELD_HOOK = re.compile(r"(?:visit|leave)_[A-Z][A-Za-z]*_[a-z_]+")
# Classes whose field hooks are libcst's no-op stubs (``_is_no_op``) or the dispatch itself.
_LIBCST_BASES = frozenset({object, CSTVisitor, CSTTypedVisitorFunctions, MetadataDependent})
_CLASS_HOOKS: "weakref.WeakKeyDictionary[type, bool]" = weakref.WeakKeyDictionary()


def _has_field_hooks(visitor: Any) -> bool:
    """Whether calling the visitor's ``on_visit_attribute`` / ``on_leave_attribute`` can do
    anything. False only when both are libcst's default dispatch (or the batched visitor's)
    and no field hook that is not one of libcst's no-op stubs exists to be dispatched to."""
    kind = type(visitor)
    if kind is _BatchedCSTVisitor:
        return any(_FIELD_HOOK.fullmatch(name) for name in visitor.visitor_methods)
    if any(_FIELD_HOOK.fullmatch(name) for name in vars(visitor)):
        return True
    known = _CLASS_HOOKS.get(kind)
    if known is None:
        known = _CLASS_HOOKS[kind] = _class_has_field_hooks(kind)
    return known


def _class_has_field_hooks(kind: type) -> bool:
    if (kind.on_visit_attribute is not CSTVisitor.on_visit_attribute
            or kind.on_leave_attribute is not CSTVisitor.on_leave_attribute
            or "__getattr__" in dir(kind) or kind.__getattribute__ is not object.__getattribute__):
        return True
    for klass in kind.__mro__:
        if klass in _LIBCST_BASES:
            continue
        for name, value in vars(klass).items():
            if _FIELD_HOOK.fullmatch(name) and not getattr(value, "_is_no_op", False):
                return True
    return False


# Per visitor class: node type -> the names of its ``visit_<Node>`` / ``leave_<Node>`` hooks
# (None where the class only has libcst's no-op stub), for visitors that use libcst's own
# ``on_visit`` / ``on_leave`` dispatch (which looks the name up on every node).
_DISPATCH: "weakref.WeakKeyDictionary[type, Optional[Dict[type, Tuple[Optional[str], Optional[str]]]]]" = (
    weakref.WeakKeyDictionary())


def _dispatch_table(visitor: Any) -> Optional[Dict[type, Tuple[Optional[str], Optional[str]]]]:
    """The visitor's table, or None when libcst's dispatch cannot be replaced by one: its
    ``on_visit`` / ``on_leave`` are its own, or an instance attribute may shadow a hook."""
    if any(name.startswith(("visit_", "leave_")) for name in vars(visitor)):
        return None
    kind = type(visitor)
    try:
        return _DISPATCH[kind]
    except KeyError:
        pass
    table: Optional[dict] = None
    if kind.on_visit is CSTVisitor.on_visit and kind.on_leave is CSTVisitor.on_leave:
        table = {}
    _DISPATCH[kind] = table
    return table


def _hooks(kind: type, node_type: type) -> Tuple[Optional[str], Optional[str]]:
    names = []
    for prefix in ("visit_", "leave_"):
        name = prefix + node_type.__name__
        hook = getattr(kind, name, None)
        names.append(name if hook is not None and not getattr(hook, "_is_no_op", False) else None)
    return names[0], names[1]


def _visit(self: cst.CSTNode, visitor: Any) -> Any:
    if not isinstance(visitor, CSTVisitor):
        return _ORIGINAL_VISIT(self, visitor)
    if _has_field_hooks(visitor):
        _walk(self, visitor)
        return self
    table = _dispatch_table(visitor)
    if table is None:
        _walk_nodes_only(self, visitor)
    else:
        _walk_dispatched(self, visitor, table)
    return self


def _walk_dispatched(node: cst.CSTNode, visitor: Any, table: dict) -> None:
    """:func:`_walk_nodes_only` with libcst's ``on_visit`` / ``on_leave`` dispatch done from
    ``table`` (the same hooks called, the no-op stubs skipped)."""
    node_type = type(node)
    hooks = table.get(node_type)
    if hooks is None:
        hooks = table[node_type] = _hooks(type(visitor), node_type)
    enter, leave = hooks
    if enter is None or getattr(visitor, enter)(node) is not False:
        order = _ORDER.get(node_type) or _order(node)
        if order is None:
            node._visit_and_replace_children(visitor)
        else:
            for name in order:
                value = getattr(node, name)
                kind = type(value)
                if kind is tuple or kind is list:
                    for child in value:
                        _walk_dispatched(child, visitor, table)
                elif value is not None and kind is not _SENTINEL:
                    _walk_dispatched(value, visitor, table)
    if leave is not None:
        getattr(visitor, leave)(node)


def _walk(node: cst.CSTNode, visitor: Any) -> None:
    if visitor.on_visit(node):
        order = _ORDER.get(type(node)) or _order(node)
        if order is None:
            node._visit_and_replace_children(visitor)  # libcst's own (children go through _visit)
        else:
            enter, leave = visitor.on_visit_attribute, visitor.on_leave_attribute
            for name in order:
                enter(node, name)
                value = getattr(node, name)
                kind = type(value)
                if kind is tuple or kind is list:
                    for child in value:
                        _walk(child, visitor)
                elif value is not None and kind is not _SENTINEL:
                    _walk(value, visitor)
                leave(node, name)
    visitor.on_leave(node)


def _walk_nodes_only(node: cst.CSTNode, visitor: Any) -> None:
    """:func:`_walk` for a visitor whose field callbacks do nothing (not called)."""
    if visitor.on_visit(node):
        order = _ORDER.get(type(node)) or _order(node)
        if order is None:
            node._visit_and_replace_children(visitor)
        else:
            for name in order:
                value = getattr(node, name)
                kind = type(value)
                if kind is tuple or kind is list:
                    for child in value:
                        _walk_nodes_only(child, visitor)
                elif value is not None and kind is not _SENTINEL:
                    _walk_nodes_only(value, visitor)
    visitor.on_leave(node)


def _children(self: cst.CSTNode) -> List[cst.CSTNode]:
    order = _ORDER.get(type(self)) or _order(self)
    if order is None:
        return _ORIGINAL_CHILDREN.fget(self)  # type: ignore[attr-defined]
    found: List[cst.CSTNode] = []
    for name in order:
        value = getattr(self, name)
        kind = type(value)
        if kind is tuple or kind is list:
            found.extend(value)
        elif value is not None and kind is not _SENTINEL:
            found.append(value)
    return found


_depth = 0


@contextmanager
def fast_visits() -> Iterator[None]:
    """Within the block, read-only libcst traversals do not rebuild the tree (re-entrant)."""
    global _depth
    if _depth == 0:
        cst.CSTNode.visit = _visit  # type: ignore[method-assign]
        cst.CSTNode.children = property(_children)  # type: ignore[method-assign,assignment]
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            cst.CSTNode.visit = _ORIGINAL_VISIT  # type: ignore[method-assign]
            cst.CSTNode.children = _ORIGINAL_CHILDREN  # type: ignore[method-assign]
