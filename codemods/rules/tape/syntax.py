"""Small syntax helpers of the analysis (targets, roots of attribute chains, walks)."""

from __future__ import annotations

from typing import Iterable, List, Optional, Set

import libcst as cst
from libcst.metadata.scope_provider import (
    ClassScope,
    ComprehensionScope,
    FunctionScope,
    GlobalScope,
)

from codemods.rules.analysis import dotted_name


def _subtargets(target: cst.BaseExpression) -> Iterable[cst.BaseExpression]:
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _subtargets(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _subtargets(target.value)
    else:
        yield target


def _root_name(expr: cst.BaseExpression) -> Optional[str]:
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        expr = expr.value
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Call):
        return None
    return None


def dotted_reads(node: cst.CSTNode) -> Set[str]:
    """Dotted names ``node`` reads (``g``, ``self.grads``, ``tf.zeros``): each attribute chain once,
    whole."""
    found = _DottedReads()
    node.visit(found)
    return found.names


class _DottedReads(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: Set[str] = set()

    def visit_Attribute(self, node: cst.Attribute) -> Optional[bool]:
        name = dotted_name(node)
        if name:
            self.names.add(name)
            return False
        return True

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)


def _walk_nodes(node: cst.CSTNode):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)


def _returns(func: cst.FunctionDef) -> List[cst.Return]:
    found: List[cst.Return] = []

    class Collect(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is func

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

        def visit_Return(self, node: cst.Return) -> None:
            found.append(node)

    func.visit(Collect())
    return found


def scope_kind(scope) -> str:
    if isinstance(scope, GlobalScope):
        return "module"
    if isinstance(scope, ClassScope):
        return "class"
    if isinstance(scope, ComprehensionScope):
        return "comprehension"
    if isinstance(scope, FunctionScope):
        return "function"
    return "unknown"
