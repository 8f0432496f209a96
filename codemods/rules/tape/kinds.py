"""Whether a value can carry a gradient: the :class:`Kind` of an expression.

``FREE`` (no gradient can flow through it: literals, placeholders, constants, ``tf.data``, pure
ops of those), ``VARIABLE`` (a variable / layer / model / optimizer *object*: its reads happen where
it is used), ``PARAM`` (a value from a caller this module does not show) or ``TENSOR`` (anything
else -- including everything the analysis does not know: unknown means it may carry a gradient).
Names resolve to every binding in scope (a join), fields to every value the module stores in them.

(One recursive evaluation over expression types plus its constant tables; kept together.)
"""

from __future__ import annotations

import builtins
from typing import Dict, Iterable, List, Optional, Set, Tuple

import libcst as cst
from libcst.metadata import Assignment, BuiltinAssignment, ImportAssignment

from codemods.rules.analysis import dotted_name
from codemods.rules.tfnames import TF1_OPTIMIZERS
from codemods.rules.tape import tfapi
from codemods.rules.tape.facts import ModuleFacts
from codemods.rules.tape.syntax import subtargets
from codemods.rules.tape.tfapi import Api
from codemods.rules.tape.values import Analysis, Kind, Memo, join_kinds

__all__ = ["BUILTIN_NAMES", "DATA_MODULES", "Kind", "Kinds", "join_kinds"]

BUILTIN_NAMES = frozenset(dir(builtins))


# Builtins whose result is a Python value whatever they are given: no gradient path. (``int``,
# ``float`` and ``bool`` of a graph tensor raise; of an eager tensor they give a Python number.)
PYTHON_VALUE_BUILTINS = frozenset({"isinstance", "len", "hasattr", "callable", "print", "id", "type", "str", "repr",
                                   "format", "range", "int", "float", "bool"})
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


def _pure(*kinds: Kind) -> Kind:
    """An op computed from values of these kinds: gradient-free only when all of them are; a
    caller's value stays the caller's (PARAM); anything computed from a variable is a TENSOR."""
    if all(k is Kind.FREE for k in kinds):
        return Kind.FREE
    if all(k in (Kind.FREE, Kind.PARAM) for k in kinds):
        return Kind.PARAM
    return Kind.TENSOR


class Kinds:
    """The kinds of one module's values: the analyzer's collaborator for :meth:`kind` (it asks
    the analyzer, ``analysis``, for callees, summaries, parameters and mutations; memoises in
    the shared ``memo``; owns the module's field stores)."""

    def __init__(self, facts: ModuleFacts, memo: Memo, analysis: Analysis) -> None:
        self.facts = facts
        self.memo = memo
        self.a = analysis
        self._field_stores: Optional[Dict[str, List[Tuple[cst.CSTNode, Optional[cst.BaseExpression]]]]] = None

    def kind(self, expr: cst.BaseExpression, exclude: Optional[Set[int]] = None) -> Kind:
        """The :class:`Kind` of ``expr``'s value. Names resolve to every binding in scope except
        those whose statements are in ``exclude`` (ids of nodes)."""
        if exclude is None:
            key = id(expr)
            if key in self.memo.kinds:
                return self.memo.kinds[key]
            if key in self.memo.in_progress:
                return Kind.TENSOR
            self.memo.in_progress.add(key)
            try:
                result = self._kind(expr, None)
            finally:
                self.memo.in_progress.discard(key)
            self.memo.kinds[key] = result
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
            return join_kinds(self.kind(e.value, exclude) for e in expr.elements)
        if isinstance(expr, cst.Dict):
            kinds = []
            for element in expr.elements:
                if isinstance(element, cst.DictElement):
                    kinds += [self.kind(element.key, exclude), self.kind(element.value, exclude)]
                else:
                    kinds.append(self.kind(element.value, exclude))
            return join_kinds(kinds)
        if isinstance(expr, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            return join_kinds([self.kind(expr.elt, exclude), self._comp_kind(expr.for_in, exclude)])
        if isinstance(expr, cst.DictComp):
            return join_kinds([self.kind(expr.key, exclude), self.kind(expr.value, exclude),
                          self._comp_kind(expr.for_in, exclude)])
        if isinstance(expr, cst.BinaryOperation):
            return _pure(self.kind(expr.left, exclude), self.kind(expr.right, exclude))
        if isinstance(expr, cst.UnaryOperation):
            return _pure(self.kind(expr.expression, exclude))
        if isinstance(expr, cst.BooleanOperation):
            return join_kinds([self.kind(expr.left, exclude), self.kind(expr.right, exclude)])
        if isinstance(expr, cst.Comparison):
            return Kind.FREE if all(self.kind(e, exclude) is Kind.FREE for e in
                                    [expr.left] + [c.comparator for c in expr.comparisons]) else Kind.TENSOR
        if isinstance(expr, cst.IfExp):
            return join_kinds([self.kind(expr.body, exclude), self.kind(expr.orelse, exclude)])
        if isinstance(expr, cst.Subscript):
            parts = [self.kind(expr.value, exclude)]
            for element in expr.slice:
                if isinstance(element.slice, cst.Index):
                    parts.append(self.kind(element.slice.value, exclude))
            base = parts[0]
            if base is Kind.VARIABLE:
                # an item or slice of a variable object is a *read* of it (`wpe[:n]`,
                # `embedding[GO_ID]`): a tensor that depends on the variable, not the variable
                return Kind.TENSOR
            return base if base is not Kind.FREE else _pure(*parts)
        if isinstance(expr, cst.Lambda):
            return Kind.FREE  # a function object; what it computes counts where it is called
        if isinstance(expr, cst.NamedExpr):
            return self.kind(expr.value, exclude)
        if isinstance(expr, (cst.StarredElement,)):
            return self.kind(expr.value, exclude)
        return Kind.TENSOR

    def _is_session(self, receiver: cst.BaseExpression) -> bool:
        """A ``tf.Session`` (or ``InteractiveSession``, ``MonitoredTrainingSession``...) object."""
        if isinstance(receiver, cst.Call):
            return bool(self.facts.tf_names(receiver.func) & tfapi.SESSIONS)
        if not isinstance(receiver, cst.Name):
            return False
        found = self.facts.assignments(receiver)
        if not found:
            return False
        for assignment in found:
            value = self.facts.assigned_value(assignment)
            if value is None:
                value = self._with_item_value(assignment)
            if not (isinstance(value, cst.Call) and self.facts.tf_names(value.func) & tfapi.SESSIONS):
                return False
        return True

    def _with_item_value(self, assignment) -> Optional[cst.BaseExpression]:
        """``with tf.Session() as sess``: the value bound to ``sess``."""
        node = getattr(assignment, "node", None)
        parent = self.facts.parent(node) if node is not None else None
        if isinstance(parent, cst.AsName):
            item = self.facts.parent(parent)
            if isinstance(item, cst.WithItem):
                return item.item
        return None

    def _comp_kind(self, comp: cst.CompFor, exclude) -> Kind:
        kinds = [self.kind(comp.iter, exclude)]
        if comp.inner_for_in is not None:
            kinds.append(self._comp_kind(comp.inner_for_in, exclude))
        return join_kinds(kinds)

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
        if mutable and self.a.container_mutated(name) is not None:
            kinds.append(Kind.TENSOR)
        if name.value in self.facts.match_captures:
            # (also bound by a `match` capture, which scopes do not list): a part of the subject
            kinds.append(self.capture_kind(self.facts.match_captures[name.value], exclude))
        return join_kinds(kinds) if kinds else Kind.FREE

    def capture_kind(self, captures: Iterable[cst.Name], exclude: Optional[Set[int]] = None) -> Kind:
        """The kind of what ``match`` capture patterns bind: the subject or a part of it
        (``case [h]:``), so FREE for a gradient-free subject, TENSOR otherwise (a part of a
        variable object is a read of it)."""
        kinds = []
        for capture in captures:
            match = next((a for a in self.facts.ancestors(capture) if isinstance(a, cst.Match)), None)
            if match is None:
                return Kind.TENSOR
            subject = self.kind(match.subject, exclude)
            kinds.append(Kind.FREE if subject is Kind.FREE else Kind.TENSOR)
        return join_kinds(kinds) if kinds else Kind.FREE

    def mutable_binding(self, assignment) -> bool:
        """Bound to a container or an object whose contents can change after binding (a list,
        dict or set, a comprehension, an instance of a local class, a call we cannot see)."""
        if not isinstance(assignment, Assignment) or isinstance(assignment.node, (cst.FunctionDef, cst.ClassDef)):
            return False
        if isinstance(assignment.node, cst.Param):
            args = self.a.param_args(assignment.node)
            return args is None or any(self.mutable_expression(arg) for arg in args)
        value = self._binding_value(assignment.node)
        if value is None:
            return True
        if isinstance(value, (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp, cst.Name,
                              cst.Attribute, cst.Subscript)):
            return True
        if isinstance(value, cst.Call):
            what = self.a.callee(value.func)
            if what[0] == "tf":
                return False  # tensors are immutable; variables change only through graph ops
            if what[0] == "builtin" and what[1] not in ("list", "dict", "set", "object"):
                return False
            return True
        return False

    def mutable_expression(self, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` may evaluate to an object that can change in place."""
        if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            return False
        if isinstance(expr, cst.Name):
            if expr.value in ("True", "False", "None"):
                return False
            found = [a for a in self.facts.assignments(expr) if not isinstance(a, BuiltinAssignment)]
            return not found or any(self.mutable_binding(a) for a in found)
        if isinstance(expr, cst.Call) and self.a.callee(expr.func)[0] == "tf":
            return False
        return True

    def assignment_kind(self, assignment) -> Kind:
        if isinstance(assignment, ImportAssignment):
            return Kind.FREE if self.import_is_code_or_data(assignment) else Kind.TENSOR
        if not isinstance(assignment, Assignment):
            return Kind.TENSOR
        node = assignment.node
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            return Kind.FREE
        if isinstance(node, cst.Param):
            return self.a.param_kind(node)
        value = self._binding_value(node)
        if value is None:
            return Kind.TENSOR
        return self.kind(value)

    def import_is_code_or_data(self, assignment: ImportAssignment) -> bool:
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
        if isinstance(expr.value, cst.Name) and self.root_is_object(expr.value):
            kind = self.field_kind(attr)
            if kind is Kind.TENSOR and base is Kind.PARAM and not self.all_field_stores().get(attr):
                return Kind.PARAM  # a field of an object whose callers are elsewhere (`args.dim`)
            return kind
        return Kind.TENSOR

    def _is_tensor_like(self, expr: cst.BaseExpression, exclude) -> bool:
        return not (isinstance(expr, cst.Name) and self.root_is_object(expr))

    def root_is_object(self, name: cst.Name) -> bool:
        """A parameter (``self``...), or a name bound to a local class instance: its fields are
        what the module stores in them."""
        for assignment in self.facts.assignments(name):
            if isinstance(assignment, Assignment) and isinstance(assignment.node, cst.Param):
                return True
            value = self.facts.assigned_value(assignment)
            if isinstance(value, cst.Call) and self.a.callee(value.func)[0] == "local_class":
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
        what = self.a.callee(call.func)
        args = [a.value for a in call.args]
        arg_kinds = [self.kind(a, exclude) for a in args]
        if what[0] == "tf":
            api = tfapi.classify(what[1])
            if api is Api.CUT:
                return Kind.FREE
            if api in (Api.SOURCE, Api.PURE):
                # a shape, axis or index argument adds no gradient path (`tf.placeholder(tf.float32, [None, n])`)
                return _pure(*(k for arg, k in zip(call.args, arg_kinds)
                               if not tfapi.non_differentiable_argument(what[1], call.args, arg)))
            if api is Api.VARIABLE:
                return Kind.VARIABLE
            if api is Api.OBJECT:
                return Kind.VARIABLE if what[1] not in TF1_OPTIMIZERS else Kind.VARIABLE
            if api is Api.CONTEXT:
                return Kind.FREE
            return Kind.TENSOR  # layer calls, collection reads, hazards, and every API no table lists
        if what[0] == "builtin":
            if what[1] in PYTHON_VALUE_BUILTINS:
                return Kind.FREE
            if what[1] in PURE_BUILTINS:
                return join_kinds(arg_kinds) if arg_kinds else Kind.FREE
            return Kind.TENSOR
        if what[0] == "data":
            return _pure(*arg_kinds) if arg_kinds else Kind.FREE
        if what[0] == "local_function":
            summary = self.a.summary(what[1])
            return summary.result if summary is not None else Kind.TENSOR
        if what[0] == "method":
            receiver, method = what[1], what[2]
            base = self.kind(receiver, exclude)
            if base is Kind.FREE and method not in MUTATING_METHODS:
                return _pure(*arg_kinds) if arg_kinds else Kind.FREE
            if base is Kind.VARIABLE and method in ("get_slot", "variables", "get_weights"):
                return Kind.VARIABLE
            if method in ("run", "eval") and self._is_session(receiver):
                return Kind.FREE  # `sess.run(...)` returns numpy values: no gradient path
            return Kind.TENSOR
        return Kind.TENSOR

    def field_kind(self, attr: str) -> Kind:
        """Join of the kinds of every value the module stores in an attribute named ``attr``
        (``self.x = tf.placeholder(...)`` -> FREE). No store seen, or a store we cannot follow
        (tuple unpacking, augmented assignment, ``setattr``): TENSOR."""
        if attr in self.memo.field_kinds:
            return self.memo.field_kinds[attr]
        stores = self.all_field_stores().get(attr)
        if not stores or "setattr" in self.facts.mentions or self.a.field_mutated(attr):
            self.memo.field_kinds[attr] = Kind.TENSOR
            return Kind.TENSOR
        # A store that reads the field itself (`self.batch_size = config.batch_size`) adds nothing:
        # the least fixed point. Assume FREE while computing; if the join is not FREE, forget every
        # result computed under that assumption and compute again with the old guard (TENSOR).
        mark = self.memo.mark()
        self.memo.field_kinds[attr] = Kind.FREE
        result = join_kinds(self.kind(value) if value is not None else Kind.TENSOR for _, value in stores)
        if result is not Kind.FREE:
            self.memo.rollback(mark)
            self.memo.field_kinds[attr] = Kind.TENSOR  # recursion guard
            result = join_kinds(self.kind(value) if value is not None else Kind.TENSOR for _, value in stores)
        self.memo.field_kinds[attr] = result
        return result

    def field_stores(self, attr: str) -> List[cst.CSTNode]:
        return [node for node, _ in self.all_field_stores().get(attr, [])]

    def all_field_stores(self) -> Dict[str, List[Tuple[cst.CSTNode, Optional[cst.BaseExpression]]]]:
        """Every attribute store in the module, by attribute name: ``(statement, value)``, the value
        None where the store cannot be followed (unpacking, ``+=``); class-body constants too."""
        if self._field_stores is None:
            stores: Dict[str, List[Tuple[cst.CSTNode, Optional[cst.BaseExpression]]]] = {}

            class Collect(cst.CSTVisitor):
                def visit_Assign(self, node: cst.Assign) -> None:
                    for target in node.targets:
                        t = target.target
                        if isinstance(t, cst.Attribute):
                            value = node.value if len(node.targets) == 1 else None
                            stores.setdefault(t.attr.value, []).append((node, value))
                        else:
                            for sub in subtargets(t):
                                if isinstance(sub, cst.Attribute):
                                    stores.setdefault(sub.attr.value, []).append((node, None))

                def visit_AugAssign(self, node: cst.AugAssign) -> None:
                    if isinstance(node.target, cst.Attribute):
                        stores.setdefault(node.target.attr.value, []).append((node, None))

                def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
                    if isinstance(node.target, cst.Attribute):
                        stores.setdefault(node.target.attr.value, []).append((node, node.value))

                def visit_ClassDef(self, node: cst.ClassDef) -> None:
                    # `class Config: batch_size = 20` -- what `config.batch_size` reads
                    for stmt in node.body.body:
                        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and stmt.body else None
                        if isinstance(small, cst.Assign):
                            for target in small.targets:
                                if isinstance(target.target, cst.Name):
                                    value = small.value if len(small.targets) == 1 else None
                                    stores.setdefault(target.target.value, []).append((small, value))

            self.facts.module.visit(Collect())
            self._field_stores = stores
        return self._field_stores
