"""Which objects may change in place, and which names may refer to the same object.

:class:`MutationIndex` walks the module once: a method call that is not known to be pure, an item
or attribute store, an augmented assignment, or passing a name to a function that may change it
marks the name (and the field, for ``obj.field.append(...)``) as mutated; assignments that may
return an existing object (``a = b``, ``a = [b]``, ``a = f(b)``) put their names in one alias
class. Both are over-approximations: they only make more statements join a slice.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set

import libcst as cst

from codemods.rules.tape.facts import ModuleFacts
from codemods.rules.tape.kinds import PURE_BUILTINS, PURE_METHODS
from codemods.rules.tape import tfapi
from codemods.rules.tape.tfapi import OPTIMIZER_GRADIENT_METHODS, TF_MODULES
from codemods.rules.tape.syntax import return_statements, root_name, subtargets, walk_nodes
from codemods.rules.tape.values import Analysis, Kind


class Mutations:
    """What may change in place, and what may alias: the analyzer's collaborator for mutations
    (it asks the analyzer, ``analysis``, for callees, kinds, summaries and methods; owns the
    module's :class:`MutationIndex`, built on first use)."""

    def __init__(self, facts: ModuleFacts, analysis: Analysis) -> None:
        self.facts = facts
        self.a = analysis
        self._index: Optional[MutationIndex] = None

    def container_mutated(self, name: cst.Name, exclude: Optional[Set[int]] = None) -> Optional[cst.CSTNode]:
        """Whether the object bound to ``name`` -- a container or an instance, not a tensor or a
        variable -- may be changed somewhere in the module outside ``exclude`` (``name.append``,
        ``name[k] = v``, ``name += ...``, passed to a function, through an alias ``a = name``):
        what it holds then depends on code the slice does not see."""
        index = self.index()
        own = {id(a) for a in self.facts.assignments(name)}
        for alias in sorted(self.aliases(name.value)):  # sorted: the same blame in every process
            for use in index.names.get(alias, ()):
                if exclude is not None and id(use) in exclude:
                    continue
                if alias == name.value and not self._same_binding(use, name.value, own):
                    continue  # the same spelling in another scope: another object
                if self._data_call(use, alias) or self._free_store(use):
                    continue
                return use
            for use, func in index.passed.get(alias, ()):
                if exclude is not None and id(use) in exclude:
                    continue
                if alias == name.value and not self._same_binding(use, name.value, own):
                    continue
                if self.function_changes_args(func):
                    return use
        return None

    def function_changes_args(self, func: cst.CSTNode) -> bool:
        """Whether calling the local function ``func`` may change an object passed to it: a
        parameter (or a name that may alias one, module-wide) is changed in place inside its body
        (a method call not known pure, an item/attribute store, ``+=``, passed to a function that
        may change it), or its body calls code not in this file. Recursion: assumed to."""
        index = self.index()
        key = id(func)
        if key in index.changes_args:
            return index.changes_args[key]
        index.changes_args[key] = True  # recursion guard
        result = self._function_changes_args(func, index)
        index.changes_args[key] = result
        return result

    def _function_changes_args(self, func: cst.CSTNode, index: "MutationIndex") -> bool:
        summary = self.a.summary(func)
        if summary is None or summary.effects.foreign or summary.effects.opaque:
            return True
        if isinstance(func, cst.ClassDef):
            # constructing runs `__init__` (its own or a local base's; none: `object`'s, which
            # changes nothing); a parameter it stores in a field the module changes in place
            # (`self.data = data` ... `self.data.append(...)`) is changed too
            init = self.a.find_method(func, "__init__", depth=0)
            if init is None:
                return False
            if self.function_changes_args(init):
                return True
            params = {p.name.value for p in init.params.params}
            aliases = set().union(*(self.aliases(p) for p in params)) if params else set()
            for node in walk_nodes(init):
                if isinstance(node, cst.Assign):
                    roots = set(index.returned_roots(node.value))
                    for target in node.targets:
                        for sub in subtargets(target.target):
                            if isinstance(sub, cst.Attribute) and roots & aliases and self.field_mutated(sub.attr.value):
                                return True
            return False
        if not isinstance(func, cst.FunctionDef):
            return True
        params = func.params
        positional = list(params.posonly_params) + list(params.params)
        block = self.facts.parent(func)
        if positional and isinstance(self.facts.parent(block) if block is not None else None, cst.ClassDef) \
                and not func.decorators:
            positional = positional[1:]  # a method's receiver (`self`: the object built or called on)
        names = [p.name.value for p in positional + list(params.kwonly_params)]
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                names.append(star.name.value)
        inside = {id(n) for n in walk_nodes(func)}
        aliases: Set[str] = set()
        for param in names:
            for alias in self.aliases(param):
                aliases.add(alias)
                # the parameter's own spelling is changed only inside the body; a name it is stored
                # in (`global G; G = d`) may be changed anywhere afterwards
                anywhere = alias not in names
                if any((anywhere or id(use) in inside) and not self._free_store(use)
                       for use in index.names.get(alias, ())):
                    return True
                for use, inner in index.passed.get(alias, ()):
                    if (anywhere or id(use) in inside) and self.function_changes_args(inner):
                        return True
        for node in walk_nodes(func):
            # stored into a container or a field (`REG[k] = d`, `o.f = d`, `L += [d]`): it may be
            # changed through that container later
            if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)) and node.value is not None:
                targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
                # (a field counts when the module changes that field in place: `self.data.append`)
                stored = isinstance(node, cst.AugAssign) or any(
                    isinstance(sub, cst.Subscript) or (isinstance(sub, cst.Attribute)
                                                       and self.field_mutated(sub.attr.value))
                    for t in targets for sub in subtargets(t))
                if stored and set(index.returned_roots(node.value)) & aliases:
                    return True
        return False

    def _data_call(self, use: cst.CSTNode, name: str) -> bool:
        """``rng.randn(8, 3)``, ``np.random.shuffle(order)``: a call into a data library whose
        arguments carry no gradient -- it may change ``name``'s object, but cannot put a tensor in."""
        if not isinstance(use, cst.Call):
            return False
        what = self.a.callee(use.func)
        if what[0] == "method":
            receiver = what[1]
            while isinstance(receiver, cst.Attribute):
                receiver = receiver.value
            if not (isinstance(receiver, cst.Name) and receiver.value == name and self._data_bound(receiver)):
                return False
        elif what[0] != "data":
            return False
        return all(self.a.kind(arg.value) is Kind.FREE for arg in use.args)

    def _free_store(self, use: cst.CSTNode) -> bool:
        """``args.batch_size = 1``, ``cfg["lr"] *= 0.5``: a store of a literal (or literal
        arithmetic) into an item or field -- it changes the object, but cannot put a tensor in.
        (Syntactic on purpose: asking for the value's kind here would recurse into the kinds
        being computed.)"""
        if isinstance(use, cst.AssignTarget):
            assign = self.facts.parent(use)
            value = assign.value if isinstance(assign, cst.Assign) else None
        elif isinstance(use, cst.AugAssign):
            value = use.value
        else:
            return False
        return value is not None and _literal(value)

    def _data_bound(self, name: cst.Name) -> bool:
        """Every binding of ``name`` is the result of a data library call (``np.random.RandomState(0)``)."""
        found = self.facts.assignments(name)
        if not found:
            return False
        for assignment in found:
            value = self.facts.assigned_value(assignment)
            if not (isinstance(value, cst.Call) and self.a.callee(value.func)[0] == "data"):
                return False
        return True

    def _same_binding(self, use: cst.CSTNode, name: str, own: Set[int]) -> bool:
        probe = next((n for n in walk_nodes(use) if isinstance(n, cst.Name) and n.value == name), None)
        scope = self.facts.scope(probe) if probe is not None else None
        if scope is None:
            return True
        return bool({id(a) for a in scope[name]} & own)

    def aliases(self, name: str) -> Set[str]:
        """Names that may refer to the same object as ``name`` (module-wide, by spelling: an
        over-approximation, which only makes more statements join a slice)."""
        index = self.index()
        root = index.find(name)
        return {n for n in index.parent if index.find(n) == root} | {name}

    def field_mutated(self, attr: str) -> bool:
        return attr in self.index().fields

    def index(self) -> "MutationIndex":
        """The module's :class:`MutationIndex` (one walk, on first use)."""
        if self._index is None:
            self._index = MutationIndex(self.a)
            self.facts.module.visit(self._index)
        return self._index


STRING_LITERALS = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
# The functions of these modules never change an argument in place, except those named in
# IN_PLACE_FUNCTIONS (by their last component: ``numpy.random.shuffle``, ``numpy.add.at``) and any
# call given ``out=`` (a ufunc writing into an array).
ARGUMENT_PRESERVING_MODULES = ("numpy.", "math.", "os.path.")
IN_PLACE_FUNCTIONS = frozenset({"shuffle", "copyto", "place", "put", "putmask", "fill_diagonal", "put_along_axis",
                                "at"})


def leaves_arguments(qualified: str, call: cst.Call) -> bool:
    """Whether the data-library function ``qualified`` (``numpy.random.randint``) leaves every
    argument of ``call`` as it was."""
    if not qualified.startswith(ARGUMENT_PRESERVING_MODULES):
        return False
    if qualified.rsplit(".", 1)[-1] in IN_PLACE_FUNCTIONS:
        return False
    return not any(arg.keyword is not None and arg.keyword.value == "out" for arg in call.args)


def _literal(expr: cst.BaseExpression) -> bool:
    """A literal, ``None``/``True``/``False``, or arithmetic, tuples and lists of them."""
    if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)):
        return True
    if isinstance(expr, cst.Name):
        return expr.value in ("None", "True", "False")
    if isinstance(expr, cst.UnaryOperation):
        return _literal(expr.expression)
    if isinstance(expr, cst.BinaryOperation):
        return _literal(expr.left) and _literal(expr.right)
    if isinstance(expr, (cst.Tuple, cst.List)):
        return all(_literal(e.value) for e in expr.elements)
    return False


class MutationIndex(cst.CSTVisitor):
    """Module-wide: which names and fields may be changed in place, and which names alias."""

    def __init__(self, analyzer: Analysis) -> None:
        self.a = analyzer
        self.names: Dict[str, List[cst.CSTNode]] = {}
        self.fields: Set[str] = set()
        self.parent: Dict[str, str] = {}
        # names passed to a local function (``f(a)``): changed only if the function changes its arguments
        self.passed: Dict[str, List[tuple]] = {}
        self.changes_args: Dict[int, bool] = {}
        self._returning: Set[int] = set()

    def find(self, name: str) -> str:
        self.parent.setdefault(name, name)
        while self.parent[name] != name:
            self.parent[name] = self.parent[self.parent[name]]
            name = self.parent[name]
        return name

    def _union(self, a: str, b: str) -> None:
        self.parent[self.find(a)] = self.find(b)

    def _mutated(self, expr: cst.BaseExpression, use: cst.CSTNode) -> None:
        """``expr`` is changed in place: its root name, and the field it names."""
        if isinstance(expr, cst.Attribute):
            self.fields.add(expr.attr.value)
        root = root_name(expr)
        if root is not None:
            self.names.setdefault(root, []).append(use)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        what = self.a.callee(func)
        if what[0] == "method" and isinstance(func, cst.Attribute) and self.a.module_value(func.value):
            what = ("module", None)  # a function of an imported module (not TF, not data): it may
            # still change its arguments, but the module object itself is not "changed"
        if isinstance(func, cst.Attribute) and what[0] == "method" and func.attr.value not in PURE_METHODS:
            self._mutated(func.value, node)
        if what[0] == "tf" or (what[0] == "builtin" and what[1] in PURE_BUILTINS):
            return
        if isinstance(func, cst.Attribute) and func.attr.value in OPTIMIZER_GRADIENT_METHODS \
                and self._tf1_optimizer(func.value):
            return  # `opt.minimize(loss, var_list=vs)`: TF's optimizer reads the list (it changes variables)
        if what[0] == "data" and leaves_arguments(what[1], node):
            return  # `np.random.randint(0, self.n_actions)`: NumPy reads its arguments
        if what[0] == "method" and isinstance(what[1], STRING_LITERALS):
            return  # `"{}_{}".format(self.name, self.batch_size)`: a str method reads its arguments
        if (what[0] == "local_function" and isinstance(what[1], cst.FunctionDef)) or what[0] == "local_class":
            for arg in node.args:  # decided when asked: whether the function changes its arguments
                if isinstance(arg.value, (cst.Name, cst.Attribute, cst.Subscript)) and not self.a.module_value(arg.value):
                    root = root_name(arg.value)
                    if root is not None:
                        self.passed.setdefault(root, []).append((node, what[1]))
            return
        for arg in node.args:  # a function may change what it is given
            if isinstance(arg.value, (cst.Name, cst.Attribute, cst.Subscript)) and not self.a.module_value(arg.value):
                self._mutated(arg.value, node)

    def _tf1_optimizer(self, receiver: cst.BaseExpression) -> bool:
        """Every object ``receiver`` may name was built by a ``tf.train`` optimizer class."""
        built = self.a.constructors_of(receiver)
        if not built:
            return False
        for call in built:
            what = self.a.callee(call.func)
            if what[0] != "tf" or not tfapi.is_tf1_optimizer_class(what[1]):
                return False
        return True

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        for sub in subtargets(node.target):
            if isinstance(sub, (cst.Subscript, cst.Attribute)):
                self._mutated(sub.value, node)  # `d[k] = v` changes d; `o.a.b = v` changes o.a
            if isinstance(sub, cst.Name):
                self._alias_from(sub.value, self.a.facts.parent(node))

    def _alias_from(self, target: str, assign) -> None:
        value = getattr(assign, "value", None)
        if value is not None:
            for root in self.returned_roots(value):
                self._union(target, root)

    def returned_roots(self, value: cst.BaseExpression) -> List[str]:
        """Names whose objects ``value`` may evaluate to (or contain): ``a``, ``a.b``, ``a[0]``,
        ``[a, b]``, ``x if c else a``, ``f(a)`` for a function that may return its argument. A TF
        op or a method call returns a new object (a tensor, an op); arithmetic a new value."""
        if isinstance(value, (cst.Name, cst.Attribute)) and self.a.facts.tf_names(value) & TF_MODULES:
            return []  # a TF module (`rnn = tf.nn.rnn_cell`): no object of the program
        if isinstance(value, (cst.Name, cst.Attribute, cst.Subscript)):
            root = root_name(value)
            return [root] if root is not None else []
        if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
            return [r for e in value.elements for r in self.returned_roots(e.value)]
        if isinstance(value, cst.Dict):
            return [r for e in value.elements for r in self.returned_roots(e.value)]
        if isinstance(value, cst.StarredElement):
            return self.returned_roots(value.value)
        if isinstance(value, cst.IfExp):
            return self.returned_roots(value.body) + self.returned_roots(value.orelse)
        if isinstance(value, cst.BooleanOperation):
            return self.returned_roots(value.left) + self.returned_roots(value.right)
        if isinstance(value, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            return self.returned_roots(value.for_in.iter)
        if isinstance(value, cst.Call):
            what = self.a.callee(value.func)
            if what[0] in ("tf", "module"):
                return []
            if what[0] == "method":
                if what[2] in ("pop", "get", "setdefault", "popitem"):
                    return self.returned_roots(what[1])
                if self.a.kind(what[1]) in (Kind.FREE, Kind.VARIABLE):
                    return []  # data objects and TF objects (optimizers, layers) return new values
                # an unknown object's method may return itself or something holding its arguments
                return self.returned_roots(what[1]) + [r for a in value.args for r in self.returned_roots(a.value)]
            if what[0] == "local_function" and isinstance(what[1], cst.FunctionDef) and self._returns_new(what[1]):
                return []  # every `return` builds a new value (a TF op, arithmetic, a literal)
            if what[0] == "builtin" and what[1] not in ("list", "tuple", "dict", "set", "sorted", "reversed", "zip",
                                                          "enumerate", "iter", "next", "filter", "map", "min", "max"):
                return []
            return [r for a in value.args for r in self.returned_roots(a.value)]
        return []

    def _returns_new(self, func: cst.FunctionDef) -> bool:
        """Every ``return`` of ``func`` evaluates to a new object, none of its arguments or
        names (recursion, generators: not known)."""
        key = id(func)
        if key in self._returning:
            return False
        self._returning.add(key)
        try:
            if any(isinstance(n, cst.Yield) for n in walk_nodes(func)):
                return False
            return all(r.value is None or not self.returned_roots(r.value) for r in return_statements(func))
        finally:
            self._returning.discard(key)

    def visit_For(self, node: cst.For) -> None:
        for sub in subtargets(node.target):
            if isinstance(sub, cst.Name):
                for name in walk_nodes(node.iter):
                    if isinstance(name, cst.Name):
                        self._union(sub.value, name.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._mutated(node.target, node)

    def visit_Del(self, node: cst.Del) -> None:
        for sub in subtargets(node.target):
            if isinstance(sub, (cst.Subscript, cst.Attribute)):
                self._mutated(sub.value, node)
