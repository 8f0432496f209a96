"""The statement walker: one statement (or expression) -> its :class:`~codemods.rules.tape.values.Effects`.

Reads, binds, mutations, graph collections, attribute chains, and what cannot be followed
(foreign calls, opaque constructs, hazards). Calls of local functions and classes absorb their
summaries; TF API calls are classified by :mod:`codemods.rules.tape.tfapi`.

(One visitor with a method per node type; splitting it would scatter one dispatch over files.)
"""

from __future__ import annotations

from typing import Iterable, List, Optional

import libcst as cst

from codemods.rules.tape import tfapi
from codemods.rules.tape.values import Analysis, Effects, Summary
from codemods.rules.tape.kinds import (
    MUTATING_METHODS,
    OPAQUE_BUILTINS,
    PURE_BUILTINS,
    PURE_METHODS,
    Kind,
)
from codemods.rules.tape.syntax import root_name, subtargets, match_capture_names, match_pattern_values
from codemods.rules.tape.tfapi import Api


class StatementWalker:
    """Walks one statement (or expression) and builds its :class:`Effects`."""

    def __init__(self, analyzer: Analysis, container: cst.CSTNode) -> None:
        self.a = analyzer
        self.facts = analyzer.facts
        self.container = container
        self.e = Effects()

    def walk(self, node: cst.CSTNode) -> Effects:
        self._node(node)
        return self.e

    # dispatch
    def _node(self, node: cst.CSTNode) -> None:
        method = getattr(self, "_" + type(node).__name__, None)
        if method is not None:
            method(node)
            return
        for child in node.children:
            self._node(child)

    def _children(self, node: cst.CSTNode) -> None:
        for child in node.children:
            self._node(child)

    # statements
    def _SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        for small in node.body:
            sub = StatementWalker(self.a, self.container).walk(small)
            self.e.absorb(sub, sequential=True)

    def _IndentedBlock(self, node: cst.IndentedBlock) -> None:
        for stmt in node.body:
            sub = StatementWalker(self.a, self.container).walk(stmt)
            self.e.absorb(sub, sequential=True)

    def _Assign(self, node: cst.Assign) -> None:
        self._node(node.value)
        for target in node.targets:
            self._store(target.target)

    def _AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._node(node.value)
            self._store(node.target)

    def _AugAssign(self, node: cst.AugAssign) -> None:
        self._node(node.value)
        self._load_target(node.target)
        self._store(node.target)
        if isinstance(node.target, cst.Name):
            self.e.mutates.add(node.target.value)  # `lst += [...]` changes the list in place

    def _Del(self, node: cst.Del) -> None:
        for sub in subtargets(node.target):
            if isinstance(sub, cst.Name):
                self.e.binds.add(sub.value)
            else:
                self._load_target(sub)
                root = root_name(sub)
                if root is not None:
                    self.e.mutates.add(root)

    def _For(self, node: cst.For) -> None:
        self._node(node.iter)
        self._store(node.target)
        body = StatementWalker(self.a, self.container)
        body._node(node.body)
        # A loop body may read, on a later iteration, what it binds: its reads stay reads.
        self.e.absorb(body.e)
        if node.orelse is not None:
            self._node(node.orelse)

    def _While(self, node: cst.While) -> None:
        self._node(node.test)
        body = StatementWalker(self.a, self.container)
        body._node(node.body)
        self.e.absorb(body.e)
        if node.orelse is not None:
            self._node(node.orelse)

    def _If(self, node: cst.If) -> None:
        self._node(node.test)
        for part in (node.body, node.orelse):
            if part is not None:
                sub = StatementWalker(self.a, self.container)
                sub._node(part)
                self.e.absorb(sub.e)  # not sequential: a branch may not run

    def _Else(self, node: cst.Else) -> None:
        self._node(node.body)

    def _Try(self, node: cst.Try) -> None:
        for part in [node.body] + list(node.handlers) + [node.orelse, node.finalbody]:
            if part is not None:
                sub = StatementWalker(self.a, self.container)
                sub._node(part)
                self.e.absorb(sub.e)

    def _ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.type is not None:
            self._node(node.type)
        if node.name is not None:
            self._store(node.name.name)  # type: ignore[arg-type]
        self._node(node.body)

    def _With(self, node: cst.With) -> None:
        for item in node.items:
            self._node(item.item)
            if item.asname is not None:
                self._store(item.asname.name)  # type: ignore[arg-type]
        self._node(node.body)

    def _Match(self, node: cst.Match) -> None:
        # `match subject: case <pattern> if <guard>: ...` -- capture patterns (`case loss:`,
        # `case [a, *rest]`, `case {**kw}`, `case P(x=v)`) bind names like an assignment; a case
        # may not run, so each one is a branch.
        self._node(node.subject)
        for case in node.cases:
            sub = StatementWalker(self.a, self.container)
            sub._pattern(case.pattern)
            if case.guard is not None:
                sub._node(case.guard)
            sub._node(case.body)
            self.e.absorb(sub.e)

    def _pattern(self, pattern: cst.CSTNode) -> None:
        for name in match_capture_names(pattern):
            if not self.a.is_local(name, self.container):
                self.e.binds.add(name.value)
        for expr in match_pattern_values(pattern):
            self._node(expr)

    def _NamedExpr(self, node: cst.NamedExpr) -> None:
        self._node(node.value)
        self._store(node.target)

    def _FunctionDef(self, node: cst.FunctionDef) -> None:
        # Defining a function runs its decorators and defaults only; its body counts at calls.
        for deco in node.decorators:
            self._node(deco.decorator)
        for param in list(node.params.params) + list(node.params.kwonly_params):
            if param.default is not None:
                self._node(param.default)
        self.e.binds.add(node.name.value)

    def _ClassDef(self, node: cst.ClassDef) -> None:
        for base in node.bases:
            self._node(base.value)
        for stmt in node.body.body:
            if not isinstance(stmt, cst.FunctionDef):
                self.e.absorb(StatementWalker(self.a, node).walk(stmt))
        self.e.binds.add(node.name.value)

    def _Import(self, node: cst.Import) -> None:
        for alias in node.names:
            bound = alias.asname.name if alias.asname is not None else alias.name
            while isinstance(bound, cst.Attribute):
                bound = bound.value  # type: ignore[assignment]
            if isinstance(bound, cst.Name):
                self.e.binds.add(bound.value)

    def _ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            self.e.opaque.append((node, "`import *` (the names it binds are unknown)"))
            return
        for alias in node.names:
            bound = alias.asname.name if alias.asname is not None else alias.name
            if isinstance(bound, cst.Name):
                self.e.binds.add(bound.value)

    def _Global(self, node: cst.Global) -> None:
        for item in node.names:
            self.e.mutates.add(item.name.value)

    def _Nonlocal(self, node: cst.Nonlocal) -> None:
        for item in node.names:
            self.e.mutates.add(item.name.value)

    # expressions
    def _Name(self, node: cst.Name) -> None:
        if node.value in ("True", "False", "None"):
            return
        if self.a.is_local(node, self.container):
            return
        self.e.reads.add(node.value)

    def _Attribute(self, node: cst.Attribute) -> None:
        root = node.value
        while isinstance(root, cst.Attribute):
            root = root.value
        self._node(node.value)
        if isinstance(root, cst.Name) and not self.facts.tf_names(node) and not self.a.is_local(root, self.container):
            parent = self.facts.parent(node)
            if not (isinstance(parent, cst.Attribute) and parent.value is node):
                self.e.attr_chains.append((root.value, node))

    def _Lambda(self, node: cst.Lambda) -> None:
        # Defining a lambda computes nothing; what it reads counts where it is called. Its free
        # names are read here too (over-approximation: it may be called in this statement).
        for param in node.params.params:
            if param.default is not None:
                self._node(param.default)
        self._node(node.body)

    def _Call(self, call: cst.Call) -> None:
        what = self.a.callee(call.func)
        kind = what[0]
        # arguments (and the callee expression) are evaluated first
        if kind == "method":
            self._node(what[1])
        elif kind not in ("tf", "builtin", "data"):
            self._node(call.func)
        for arg in call.args:
            self._node(arg.value)
        arg_roots = [r for r in (root_name(a.value) for a in call.args if not self.a.module_value(a.value))
                     if r is not None]
        if kind == "unknown" and isinstance(call.func, cst.Name) and self.a.kind(call.func) is not Kind.VARIABLE:
            # a parameter or name used as a callee (`activation(h)`): every function it may be
            targets = self.a.callable_values(call.func)
            if targets is not None:
                for target in targets:
                    self._dispatch(call, target, arg_roots)
                return
        self._dispatch(call, what, arg_roots)

    def _dispatch(self, call: cst.Call, what: tuple, arg_roots: List[str]) -> None:
        """The effects of calling ``what`` (a :meth:`Analyzer.callee` tuple) with ``call``'s arguments."""
        kind = what[0]
        if kind == "tf":
            self._tf_call(call, what[1])
        elif kind == "builtin":
            name = what[1]
            if name in OPAQUE_BUILTINS and not (name == "getattr" and len(call.args) >= 2
                                                  and isinstance(call.args[1].value, cst.SimpleString)):
                self.e.opaque.append((call, f"`{name}(...)`"))
            elif name in ("map", "filter"):
                self._call_callables(call)
            elif name not in PURE_BUILTINS:
                self.e.foreign.append((call, f"`{name}`, a builtin whose effects the analysis does not model"))
        elif kind == "data":
            self.e.mutates |= set(arg_roots)
        elif kind == "local_function":
            summary = self.a.summary(what[1])
            if summary is None:
                self.e.opaque.append((call, f"the recursive function `{self.facts.code(call.func, 40)}`"))
            else:
                self._absorb_summary(summary, call)
                if summary.mutates_args:
                    self.e.mutates |= set(arg_roots)
        elif kind == "local_class":
            summary = self.a.summary(what[1])
            if summary is None:
                self.e.opaque.append((call, f"the recursive class `{self.facts.code(call.func, 40)}`"))
            else:
                self._absorb_summary(summary, call)
                self.e.mutates |= set(arg_roots)
        elif kind == "method":
            self._method_call(call, what[1], what[2], arg_roots)
        elif kind in ("unknown", "call_result") and self.a.kind(call.func) is Kind.VARIABLE:
            self._object_call(call, call.func)
        else:  # imported or unknown callables: their bodies are not in this file
            if isinstance(call.func, (cst.Name, cst.Attribute)):
                what_text = self.a.unresolved_callable(call.func)
            else:
                what_text = f"`{self.facts.code(call.func, 40)}`, a callable computed by an expression"
            self.e.foreign.append((call, what_text))
            self.e.mutates |= set(arg_roots)
            if self.e.collection_read is None:
                self.e.collection_read, self.e.collection_read_cause = call, what_text
            self.e.collection_write = self.e.collection_write or call

    def _object_call(self, call: cst.Call, func: cst.BaseExpression) -> None:
        """Calling a layer / model / cell object: reads (and may create) its variables; an RNN
        layer runs its cell in a while loop (the dynamic_rnn hazard)."""
        self.e.collection_write = self.e.collection_write or call
        self.e.variables_created = True
        root = root_name(func)
        if root is not None:
            self.e.mutates.add(root)
        for ctor in self.a.constructors_of(func):
            what = self.a.callee(ctor.func)
            if what[0] == "tf" and tfapi.is_rnn_layer_class(what[1]):
                self.e.hazards.append((call, f"the recurrent layer `{what[1]}` (a `tf.GradientTape` gives no "
                                             "gradient for variables read inside its loop; measured)"))
            elif what[0] != "tf":
                if ctor.func is not None and isinstance(ctor.func, cst.Name) and ctor.func.value == "__unknown__":
                    built = "an object whose construction the analysis cannot see"
                else:
                    built = f"an object built by {self.a.unresolved_callable(ctor.func)}"
                self.e.foreign.append((call, f"`{self.facts.code(func, 40)}`, {built}"))

    def _absorb_summary(self, summary: Summary, call: cst.Call) -> None:
        inner = summary.effects
        self.e.reads |= inner.reads
        self.e.mutates |= inner.mutates
        if self.e.collection_read is None and inner.collection_read is not None:
            self.e.collection_read, self.e.collection_read_cause = call, inner.collection_read_cause
        self.e.collection_write = self.e.collection_write or (call if inner.collection_write else None)
        self.e.hazards += [(n, why) for n, why in inner.hazards]
        self.e.opaque += inner.opaque
        self.e.foreign += inner.foreign
        self.e.gradients += inner.gradients
        self.e.variables_created = self.e.variables_created or inner.variables_created
        # fields the body reads off its parameters (`self.logits`) or off module objects
        self.e.attr_chains += inner.attr_chains

    def _method_call(self, call: cst.Call, receiver: cst.BaseExpression, method: str, arg_roots: List[str]) -> None:
        root = root_name(receiver)
        base = self.a.kind(receiver)
        if method in ("minimize", "compute_gradients", "apply_gradients", "gradient", "jacobian"):
            self.e.gradients.append(call)
        if method in MUTATING_METHODS:
            if root is not None:
                self.e.mutates.add(root)
            return
        if method in PURE_METHODS or base is Kind.FREE:
            return
        summaries = self.a.method_summaries(method, receiver)
        if summaries is not None:
            for summary in summaries:
                self._absorb_summary(summary, call)
            if root is not None:
                self.e.mutates.add(root)
            self.e.mutates |= set(arg_roots)
            return
        if base is Kind.VARIABLE:
            # a method of a variable / layer / model object: reads (maybe creates) variables
            if root is not None:
                self.e.mutates.add(root)
            self.e.collection_write = self.e.collection_write or call
            self.e.variables_created = True
            return
        if base is Kind.TENSOR and not (isinstance(receiver, cst.Name) and self.a.root_is_object(receiver)):
            return  # a method of a tensor value (`h.get_shape()`...): computed from it
        what_text = (f"the method `{self.facts.code(call.func, 40)}`, of an object the analysis cannot resolve to "
                     "a class of this file")
        self.e.foreign.append((call, what_text))
        if root is not None:
            self.e.mutates.add(root)
        self.e.mutates |= set(arg_roots)
        if self.e.collection_read is None:
            self.e.collection_read, self.e.collection_read_cause = call, what_text
        self.e.collection_write = self.e.collection_write or call

    def _tf_call(self, call: cst.Call, name: str) -> None:
        api = tfapi.classify(name)
        if api is Api.GRADIENT:
            self.e.gradients.append(call)
        elif api is Api.HAZARD and tfapi.is_cached_read(name):
            self.e.hazards.append((call, f"`{name}` (it reads its variables through cached reads made while a "
                                         "`tf.GradientTape` is paused, so they get no gradient; measured)"))
        elif api is Api.HAZARD:
            self.e.hazards.append((call, f"`{name}` (a `tf.GradientTape` gives no gradient for variables read "
                                         "inside its loop; measured)"))
        elif api is Api.LOOP:
            self._loop_callables(call, name)
        elif api is Api.CONTROL:
            self._call_callables(call)
        elif api is Api.COLLECTION_READ:
            if not self._variable_collection(call):
                self.e.collection_read = self.e.collection_read or call
        elif api is Api.COLLECTION_WRITE:
            self.e.collection_write = self.e.collection_write or call
        elif api is Api.VARIABLE:
            self.e.variables_created = True
            if name == "tf.get_variable" and (self.a.scope_regularizers or any(
                    a.keyword is not None and a.keyword.value == "regularizer" for a in call.args)
                    or len(call.args) >= 5):
                self.e.collection_write = self.e.collection_write or call
        elif api in (Api.LAYER, Api.UNKNOWN):
            # (an API no table lists may read or create variables and add to collections)
            self.e.variables_created = True
            self.e.collection_write = self.e.collection_write or call
        elif api is Api.OBJECT and tfapi.is_rnn_layer_class(name):
            pass  # constructing it is harmless; calling it is checked at the call
        if api in (Api.LAYER, Api.OBJECT, Api.PURE, Api.SOURCE, Api.CUT, Api.VARIABLE, Api.CONTEXT,
                   Api.COLLECTION_WRITE, Api.COLLECTION_READ, Api.UNKNOWN):
            # callables handed to TF (regularizers, initializers, py_func) may run here
            for arg in call.args:
                if isinstance(arg.value, cst.Lambda):
                    self._callable(arg.value, call)

    def _variable_collection(self, call: cst.Call) -> bool:
        """``tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES)`` returns variables, not tensors."""
        if not call.args:
            return False
        key = call.args[0].value
        names = self.facts.tf_names(key)
        if names & tfapi.VARIABLE_COLLECTION_KEYS:
            return True
        if isinstance(key, cst.SimpleString):
            return key.evaluated_value in tfapi.VARIABLE_COLLECTION_STRINGS  # type: ignore[operator]
        return False

    def _callables_of(self, call: cst.Call) -> Iterable[cst.BaseExpression]:
        for arg in call.args:
            value = arg.value
            if isinstance(value, (cst.Lambda, cst.Name)):
                yield value
            elif isinstance(value, (cst.List, cst.Tuple, cst.Dict)):
                for element in value.elements:  # tf.case pairs
                    inner = element.value
                    if isinstance(inner, cst.Tuple):
                        for sub in inner.elements:
                            if isinstance(sub.value, (cst.Lambda, cst.Name)):
                                yield sub.value

    def _callable(self, value: cst.BaseExpression, call: cst.Call) -> Optional[Summary]:
        if isinstance(value, cst.Lambda):
            summary = self.a.summary(value)
        elif isinstance(value, cst.Name):
            what = self.a.callee(value)
            if what[0] == "local_function":
                summary = self.a.summary(what[1])
            elif what[0] in ("tf", "builtin", "data"):
                return None
            elif what[0] == "unknown" and self.a.callable_values(value) is not None:
                # a parameter or name bound to known callables (`tf.while_loop(c, body_fn, ...)`
                # where every caller passes a local function): each of them may run here
                effects = Effects()
                found = False
                for target in self.a.callable_values(value) or ():
                    if target[0] in ("local_function", "local_class"):
                        inner = self.a.summary(target[1])
                        if inner is None:
                            self.e.opaque.append((call, "a recursive callable"))
                            return None
                        effects.absorb(inner.effects)
                        found = True
                if not found:
                    return None
                summary = Summary(effects, Kind.TENSOR)
            elif what[0] in ("imported", "unknown") and self.a.kind(value) is not Kind.FREE:
                self.e.foreign.append((call, self.a.unresolved_callable(value)))
                return None
            else:
                return None
        else:
            return None
        if summary is None:
            self.e.opaque.append((call, "a recursive callable"))
            return None
        self._absorb_summary(summary, call)
        return summary

    def _call_callables(self, call: cst.Call) -> None:
        for value in self._callables_of(call):
            self._callable(value, call)

    def _loop_callables(self, call: cst.Call, name: str) -> None:
        for value in self._callables_of(call):
            summary = self._callable(value, call)
            if summary is not None and (summary.effects.variables_created or summary.effects.foreign):
                self.e.hazards.append((call, f"`{name}` whose body may create or read variables through layers "
                                             "(a tape gives no gradient for variables created inside a loop)"))

    # stores
    def _store(self, target: cst.BaseExpression) -> None:
        for sub in subtargets(target):
            if isinstance(sub, cst.Name):
                if not self.a.is_local(sub, self.container):
                    self.e.binds.add(sub.value)
            elif isinstance(sub, (cst.Attribute, cst.Subscript)):
                self._load_target(sub)
                root = root_name(sub)
                if root is not None:
                    self.e.mutates.add(root)
                    if isinstance(sub, cst.Attribute) and isinstance(sub.value, cst.Name):
                        self.e.attr_stores.add((root, sub.attr.value))

    def _load_target(self, target: cst.BaseExpression) -> None:
        """The expressions a store target evaluates (``obj`` in ``obj.x = ``, ``d`` and ``k`` in
        ``d[k] = ``) without counting the stored attribute itself as a read."""
        if isinstance(target, cst.Attribute):
            self._node(target.value)
        elif isinstance(target, cst.Subscript):
            self._node(target.value)
            for element in target.slice:
                self._node(element.slice)
        elif isinstance(target, cst.Name):
            self._Name(target)
