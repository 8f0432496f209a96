"""The values the planner's analysis passes around -- how a value relates to the gradient path
(:class:`Kind`), what a statement does (:class:`Effects`), what a local function's body does as its
callers see it (:class:`Summary`) --, the memo tables its collaborators share (:class:`Memo`), and
the view of the analyzer those collaborators are given (:class:`Analysis`). A leaf module: it
imports no other module of the planner but :mod:`~codemods.rules.tape.facts`, so the collaborators
(:mod:`~codemods.rules.tape.kinds`, :mod:`~codemods.rules.tape.callsites`,
:mod:`~codemods.rules.tape.mutations`, :mod:`~codemods.rules.tape.walker`) need not import the
analyzer that composes them (no import cycle).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Protocol, Set, Tuple

import libcst as cst

from codemods.rules.tape.facts import ModuleFacts

__all__ = ["Analysis", "Effects", "Kind", "Memo", "Summary", "join_kinds"]


class Kind(enum.IntEnum):
    """How a value relates to the gradient path (ordered: the join is ``max``)."""

    FREE = 0  # no gradient can flow through it
    VARIABLE = 1  # a variable / layer / model / optimizer object: reads happen where it is used
    PARAM = 2  # comes from a caller this module does not show (unsafe to rely on)
    TENSOR = 3  # may carry a gradient from a trainable variable (or unknown)


def join_kinds(kinds: Iterable[Kind]) -> Kind:
    out = Kind.FREE
    for kind in kinds:
        if kind > out:
            out = kind
    return out


@dataclass
class Effects:
    """What one statement (or function body) does, as far as the tape rewrite cares."""

    reads: Set[str] = field(default_factory=set)  # names read before this unit binds them
    binds: Set[str] = field(default_factory=set)
    mutates: Set[str] = field(default_factory=set)  # names whose objects may change
    collection_read: Optional[cst.CSTNode] = None  # reads tensors from graph collections / the graph
    # when ``collection_read`` is only a possibility because a callable's body is not in this file: which one
    collection_read_cause: Optional[str] = None
    collection_write: Optional[cst.CSTNode] = None  # adds tensors to graph collections
    hazards: List[Tuple[cst.CSTNode, str]] = field(default_factory=list)
    opaque: List[Tuple[cst.CSTNode, str]] = field(default_factory=list)
    foreign: List[Tuple[cst.CSTNode, str]] = field(default_factory=list)
    gradients: List[cst.CSTNode] = field(default_factory=list)
    # value reads of attribute chains on a name (``self.logits``), with the root name
    attr_chains: List[Tuple[str, cst.Attribute]] = field(default_factory=list)
    attr_stores: Set[Tuple[str, str]] = field(default_factory=set)
    variables_created: bool = False  # creates variables (matters inside loop bodies)

    def absorb(self, other: "Effects", *, sequential: bool = False) -> None:
        """Add ``other`` (which runs after this unit when ``sequential``) into this record."""
        reads = other.reads - self.binds if sequential else other.reads
        self.reads |= reads
        self.binds |= other.binds
        self.mutates |= other.mutates
        if self.collection_read is None:
            self.collection_read, self.collection_read_cause = other.collection_read, other.collection_read_cause
        self.collection_write = self.collection_write or other.collection_write
        self.hazards += other.hazards
        self.opaque += other.opaque
        self.foreign += other.foreign
        self.gradients += other.gradients
        stored = self.attr_stores if sequential else set()
        self.attr_chains += [(r, c) for r, c in other.attr_chains
                             if not (isinstance(c.value, cst.Name) and (r, c.attr.value) in stored)]
        self.attr_stores |= other.attr_stores
        self.variables_created = self.variables_created or other.variables_created


@dataclass
class Summary:
    """A local function's (or class's) body, as its callers see it."""

    effects: Effects
    result: Kind
    mutates_args: bool = True
    params: Tuple[str, ...] = ()


@dataclass
class Memo:
    """The memo tables the analysis's collaborators share (one per module), in one place.

    ``kinds`` holds expression kinds (:class:`~codemods.rules.tape.kinds.Kinds`) and parameter
    kinds (:class:`~codemods.rules.tape.callsites.CallSites`), both keyed by node id;
    ``in_progress`` guards the recursion of kinds and of function summaries (node ids, shared: a
    kind may need a summary that needs that kind). :meth:`mark` and :meth:`rollback` let a
    computation made under an assumption (a field's least fixed point,
    :meth:`~codemods.rules.tape.kinds.Kinds.field_kind`) forget everything it memoised."""

    effects: Dict[int, Effects] = field(default_factory=dict)
    kinds: Dict[int, Kind] = field(default_factory=dict)
    summaries: Dict[int, Optional[Summary]] = field(default_factory=dict)
    field_kinds: Dict[str, Kind] = field(default_factory=dict)
    param_args: Dict[tuple, Optional[List[cst.BaseExpression]]] = field(default_factory=dict)
    in_progress: Set[int] = field(default_factory=set)

    def _tables(self) -> Tuple[dict, ...]:
        return (self.kinds, self.field_kinds, self.summaries, self.effects, self.param_args)

    def mark(self) -> List[Set]:
        """The keys every table holds now (for :meth:`rollback`)."""
        return [set(table) for table in self._tables()]

    def rollback(self, mark: List[Set]) -> None:
        """Forget every entry memoised since ``mark``."""
        for table, keys in zip(self._tables(), mark):
            for key in set(table) - keys:
                del table[key]


class Analysis(Protocol):
    """What the analyzer's collaborators (kinds, call sites, mutations, the statement walker)
    ask of :class:`~codemods.rules.tape.effects.Analyzer`, which composes them (the one
    implementation; a structural type, named here so that they depend on this interface rather
    than on the analyzer's module, and reach each other only through it)."""

    facts: ModuleFacts
    scope_regularizers: bool

    def kind(self, expr: cst.BaseExpression, exclude: Optional[Set[int]] = None) -> Kind: ...
    def callee(self, func: cst.BaseExpression) -> tuple: ...
    def summary(self, node: cst.CSTNode) -> Optional[Summary]: ...
    def is_local(self, name: cst.Name, container: cst.CSTNode) -> bool: ...
    def module_value(self, expr: cst.BaseExpression) -> bool: ...
    def root_is_object(self, name: cst.Name) -> bool: ...
    def callable_values(self, expr: cst.BaseExpression, depth: int = 0) -> Optional[List[tuple]]: ...
    def unresolved_callable(self, expr: cst.BaseExpression, depth: int = 0) -> str: ...
    def constructors_of(self, expr: cst.BaseExpression) -> List[cst.Call]: ...
    def method_summaries(self, method: str, receiver: cst.BaseExpression) -> Optional[List[Summary]]: ...
    def param_kind(self, param: cst.Param) -> Kind: ...
    def param_args(self, param: cst.Param) -> Optional[List[cst.BaseExpression]]: ...
    def find_method(self, cls: cst.ClassDef, method: str, depth: int = 0) -> Optional[cst.FunctionDef]: ...
    def all_field_stores(self) -> Dict[str, List[Tuple[cst.CSTNode, Optional[cst.BaseExpression]]]]: ...
    def container_mutated(self, name: cst.Name, exclude: Optional[Set[int]] = None) -> Optional[cst.CSTNode]: ...
    def field_mutated(self, attr: str) -> bool: ...

