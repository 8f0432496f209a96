"""Faster metadata for the engine: libcst's ``ParentNodeProvider`` computed without a visitor,
and its ``QualifiedNameProvider`` computed for the nodes a rule asks about.

libcst computes parents with a ``CSTVisitor`` whose ``on_leave`` asks every node for its
``children``; ``children`` re-runs the node's ``_visit_and_replace_children`` (rebuilding
the node) just to list them. On real training code that was about a sixth of a file's
analysis time. Here the same mapping (child -> parent, every node but the module) is read
straight from the nodes' dataclass fields, which is what ``children`` lists: every field
holding a node, or a sequence of nodes, in order.

``QualifiedNameProvider`` visits every node of the module to store, for each, a lazy value
(``scope.get_qualified_names_for(node)`` for the node's scope, or an empty set): a full
traversal, a closure and a lazy object per node, though rules ask about a few hundred
nodes. :class:`QualifiedNames` is the same mapping (the same keys: every node of the
module; the same value for each, computed by the same call on first use) without the
traversal. ``tests/test_metadata.py`` checks both mappings are identical to libcst's on
every fixture.

The engine puts the result into its shared ``MetadataWrapper`` before any rule asks for
it; the wrapper then never runs the provider (it resolves only what it has not got).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Collection, Dict, Iterator, Mapping, Optional, Tuple

import libcst as cst
from libcst.metadata import (
    MetadataWrapper,
    ParentNodeProvider,
    PositionProvider,
    QualifiedName,
    QualifiedNameProvider,
    ScopeProvider,
)

from codemods.engine.fastcst.positions import Positions

_FIELDS: Dict[type, Tuple[str, ...]] = {}


def _fields(kind: type) -> Tuple[str, ...]:
    names = _FIELDS.get(kind)
    if names is None:
        names = _FIELDS[kind] = tuple(f.name for f in dataclasses.fields(kind))
    return names


def parent_map(module: cst.Module) -> Dict[cst.CSTNode, cst.CSTNode]:
    """``{child: parent}`` for every node below ``module`` (as ``ParentNodeProvider``)."""
    parents: Dict[cst.CSTNode, cst.CSTNode] = {}
    node_type = cst.CSTNode
    stack = [module]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        for name in _fields(type(node)):
            value: Any = getattr(node, name)
            if isinstance(value, node_type):
                parents[value] = node
                push(value)
            elif isinstance(value, (tuple, list)):
                for item in value:
                    if isinstance(item, node_type):
                        parents[item] = node
                        push(item)
    return parents


def needs_parents(rules) -> bool:  # type: ignore[no-untyped-def]
    """Whether any of ``rules`` depends on ``ParentNodeProvider`` (directly or through a provider)."""
    seen = set()
    pending = [p for rule in rules for p in rule.get_inherited_dependencies()]
    while pending:
        provider = pending.pop()
        if provider is ParentNodeProvider:
            return True
        if provider not in seen:
            seen.add(provider)
            pending.extend(getattr(provider, "METADATA_DEPENDENCIES", ()))
    return False


def prefill_parents(wrapper: MetadataWrapper) -> None:
    """Give ``wrapper`` its ``ParentNodeProvider`` result, computed by :func:`parent_map`.

    Uses the wrapper's resolved-metadata dict (``_metadata``, a libcst internal); if that
    is not there (another libcst version), nothing happens and libcst computes it itself.
    """
    resolved = getattr(wrapper, "_metadata", None)
    if isinstance(resolved, dict) and ParentNodeProvider not in resolved:
        resolved[ParentNodeProvider] = parent_map(wrapper.module)


class QualifiedNames(Mapping):
    """``QualifiedNameProvider``'s mapping for ``wrapper``'s module, each value computed on
    first use; ``parents`` is the module's :func:`parent_map` (its keys and the module are
    the nodes the provider visits)."""

    def __init__(self, wrapper: MetadataWrapper, parents: Dict[cst.CSTNode, cst.CSTNode]) -> None:
        self._wrapper = wrapper
        self._module = wrapper.module
        self._parents = parents
        self._scopes: Optional[Mapping] = None
        self._values: Dict[cst.CSTNode, Collection[QualifiedName]] = {}

    def _has(self, node: object) -> bool:
        return node is self._module or node in self._parents

    def _value(self, node: cst.CSTNode) -> Collection[QualifiedName]:
        value = self._values.get(node)
        if value is None:
            if self._scopes is None:
                self._scopes = self._wrapper.resolve(ScopeProvider)
            scope = self._scopes.get(node, None)
            value = self._values[node] = scope.get_qualified_names_for(node) if scope else set()
        return value

    def __getitem__(self, node: cst.CSTNode) -> Collection[QualifiedName]:
        if not self._has(node):
            raise KeyError(node)
        return self._value(node)

    def get(self, node: cst.CSTNode, default: Any = None) -> Any:  # type: ignore[override]
        return self._value(node) if self._has(node) else default

    def __contains__(self, node: object) -> bool:
        return self._has(node)

    def __iter__(self) -> Iterator[cst.CSTNode]:
        yield self._module
        yield from self._parents

    def __len__(self) -> int:
        return len(self._parents) + 1


def prefill(wrapper: MetadataWrapper, parents: bool = True) -> None:
    """Give ``wrapper`` ``PositionProvider`` as :class:`codemods.engine.fastcst.positions.Positions` (computed
    when first asked for), and when ``parents``: :func:`prefill_parents`, then
    ``QualifiedNameProvider`` as :class:`QualifiedNames` (all only where libcst's
    resolved-metadata dict is there, see :func:`prefill_parents`)."""
    resolved = getattr(wrapper, "_metadata", None)
    if not isinstance(resolved, dict):
        return
    if PositionProvider not in resolved:
        resolved[PositionProvider] = Positions(wrapper.module)
    if parents:
        prefill_parents(wrapper)
        if QualifiedNameProvider not in resolved and ParentNodeProvider in resolved:
            resolved[QualifiedNameProvider] = QualifiedNames(wrapper, resolved[ParentNodeProvider])
