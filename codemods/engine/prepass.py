"""The pre-pass: which rules can produce a finding in a file, decided without libcst.

Every rule declares its ``SITES``: a small expression over the kinds of evidence below,
each a *necessary* condition for the rule to report or rewrite anything::

    SITES = all_of(method_calls("compute_gradients"), names("apply_gradients"))

Two stages read that one declaration:

1. **text** (:meth:`Spec.on_text`): each leaf is "one of its identifiers occurs as a
   substring of the file". Costs a few substring searches; runs on every file.
2. **ast** (:meth:`Spec.on_index`): CPython's own parser (C speed) builds a
   :class:`ModuleIndex` -- every identifier, what is called and how, keywords, imports and
   what they bind -- and each leaf is checked against it. Words in comments, strings and
   docstrings no longer count, nor does ``apply_gradients(`` for ``gradients(``.

Only a rule that passes both stages runs (libcst parse, metadata, the rule itself), so
a file no rule can fire on is never parsed by libcst. Each leaf over-approximates what
the rules match by qualified name: a name bound by an import counts under the imported
name too (``from tensorflow import gradients as g; g(...)`` is a call of ``gradients``),
which is all libcst's ``QualifiedNameProvider`` resolves (it does not follow plain
assignments). The text stage is implied by the ast stage (an identifier in the tree is
a substring of the text), so the two agree on every file the ast stage accepts.

Soundness is tested: ``tests/test_prepass.py`` runs every fixture with and without the
pre-pass and demands identical output; ``benchmarks/run.py`` does the same on the corpus.

Imports neither libcst nor TensorFlow. Longer than ~400 lines because the vocabulary (one
small class per kind of evidence, each a few lines) and the index it is checked against are
one thing; rules import both from here.
"""

from __future__ import annotations

import ast
from typing import Dict, FrozenSet, Iterable, Optional, Set, Tuple

from codemods.engine.core import SourceError

__all__ = [
    "ALWAYS",
    "AllOf",
    "Always",
    "AnyOf",
    "Calls",
    "DynamicAccess",
    "Keywords",
    "MethodCalls",
    "ModuleIndex",
    "Names",
    "Spec",
    "StarImport",
    "Text",
    "all_of",
    "any_of",
    "calls",
    "dynamic_access",
    "keywords",
    "method_calls",
    "names",
    "parse_python",
    "star_import",
    "text",
]

# Builtins that look a name up in a module object at run time (what libcst's qualified
# names cannot follow): ``getattr(tf.contrib.training, name)``.
DYNAMIC_LOOKUPS = ("getattr", "vars", "dir", "hasattr")


# --------------------------------------------------------------------------------------
# what CPython's parser tells us about a module


class ModuleIndex:
    """The facts the ast stage checks, from one walk over CPython's tree."""

    __slots__ = ("identifiers", "callees", "methods", "keywords", "dynamic", "star_imports")

    def __init__(self) -> None:
        self.identifiers: Set[str] = set()  # every identifier, import paths split at "."
        self.callees: Set[str] = set()  # f(...), x.f(...), and g(...) for g imported as f
        self.methods: Set[str] = set()  # x.f(...)
        self.keywords: Set[str] = set()  # f(..., k=...)
        self.dynamic: Set[str] = set()  # path parts of M in getattr(M, ...)
        self.star_imports: Set[str] = set()  # path parts of M in `from M import *`

    @classmethod
    def of(cls, tree: ast.AST) -> "ModuleIndex":
        index = cls()
        identifiers = index.identifiers
        bindings: Dict[str, Set[str]] = {}  # name -> dotted paths an import binds it to
        calls = []
        fields_of = _IDENTIFIER_FIELDS
        node_type = ast.AST
        stack = [tree]
        pop, push, extend = stack.pop, stack.append, stack.extend
        while stack:  # every node once (``ast.walk``'s set, depth first: the index is sets)
            node = pop()
            kind = type(node)
            for field in kind._fields:
                child = getattr(node, field, None)
                if type(child) is list:
                    extend(item for item in child if isinstance(item, node_type))
                elif isinstance(child, node_type):
                    push(child)
            if kind is ast.Call:
                calls.append(node)
                for keyword in node.keywords:  # type: ignore[attr-defined]
                    if keyword.arg:
                        index.keywords.add(keyword.arg)
            elif kind is ast.Import:
                for alias in node.names:  # type: ignore[attr-defined]
                    bound = alias.asname or alias.name.split(".")[0]
                    bindings.setdefault(bound, set()).add(alias.name if alias.asname else bound)
            elif kind is ast.ImportFrom:
                module = "." * node.level + (node.module or "")  # type: ignore[attr-defined]
                for alias in node.names:  # type: ignore[attr-defined]
                    if alias.name == "*":
                        index.star_imports.update(_parts(module))
                    else:
                        bindings.setdefault(alias.asname or alias.name, set()).add(f"{module}.{alias.name}")
            names = fields_of.get(kind)
            if names is None:
                names = fields_of[kind] = tuple(f for f in kind._fields if f in _IDENTIFIER_FIELD_NAMES)
            for name in names:
                value = getattr(node, name, None)
                if isinstance(value, str):
                    if "." in value:
                        identifiers.update(_parts(value))
                    else:
                        identifiers.add(value)
                elif isinstance(value, list):
                    for item in value:
                        if isinstance(item, str):
                            identifiers.update(_parts(item))
        for call in calls:
            func = call.func
            if isinstance(func, ast.Attribute):
                index.methods.add(func.attr)
                callee = {func.attr}
            elif isinstance(func, ast.Name):
                callee = {func.id} | {path.rsplit(".", 1)[-1] for path in bindings.get(func.id, ())}
            else:
                continue
            index.callees |= callee
            if not callee.isdisjoint(DYNAMIC_LOOKUPS):
                first = call.args[0] if call.args else (call.keywords[0].value if call.keywords else None)
                if isinstance(first, ast.Starred):
                    first = first.value
                index.dynamic |= _reach(first, bindings)
        return index


# The fields of CPython's nodes that hold identifiers (a str, or a list of str): names,
# attributes, definitions, parameters, keywords, imports, globals, except/match targets.
# String constants hold data, not identifiers (``ast.Constant`` has none of these fields).
_IDENTIFIER_FIELD_NAMES = frozenset({"id", "attr", "name", "asname", "module", "arg", "names", "rest", "kwd_attrs"})
_IDENTIFIER_FIELDS: Dict[type, Tuple[str, ...]] = {}


def _parts(dotted: str) -> Iterable[str]:
    return [part for part in dotted.split(".") if part]


def _reach(node: Optional[ast.AST], bindings: Dict[str, Set[str]]) -> Set[str]:
    """Path parts a ``Name``/``Attribute`` chain may denote: its own parts, plus those of
    every import that binds its root name (in any scope: an over-approximation)."""
    parts: Set[str] = set()
    while isinstance(node, ast.Attribute):
        parts.add(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return set()
    parts.add(node.id)
    for path in bindings.get(node.id, ()):
        parts.update(_parts(path))
    return parts


def parse_python(source: str) -> ast.Module:
    """CPython's own parse of ``source``, or :class:`SourceError`.

    libcst accepts some Python 2 (``except E, e:``) and crashes on some inputs CPython
    rejects cleanly (1,500 nested brackets segfault its native parser; CPython's tokenizer
    stops at 200). So nothing CPython cannot parse reaches libcst: such a file is TFC900.
    """
    try:
        return ast.parse(source)
    except SyntaxError as exc:
        where = f" (line {exc.lineno}, column {exc.offset or 1})" if exc.lineno else ""
        raise SourceError(f"cannot parse: {exc.msg}{where}") from None
    except (RecursionError, MemoryError):
        raise SourceError("cannot parse: too deeply nested or too large for the parser") from None
    except ValueError as exc:  # e.g. source code string cannot contain null bytes
        raise SourceError(f"cannot parse: {exc}") from None


# --------------------------------------------------------------------------------------
# the spec language


class Spec:
    """A necessary condition for a rule to fire; see the module docstring. Specs are
    immutable values: equal when of the same kind with the same arguments."""

    __slots__ = ()

    def _args(self) -> tuple:
        return ()

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._args() == self._args()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._args()))

    def on_text(self, text: str) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def on_index(self, index: ModuleIndex) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def tokens(self) -> FrozenSet[str]:
        """Every substring the text stage may look for (documentation, tests)."""
        return frozenset()


class _Leaf(Spec):
    __slots__ = ("ids",)

    def __init__(self, ids: Tuple[str, ...]) -> None:
        if not ids or not all(isinstance(i, str) and i for i in ids):
            raise TypeError(f"{type(self).__name__} needs one or more non-empty names, got {ids!r}")
        self.ids = tuple(ids)

    def _args(self) -> tuple:
        return self.ids

    def on_text(self, text: str) -> bool:
        return any(i in text for i in self.ids)

    def tokens(self) -> FrozenSet[str]:
        return frozenset(self.ids)

    def __repr__(self) -> str:
        return f"{_SPELLING[type(self)]}({', '.join(repr(i) for i in self.ids)})"


class Names(_Leaf):
    """One of these identifiers is spelled in the code: a name, attribute, definition,
    parameter, keyword or a part of an import."""

    __slots__ = ()

    def on_index(self, index: ModuleIndex) -> bool:
        return any(i in index.identifiers for i in self.ids)


class Calls(_Leaf):
    """A call of one of these: ``f(...)``, ``x.f(...)``, or ``g(...)`` with ``g`` imported as ``f``."""

    __slots__ = ()

    def on_index(self, index: ModuleIndex) -> bool:
        return any(i in index.callees for i in self.ids)


class MethodCalls(_Leaf):
    """A call ``x.f(...)`` of one of these attribute names."""

    __slots__ = ()

    def on_index(self, index: ModuleIndex) -> bool:
        return any(i in index.methods for i in self.ids)


class Keywords(_Leaf):
    """A call with one of these keyword arguments."""

    __slots__ = ()

    def on_index(self, index: ModuleIndex) -> bool:
        return any(i in index.keywords for i in self.ids)


class DynamicAccess(_Leaf):
    """``getattr``/``vars``/``dir``/``hasattr`` applied to a module whose dotted path
    (through the imports binding its root name) has one of these parts."""

    __slots__ = ()

    def on_text(self, text: str) -> bool:
        return super().on_text(text) and any(f in text for f in DYNAMIC_LOOKUPS)

    def on_index(self, index: ModuleIndex) -> bool:
        return any(i in index.dynamic for i in self.ids)

    def tokens(self) -> FrozenSet[str]:
        return frozenset(self.ids) | frozenset(DYNAMIC_LOOKUPS)


class StarImport(_Leaf):
    """``from M import *`` where ``M`` has one of these parts."""

    __slots__ = ()

    def on_text(self, text: str) -> bool:
        return super().on_text(text) and "*" in text

    def on_index(self, index: ModuleIndex) -> bool:
        return any(i in index.star_imports for i in self.ids)


class Text(_Leaf):
    """One of these substrings occurs in the text; the ast stage cannot tell, so it always
    passes (what a rule's legacy ``TOKENS``/``REQUIRES`` become)."""

    __slots__ = ()

    def on_index(self, index: ModuleIndex) -> bool:
        return True


class _Group(Spec):
    __slots__ = ("specs",)
    _word = ""

    def __init__(self, specs: Tuple[Spec, ...]) -> None:
        self.specs = tuple(specs)

    def _args(self) -> tuple:
        return self.specs

    def tokens(self) -> FrozenSet[str]:
        return frozenset().union(*(s.tokens() for s in self.specs))

    def __repr__(self) -> str:
        return f"{self._word}({', '.join(repr(s) for s in self.specs)})"


class AllOf(_Group):
    """Every one of the specs holds."""

    __slots__ = ()
    _word = "all_of"

    def on_text(self, text: str) -> bool:
        return all(s.on_text(text) for s in self.specs)

    def on_index(self, index: ModuleIndex) -> bool:
        return all(s.on_index(index) for s in self.specs)


class AnyOf(_Group):
    """At least one of the specs holds."""

    __slots__ = ()
    _word = "any_of"

    def on_text(self, text: str) -> bool:
        return any(s.on_text(text) for s in self.specs)

    def on_index(self, index: ModuleIndex) -> bool:
        return any(s.on_index(index) for s in self.specs)


class Always(Spec):
    """No pre-filter: the rule runs on every file CPython can parse."""

    __slots__ = ()

    def on_text(self, text: str) -> bool:
        return True

    def on_index(self, index: ModuleIndex) -> bool:
        return True

    def __repr__(self) -> str:
        return "ALWAYS"


ALWAYS = Always()


def names(*ids: str) -> Names:
    return Names(ids)


def calls(*ids: str) -> Calls:
    return Calls(ids)


def method_calls(*ids: str) -> MethodCalls:
    return MethodCalls(ids)


def keywords(*ids: str) -> Keywords:
    return Keywords(ids)


def dynamic_access(*parts: str) -> DynamicAccess:
    return DynamicAccess(parts)


def star_import(*parts: str) -> StarImport:
    return StarImport(parts)


def text(*tokens: str) -> Text:
    return Text(tokens)


def all_of(*specs: Spec) -> Spec:
    _check_specs(specs, "all_of")
    flat = tuple(part for spec in specs for part in (spec.specs if isinstance(spec, AllOf) else (spec,)))
    return flat[0] if len(flat) == 1 else AllOf(flat)


def any_of(*specs: Spec) -> Spec:
    _check_specs(specs, "any_of")
    flat = tuple(part for spec in specs for part in (spec.specs if isinstance(spec, AnyOf) else (spec,)))
    return flat[0] if len(flat) == 1 else AnyOf(flat)


def _check_specs(specs: Tuple[Spec, ...], what: str) -> None:
    if not specs or not all(isinstance(s, Spec) for s in specs):
        raise TypeError(f"{what}() takes one or more specs (names(...), calls(...), ...), got {specs!r}")


_SPELLING = {
    Names: "names",
    Calls: "calls",
    MethodCalls: "method_calls",
    Keywords: "keywords",
    DynamicAccess: "dynamic_access",
    StarImport: "star_import",
    Text: "text",
}


def from_tokens(tokens: Tuple[str, ...], requires: Tuple[Tuple[str, ...], ...] = ()) -> Spec:
    """A rule's legacy text pre-filter (``TOKENS``: any of; ``REQUIRES``: each group, any
    of) as a spec; with no tokens, :data:`ALWAYS`."""
    if not tokens:
        return ALWAYS
    return all_of(text(*tokens), *(text(*group) for group in requires))
