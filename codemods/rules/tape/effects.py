"""What a statement reads, binds and changes, and whether a value can carry a gradient.

Two questions decide every tape rewrite (see :mod:`codemods.rules.tape`):

1. *Which earlier statements does the loss depend on?* :meth:`Analyzer.effects` answers with an
   :class:`Effects` record per statement: names read and bound, objects mutated (method calls,
   attribute and item stores, arguments of calls that may mutate them), graph collections read or
   written, attribute chains read, and everything the analysis cannot follow -- calls whose body
   is not in this file (``foreign``), constructs it cannot analyse at all (``opaque``), and APIs
   through which a tape differs from ``tf.gradients`` (``hazards``). Calls of functions and
   classes defined in this module are followed through summaries of their bodies.
2. *May a value be computed outside the tape?* :meth:`Analyzer.kind` gives a :class:`Kind`:
   ``FREE`` (no gradient can flow through it: literals, placeholders, constants, ``tf.data``, and
   pure ops of those), ``VARIABLE`` (a variable, layer, model, optimizer or initializer *object*:
   its reads happen where it is used), or ``TENSOR`` (anything else -- including everything the
   analysis does not know: unknown means it may carry a gradient).

Everything errs on the side of "may": an over-approximated read set, mutation set or kind only
makes a site decline.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst
from libcst.metadata import Assignment, BuiltinAssignment, ImportAssignment
from libcst.metadata.scope_provider import GlobalScope

from codemods.rules.tape.callsites import CallSites
from codemods.rules.tape.facts import ModuleFacts
from codemods.rules.tape.kinds import BUILTIN_NAMES, DATA_MODULES, Kinds
from codemods.rules.tape.mutations import Mutations
from codemods.rules.tape.syntax import return_statements, root_name
from codemods.rules.tape.values import Effects, Kind, Memo, Summary, join_kinds
from codemods.rules.tape.walker import StatementWalker

__all__ = ["Analyzer", "BUILTIN_NAMES", "Effects", "Kind", "Summary", "root_name"]


class Analyzer:
    """Effects and kinds for one module (memoised; see the module docstring).

    It composes three collaborators, each holding its own state and given the shared
    :class:`~codemods.rules.tape.values.Memo` and this analyzer (as the
    :class:`~codemods.rules.tape.values.Analysis` interface) to ask the others through:
    :class:`~codemods.rules.tape.kinds.Kinds` (what a value is),
    :class:`~codemods.rules.tape.callsites.CallSites` (who calls a function, with what) and
    :class:`~codemods.rules.tape.mutations.Mutations` (what may change in place). The analyzer
    itself resolves callees, summarises local functions and classes, and walks statements
    (:class:`~codemods.rules.tape.walker.StatementWalker`); the methods below the walker's are
    the collaborators' answers, named here so that every caller asks the analyzer."""

    def __init__(self, facts: ModuleFacts) -> None:
        self.facts = facts
        self.memo = Memo()
        self.kinds = Kinds(facts, self.memo, self)
        self.calls = CallSites(facts, self.memo, self)
        self.mutations = Mutations(facts, self)
        self.scope_regularizers = "kw:regularizer" in facts.mentions and bool(
            facts.tf_used & {"tf.variable_scope", "tf.arg_scope", "tf.contrib.framework.arg_scope"})

    def _local_to(self, name: cst.Name, container: cst.CSTNode) -> bool:
        """Whether ``name`` is bound only in a scope (lambda, comprehension, nested def) that
        lies inside ``container``: then reading it is not a read of the container's reads."""
        scope = self.facts.scope(name)
        if scope is None:
            return False
        assignments = list(scope[name.value])
        if not assignments:
            return False
        return all(self._scope_inside(a.scope, container) for a in assignments)

    def _scope_inside(self, scope, container: cst.CSTNode) -> bool:
        node = getattr(scope, "node", None)
        if node is None or isinstance(scope, GlobalScope):
            return False
        if node is container:
            return True
        return any(anc is container for anc in self.facts.ancestors(node))

    def callee(self, func: cst.BaseExpression):
        """What a call's function is: ("tf", name) | ("local_function", FunctionDef|Lambda) |
        ("local_class", ClassDef) | ("builtin", name) | ("data", qualified) | ("imported", name)
        | ("method", receiver, method) | ("unknown", text)."""
        names = self.facts.tf_names(func)
        if names:
            return ("tf", sorted(names)[0])
        if isinstance(func, cst.Name):
            found = [a for a in self.facts.assignments(func) if not isinstance(a, BuiltinAssignment)]
            if not found:
                if func.value in BUILTIN_NAMES:
                    return ("builtin", func.value)
                return ("unknown", func.value)
            if any(isinstance(a, ImportAssignment) for a in found):
                qualified = self.facts.qualified(func)
                if qualified and all(q.split(".")[0] in DATA_MODULES for q in qualified):
                    return ("data", sorted(qualified)[0])
                return ("imported", func.value)
            if len(found) == 1 and isinstance(found[0], Assignment):
                node = found[0].node
                if isinstance(node, cst.FunctionDef):
                    return ("local_function", node)
                if isinstance(node, cst.ClassDef):
                    return ("local_class", node)
                value = self.facts.assigned_value(found[0])
                if isinstance(value, cst.Lambda):
                    return ("local_function", value)
            return ("unknown", func.value)
        if isinstance(func, cst.Attribute):
            qualified = self.facts.qualified(func)
            if qualified and all(q.split(".")[0] in DATA_MODULES for q in qualified):
                return ("data", sorted(qualified)[0])
            root = func
            while isinstance(root, cst.Attribute):
                root = root.value
            if isinstance(root, cst.Name):
                found = self.facts.assignments(root)
                if found and all(isinstance(a, ImportAssignment) for a in found):
                    if qualified and all(q.split(".")[0] in DATA_MODULES for q in qualified):
                        return ("data", sorted(qualified)[0])
                    return ("imported", self.facts.code(func))
            return ("method", func.value, func.attr.value)
        if isinstance(func, cst.Call):
            return ("call_result", func)
        return ("unknown", self.facts.code(func, 40))

    def summary(self, node: cst.CSTNode) -> Optional[Summary]:
        """The :class:`Summary` of a local ``def``, lambda or class (None while recursing)."""
        key = id(node)
        if key in self.memo.summaries:
            return self.memo.summaries[key]
        if key in self.memo.in_progress:
            return None
        self.memo.in_progress.add(key)
        try:
            result = self._summarize(node)
        finally:
            self.memo.in_progress.discard(key)
        self.memo.summaries[key] = result
        return result

    def _summarize(self, node: cst.CSTNode) -> Summary:
        effects = Effects()
        if isinstance(node, cst.Lambda):
            effects.absorb(self.expression_effects(node.body, node))
            result = self.kind(node.body)
            params = tuple(p.name.value for p in node.params.params)
            return Summary(effects, Kind.TENSOR if result is Kind.TENSOR else result, False, params)
        if isinstance(node, cst.FunctionDef):
            for stmt in node.body.body if isinstance(node.body, cst.IndentedBlock) else ():
                effects.absorb(self.statement_effects(stmt, container=node), sequential=True)
            returns = return_statements(node)
            kinds = [self.kind(r.value) for r in returns if r.value is not None]
            result = join_kinds(kinds) if kinds else Kind.FREE
            params = tuple(p.name.value for p in node.params.params)
            mutates_args = bool(effects.mutates & set(params)) or bool(effects.foreign)
            return Summary(effects, result, mutates_args, params)
        if isinstance(node, cst.ClassDef):
            # Constructing an instance runs __init__, which may call any method: all of them.
            for stmt in node.body.body:
                if isinstance(stmt, cst.FunctionDef):
                    inner = self.summary(stmt)
                    if inner is None:
                        effects.opaque.append((stmt, f"`{node.name.value}.{stmt.name.value}` is recursive"))
                        continue
                    effects.absorb(inner.effects)
                else:
                    effects.absorb(self.statement_effects(stmt, container=node))
            for base in node.bases:
                what = self.callee(base.value)
                if what[0] == "local_class":
                    inner = self.summary(what[1])
                    if inner is not None:
                        effects.absorb(inner.effects)
                elif what[0] == "tf":
                    effects.collection_write = effects.collection_write or base
                    effects.variables_created = True
                elif not (what[0] == "builtin" and what[1] == "object"):
                    effects.foreign.append((base, "the base class " + self.unresolved_callable(base.value)))
            return Summary(effects, Kind.TENSOR, True, ())
        return Summary(effects, Kind.TENSOR)

    def statement_effects(self, stmt: cst.CSTNode, container: Optional[cst.CSTNode] = None) -> Effects:
        """:class:`Effects` of one statement; reads of names local to ``container`` (a function
        being summarised) are not reads of the unit."""
        key = (id(stmt), id(container))
        cached = self.memo.effects.get(hash(key))
        if cached is not None and container is None:
            return cached

        effects = StatementWalker(self, container if container is not None else stmt).walk(stmt)
        if container is None:
            self.memo.effects[hash(key)] = effects
        return effects

    def expression_effects(self, expr: cst.CSTNode, container: cst.CSTNode) -> Effects:

        return StatementWalker(self, container).walk(expr)

    def is_local(self, name: cst.Name, container: cst.CSTNode) -> bool:
        return self._local_to(name, container)

    # -- the collaborators' answers ---------------------------------------------------------
    def kind(self, expr: cst.BaseExpression, exclude: Optional[Set[int]] = None) -> Kind:
        return self.kinds.kind(expr, exclude)

    def capture_kind(self, captures, exclude: Optional[Set[int]] = None) -> Kind:
        return self.kinds.capture_kind(captures, exclude)

    def assignment_kind(self, assignment) -> Kind:
        return self.kinds.assignment_kind(assignment)

    def mutable_binding(self, assignment) -> bool:
        return self.kinds.mutable_binding(assignment)

    def import_is_code_or_data(self, assignment: ImportAssignment) -> bool:
        return self.kinds.import_is_code_or_data(assignment)

    def root_is_object(self, name: cst.Name) -> bool:
        return self.kinds.root_is_object(name)

    def module_value(self, expr: cst.BaseExpression) -> bool:
        return self.kinds.module_value(expr)

    def field_stores(self, attr: str) -> List[cst.CSTNode]:
        return self.kinds.field_stores(attr)

    def all_field_stores(self) -> Dict[str, List[Tuple[cst.CSTNode, Optional[cst.BaseExpression]]]]:
        return self.kinds.all_field_stores()

    def param_kind(self, param: cst.Param) -> Kind:
        return self.calls.param_kind(param)

    def param_args(self, param: cst.Param) -> Optional[List[cst.BaseExpression]]:
        return self.calls.param_args(param)

    def callable_values(self, expr: cst.BaseExpression, depth: int = 0) -> Optional[List[tuple]]:
        return self.calls.callable_values(expr, depth)

    def unresolved_callable(self, expr: cst.BaseExpression, depth: int = 0) -> str:
        return self.calls.unresolved_callable(expr, depth)

    def constructors_of(self, expr: cst.BaseExpression) -> List[cst.Call]:
        return self.calls.constructors_of(expr)

    def method_summaries(self, method: str, receiver: cst.BaseExpression) -> Optional[List[Summary]]:
        return self.calls.method_summaries(method, receiver)

    def find_method(self, cls: cst.ClassDef, method: str, depth: int = 0) -> Optional[cst.FunctionDef]:
        return self.calls.find_method(cls, method, depth)

    def container_mutated(self, name: cst.Name, exclude: Optional[Set[int]] = None) -> Optional[cst.CSTNode]:
        return self.mutations.container_mutated(name, exclude)

    def field_mutated(self, attr: str) -> bool:
        return self.mutations.field_mutated(attr)

    def aliases(self, name: str) -> Set[str]:
        return self.mutations.aliases(name)
