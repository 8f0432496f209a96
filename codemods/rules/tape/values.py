"""The values the planner's analysis passes around -- what a statement does (:class:`Effects`),
what a local function's body does as its callers see it (:class:`Summary`) -- and the view of the
analyzer its helpers (:mod:`~codemods.rules.tape.walker`, :mod:`~codemods.rules.tape.mutations`) are
given (:class:`Analysis`). A leaf module: it imports no other module of the planner but
:mod:`~codemods.rules.tape.kinds`' :class:`Kind`, so the helpers need not import the analyzer that
uses them (no import cycle).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Protocol, Set, Tuple

import libcst as cst

from codemods.rules.tape.facts import ModuleFacts
from codemods.rules.tape.kinds import Kind

__all__ = ["Analysis", "Effects", "Summary"]


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


class Analysis(Protocol):
    """What the statement walker and the mutation index ask of
    :class:`~codemods.rules.tape.effects.Analyzer` (the one implementation; a structural type,
    named here so that they depend on this interface rather than on the analyzer's module)."""

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

