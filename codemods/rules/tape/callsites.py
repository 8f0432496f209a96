"""Who calls a local function, class or method, and with what: parameters typed by their callers.

A parameter's value comes from the calls of its function; when every call is in this module and
can be bound (positional, keyword or default), the parameter's :class:`~codemods.rules.tape.kinds.Kind`
is the join of the arguments' kinds. A function used any other way (passed around, decorated,
subclassed) has callers we cannot see: its parameters are ``PARAM`` (an unsafe fix at most).
"""

from __future__ import annotations

from typing import List, Optional

import libcst as cst
from libcst.metadata import Assignment, BuiltinAssignment, ImportAssignment

from codemods.rules.tape.facts import ModuleFacts
from codemods.rules.tape.syntax import walk_nodes
from codemods.rules.tape.values import Analysis, Kind, Memo, Summary, join_kinds


class CallSites:
    """Callers of the module's functions, classes and methods: the analyzer's collaborator for
    parameters and callables (it asks the analyzer, ``analysis``, for kinds, callees, summaries
    and field stores; memoises in the shared ``memo``)."""

    def __init__(self, facts: ModuleFacts, memo: Memo, analysis: Analysis) -> None:
        self.facts = facts
        self.memo = memo
        self.a = analysis

    def param_kind(self, param: cst.Param) -> Kind:
        """What callers pass for ``param``: the join of the argument kinds at every call of its
        function in this module (``__init__``: every ``C(...)``); PARAM when the function has no
        such call, is used other than by calling it, or a call cannot be bound."""
        key = id(param)
        if key in self.memo.kinds:
            return self.memo.kinds[key]
        self.memo.kinds[key] = Kind.PARAM  # recursion guard
        result = self._param_kind(param)
        self.memo.kinds[key] = result
        return result

    def _param_kind(self, param: cst.Param) -> Kind:
        args = self.param_args(param)
        if args is None:
            return Kind.PARAM
        return join_kinds(self.a.kind(arg) for arg in args)

    def param_args(self, param: cst.Param) -> Optional[List[cst.BaseExpression]]:
        """The argument every call of ``param``'s function in this module passes for it; None when
        the function has no such call, is used other than by calling it, or a call cannot be
        bound (then its callers are not all in this file)."""
        key = ("args", id(param))
        if key in self.memo.param_args:
            return self.memo.param_args[key]
        self.memo.param_args[key] = None  # recursion guard
        result = self._bind_param_args(param)
        self.memo.param_args[key] = result
        return result

    def _bind_param_args(self, param: cst.Param) -> Optional[List[cst.BaseExpression]]:
        params_node = self.facts.parent(param)
        func = self.facts.parent(params_node) if params_node is not None else None
        if not isinstance(func, cst.FunctionDef) or not isinstance(params_node, cst.Parameters):
            return None
        if param not in params_node.params and param not in params_node.kwonly_params:
            return None  # *args / **kwargs
        block = self.facts.parent(func)
        cls = self.facts.parent(block) if block is not None else None
        positional = list(params_node.params)
        if isinstance(cls, cst.ClassDef):
            if not positional or positional[0] is param or any(
                    d.decorator for d in func.decorators):  # staticmethod/property/...: callers unknown
                return None
            positional = positional[1:]
            calls = self._constructor_calls(cls) if func.name.value == "__init__" else \
                self._method_calls(cls, func.name.value)
        else:
            calls = self._function_calls(func)
        if not calls:
            return None
        index = positional.index(param) if param in positional else None
        args: List[cst.BaseExpression] = []
        for call in calls:
            arg: Optional[cst.BaseExpression] = None
            positional_args = [a for a in call.args if a.keyword is None and not a.star]
            if any(a.star for a in call.args):
                return None
            for a in call.args:
                if a.keyword is not None and a.keyword.value == param.name.value:
                    arg = a.value
            if arg is None and index is not None and index < len(positional_args):
                arg = positional_args[index].value
            if arg is None:
                arg = param.default
            if arg is None:
                return None
            args.append(arg)
        return args

    # the callables a parameter used as a callee may be (`activation(h)`)
    CALLABLE_KINDS = ("tf", "local_function", "local_class", "builtin", "data")

    def callable_values(self, expr: cst.BaseExpression, depth: int = 0) -> Optional[List[tuple]]:
        """Every function ``expr`` may name when it is called, as :meth:`callee` tuples
        (``("tf", "tf.nn.relu")``, ``("local_function", node)``...), or None when one of them is not
        known. A name bound only to parameters and plain assignments is followed to every value
        bound to it, a parameter to every argument every call of its function in this module passes
        for it (:meth:`param_args`, the same rule as :meth:`param_kind`); ``None`` contributes
        nothing (calling it raises the same ``TypeError`` before and after a rewrite)."""
        if depth > 8:
            return None
        if isinstance(expr, cst.Name) and expr.value == "None":
            return []
        if isinstance(expr, cst.Lambda):
            return [("local_function", expr)]
        if isinstance(expr, (cst.IfExp, cst.BooleanOperation)):
            parts = [expr.body, expr.orelse] if isinstance(expr, cst.IfExp) else [expr.left, expr.right]
            out: List[tuple] = []
            for part in parts:
                found = self.callable_values(part, depth + 1)
                if found is None:
                    return None
                out += found
            return out
        if not isinstance(expr, (cst.Name, cst.Attribute)):
            return None
        what = self.a.callee(expr)
        if what[0] in self.CALLABLE_KINDS:
            return [what]
        if not isinstance(expr, cst.Name) or what[0] != "unknown" or self.facts.match_captures.get(expr.value):
            return None
        bindings = [a for a in self.facts.assignments(expr) if not isinstance(a, BuiltinAssignment)]
        if not bindings:
            return None
        out = []
        for assignment in bindings:
            if not isinstance(assignment, Assignment):
                return None
            if isinstance(assignment.node, cst.Param):
                args = self.param_args(assignment.node)
                values = args if args is not None else None
            else:
                value = self.facts.assigned_value(assignment)
                values = [value] if value is not None else None
            if values is None:
                return None
            for value in values:
                found = self.callable_values(value, depth + 1)
                if found is None:
                    return None
                out += found
        return out

    def unresolved_callable(self, expr: cst.BaseExpression, depth: int = 0) -> str:
        """Why :meth:`callable_values` cannot list what ``expr`` calls, as a phrase naming the
        callable (``"`helper`, defined in another module"``) for decline and unsafe reasons."""
        code = f"`{self.facts.code(expr, 40)}`"
        if depth > 8:
            return f"{code}, bound through too many parameters to follow"
        if isinstance(expr, (cst.IfExp, cst.BooleanOperation)):
            parts = [expr.body, expr.orelse] if isinstance(expr, cst.IfExp) else [expr.left, expr.right]
            for part in parts:
                if self.callable_values(part, depth + 1) is None:
                    return self.unresolved_callable(part, depth + 1)
        if isinstance(expr, cst.Name) and not self.facts.match_captures.get(expr.value):
            what = self.a.callee(expr)
            if what[0] == "imported":
                return f"{code}, defined in another module"
            bindings = [a for a in self.facts.assignments(expr) if not isinstance(a, BuiltinAssignment)]
            if not bindings:
                return f"{code}, which is not defined in this file"
            for assignment in bindings:
                if isinstance(assignment, Assignment) and isinstance(assignment.node, cst.Param):
                    args = self.param_args(assignment.node)
                    func = self.facts.function_of(assignment.node)
                    owner = f"`{func.name.value}`" if isinstance(func, cst.FunctionDef) else "its function"
                    if args is None:
                        return (f"{code}, a parameter of {owner}, which this file does not only call directly "
                                "(so what its callers pass cannot be listed)")
                    for arg in args:
                        if self.callable_values(arg, depth + 1) is None:
                            return (f"{code}, a parameter of {owner} that a caller binds to "
                                    f"{self.unresolved_callable(arg, depth + 1)}")
                elif isinstance(assignment, Assignment):
                    value = self.facts.assigned_value(assignment)
                    if value is None:
                        return f"{code}, bound in a way the analysis cannot follow"
                    if self.callable_values(value, depth + 1) is None:
                        return self.unresolved_callable(value, depth + 1)
                else:
                    return f"{code}, defined in another module"
        if isinstance(expr, cst.Attribute):
            what = self.a.callee(expr)
            if what[0] == "imported":
                return f"{code}, defined in another module"
        return f"{code}, a callable the analysis cannot resolve to a function in this file"

    def _function_calls(self, func: cst.FunctionDef) -> Optional[List[cst.Call]]:
        """Every call of ``func`` in the module; None if it is used any other way."""
        return self._calls_of_name(func.name, func)

    def _constructor_calls(self, cls: cst.ClassDef) -> Optional[List[cst.Call]]:
        if any(isinstance(stmt, cst.ClassDef) for stmt in ()):  # pragma: no cover
            return None
        # a subclass constructing through super().__init__ passes arguments we do not bind
        if self._subclassed(cls):
            return None
        return self._calls_of_name(cls.name, cls)

    def _calls_of_name(self, name: cst.Name, target: cst.CSTNode) -> Optional[List[cst.Call]]:
        scope = self.facts.scope(name)
        if scope is None:
            return None
        calls: List[cst.Call] = []
        for access in scope.accesses[name.value]:
            node = access.node
            referents = {id(getattr(a, "node", None)) for a in access.referents}
            if id(target) not in referents:
                continue
            parent = self.facts.parent(node)
            if not (isinstance(parent, cst.Call) and parent.func is node):
                return None  # passed around as a value: callers unknown
            calls.append(parent)
        return calls

    def _subclassed(self, cls: cst.ClassDef) -> bool:
        for node in walk_nodes(self.facts.module):
            if isinstance(node, cst.ClassDef) and node is not cls:
                for base in node.bases:
                    if isinstance(base.value, cst.Name) and base.value.value == cls.name.value:
                        return True
        return False

    def _method_calls(self, cls: cst.ClassDef, method: str) -> Optional[List[cst.Call]]:
        """Every ``obj.method(...)`` whose receiver is an instance of ``cls`` (``self`` inside it,
        or a name bound only to ``cls(...)``); None if some call of that method name has a
        receiver we cannot resolve, or the class is subclassed."""
        if self._subclassed(cls):
            return None
        calls: List[cst.Call] = []
        for node in walk_nodes(self.facts.module):
            if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                    and node.func.attr.value == method):
                continue
            receiver = node.func.value
            if self.facts.tf_names(node.func):
                continue
            if not isinstance(receiver, cst.Name):
                return None
            classes = self._instance_classes(receiver)
            if classes is None:
                return None
            if cls in classes:
                if len(classes) != 1:
                    return None
                calls.append(node)
        for node in walk_nodes(self.facts.module):
            # the bound method taken as a value (`f = m.build`): callers unknown
            if isinstance(node, cst.Attribute) and node.attr.value == method:
                parent = self.facts.parent(node)
                if not (isinstance(parent, cst.Call) and parent.func is node) and not self.facts.tf_names(node):
                    if isinstance(node.value, cst.Name) and (self._instance_classes(node.value) or [None])[0] is cls:
                        return None
        return calls

    def _instance_classes(self, receiver: cst.Name) -> Optional[List[cst.ClassDef]]:
        """The local classes ``receiver`` is an instance of, [] if not one, None if unknown."""
        out: List[cst.ClassDef] = []
        found = [a for a in self.facts.assignments(receiver) if not isinstance(a, BuiltinAssignment)]
        if not found:
            return []
        for assignment in found:
            if isinstance(assignment, ImportAssignment):
                return []
            if isinstance(assignment, Assignment) and isinstance(assignment.node, cst.Param):
                fn = self.facts.function_of(assignment.node)
                cls = self.facts.class_of(fn) if fn is not None else None
                if fn is not None and cls is not None and fn.params.params and \
                        fn.params.params[0] is assignment.node:
                    out.append(cls)
                    continue
                return None
            value = self.facts.assigned_value(assignment)
            if isinstance(value, cst.Call):
                what = self.a.callee(value.func)
                if what[0] == "local_class":
                    out.append(what[1])
                    continue
                if what[0] in ("tf", "data", "builtin"):
                    return []
            return None
        return out

    def constructors_of(self, expr: cst.BaseExpression) -> List[cst.Call]:
        """The calls that built the object ``expr`` names (``layer = tf.keras.layers.Dense(8)``);
        for a field (``self.dense``), every value stored in it."""
        values: List[Optional[cst.BaseExpression]] = []
        if isinstance(expr, cst.Call):
            values = [expr]
        elif isinstance(expr, cst.Name):
            values = [self.facts.assigned_value(a) for a in self.facts.assignments(expr)]
        elif isinstance(expr, cst.Attribute):
            values = [value for _, value in self.a.all_field_stores().get(expr.attr.value, [])]
        out: List[cst.Call] = []
        for value in values:
            if isinstance(value, cst.Call):
                out.append(value)
            else:
                out.append(cst.Call(func=cst.Name("__unknown__")))
        return out

    def method_summaries(self, method: str, receiver: cst.BaseExpression) -> Optional[List[Summary]]:
        """Summaries of the local methods ``receiver.method`` may call, or None if unknown:
        ``self.m()`` inside a local class (its ``m``, or a local base's), ``obj.m()`` where
        ``obj`` is bound only to instances of local classes."""
        classes: List[cst.ClassDef] = []
        if isinstance(receiver, cst.Name):
            found = self.facts.assignments(receiver)
            for assignment in found:
                if isinstance(assignment, Assignment) and isinstance(assignment.node, cst.Param):
                    fn = self.facts.function_of(assignment.node)
                    cls = self.facts.class_of(fn) if fn is not None else None
                    if cls is None or fn is None or fn.params.params[0].name.value != receiver.value:
                        return None
                    classes.append(cls)
                    continue
                value = self.facts.assigned_value(assignment)
                if isinstance(value, cst.Call):
                    what = self.a.callee(value.func)
                    if what[0] == "local_class":
                        classes.append(what[1])
                        continue
                return None
        if not classes:
            return None
        out: List[Summary] = []
        for cls in classes:
            found_method = self.find_method(cls, method, depth=0)
            if found_method is None:
                return None
            summary = self.a.summary(found_method)
            if summary is None:
                return None
            out.append(summary)
        return out

    def find_method(self, cls: cst.ClassDef, method: str, depth: int = 0) -> Optional[cst.FunctionDef]:
        """The ``def`` of ``method`` in ``cls`` or a local base class (None if not found)."""
        if depth > 5:
            return None
        for stmt in cls.body.body:
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value == method:
                return stmt
        for base in cls.bases:
            what = self.a.callee(base.value)
            if what[0] == "local_class":
                found = self.find_method(what[1], method, depth + 1)
                if found is not None:
                    return found
        return None
