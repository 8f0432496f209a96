"""The syntax helpers every part of the session-script migration reads code with (the program
model, the chain check, the emitter): which names a node reads and binds, its nodes of a kind, its
calls, a dotted name; and :class:`Decline`, how any of them says a program is outside the class.
"""

from __future__ import annotations

from typing import List, Optional, Set

import libcst as cst


class Decline(Exception):
    """The program is outside the class: ``reason`` is the true cause, ``node`` where it is."""

    def __init__(self, node: cst.CSTNode, reason: str) -> None:
        super().__init__(reason)
        self.node = node
        self.reason = reason


def dotted(node: cst.BaseExpression) -> Optional[List[str]]:
    parts: List[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return parts[::-1]
    return None


class Names(cst.CSTVisitor):
    """Names read and bound in a node (attribute names and keyword names excluded)."""

    def __init__(self) -> None:
        self.read: Set[str] = set()
        self.bound: Set[str] = set()
        self._targets: Set[int] = set()

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self._targets:
            self.read.add(node.value)

    def _bind(self, target: cst.CSTNode, store: bool = True) -> None:
        if isinstance(target, cst.Name):
            self.bound.add(target.value)
            if store:
                self._targets.add(id(target))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(element.value)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._bind(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target, store=False)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._bind(node.name)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind(node.target)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.bound.add(node.name.value)

    def visit_Param(self, node: cst.Param) -> None:
        self.bound.add(node.name.value)

    def visit_Lambda(self, node: cst.Lambda) -> None:
        for param in node.params.params:
            self.bound.add(param.name.value)


class _CompTargets(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: Set[str] = set()

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.names |= names_of(node.target).read | names_of(node.target).bound


def comprehension_targets(node: cst.CSTNode) -> Set[str]:
    """Names bound by comprehension ``for`` targets in ``node`` (local to the comprehension in Python 3)."""
    visitor = _CompTargets()
    node.visit(visitor)
    return visitor.names


def names_of(node: cst.CSTNode) -> Names:
    visitor = Names()
    node.visit(visitor)
    return visitor


class Calls(cst.CSTVisitor):
    def __init__(self) -> None:
        self.calls: List[cst.Call] = []
        self.attributes: List[cst.Attribute] = []

    @staticmethod
    def attributes_of(node: cst.CSTNode) -> List[cst.Attribute]:
        visitor = Calls()
        node.visit(visitor)
        return visitor.attributes

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.attributes.append(node)


class _Nodes(cst.CSTVisitor):
    def __init__(self, kind: type) -> None:
        self.kind = kind
        self.found: List[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, self.kind):
            self.found.append(node)
        return True


def nodes_of(node: cst.CSTNode, kind: type) -> list:
    visitor = _Nodes(kind)
    node.visit(visitor)
    return visitor.found
