"""What a statement reads, binds and changes, and whether a value can carry a gradient.

Two questions decide every tape rewrite (see :mod:`codemods.tape`):

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

import builtins
import enum
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Set, Tuple

import libcst as cst
from libcst.metadata import Assignment, BuiltinAssignment, ImportAssignment
from libcst.metadata.scope_provider import ClassScope, ComprehensionScope, FunctionScope, GlobalScope

from codemods._analysis import dotted_name
from codemods._names import TF1_OPTIMIZERS
from codemods.tape import tfapi
from codemods.tape.facts import ModuleFacts
from codemods.tape.tfapi import Api

BUILTIN_NAMES = frozenset(dir(builtins))


class Kind(enum.IntEnum):
    """How a value relates to the gradient path (ordered: the join is ``max``)."""

    FREE = 0  # no gradient can flow through it
    VARIABLE = 1  # a variable / layer / model / optimizer object: reads happen where it is used
    PARAM = 2  # comes from a caller this module does not show (unsafe to rely on)
    TENSOR = 3  # may carry a gradient from a trainable variable (or unknown)


# Builtins that neither mutate their arguments nor run user code (beyond what is analysed).
PURE_BUILTINS = frozenset({
    "len", "range", "int", "float", "bool", "str", "repr", "abs", "min", "max", "sum", "round", "isinstance",
    "issubclass", "print", "format", "sorted", "reversed", "enumerate", "zip", "list", "tuple", "dict", "set",
    "frozenset", "any", "all", "hasattr", "id", "hash", "divmod", "pow", "chr", "ord", "type", "slice",
    "callable", "open", "bytes", "complex", "hex", "oct", "bin", "ascii", "iter", "object", "super",
    "Exception", "ValueError", "TypeError", "RuntimeError", "KeyError", "IndexError", "NotImplementedError",
    "AssertionError", "StopIteration",
})
OPAQUE_BUILTINS = frozenset({"eval", "exec", "globals", "locals", "vars", "setattr", "delattr", "__import__",
                             "compile", "getattr"})
# Non-TensorFlow modules whose functions build no TF ops from variables (their results are
# gradient-free when their arguments are).
DATA_MODULES = frozenset({
    "numpy", "math", "random", "os", "sys", "time", "datetime", "json", "re", "collections", "itertools",
    "functools", "logging", "argparse", "pickle", "csv", "glob", "shutil", "string", "pandas", "scipy", "six",
    "absl", "gzip", "io", "struct", "operator", "pprint", "warnings", "copy", "uuid", "hashlib", "tqdm",
    "PIL", "cv2", "h5py", "yaml", "sklearn", "matplotlib", "pathlib", "subprocess", "platform", "multiprocessing",
    "threading", "queue", "heapq", "bisect", "textwrap", "codecs", "zipfile", "tarfile", "urllib", "gym",
    "typing", "dataclasses", "enum", "abc", "contextlib", "inspect", "traceback", "signal", "socket",
})
# Methods that neither mutate their receiver nor compute from variables.
PURE_METHODS = frozenset({
    "get_shape", "as_list", "numpy", "format", "keys", "values", "items", "get", "copy", "count", "index",
    "startswith", "endswith", "split", "join", "strip", "lower", "upper", "replace", "encode", "decode",
    "is_compatible_with", "num_elements", "ndims", "as_numpy_dtype", "is_floating", "is_integer", "rstrip",
    "lstrip", "isdigit", "make_one_shot_iterator", "make_initializable_iterator", "get_next", "batch",
    "shuffle", "repeat", "prefetch", "map", "filter", "take", "skip", "cache", "from_tensor_slices",
    "reshape", "astype", "tolist", "sum", "mean", "std", "__len__",
})
MUTATING_METHODS = frozenset({"append", "extend", "insert", "update", "setdefault", "add", "pop", "remove",
                              "clear", "sort", "reverse", "discard", "popitem", "__setitem__", "appendleft"})
# Attributes of variable / layer / model objects that are variables or metadata, never tensors
# computed earlier (``layer.output``, ``model.losses`` are: they are not listed).
VARIABLE_OBJECT_ATTRS = frozenset({
    "name", "shape", "dtype", "trainable", "trainable_variables", "trainable_weights", "variables", "weights",
    "non_trainable_variables", "non_trainable_weights", "kernel", "bias", "gamma", "beta", "moving_mean",
    "moving_variance", "embeddings", "units", "filters", "kernel_size", "layers", "op", "graph", "initializer",
    "initial_value", "device", "handle", "_variables", "get_shape", "submodules", "built", "input_shape",
    "state_size", "output_size", "learning_rate", "iterations",
})
TENSOR_METADATA_ATTRS = frozenset({"shape", "dtype", "name", "get_shape", "ndim", "device", "graph", "value",
                                   "as_list", "ndims"})


@dataclass
class Effects:
    """What one statement (or function body) does, as far as the tape rewrite cares."""

    reads: Set[str] = field(default_factory=set)  # names read before this unit binds them
    binds: Set[str] = field(default_factory=set)
    mutates: Set[str] = field(default_factory=set)  # names whose objects may change
    collection_read: Optional[cst.CSTNode] = None  # reads tensors from graph collections / the graph
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
        self.collection_read = self.collection_read or other.collection_read
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


class Analyzer:
    """Effects and kinds for one module (memoised; see the module docstring)."""

    def __init__(self, facts: ModuleFacts) -> None:
        self.facts = facts
        self._effects: Dict[int, Effects] = {}
        self._kinds: Dict[int, Kind] = {}
        self._summaries: Dict[int, Optional[Summary]] = {}
        self._in_progress: Set[int] = set()
        self._field_kinds: Dict[str, Kind] = {}
        self._field_stores: Optional[Dict[str, List[Tuple[cst.CSTNode, Optional[cst.BaseExpression]]]]] = None
        self._mutations: Optional[_MutationIndex] = None
        self._param_args: Dict[tuple, Optional[List[cst.BaseExpression]]] = {}
        self.scope_regularizers = "kw:regularizer" in facts.mentions and bool(
            facts.tf_used & {"tf.variable_scope", "tf.arg_scope", "tf.contrib.framework.arg_scope"})

    # -- name resolution ------------------------------------------------------------------
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

    # -- kinds ------------------------------------------------------------------------------
    def kind(self, expr: cst.BaseExpression, exclude: Optional[Set[int]] = None) -> Kind:
        """The :class:`Kind` of ``expr``'s value. Names resolve to every binding in scope except
        those whose statements are in ``exclude`` (ids of nodes)."""
        if exclude is None:
            key = id(expr)
            if key in self._kinds:
                return self._kinds[key]
            if key in self._in_progress:
                return Kind.TENSOR
            self._in_progress.add(key)
            try:
                result = self._kind(expr, None)
            finally:
                self._in_progress.discard(key)
            self._kinds[key] = result
            return result
        return self._kind(expr, exclude)

    def _kind(self, expr: cst.BaseExpression, exclude: Optional[Set[int]]) -> Kind:
        if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
                             cst.FormattedString, cst.Ellipsis)):
            return Kind.FREE
        if isinstance(expr, cst.Name):
            if expr.value in ("True", "False", "None"):
                return Kind.FREE
            return self.name_kind(expr, exclude)
        if isinstance(expr, cst.Attribute):
            return self._attribute_kind(expr, exclude)
        if isinstance(expr, cst.Call):
            return self._call_kind(expr, exclude)
        if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
            return _join(self.kind(e.value, exclude) for e in expr.elements)
        if isinstance(expr, cst.Dict):
            kinds = []
            for element in expr.elements:
                if isinstance(element, cst.DictElement):
                    kinds += [self.kind(element.key, exclude), self.kind(element.value, exclude)]
                else:
                    kinds.append(self.kind(element.value, exclude))
            return _join(kinds)
        if isinstance(expr, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            return _join([self.kind(expr.elt, exclude), self._comp_kind(expr.for_in, exclude)])
        if isinstance(expr, cst.DictComp):
            return _join([self.kind(expr.key, exclude), self.kind(expr.value, exclude),
                          self._comp_kind(expr.for_in, exclude)])
        if isinstance(expr, cst.BinaryOperation):
            return _pure(self.kind(expr.left, exclude), self.kind(expr.right, exclude))
        if isinstance(expr, cst.UnaryOperation):
            return _pure(self.kind(expr.expression, exclude))
        if isinstance(expr, cst.BooleanOperation):
            return _join([self.kind(expr.left, exclude), self.kind(expr.right, exclude)])
        if isinstance(expr, cst.Comparison):
            return Kind.FREE if all(self.kind(e, exclude) is Kind.FREE for e in
                                    [expr.left] + [c.comparator for c in expr.comparisons]) else Kind.TENSOR
        if isinstance(expr, cst.IfExp):
            return _join([self.kind(expr.body, exclude), self.kind(expr.orelse, exclude)])
        if isinstance(expr, cst.Subscript):
            parts = [self.kind(expr.value, exclude)]
            for element in expr.slice:
                if isinstance(element.slice, cst.Index):
                    parts.append(self.kind(element.slice.value, exclude))
            base = parts[0]
            return base if base is not Kind.FREE else _pure(*parts)
        if isinstance(expr, cst.Lambda):
            return Kind.FREE  # a function object; what it computes counts where it is called
        if isinstance(expr, cst.NamedExpr):
            return self.kind(expr.value, exclude)
        if isinstance(expr, (cst.StarredElement,)):
            return self.kind(expr.value, exclude)
        return Kind.TENSOR

    def _comp_kind(self, comp: cst.CompFor, exclude) -> Kind:
        kinds = [self.kind(comp.iter, exclude)]
        if comp.inner_for_in is not None:
            kinds.append(self._comp_kind(comp.inner_for_in, exclude))
        return _join(kinds)

    def name_kind(self, name: cst.Name, exclude: Optional[Set[int]] = None) -> Kind:
        found = [a for a in self.facts.assignments(name) if not isinstance(a, BuiltinAssignment)]
        if not found:
            return Kind.FREE if name.value in BUILTIN_NAMES else Kind.TENSOR
        kinds = []
        mutable = False
        for assignment in found:
            if exclude is not None and id(getattr(assignment, "node", None)) in exclude:
                continue
            kinds.append(self.assignment_kind(assignment))
            mutable = mutable or self.mutable_binding(assignment)
        if mutable and self.container_mutated(name) is not None:
            kinds.append(Kind.TENSOR)
        return _join(kinds) if kinds else Kind.FREE

    def mutable_binding(self, assignment) -> bool:
        """Bound to a container or an object whose contents can change after binding (a list,
        dict or set, a comprehension, an instance of a local class, a call we cannot see)."""
        if not isinstance(assignment, Assignment) or isinstance(assignment.node, (cst.FunctionDef, cst.ClassDef)):
            return False
        if isinstance(assignment.node, cst.Param):
            args = self.param_args(assignment.node)
            return args is None or any(self.mutable_expression(arg) for arg in args)
        value = self._binding_value(assignment.node)
        if value is None:
            return True
        if isinstance(value, (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp, cst.Name,
                              cst.Attribute, cst.Subscript)):
            return True
        if isinstance(value, cst.Call):
            what = self.callee(value.func)
            if what[0] == "tf":
                return False  # tensors are immutable; variables change only through graph ops
            if what[0] == "builtin" and what[1] not in ("list", "dict", "set", "object"):
                return False
            return True
        return False

    def assignment_kind(self, assignment) -> Kind:
        if isinstance(assignment, ImportAssignment):
            return Kind.FREE if self._import_is_code_or_data(assignment) else Kind.TENSOR
        if not isinstance(assignment, Assignment):
            return Kind.TENSOR
        node = assignment.node
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            return Kind.FREE
        if isinstance(node, cst.Param):
            return self.param_kind(node)
        value = self._binding_value(node)
        if value is None:
            return Kind.TENSOR
        return self.kind(value)

    def param_kind(self, param: cst.Param) -> Kind:
        """What callers pass for ``param``: the join of the argument kinds at every call of its
        function in this module (``__init__``: every ``C(...)``); PARAM when the function has no
        such call, is used other than by calling it, or a call cannot be bound."""
        key = id(param)
        if key in self._kinds:
            return self._kinds[key]
        self._kinds[key] = Kind.PARAM  # recursion guard
        result = self._param_kind(param)
        self._kinds[key] = result
        return result

    def _param_kind(self, param: cst.Param) -> Kind:
        args = self.param_args(param)
        if args is None:
            return Kind.PARAM
        return _join(self.kind(arg) for arg in args)

    def param_args(self, param: cst.Param) -> Optional[List[cst.BaseExpression]]:
        """The argument every call of ``param``'s function in this module passes for it; None when
        the function has no such call, is used other than by calling it, or a call cannot be
        bound (then its callers are not all in this file)."""
        key = ("args", id(param))
        if key in self._param_args:
            return self._param_args[key]
        self._param_args[key] = None  # recursion guard
        result = self._bind_param_args(param)
        self._param_args[key] = result
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

    def mutable_expression(self, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` may evaluate to an object that can change in place."""
        if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            return False
        if isinstance(expr, cst.Name):
            if expr.value in ("True", "False", "None"):
                return False
            found = [a for a in self.facts.assignments(expr) if not isinstance(a, BuiltinAssignment)]
            return not found or any(self.mutable_binding(a) for a in found)
        if isinstance(expr, cst.Call) and self.callee(expr.func)[0] == "tf":
            return False
        return True

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
        for node in _walk_nodes(self.facts.module):
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
        for node in _walk_nodes(self.facts.module):
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
        for node in _walk_nodes(self.facts.module):
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
                what = self.callee(value.func)
                if what[0] == "local_class":
                    out.append(what[1])
                    continue
                if what[0] in ("tf", "data", "builtin"):
                    return []
            return None
        return out

    def _import_is_code_or_data(self, assignment: ImportAssignment) -> bool:
        """``import tensorflow as tf`` / ``import numpy as np`` / ``from tensorflow import keras``:
        module objects and library names. Any other imported *value* may be a tensor built in the
        other module."""
        node = assignment.node
        if isinstance(node, cst.Import):
            return True  # a module object
        if isinstance(node, cst.ImportFrom) and node.module is not None:
            module = dotted_name(node.module) or ""
            top = module.split(".")[0]
            return top in ("tensorflow", "tf_keras", "keras") or top in DATA_MODULES
        return False

    def _binding_value(self, node: cst.CSTNode) -> Optional[cst.BaseExpression]:
        """The expression whose value a binding target receives (for tuples: the whole value)."""
        child = node
        parent = self.facts.parent(node)
        while isinstance(parent, (cst.Tuple, cst.List, cst.StarredElement, cst.Element)):
            child, parent = parent, self.facts.parent(parent)
        if isinstance(parent, cst.AssignTarget):
            assign = self.facts.parent(parent)
            return assign.value if isinstance(assign, cst.Assign) else None
        if isinstance(parent, (cst.AnnAssign, cst.AugAssign)):
            return parent.value
        if isinstance(parent, (cst.For, cst.CompFor)) and child is parent.target:
            return parent.iter
        if isinstance(parent, cst.AsName):
            item = self.facts.parent(parent)
            if isinstance(item, cst.WithItem):
                return item.item
            if isinstance(item, cst.ExceptHandler):
                return cst.Name("None")
        if isinstance(parent, cst.NamedExpr):
            return parent.value
        return None

    def _attribute_kind(self, expr: cst.Attribute, exclude) -> Kind:
        if self.facts.tf_names(expr) or self._is_module_attribute(expr):
            return Kind.FREE  # a library constant or function object (tf.float32, np.pi)
        attr = expr.attr.value
        base = self.kind(expr.value, exclude)
        if base is Kind.FREE:
            return Kind.FREE
        if base is Kind.VARIABLE:
            return Kind.VARIABLE if attr in VARIABLE_OBJECT_ATTRS else Kind.TENSOR
        if attr in TENSOR_METADATA_ATTRS and self._is_tensor_like(expr.value, exclude):
            return Kind.FREE
        # an attribute of an object of unknown type: what is ever stored in that field
        if isinstance(expr.value, cst.Name) and self._root_is_object(expr.value):
            return self.field_kind(attr)
        return Kind.TENSOR

    def _is_tensor_like(self, expr: cst.BaseExpression, exclude) -> bool:
        return not (isinstance(expr, cst.Name) and self._root_is_object(expr))

    def _root_is_object(self, name: cst.Name) -> bool:
        """A parameter (``self``...), or a name bound to a local class instance: its fields are
        what the module stores in them."""
        for assignment in self.facts.assignments(name):
            if isinstance(assignment, Assignment) and isinstance(assignment.node, cst.Param):
                return True
            value = self.facts.assigned_value(assignment)
            if isinstance(value, cst.Call) and self.callee(value.func)[0] == "local_class":
                return True
        return False

    def module_value(self, expr: cst.BaseExpression) -> bool:
        """A module or an attribute of one (``np``, ``np.float32``, ``tf.GraphKeys.X``): not an
        object whose contents the program changes."""
        root = expr
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name):
            return False
        found = self.facts.assignments(root)
        return bool(found) and all(isinstance(a, ImportAssignment) and isinstance(a.node, cst.Import) for a in found)

    def _is_module_attribute(self, expr: cst.Attribute) -> bool:
        root = expr
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name):
            return False
        found = self.facts.assignments(root)
        return bool(found) and all(isinstance(a, ImportAssignment) and isinstance(a.node, cst.Import)
                                   for a in found) and bool(self.facts.qualified(expr)) and all(
            q.split(".")[0] in DATA_MODULES or q.startswith("tensorflow") for q in self.facts.qualified(expr))

    def _call_kind(self, call: cst.Call, exclude) -> Kind:
        what = self.callee(call.func)
        args = [a.value for a in call.args]
        arg_kinds = [self.kind(a, exclude) for a in args]
        if what[0] == "tf":
            api = tfapi.classify(what[1])
            if api is Api.CUT:
                return Kind.FREE
            if api in (Api.SOURCE, Api.PURE):
                return _pure(*arg_kinds)
            if api is Api.VARIABLE:
                return Kind.VARIABLE
            if api is Api.OBJECT:
                return Kind.VARIABLE if what[1] not in TF1_OPTIMIZERS else Kind.VARIABLE
            if api is Api.CONTEXT:
                return Kind.FREE
            return Kind.TENSOR
        if what[0] == "builtin":
            if what[1] in ("isinstance", "len", "hasattr", "callable", "print", "id", "type", "str", "repr",
                           "format", "range"):
                return Kind.FREE
            if what[1] in PURE_BUILTINS:
                return _join(arg_kinds) if arg_kinds else Kind.FREE
            return Kind.TENSOR
        if what[0] == "data":
            return _pure(*arg_kinds) if arg_kinds else Kind.FREE
        if what[0] == "local_function":
            summary = self.summary(what[1])
            return summary.result if summary is not None else Kind.TENSOR
        if what[0] == "method":
            receiver, method = what[1], what[2]
            base = self.kind(receiver, exclude)
            if base is Kind.FREE and method not in MUTATING_METHODS:
                return _pure(*arg_kinds) if arg_kinds else Kind.FREE
            if base is Kind.VARIABLE and method in ("get_slot", "variables", "get_weights", "read_value") and \
                    method != "read_value":
                return Kind.VARIABLE
            return Kind.TENSOR
        return Kind.TENSOR

    # -- module-wide indexes ----------------------------------------------------------------
    def field_kind(self, attr: str) -> Kind:
        """Join of the kinds of every value the module stores in an attribute named ``attr``
        (``self.x = tf.placeholder(...)`` -> FREE). No store seen, or a store we cannot follow
        (tuple unpacking, augmented assignment, ``setattr``): TENSOR."""
        if attr in self._field_kinds:
            return self._field_kinds[attr]
        self._field_kinds[attr] = Kind.TENSOR  # recursion guard
        stores = self._all_field_stores().get(attr)
        if not stores or "setattr" in self.facts.mentions or self.field_mutated(attr):
            result = Kind.TENSOR
        else:
            result = _join(self.kind(value) if value is not None else Kind.TENSOR for _, value in stores)
        self._field_kinds[attr] = result
        return result

    def field_stores(self, attr: str) -> List[cst.CSTNode]:
        return [node for node, _ in self._all_field_stores().get(attr, [])]

    def _all_field_stores(self):
        if self._field_stores is None:
            stores: Dict[str, List[Tuple[cst.CSTNode, Optional[cst.BaseExpression]]]] = {}
            analyzer = self

            class Collect(cst.CSTVisitor):
                def visit_Assign(self, node: cst.Assign) -> None:
                    for target in node.targets:
                        t = target.target
                        if isinstance(t, cst.Attribute):
                            value = node.value if len(node.targets) == 1 else None
                            stores.setdefault(t.attr.value, []).append((node, value))
                        else:
                            for sub in _subtargets(t):
                                if isinstance(sub, cst.Attribute):
                                    stores.setdefault(sub.attr.value, []).append((node, None))

                def visit_AugAssign(self, node: cst.AugAssign) -> None:
                    if isinstance(node.target, cst.Attribute):
                        stores.setdefault(node.target.attr.value, []).append((node, None))

                def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
                    if isinstance(node.target, cst.Attribute):
                        stores.setdefault(node.target.attr.value, []).append((node, node.value))

            self.facts.module.visit(Collect())
            del analyzer
            self._field_stores = stores
        return self._field_stores

    def container_mutated(self, name: cst.Name, exclude: Optional[Set[int]] = None) -> Optional[cst.CSTNode]:
        """Whether the object bound to ``name`` -- a container or an instance, not a tensor or a
        variable -- may be changed somewhere in the module outside ``exclude`` (``name.append``,
        ``name[k] = v``, ``name += ...``, passed to a function, through an alias ``a = name``):
        what it holds then depends on code the slice does not see."""
        index = self._mutation_index()
        own = {id(a) for a in self.facts.assignments(name)}
        for alias in self.aliases(name.value):
            for use in index.names.get(alias, ()):
                if exclude is not None and id(use) in exclude:
                    continue
                if alias == name.value and not self._same_binding(use, name.value, own):
                    continue  # the same spelling in another scope: another object
                return use
        return None

    def _same_binding(self, use: cst.CSTNode, name: str, own: Set[int]) -> bool:
        probe = next((n for n in _walk_nodes(use) if isinstance(n, cst.Name) and n.value == name), None)
        scope = self.facts.scope(probe) if probe is not None else None
        if scope is None:
            return True
        return bool({id(a) for a in scope[name]} & own)

    def aliases(self, name: str) -> Set[str]:
        """Names that may refer to the same object as ``name`` (module-wide, by spelling: an
        over-approximation, which only makes more statements join a slice)."""
        index = self._mutation_index()
        root = index.find(name)
        return {n for n in index.parent if index.find(n) == root} | {name}

    def field_mutated(self, attr: str) -> bool:
        return attr in self._mutation_index().fields

    def _mutation_index(self) -> "_MutationIndex":
        if self._mutations is None:
            self._mutations = _MutationIndex(self)
            self.facts.module.visit(self._mutations)
        return self._mutations

    # -- summaries of local functions and classes ------------------------------------------
    def summary(self, node: cst.CSTNode) -> Optional[Summary]:
        """The :class:`Summary` of a local ``def``, lambda or class (None while recursing)."""
        key = id(node)
        if key in self._summaries:
            return self._summaries[key]
        if key in self._in_progress:
            return None
        self._in_progress.add(key)
        try:
            result = self._summarize(node)
        finally:
            self._in_progress.discard(key)
        self._summaries[key] = result
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
            returns = _returns(node)
            kinds = [self.kind(r.value) for r in returns if r.value is not None]
            result = _join(kinds) if kinds else Kind.FREE
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
                    effects.foreign.append((base, f"the base class `{self.facts.code(base.value, 40)}`"))
            return Summary(effects, Kind.TENSOR, True, ())
        return Summary(effects, Kind.TENSOR)

    def constructors_of(self, expr: cst.BaseExpression) -> List[cst.Call]:
        """The calls that built the object ``expr`` names (``layer = tf.keras.layers.Dense(8)``);
        for a field (``self.dense``), every value stored in it."""
        values: List[Optional[cst.BaseExpression]] = []
        if isinstance(expr, cst.Call):
            values = [expr]
        elif isinstance(expr, cst.Name):
            values = [self.facts.assigned_value(a) for a in self.facts.assignments(expr)]
        elif isinstance(expr, cst.Attribute):
            values = [value for _, value in self._all_field_stores().get(expr.attr.value, [])]
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
                    what = self.callee(value.func)
                    if what[0] == "local_class":
                        classes.append(what[1])
                        continue
                return None
        if not classes:
            return None
        out: List[Summary] = []
        for cls in classes:
            found_method = self._find_method(cls, method, depth=0)
            if found_method is None:
                return None
            summary = self.summary(found_method)
            if summary is None:
                return None
            out.append(summary)
        return out

    def _find_method(self, cls: cst.ClassDef, method: str, depth: int) -> Optional[cst.FunctionDef]:
        if depth > 5:
            return None
        for stmt in cls.body.body:
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value == method:
                return stmt
        for base in cls.bases:
            what = self.callee(base.value)
            if what[0] == "local_class":
                found = self._find_method(what[1], method, depth + 1)
                if found is not None:
                    return found
        return None

    # -- effects ------------------------------------------------------------------------------
    def statement_effects(self, stmt: cst.CSTNode, container: Optional[cst.CSTNode] = None) -> Effects:
        """:class:`Effects` of one statement; reads of names local to ``container`` (a function
        being summarised) are not reads of the unit."""
        key = (id(stmt), id(container))
        cached = self._effects.get(hash(key))
        if cached is not None and container is None:
            return cached
        effects = _StatementWalker(self, container if container is not None else stmt).walk(stmt)
        if container is None:
            self._effects[hash(key)] = effects
        return effects

    def expression_effects(self, expr: cst.CSTNode, container: cst.CSTNode) -> Effects:
        return _StatementWalker(self, container).walk(expr)

    def is_local(self, name: cst.Name, container: cst.CSTNode) -> bool:
        return self._local_to(name, container)


class _StatementWalker:
    """Walks one statement (or expression) and builds its :class:`Effects`."""

    def __init__(self, analyzer: Analyzer, container: cst.CSTNode) -> None:
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
            sub = _StatementWalker(self.a, self.container).walk(small)
            self.e.absorb(sub, sequential=True)

    def _IndentedBlock(self, node: cst.IndentedBlock) -> None:
        for stmt in node.body:
            sub = _StatementWalker(self.a, self.container).walk(stmt)
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
        for sub in _subtargets(node.target):
            if isinstance(sub, cst.Name):
                self.e.binds.add(sub.value)
            else:
                self._load_target(sub)
                root = _root_name(sub)
                if root is not None:
                    self.e.mutates.add(root)

    def _For(self, node: cst.For) -> None:
        self._node(node.iter)
        self._store(node.target)
        body = _StatementWalker(self.a, self.container)
        body._node(node.body)
        # A loop body may read, on a later iteration, what it binds: its reads stay reads.
        self.e.absorb(body.e)
        if node.orelse is not None:
            self._node(node.orelse)

    def _While(self, node: cst.While) -> None:
        self._node(node.test)
        body = _StatementWalker(self.a, self.container)
        body._node(node.body)
        self.e.absorb(body.e)
        if node.orelse is not None:
            self._node(node.orelse)

    def _If(self, node: cst.If) -> None:
        self._node(node.test)
        for part in (node.body, node.orelse):
            if part is not None:
                sub = _StatementWalker(self.a, self.container)
                sub._node(part)
                self.e.absorb(sub.e)  # not sequential: a branch may not run

    def _Else(self, node: cst.Else) -> None:
        self._node(node.body)

    def _Try(self, node: cst.Try) -> None:
        for part in [node.body] + list(node.handlers) + [node.orelse, node.finalbody]:
            if part is not None:
                sub = _StatementWalker(self.a, self.container)
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
                self.e.absorb(_StatementWalker(self.a, node).walk(stmt))
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
        arg_roots = [r for r in (_root_name(a.value) for a in call.args if not self.a.module_value(a.value))
                     if r is not None]
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
                self.e.foreign.append((call, f"`{name}`"))
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
            self.e.foreign.append((call, f"`{self.facts.code(call.func, 40)}`"))
            self.e.mutates |= set(arg_roots)
            self.e.collection_read = self.e.collection_read or call
            self.e.collection_write = self.e.collection_write or call

    def _object_call(self, call: cst.Call, func: cst.BaseExpression) -> None:
        """Calling a layer / model / cell object: reads (and may create) its variables; an RNN
        layer runs its cell in a while loop (the dynamic_rnn hazard)."""
        self.e.collection_write = self.e.collection_write or call
        self.e.variables_created = True
        root = _root_name(func)
        if root is not None:
            self.e.mutates.add(root)
        for ctor in self.a.constructors_of(func):
            what = self.a.callee(ctor.func)
            if what[0] == "tf" and tfapi.is_rnn_layer_class(what[1]):
                self.e.hazards.append((call, f"the recurrent layer `{what[1]}` (a `tf.GradientTape` gives no "
                                             "gradient for variables read inside its loop; measured)"))
            elif what[0] != "tf":
                self.e.foreign.append((call, f"`{self.facts.code(func, 40)}`"))

    def _absorb_summary(self, summary: Summary, call: cst.Call) -> None:
        inner = summary.effects
        self.e.reads |= inner.reads
        self.e.mutates |= inner.mutates
        self.e.collection_read = self.e.collection_read or (call if inner.collection_read else None)
        self.e.collection_write = self.e.collection_write or (call if inner.collection_write else None)
        self.e.hazards += [(n, why) for n, why in inner.hazards]
        self.e.opaque += inner.opaque
        self.e.foreign += inner.foreign
        self.e.gradients += inner.gradients
        self.e.variables_created = self.e.variables_created or inner.variables_created
        # fields the body reads off its parameters (`self.logits`) or off module objects
        self.e.attr_chains += inner.attr_chains

    def _method_call(self, call: cst.Call, receiver: cst.BaseExpression, method: str, arg_roots: List[str]) -> None:
        root = _root_name(receiver)
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
        if base is Kind.TENSOR and not (isinstance(receiver, cst.Name) and self.a._root_is_object(receiver)):
            return  # a method of a tensor value (`h.get_shape()`...): computed from it
        self.e.foreign.append((call, f"the method `{self.facts.code(call.func, 40)}`"))
        if root is not None:
            self.e.mutates.add(root)
        self.e.mutates |= set(arg_roots)
        self.e.collection_read = self.e.collection_read or call
        self.e.collection_write = self.e.collection_write or call

    def _tf_call(self, call: cst.Call, name: str) -> None:
        api = tfapi.classify(name)
        if api is Api.GRADIENT:
            self.e.gradients.append(call)
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
        elif api is Api.LAYER:
            self.e.variables_created = True
            self.e.collection_write = self.e.collection_write or call
        elif api is Api.OBJECT and tfapi.is_rnn_layer_class(name):
            pass  # constructing it is harmless; calling it is checked at the call
        if api in (Api.LAYER, Api.OBJECT, Api.PURE, Api.SOURCE, Api.CUT, Api.VARIABLE, Api.CONTEXT,
                   Api.COLLECTION_WRITE, Api.COLLECTION_READ):
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
            elif what[0] in ("imported", "unknown") and self.a.kind(value) is not Kind.FREE:
                self.e.foreign.append((call, f"`{value.value}`"))
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
        for sub in _subtargets(target):
            if isinstance(sub, cst.Name):
                if not self.a.is_local(sub, self.container):
                    self.e.binds.add(sub.value)
            elif isinstance(sub, (cst.Attribute, cst.Subscript)):
                self._load_target(sub)
                root = _root_name(sub)
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


class _MutationIndex(cst.CSTVisitor):
    """Module-wide: which names and fields may be changed in place, and which names alias."""

    def __init__(self, analyzer: Analyzer) -> None:
        self.a = analyzer
        self.names: Dict[str, List[cst.CSTNode]] = {}
        self.fields: Set[str] = set()
        self.parent: Dict[str, str] = {}

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
        root = _root_name(expr)
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
        for arg in node.args:  # a function may change what it is given
            if isinstance(arg.value, (cst.Name, cst.Attribute, cst.Subscript)) and not self.a.module_value(arg.value):
                self._mutated(arg.value, node)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        for sub in _subtargets(node.target):
            if isinstance(sub, (cst.Subscript, cst.Attribute)):
                self._mutated(sub.value, node)  # `d[k] = v` changes d; `o.a.b = v` changes o.a
            if isinstance(sub, cst.Name):
                self._alias_from(sub.value, self.a.facts.parent(node))

    def _alias_from(self, target: str, assign) -> None:
        value = getattr(assign, "value", None)
        if value is not None:
            for root in self._returned_roots(value):
                self._union(target, root)

    def _returned_roots(self, value: cst.BaseExpression) -> List[str]:
        """Names whose objects ``value`` may evaluate to (or contain): ``a``, ``a.b``, ``a[0]``,
        ``[a, b]``, ``x if c else a``, ``f(a)`` for a function that may return its argument. A TF
        op or a method call returns a new object (a tensor, an op); arithmetic a new value."""
        if isinstance(value, (cst.Name, cst.Attribute, cst.Subscript)):
            root = _root_name(value)
            return [root] if root is not None else []
        if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
            return [r for e in value.elements for r in self._returned_roots(e.value)]
        if isinstance(value, cst.Dict):
            return [r for e in value.elements for r in self._returned_roots(e.value)]
        if isinstance(value, cst.StarredElement):
            return self._returned_roots(value.value)
        if isinstance(value, cst.IfExp):
            return self._returned_roots(value.body) + self._returned_roots(value.orelse)
        if isinstance(value, cst.BooleanOperation):
            return self._returned_roots(value.left) + self._returned_roots(value.right)
        if isinstance(value, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            return self._returned_roots(value.for_in.iter)
        if isinstance(value, cst.Call):
            what = self.a.callee(value.func)
            if what[0] in ("tf", "module"):
                return []
            if what[0] == "method":
                if what[2] in ("pop", "get", "setdefault", "popitem"):
                    return self._returned_roots(what[1])
                if self.a.kind(what[1]) in (Kind.FREE, Kind.VARIABLE):
                    return []  # data objects and TF objects (optimizers, layers) return new values
                # an unknown object's method may return itself or something holding its arguments
                return self._returned_roots(what[1]) + [r for a in value.args for r in self._returned_roots(a.value)]
            if what[0] == "builtin" and what[1] not in ("list", "tuple", "dict", "set", "sorted", "reversed", "zip",
                                                          "enumerate", "iter", "next", "filter", "map", "min", "max"):
                return []
            return [r for a in value.args for r in self._returned_roots(a.value)]
        return []

    def visit_For(self, node: cst.For) -> None:
        for sub in _subtargets(node.target):
            if isinstance(sub, cst.Name):
                for name in _walk_nodes(node.iter):
                    if isinstance(name, cst.Name):
                        self._union(sub.value, name.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._mutated(node.target, node)

    def visit_Del(self, node: cst.Del) -> None:
        for sub in _subtargets(node.target):
            if isinstance(sub, (cst.Subscript, cst.Attribute)):
                self._mutated(sub.value, node)


# -- helpers -------------------------------------------------------------------------------

def _join(kinds: Iterable[Kind]) -> Kind:
    out = Kind.FREE
    for kind in kinds:
        if kind > out:
            out = kind
    return out


def _pure(*kinds: Kind) -> Kind:
    """An op computed from values of these kinds: gradient-free only when all of them are; a
    caller's value stays the caller's (PARAM); anything computed from a variable is a TENSOR."""
    if all(k is Kind.FREE for k in kinds):
        return Kind.FREE
    if all(k in (Kind.FREE, Kind.PARAM) for k in kinds):
        return Kind.PARAM
    return Kind.TENSOR


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
