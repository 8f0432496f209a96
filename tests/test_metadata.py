"""The engine's faster libcst traversals give exactly libcst's results.

``codemods.engine.fastcst.visit`` walks read-only visitors without rebuilding the tree, and
``codemods.engine.fastcst.metadata`` computes ``ParentNodeProvider`` from the dataclass fields: on every
fixture (and on a file of syntax the fixtures lack) the callback trace, ``children`` and the
metadata must be identical to libcst's own.
"""

from __future__ import annotations

import pathlib

import libcst as cst
import pytest
from libcst._metadata_dependent import LazyValue  # what QualifiedNameProvider stores
from libcst.metadata import (
    ExpressionContextProvider,
    MetadataWrapper,
    ParentNodeProvider,
    PositionProvider,
    QualifiedNameProvider,
    ScopeProvider,
)

from codemods.engine.fastcst.visit import fast_visits
from codemods.engine.fastcst.metadata import QualifiedNames, parent_map
from codemods.engine.fastcst.positions import Positions

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = sorted(p for p in (ROOT / "fixtures").rglob("*.py"))

# Syntax the fixtures may lack: f-strings with and without format specs (libcst visits
# ``format_spec`` only when present), star imports, parenthesised imports, decorators,
# lambdas, comprehensions, walrus, match, async, global/nonlocal, type annotations.
ODD_SYNTAX = '''
from __future__ import annotations
from os.path import *
from typing import (List,
    Optional)
import a.b.c as d
@decorator(1)
class K(Base, metaclass=M):
    x: int = 1
    def f(self, a, /, b=2, *args, c, d=4, **kw) -> Optional[int]:
        global G
        y = [i * 2 for i in range(3) if i]
        z = {k: v for k, v in kw.items()}
        w = lambda q, *r: q + len(r)
        if (n := len(y)) > 1:
            return f"{n!r:>{width}} {y[0]:.2f} {z}" + f"{w}"
        async def inner():
            nonlocal y
            async with ctx() as (u, v):
                await u
            async for e in v:
                yield e
        try:
            pass
        except (ValueError, TypeError) as err:
            raise RuntimeError() from err
        finally:
            del y[0], z
        match a:
            case [1, *rest] if rest:
                pass
            case {"k": v, **others}:
                pass
            case Point(x=0) | None:
                pass
        return None
x = a if b else c; x += 1; assert x, "m"
print(*args, sep="", **kw)
'''


class _Trace(cst.CSTVisitor):
    """Records every callback libcst makes, with node identities."""

    def __init__(self) -> None:
        self.calls: list = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.calls.append(("visit", id(node)))
        return not isinstance(node, cst.Lambda)  # a pruned subtree, as visitors do

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.calls.append(("leave", id(original_node)))

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.calls.append(("enter", id(node), attribute))

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        self.calls.append(("exit", id(original_node), attribute))


class _NodeTrace(cst.CSTVisitor):
    """Node callbacks only: its field callbacks are libcst's no-op dispatch (skipped)."""

    def __init__(self) -> None:
        self.calls: list = []

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        self.calls.append(("lambda", id(node)))
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.calls.append(("name", node.value))

    def leave_Call(self, original_node: cst.Call) -> None:
        self.calls.append(("call", id(original_node)))


class _FieldHooks(_NodeTrace):
    """Field hooks dispatched by libcst's default ``on_visit_attribute``."""

    def visit_Call_args(self, node: cst.Call) -> None:
        self.calls.append(("args", id(node)))

    def leave_FunctionDef_body(self, node: cst.FunctionDef) -> None:
        self.calls.append(("body", id(node)))


# Layouts that move lines and columns unusually (positions): CRLF and lone CR line ends,
# strings spanning lines, backslash continuations, tabs, form feeds, no final newline, empty.
ODD_LAYOUT = {
    "crlf": "x = 1\r\ny = '''a\r\nb'''  # c\r\nif x:\r\n    z = (1 +\r\n      2)\r\n",
    "lone_cr": "x = 1\ry = f(x,\r      2)\r",
    "continuation": "a = 1 + \\\n    2\nb = [\n\t1,\n]\n\x0c\ndef f():\n\treturn a\n",
    "no_newline": "import tensorflow as tf\nopt.minimize(loss)",
    "empty": "",
}


def _sources():
    yield "odd_syntax", ODD_SYNTAX
    yield from ODD_LAYOUT.items()
    for path in FIXTURES:
        yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")


def _nodes(module: cst.Module) -> list:
    found = []
    stack = [module]
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(node.children)
    return found


@pytest.mark.parametrize("name,source", list(_sources()), ids=lambda v: v if "\n" not in v else "")
def test_fast_visits_are_libcsts(name, source):
    """The callback trace, every node's ``children`` and the scope / qualified-name /
    expression-context / parent metadata are identical with and without fast visits."""
    module = cst.parse_module(source)
    slow, fast = _Trace(), _Trace()
    visitors = (_NodeTrace, _FieldHooks)
    slow_plain = [kind() for kind in visitors]
    fast_plain = [kind() for kind in visitors]
    for visitor in slow_plain:
        module.visit(visitor)
    module.visit(slow)
    slow_children = [(id(n), [id(c) for c in n.children]) for n in _nodes(module)]
    providers = (ExpressionContextProvider, QualifiedNameProvider, ScopeProvider, ParentNodeProvider, PositionProvider)
    slow_meta = MetadataWrapper(module, unsafe_skip_copy=True).resolve_many(providers)
    with fast_visits():
        module.visit(fast)
        for visitor in fast_plain:
            module.visit(visitor)
        fast_children = [(id(n), [id(c) for c in n.children]) for n in _nodes(module)]
        fast_meta = MetadataWrapper(module, unsafe_skip_copy=True).resolve_many(providers)
    assert fast.calls == slow.calls
    assert [v.calls for v in fast_plain] == [v.calls for v in slow_plain]
    assert fast_children == slow_children
    for provider in (ExpressionContextProvider, QualifiedNameProvider, ParentNodeProvider):
        assert _values(fast_meta[provider]) == _values(slow_meta[provider]), provider.__name__
    assert _scope_facts(fast_meta[ScopeProvider]) == _scope_facts(slow_meta[ScopeProvider])
    parents = parent_map(module)
    assert parents == _values(slow_meta[ParentNodeProvider])
    lazy = QualifiedNames(MetadataWrapper(module, unsafe_skip_copy=True), parents)
    libcsts = _values(slow_meta[QualifiedNameProvider])
    assert len(lazy) == len(libcsts) and set(lazy) == set(libcsts)
    assert all(lazy.get(node) == libcsts[node] and lazy[node] == libcsts[node] for node in libcsts)
    assert lazy.get(cst.Name("elsewhere"), "absent") == "absent"
    positions, libcsts = Positions(module), slow_meta[PositionProvider]
    assert len(positions) == len(libcsts) and all(positions[node] == libcsts[node] for node in libcsts)


def _values(mapping) -> dict:
    """The mapping with libcst's lazy values evaluated (reading an item evaluates it)."""
    return {node: (value() if isinstance(value, LazyValue) else value) for node, value in mapping.items()}


def _scope_facts(scopes) -> list:
    """Each node's scope described by identity-free facts: kind, assignments, accesses."""
    facts = []
    for node in scopes:
        scope = scopes[node]
        if scope is None:
            facts.append((id(node), None))
            continue
        assigned = sorted((a.name, _identity(a)) for a in scope.assignments)
        accessed = sorted((a.node.value if isinstance(a.node, cst.Name) else "", id(a.node),
                           sorted(_identity(r) for r in a.referents)) for a in scope.accesses)
        facts.append((id(node), type(scope).__name__, assigned, accessed))
    return facts


def test_transformers_and_restoring():
    """A transformer still rewrites inside the block, and libcst's own methods are back after
    it, also when the block raises."""
    original_visit, original_children = cst.CSTNode.visit, cst.CSTNode.children

    class Rename(cst.CSTTransformer):
        def leave_Name(self, original_node, updated_node):
            return updated_node.with_changes(value=updated_node.value.upper())

    module = cst.parse_module("a = b + c\n")
    with pytest.raises(KeyError):
        with fast_visits():
            with fast_visits():  # re-entrant
                assert module.visit(Rename()).code == "A = B + C\n"
            assert cst.CSTNode.visit is not original_visit
            raise KeyError("x")
    assert cst.CSTNode.visit is original_visit
    assert cst.CSTNode.children is original_children


def _identity(assignment) -> str:
    """An assignment named by its node's identity, or by its name for a builtin."""
    node = getattr(assignment, "node", None)
    return f"node {id(node)}" if node is not None else f"builtin {assignment.name}"
