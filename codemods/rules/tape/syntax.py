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


def subtargets(target: cst.BaseExpression) -> Iterable[cst.BaseExpression]:
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from subtargets(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from subtargets(target.value)
    else:
        yield target


def root_name(expr: cst.BaseExpression) -> Optional[str]:
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


def walk_nodes(node: cst.CSTNode):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)


def return_statements(func: cst.FunctionDef) -> List[cst.Return]:
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


def match_capture_names(pattern: cst.CSTNode) -> List[cst.Name]:
    """The names a ``match`` pattern binds (``case loss:``, ``case [a, *rest]:``, ``case {**kw}:``,
    ``case P(x=v) as p:``); ``_`` binds nothing."""
    out: List[cst.Name] = []
    stack = [pattern]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.MatchAs) and node.name is not None:
            out.append(node.name)
        elif isinstance(node, cst.MatchStar) and node.name is not None:
            out.append(node.name)
        elif isinstance(node, cst.MatchMapping) and node.rest is not None:
            out.append(node.rest)
        if isinstance(node, cst.MatchValue):
            continue  # a value pattern reads an expression, it binds nothing
        if isinstance(node, cst.MatchClass):
            stack.extend(node.patterns)
            stack.extend(k.pattern for k in node.kwds)
            continue
        if isinstance(node, cst.MatchMapping):
            stack.extend(e.pattern for e in node.elements)
            continue
        stack.extend(c for c in node.children if not isinstance(c, cst.Name))
    return out


def match_pattern_values(pattern: cst.CSTNode) -> List[cst.BaseExpression]:
    """The expressions a ``match`` pattern evaluates (value patterns, mapping keys, class names)."""
    out: List[cst.BaseExpression] = []
    stack = [pattern]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.MatchValue):
            out.append(node.value)
            continue
        if isinstance(node, cst.MatchClass):
            out.append(node.cls)
            stack.extend(node.patterns)
            stack.extend(k.pattern for k in node.kwds)
            continue
        if isinstance(node, cst.MatchMapping):
            for element in node.elements:
                out.append(element.key)
                stack.append(element.pattern)
            continue
        stack.extend(c for c in node.children if not isinstance(c, cst.Name))
    return out
