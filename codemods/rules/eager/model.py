"""The program model of a TF 1 session script: what the eager migration (TFC301) needs to know,
read from the syntax alone (libcst; never TensorFlow).

:func:`read_program` returns a :class:`Program` or raises :class:`Decline` naming the node and
the true cause. The class it accepts (everything else is declined):

* one module; TensorFlow imported as ``import tensorflow as tf`` or
  ``import tensorflow.compat.v1 as tf``; the graph built by module-level statements, in
  ``with tf.variable_scope(...)`` blocks and in helper functions they call;
* ``tf.placeholder``s assigned to module-level names (shapes of integers, ``None`` and module
  constants bound once) and scalar ``tf.placeholder_with_default(<literal>, [])``s; a float scalar placeholder read only by optimizer constructors (a fed
  learning rate) becomes a ``tf.Variable`` each training step assigns;
* variables from ``get_variable`` / ``tf.layers.dense`` / ``tf.layers.conv2d`` / TF 1 RNN cells; a
  module-level ``tf.Variable(<zeros/ones/random_* of a literal shape, or a float literal>[, name=...])``
  run once becomes ``get_variable`` under its TF 1 name (unnamed: ``Variable``, ``Variable_1``...) (no ``tf.Variable`` elsewhere in the forward pass: an eager call would create
  it again on every step); ``tf.trainable_variables()`` / ``get_collection(TRAINABLE_VARIABLES,
  scope=...)`` in the forward pass are the trainable variables created before that point;
* train ops ``t = opt.minimize(loss[, global_step=g][, var_list=...])``, ``t = helper(loss, ...)`` where the
  helper builds an optimizer and returns ``opt.minimize(loss)``, or
  ``... = opt.compute_gradients(loss[, var_list])`` / ``tf.gradients(loss, tvars)`` -> gradient
  processing -> ``t = opt.apply_gradients(...)``, with ``tf.train`` optimizers built from constants,
  fed scalars or ``exponential_decay`` of the global step (and ``tf.contrib.estimator.clip_gradients_by_norm``);
* one ``with tf.Session() as sess:`` block (at module level or under ``if __name__ == "__main__":``)
  whose only uses of the session are initializer runs and ``sess.run(fetches, feed_dict)`` /
  ``tensor.eval(feed_dict=...)`` with fetches a name, a list/tuple of names or a dict of string keys
  to names, and a feed dict (literal, or a name bound in the block to literal dicts) feeding every
  placeholder the model reads (and the optimizer-only placeholders of the run's train ops).
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst

from codemods.rules.eager import tfnames
from codemods.rules.eager.syntax import Calls, Decline, Names, comprehension_targets, dotted, names_of, nodes_of

_BUILTINS = frozenset(dir(builtins))
_SIDE_EFFECTS = frozenset({"print", "open", "input", "exec", "eval", "setattr", "delattr", "globals", "__import__"})
# Modules a forward pass may read besides TensorFlow (pure functions of constants).
_PURE_MODULES = frozenset({"numpy", "math"})
# Plotting and display modules: they build no TensorFlow op. A helper that calls into them and
# reads no TensorFlow name is plain Python kept where it is (the tutorials' `plot_images`); the
# forward pass may not call it (it would draw at every trace of the eager step).
_DISPLAY_MODULES = frozenset({"matplotlib", "PIL", "IPython", "seaborn"})
# Methods that change the object they are called on (list, dict, set, numpy array): run on a
# module-level object by code that moves into the eager step, they would run at every trace.
_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault",
                       "popitem", "add", "discard", "sort", "reverse", "fill", "resize", "put", "itemset",
                       "__setitem__", "__delitem__", "__iadd__"})
# Functions that change their first argument in place (`np.random.shuffle(x_train)`, `random.shuffle`,
# `np.copyto`, ...): matched by their last name, whatever module they come from (not numpy's `put`:
# `queue.put(x)` would read as a change of `x`).
_MUTATING_FUNCTIONS = frozenset({"shuffle", "copyto", "place", "putmask", "fill_diagonal", "put_along_axis"})
# Forward names that create variables or draw random numbers: a tensor built in the session block
# (after the graph) must use none of them (and none of ``tfnames.STATEFUL_PREFIXES``) to move
# into the model's ``call``.
_STATEFUL_NAMES = frozenset({"get_variable", "variable_scope", "name_scope", "nn.dropout"}) | frozenset(
    path for path in tfnames.RNN_ARGUMENTS if not path.startswith(tfnames.STATEFUL_PREFIXES))  # the RNNs
def _saver_used_otherwise(name: str) -> str:
    return (f"`{name}` (a `tf.train.Saver`) is used other than by `.save(sess, path[, global_step=...])` after "
            "training: restoring a checkpoint is not migrated (the eager program's optimizer variables exist only "
            "after its first step)")


_DROPPED_CALLS = frozenset({"disable_v2_behavior", "disable_eager_execution", "reset_default_graph"})
_INITIALIZERS = frozenset({"global_variables_initializer", "initialize_all_variables"})
# Methods of a graph tensor or variable the forward pass may call: they read its static shape (no
# op, no state). Every other method declines (`assign` would run at every call of the eager model).
_VALUE_METHODS = frozenset({"get_shape", "as_list"})
# Attributes of a graph tensor or variable that are Python values (a string, a static shape, a
# dtype): their methods (`var.name.startswith("discriminator")`, a GAN's `var_list` filter) are
# those of the Python value.
_VALUE_ATTRIBUTES = frozenset({"name", "shape", "dtype"})
_VARIABLE_MAKERS = frozenset({"get_variable"})
# Learning-rate schedules of the global step: under eager execution ``tf.compat.v1.train.<schedule>``
# returns a callable, which a v1 optimizer calls at every ``apply_gradients`` (before it increments
# the global step, as the TF 1 graph reads it before the increment).
_SCHEDULES = frozenset({"train.exponential_decay"})
_GLOBAL_STEP = frozenset({"train.get_or_create_global_step", "train.create_global_step"})
_TF_VARIABLE = "`tf.Variable`"  # (in decline reasons)
_MNIST_TUTORIAL = ("imports `tensorflow.examples.tutorials.mnist` other than its `input_data` loader (which "
                   "`tfclip_compat.mnist` replaces, same batches); TF 2 ships neither")
_MNIST_PACKAGE = ["tensorflow", "examples", "tutorials", "mnist"]
# What ``tfclip_compat.mnist`` exports of TF 1's ``input_data`` (``from ...input_data import <these>``).
MNIST_LOADER_NAMES = frozenset({"read_data_sets", "DataSet", "Datasets", "dense_to_one_hot", "extract_images",
                                "extract_labels", "maybe_download", "load_mnist", "DEFAULT_SOURCE_URL"})
_DECLINED_NAMES = {
    "Variable": "`tf.Variable` in the forward pass would be created again on every eager call "
                "(use `tf.get_variable`)",
    "get_collection": "graph collections (`get_collection`) have no eager counterpart here",
    "get_default_graph": "the program reads the graph itself",
    "control_dependencies": "explicit control dependencies are not migrated",
    "train.MonitoredTrainingSession": "MonitoredSession and hooks are outside the session-script class",
    "train.MonitoredSession": "MonitoredSession and hooks are outside the session-script class",
    "train.Supervisor": "Supervisor sessions are outside the session-script class",
    "train.start_queue_runners": "queue runners are outside the session-script class",
    "device": "`tf.device` placement (towers) is outside the session-script class",
    "estimator.EstimatorSpec": "Estimator model_fns are outside the session-script class",
    "estimator.Estimator": "Estimator model_fns are outside the session-script class",
}


_PROGRAM_WIDE = frozenset({
    "train.MonitoredTrainingSession", "train.MonitoredSession", "train.Supervisor", "train.start_queue_runners",
    "device", "estimator.EstimatorSpec", "estimator.Estimator", "get_default_graph",
})
_SESSION_METHODS = {
    "partial_run": "`partial_run` is outside the session-script class",
    "partial_run_setup": "`partial_run` is outside the session-script class",
    "get_tensor_by_name": "tensors looked up by name (`get_tensor_by_name`) are not followed",
    "get_operation_by_name": "ops looked up by name (`get_operation_by_name`) are not followed",
}


@dataclass
class Placeholder:
    name: str
    dtype: str  # canonical path, e.g. "float32"
    shape: Optional[cst.BaseExpression]
    # A scalar read only by optimizer constructors (a fed learning rate): it becomes a module-level
    # ``tf.Variable`` of that name that each training step assigns from its argument ``param``
    # before applying the gradients; the model does not take it.
    optimizer_only: bool = False
    param: str = ""
    node: Optional[cst.BaseStatement] = None
    # ``tf.placeholder_with_default(<literal>, [])``: the value a run that does not feed it passes
    default: Optional[cst.BaseExpression] = None


@dataclass
class TrainOp:
    name: str
    optimizer: str  # a module-level name
    loss: str  # a forward name (an output of the model)
    node: cst.BaseStatement
    global_step: Optional[str] = None
    # compute_gradients form: the statements from compute_gradients to apply_gradients
    block: List[cst.BaseStatement] = field(default_factory=list)
    compute_call: Optional[cst.Call] = None
    # ``compute_gradients(loss, [w, b])`` / ``minimize(loss, var_list=[w, b])``: forward names of
    # variables, in the list's order (None: every trainable variable in creation order)
    var_list: Optional[List[str]] = None
    # the ``tf.trainable_variables()`` lists (forward names) the gradient processing reads
    var_reads: List[str] = field(default_factory=list)
    symbolic: bool = False  # started by ``tf.gradients(loss, tvars)`` (a list of gradients)
    var_list_name: Optional[str] = None  # ``var_list=d_vars``: a list of variables the model returns


@dataclass
class RunSite:
    call: cst.Call
    names: List[str]
    container: Optional[str]  # None (one name), "list", "tuple" or "dict"
    feeds: Dict[str, cst.BaseExpression]
    keys: List[cst.BaseExpression] = field(default_factory=list)  # a dict fetch's keys, in order
    optimizer_feeds: List[str] = field(default_factory=list)  # optimizer-only placeholders it feeds
    only_global_steps: bool = False  # ``sess.run(global_step)`` without feeds: read the variable
    unfed: List[str] = field(default_factory=list)  # placeholders this (evaluation) run leaves unfed


@dataclass
class Program:
    module: cst.Module
    alias: str
    prefix: str  # "" or "compat.v1." (what the alias names)
    # (kind, statement): keep | forward | drop | trainop | optimizer | session | main
    items: List[Tuple[str, cst.BaseStatement]]
    placeholders: List[Placeholder]
    forward_names: Set[str]
    lifted: Dict[int, List[Tuple[str, cst.BaseExpression]]]  # id(train-op statement) -> forward assignments
    generated_optimizers: Dict[int, List[Tuple[str, cst.BaseExpression]]]
    train_ops: Dict[str, TrainOp]
    global_steps: Set[str]
    session: cst.With
    session_name: str
    runs: List[RunSite]
    dropped_runs: List[cst.Call]
    taken: Set[str]
    optimizer_feeds: Dict[str, List[str]] = field(default_factory=dict)  # optimizer -> its placeholders
    # ``tf.trainable_variables()`` calls in the forward pass (id -> index): the trainable variables
    # created before that point of the TF 1 graph
    trainable_calls: Dict[int, int] = field(default_factory=dict)
    # ``tf.Variable(<initial value>, name="w")`` in the forward pass -> ``get_variable`` source (id -> code)
    variable_rewrites: Dict[int, str] = field(default_factory=dict)
    savers: Dict[str, cst.BaseStatement] = field(default_factory=dict)  # `saver = tf.train.Saver()` statements
    saver_calls: Dict[int, cst.Call] = field(default_factory=dict)  # id(`saver.save(sess, ...)`) -> eager form
    collection_scopes: Dict[int, str] = field(default_factory=dict)  # among trainable_calls: scope filters
    # ``feed = {x: a, y: b}`` in the session block -> ``feed = {"x": a, "y": b}`` (id -> new statement)
    feed_statements: Dict[int, cst.BaseStatement] = field(default_factory=dict)
    # evaluation tensors built in the session block (``accuracy = tf.reduce_mean(...)`` after the
    # training loop): computed by the model's ``call`` after the forward pass, removed from the block
    late_forward: List[cst.SimpleStatementLine] = field(default_factory=list)
    # statements (id; lifted losses: id of the expression) that need placeholders some run leaves
    # unfed -> those placeholders (the model skips the statement when one is None); and the forward
    # names bound by such statements -> the placeholders they need
    guarded: Dict[int, List[str]] = field(default_factory=dict)
    eager_fetches: Dict[int, cst.BaseExpression] = field(default_factory=dict)  # id(run) -> fetch of no graph tensor
    name_needs: Dict[str, List[str]] = field(default_factory=dict)


# -- syntax helpers ---------------------------------------------------------------------------


def _changed_objects(node: cst.CSTNode) -> List[Tuple[str, cst.CSTNode]]:
    """Names whose object ``node`` changes in place: ``name.append(...)`` (a mutating method),
    ``np.random.shuffle(name)`` / ``setattr(name, ...)`` (a function that changes its first
    argument), ``name[k] = ...`` / ``name.attr = ...`` / ``del name[k]`` / ``name[k] += ...``."""
    def base(target: cst.BaseExpression) -> Optional[str]:
        while isinstance(target, (cst.Subscript, cst.Attribute)):
            target = target.value
        return target.value if isinstance(target, cst.Name) else None

    found: List[Tuple[str, cst.CSTNode]] = []
    for call in nodes_of(node, cst.Call):
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in _MUTATORS:
            name = base(func.value)
            if name is not None:
                found.append((name, call))
        last = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if (last in _MUTATING_FUNCTIONS or (isinstance(func, cst.Name) and last in ("setattr", "delattr"))) \
                and call.args and call.args[0].keyword is None and not call.args[0].star:
            name = base(call.args[0].value)
            if name is not None:
                found.append((name, call))
    targets = ([t.target for t in nodes_of(node, cst.AssignTarget)] + [a.target for a in nodes_of(node, cst.AugAssign)]
               + [a.target for a in nodes_of(node, cst.AnnAssign)] + [d.target for d in nodes_of(node, cst.Del)])
    for target in targets:
        for part in ([e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else [target]):
            if isinstance(part, (cst.Subscript, cst.Attribute)):
                name = base(part)
                if name is not None:
                    found.append((name, part))
    return found


def _in_place_changes(body: Sequence[cst.BaseStatement]) -> Dict[str, List[Tuple[float, cst.CSTNode]]]:
    """Every in-place change of a module-level statement (:func:`_changed_objects`), by name: at
    the statement's index, or at infinity inside a function or class (it runs when called)."""
    out: Dict[str, List[Tuple[float, cst.CSTNode]]] = {}
    for index, stmt in enumerate(body):
        deferred = {id(at) for d in nodes_of(stmt, cst.FunctionDef) + nodes_of(stmt, cst.ClassDef)
                    + nodes_of(stmt, cst.Lambda) for _, at in _changed_objects(d)}
        for name, at in _changed_objects(stmt):
            out.setdefault(name, []).append((float("inf") if id(at) in deferred else float(index), at))
    return out


def _may_share(body: Sequence[cst.BaseStatement], alias: str, modules: Set[str]) -> Dict[str, Set[str]]:
    """Module-level names that may hold the same object, or one a part of the other's: ``b = a``,
    ``b = a[1:]`` (a view), ``cfg = Config()`` (its class attributes) bind ``b`` from ``a``. Each
    name maps to its group (the connected names), so a change through one is a change of all."""
    parent: Dict[str, str] = {}

    def find(name: str) -> str:
        while parent.setdefault(name, name) != name:
            name = parent[name]
        return name

    def sources(value: cst.CSTNode) -> Set[str]:
        """The names whose object ``value`` may be (a part of): a name, a subscript or attribute of
        one, the arguments and callee of a call other than TensorFlow's (``np.asarray(a)`` is
        ``a``), the elements of a literal list, tuple or dict; nothing for other expressions."""
        while isinstance(value, (cst.Subscript, cst.Attribute)):
            value = value.value
        if isinstance(value, cst.Name):
            return {value.value} - modules  # (a module's function is no object of the program's)
        if isinstance(value, cst.Call):
            if alias and alias in names_of(value.func).read:
                return set()
            return sources(value.func) | {n for a in value.args for n in sources(a.value)}
        if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
            return {n for e in value.elements for n in sources(e.value)}
        if isinstance(value, cst.Dict):
            return {n for e in value.elements if isinstance(e, cst.DictElement) for n in sources(e.value)}
        return set()

    for stmt in body:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            continue
        for targets, value in _bindings_in(stmt):
            for target in targets:
                for source in sources(value):
                    parent[find(target)] = find(source)
    groups: Dict[str, Set[str]] = {}
    for name in list(parent):
        groups.setdefault(find(name), set()).add(name)
    return {name: groups[find(name)] for name in parent}


def mnist_loader_import(small: cst.BaseSmallStatement) -> Optional[cst.BaseSmallStatement]:
    """TF 1's MNIST tutorial loader imported (``from tensorflow.examples.tutorials.mnist import
    input_data [as n]``, ``import tensorflow.examples.tutorials.mnist.input_data as n``, ``from
    ...mnist.input_data import read_data_sets``): the same import of ``tfclip_compat.mnist``, TF 1's
    loader on TF 2 (the same files, batches and shuffles). None for any other statement; raises
    ``Decline`` for another form or module of ``tensorflow.examples.tutorials.mnist``."""
    if isinstance(small, cst.ImportFrom):
        module = dotted(small.module) if small.module is not None and not small.relative else None
        if not module or module[:4] != _MNIST_PACKAGE:
            return None
        if isinstance(small.names, cst.ImportStar):
            raise Decline(small, _MNIST_TUTORIAL)
        names = [a.name.value if isinstance(a.name, cst.Name) else "" for a in small.names]
        if module == _MNIST_PACKAGE and names == ["input_data"]:
            return small.with_changes(module=cst.Name("tfclip_compat"), names=[
                small.names[0].with_changes(name=cst.Name("mnist"), asname=small.names[0].asname or cst.AsName(
                    name=cst.Name("input_data")), comma=cst.MaybeSentinel.DEFAULT)])
        if module == _MNIST_PACKAGE + ["input_data"] and all(n in MNIST_LOADER_NAMES for n in names):
            return small.with_changes(module=cst.parse_expression("tfclip_compat.mnist"))
        raise Decline(small, _MNIST_TUTORIAL)
    if isinstance(small, cst.Import):
        hits = [a for a in small.names if (dotted(a.name) or [])[:4] == _MNIST_PACKAGE]
        if not hits:
            return None
        if (len(small.names) != 1 or dotted(hits[0].name) != _MNIST_PACKAGE + ["input_data"]
                or hits[0].asname is None):
            raise Decline(small, _MNIST_TUTORIAL)
        return small.with_changes(names=[hits[0].with_changes(name=cst.parse_expression("tfclip_compat.mnist"))])
    return None


def _counter_variable(call: cst.Call) -> bool:
    """``tf.Variable(0, trainable=False[, name="..."])``: an integer counter (a global step made by
    hand), kept at module level; the rule follows it like ``get_or_create_global_step()``."""
    positional = [a for a in call.args if a.keyword is None]
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    if len(positional) != 1 or any(a.star for a in call.args) or not isinstance(positional[0].value, cst.Integer):
        return False
    trainable = keywords.pop("trainable", None)
    name = keywords.pop("name", None)
    return (not keywords and isinstance(trainable, cst.Name) and trainable.value == "False"
            and (name is None or isinstance(name, cst.SimpleString)))


def _lines_under_withs(stmt: cst.CSTNode, scopes: Optional[List[cst.With]] = None) -> List[Tuple[cst.SimpleStatementLine, List[cst.With]]]:
    """The simple statements of ``stmt`` reached through ``with`` blocks only (run once each)."""
    scopes = scopes or []
    if isinstance(stmt, cst.SimpleStatementLine):
        return [(stmt, scopes)]
    found: List[Tuple[cst.SimpleStatementLine, List[cst.With]]] = []
    if isinstance(stmt, cst.With) and isinstance(stmt.body, cst.IndentedBlock):
        for inner in stmt.body.body:
            found += _lines_under_withs(inner, scopes + [stmt])
    return found


def _float_literal_shape(value: cst.BaseExpression) -> Optional[str]:
    """The shape (``[]``, ``[2]``, ``[2, 3]``) of a float literal or a (nested, rectangular) list of
    float literals -- a float32 constant in TF 1 -- or None."""
    if isinstance(value, cst.Float) or (isinstance(value, cst.UnaryOperation) and isinstance(
            value.operator, cst.Minus) and isinstance(value.expression, cst.Float)):
        return "[]"
    if isinstance(value, cst.List) and value.elements:
        shapes = {_float_literal_shape(e.value) if isinstance(e, cst.Element) else None for e in value.elements}
        if len(shapes) != 1 or None in shapes:
            return None
        inner = shapes.pop()
        return f"[{len(value.elements)}" + ("]" if inner == "[]" else f", {inner[1:]}")
    return None


def _trainable_by_default(call: cst.Call) -> bool:
    """No ``trainable=`` (keyword or get_variable's 6th positional): a tape watches it as TF 1's
    ``compute_gradients`` differentiates it."""
    positional = [a for a in call.args if a.keyword is None]
    return len(positional) < 6 and not any(a.star for a in call.args) and not any(
        a.keyword is not None and a.keyword.value == "trainable" for a in call.args)


def _all_params(params: cst.Parameters) -> List[cst.Param]:
    """Every parameter: positional-only, plain, keyword-only, ``*args`` and ``**kwargs``."""
    out = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
    return out + [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]


class _Bindings(cst.CSTVisitor):
    """``(names bound, the value they are bound from)`` for every binding form in a subtree."""

    def __init__(self) -> None:
        self.found: List[Tuple[Set[str], cst.CSTNode]] = []

    def add(self, target: cst.CSTNode, value: Optional[cst.CSTNode]) -> None:
        if value is not None:
            names = names_of(target)
            self.found.append((names.bound | names.read, value))

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self.add(t.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.add(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.add(node.target, node.value)

    def visit_For(self, node: cst.For) -> None:
        self.add(node.target, node.iter)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.add(node.target, node.iter)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self.add(node.asname.name, node.item)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.add(node.target, node.value)


def _bindings_in(node: cst.CSTNode) -> List[Tuple[Set[str], cst.CSTNode]]:
    visitor = _Bindings()
    node.visit(visitor)
    return visitor.found


def calls_of(node: cst.CSTNode) -> List[cst.Call]:
    visitor = Calls()
    node.visit(visitor)
    return visitor.calls


def _single_assign(stmt: cst.CSTNode) -> Optional[Tuple[cst.BaseExpression, cst.BaseExpression]]:
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        small = stmt.body[0]
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            return small.targets[0].target, small.value
    return None


class _ReplaceCalls(cst.CSTTransformer):
    """Each call whose id is given becomes ``None``."""

    def __init__(self, ids: Set[int]) -> None:
        super().__init__()
        self.ids = ids

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        return cst.Name("None") if id(original) in self.ids else updated


def _expr_stmt(stmt: cst.CSTNode) -> Optional[cst.BaseExpression]:
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr):
        return stmt.body[0].value
    return None


def _arg(call: cst.Call, index: int, keyword: str) -> Optional[cst.BaseExpression]:
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for a in call.args:
        if a.keyword is not None and a.keyword.value == keyword:
            return a.value
    return positional[index].value if index < len(positional) else None


# -- the reader -------------------------------------------------------------------------------


class Reader:
    def __init__(self, module: cst.Module, *, session_object: bool = False) -> None:
        self.module = module
        # the session block was read from a `sess = tf.Session()` object (session_object_as_with)
        self.session_object = session_object
        # why a `tf.Variable` call (by the id of its function node) did not become `get_variable`
        self.variable_why: Dict[int, str] = {}
        # helpers that read forward-pass tensors: emitted inside the model's `call`
        self.nested_helpers: Dict[str, cst.FunctionDef] = {}
        # batch normalization: names bound to `tf.get_collection(tf.GraphKeys.UPDATE_OPS)`, and the
        # train ops built under `tf.control_dependencies(<them>)`
        self.update_ops_names: Set[str] = set()
        self.update_train_ops: Set[str] = set()
        # a feed-dict name -> placeholder -> the values its bindings give it
        self.feed_dict_values: Dict[str, Dict[str, List[cst.BaseExpression]]] = {}
        self.alias = ""
        self.prefix = ""
        self.items: List[Tuple[str, cst.BaseStatement]] = []
        self.placeholders: List[Placeholder] = []
        self.forward_names: Set[str] = set()
        self.constants: Set[str] = set()
        self.helpers: Dict[str, cst.FunctionDef] = {}
        self.imported: Dict[str, str] = {}  # name bound by a non-TensorFlow import -> its module
        # names bound by ``from tensorflow.python.framework import ops``: the rule follows them only as
        # ``ops.reset_default_graph()`` (the very function ``tf.compat.v1.reset_default_graph`` is) in a
        # module-level statement before the graph is built, and drops those statements and the import
        self.ops_aliases: Set[str] = set()
        self.dropped_resets: Set[int] = set()  # ids of the Name nodes of the dropped ``ops.`` resets
        self.graph_started = False  # a module-level statement before the session has used TensorFlow
        self.factories: Dict[str, cst.FunctionDef] = {}
        self.optimizers: Set[str] = set()
        self.global_steps: Set[str] = set()
        self.init_names: Set[str] = set()
        self.train_ops: Dict[str, TrainOp] = {}
        self.lifted: Dict[int, List[Tuple[str, cst.BaseExpression]]] = {}
        self.generated: Dict[int, List[Tuple[str, cst.BaseExpression]]] = {}
        self.block_names: Set[str] = set()
        self.session: Optional[cst.With] = None
        self.session_name = ""
        self.runs: List[RunSite] = []
        self.dropped_runs: List[cst.Call] = []
        self.feed_dicts: Dict[str, List[str]] = {}  # a feed-dict name -> its placeholder keys
        self.optimizer_feeds: Dict[str, List[str]] = {}  # optimizer name -> placeholders among its arguments
        self.feed_candidates: Dict[int, str] = {}
        self.feed_statements: Dict[int, cst.BaseStatement] = {}
        self.late_forward: List[cst.SimpleStatementLine] = []
        self.guarded: Dict[int, List[str]] = {}
        self.eager_fetches: Dict[int, cst.BaseExpression] = {}  # id(run call) -> its fetch, computed eagerly
        # variable factories (``def weight_variable(shape): return tf.Variable(tf.truncated_normal(shape,
        # stddev=0.1))``): name -> {id(call site): (the tf.Variable call it makes there, its scopes)}
        self.factories_v: Dict[str, Dict[int, Tuple[cst.Call, List[cst.With]]]] = {}
        self.factory_inner: Set[int] = set()  # ids of the tf.Variable calls inside factory bodies
        self.factory_names: List[str] = []  # literal `name=` values the call sites give
        self.name_needs: Dict[str, List[str]] = {}
        self._session_depth = 0  # compound statements around the session statement being read
        self._trained = False  # a run of a training op has been read in the session block
        # (round 14) checkpoints: `saver = tf.train.Saver()` at module level -> its statement; the
        # `saver.save(sess, ...)` calls in the session block -> their eager form (`sess` -> None);
        # the training runs read so far, each with the compound statements around it
        self.savers: Dict[str, cst.BaseStatement] = {}
        self.saver_calls: Dict[int, cst.Call] = {}
        self._train_runs: List[Tuple[Set[str], Tuple[cst.CSTNode, ...]]] = []
        self._stack: List[cst.CSTNode] = []  # the session block's compound statements around the one read
        self._top = 0  # the index of the module-level statement being read
        self._changes: Dict[str, List[Tuple[float, cst.CSTNode]]] = {}  # in-place changes, by name
        self._sharing: Optional[Dict[str, Set[str]]] = None  # module-level names that may share an object
        self.taken = names_of(module).read | names_of(module).bound
        self.bind_counts = _module_bindings(module)
        self.display_helpers: Dict[str, str] = {}  # plain helpers calling plotting modules -> the module name
        self.variable_names: Set[str] = set()
        # names bound once, by ``name = tf.get_variable(...)`` in the forward pass: the variable itself
        self.direct_variables: Set[str] = set()
        self.trainable_calls: Dict[int, int] = {}
        self.variable_rewrites: Dict[int, str] = {}
        self.collection_scopes: Dict[int, str] = {}
        self.optimizer_code: Dict[str, str] = {}  # get_collection(TRAINABLE_VARIABLES, scope) calls
        self.schedules: Set[str] = set()  # names bound once to a learning-rate schedule of the global step
        self.var_lists: Set[str] = set()  # names bound once by ``name = tf.trainable_variables()``
        self.global_names = {n.name.value for g in nodes_of(module, cst.Global) for n in g.names}

    # names and paths

    def path(self, node: cst.BaseExpression) -> Optional[str]:
        """The canonical TF 1 path of ``tf.<...>`` (``compat.v1.`` stripped), else None."""
        parts = dotted(node)
        if parts and parts[0] in self.ops_aliases:
            # ``ops.reset_default_graph`` is ``tf.compat.v1.reset_default_graph`` (the same function);
            # any other use of ``ops`` is declined by check_ops_uses
            return "reset_default_graph" if parts[1:] == ["reset_default_graph"] else None
        if not parts or not self.alias or parts[0] != self.alias:
            return None
        path = self.prefix + ".".join(parts[1:])
        if path.startswith("compat.v1."):
            path = path[len("compat.v1."):]
        # ``tf.contrib.rnn.BasicLSTMCell`` is TF 1's ``tf.nn.rnn_cell.BasicLSTMCell`` (the same object)
        return tfnames.CONTRIB_RNN.get(path, path)

    def fresh(self, base: str) -> str:
        name, n = base, 2
        while name in self.taken:
            name, n = f"{base}_{n}", n + 1
        self.taken.add(name)
        return name

    def tf_paths(self, node: cst.CSTNode) -> List[Tuple[cst.CSTNode, str]]:
        visitor = Calls()
        node.visit(visitor)
        found = []
        outer = {id(a.value) for a in visitor.attributes}
        for attribute in visitor.attributes:
            if id(attribute) in outer:
                continue  # only whole chains
            path = self.path(attribute)
            if path is not None:
                found.append((attribute, path))
        names = names_of(node).read
        if self.alias in names and not found:
            # the module itself used as a value
            raise Decline(node, f"`{self.alias}` is used as a value")
        return found

    def check_forward(self, node: cst.CSTNode, allowed: frozenset, where: str,
                      skip: Sequence[cst.CSTNode] = ()) -> None:
        """Every TF name in ``node`` (outside the ``skip`` subtrees, which the caller rewrites) is one
        the forward pass may use."""
        # An initializer passed as ``initializer=`` / ``kernel_initializer=`` ... runs once, when the
        # variable is created (its numbers need not match: initial values are TF 1's distributions,
        # and a seed need not draw the same numbers eagerly); its own arguments must be constants.
        initializer_paths = {id(a) for sub in skip for a in Calls.attributes_of(sub)}
        for arg in nodes_of(node, cst.Arg):
            if (arg.keyword is not None and arg.keyword.value.endswith("initializer") and isinstance(arg.value, cst.Call)
                    and self.path(arg.value.func) in tfnames.INITIALIZERS):
                for inner in arg.value.args:
                    if self.path(inner.value) in tfnames.DTYPES:
                        continue  # dtype=tf.float32
                    if self.alias in names_of(inner.value).read or names_of(inner.value).read & self.graph_names():
                        raise Decline(arg, "an initializer argument computed from tensors")
                initializer_paths.add(id(arg.value.func))
        called = set()
        for call in calls_of(node):
            if self.path(call.func) in tfnames.RENAMED_INITIALIZERS:
                called.add(id(call.func))
                self.check_renamed_initializer(call)
            if self.path(call.func) in tfnames.RNN_ARGUMENTS:
                self.check_rnn_arguments(call)
        self.check_methods(node, where)
        for at, path in self.tf_paths(node):
            if path in tfnames.RENAMED_INITIALIZERS and id(at) not in called:
                raise Decline(at, f"`tf.{path}` used other than called (the rule writes out the "
                                  f"`{tfnames.RENAMED_INITIALIZERS[path]}` call it is)")
            if id(at) in initializer_paths:
                continue
            if path == "" or path == "compat.v1":
                raise Decline(at, f"`{self.alias}` is used as a value")
            if path == "Variable" and id(at) in self.variable_why:
                raise Decline(at, self.variable_why[id(at)])
            if path in _DECLINED_NAMES:
                raise Decline(at, _DECLINED_NAMES[path])
            if path == "placeholder":
                raise Decline(at, "a placeholder that is not assigned to a module-level name")
            if path.startswith(tfnames.RANDOM_PREFIXES) and path not in allowed:
                raise Decline(at, f"`tf.{path}` draws random numbers in the {where}: of the random ops only "
                                  "dropout is migrated (the proofs align its masks; not yet the others)")
            if path == "train.Saver":
                raise Decline(at, "`tf.train.Saver` other than `saver = tf.train.Saver()` at module level after the "
                                  "graph (the one form the rule migrates: each `saver.save(sess, ...)` then writes the "
                                  "same checkpoint eagerly)")
            if path == "train.import_meta_graph":
                raise Decline(at, "`tf.train.import_meta_graph`: restoring a graph from a checkpoint is not migrated")
            if path.startswith("summary."):
                raise Decline(at, f"`tf.{path}`: TensorBoard summaries and event files are not migrated (a TF 2 "
                                  "program writes them with `tf.summary.create_file_writer` and "
                                  "`tf.summary.scalar(..., step=...)`)")
            if path.startswith(("train.", "Session", "InteractiveSession")):
                raise Decline(at, f"`tf.{path}` in the {where}")
            if path not in allowed:
                raise Decline(at, f"`tf.{path}` in the {where} is outside the names this rule knows "
                                  "to compute the same eagerly")

    def check_methods(self, node: cst.CSTNode, where: str) -> None:
        """A method called on a value that may be a graph tensor or variable is one of
        ``_VALUE_METHODS`` (they read a static shape: no op, no state), or one of a Python value
        it has (``_VALUE_ATTRIBUTES``: ``var.name.startswith(...)``). Anything else -- above all
        ``W.assign(...)`` / ``assign_add`` / ``scatter_update``, which change a variable each time
        they run, and would run at every call of the eager model -- is unknown, and declines.
        May be a graph value: a receiver that reads TensorFlow, a graph name, a parameter of a function
        that builds graph ops, or a name bound (in ``node``) from such a value."""
        graphish = set(self.graph_names())
        for fn in nodes_of(node, cst.FunctionDef):  # a function that builds graph ops may be passed tensors
            if self.alias in names_of(fn.body).read or names_of(fn.body).read & graphish:
                graphish |= {p.name.value for p in _all_params(fn.params)}
        bindings = _bindings_in(node)
        changed = True
        while changed:
            changed = False
            for targets, value in bindings:
                read = names_of(value).read
                if (self.alias in read or read & graphish) and not targets <= graphish:
                    graphish |= targets
                    changed = True
        own: Set[Tuple[str, str]] = set()  # (self, method): a class calling its own methods, checked with it
        for klass in nodes_of(node, cst.ClassDef):
            methods = [m for m in klass.body.body if isinstance(m, cst.FunctionDef)]
            selves = {ps[0].name.value for m in methods for ps in [_all_params(m.params)] if ps}
            own |= {(me, m.name.value) for me in selves for m in methods}
        for call in calls_of(node):
            func = call.func
            if not isinstance(func, cst.Attribute) or self.path(func) is not None:
                continue
            receiver = func.value
            if isinstance(receiver, cst.Name) and receiver.value in self.imported:
                continue  # a module's function (`np.mean`)
            if isinstance(receiver, cst.Name) and (receiver.value, func.attr.value) in own:
                continue
            if isinstance(receiver, cst.Attribute) and receiver.attr.value in _VALUE_ATTRIBUTES:
                continue  # `var.name.startswith("d_")`: a method of a Python string, shape or dtype
            read = names_of(receiver).read
            if (self.alias in read or read & graphish) and func.attr.value not in _VALUE_METHODS:
                shown = " ".join(cst.Module([]).code_for_node(receiver).split())
                raise Decline(call, f"`.{func.attr.value}(...)` in the {where} on `{shown[:40]}`, which may be a graph "
                                    "tensor or variable (of their methods only `get_shape()`, a shape's `as_list()` and "
                                    "those of their `name`, `shape` and `dtype` are followed; `assign` and its kin "
                                    "would change the variable at every eager call)")

    def check_renamed_initializer(self, call: cst.Call) -> None:
        """``xavier_initializer([uniform=True][, seed=...][, dtype=...])``: only the uniform form is
        ``glorot_uniform_initializer``; its arguments are constants."""
        for i, arg in enumerate(call.args):
            if arg.star or (arg.keyword is None and i > 2):
                raise Decline(call, "an initializer with `*args`/`**kwargs`")
            key = arg.keyword.value if arg.keyword is not None else ("uniform", "seed", "dtype")[i]
            if key == "uniform" and not (isinstance(arg.value, cst.Name) and arg.value.value == "True"):
                raise Decline(call, f"`tf.{self.path(call.func)}` with `uniform=` other than `True` (contrib's "
                                    "truncated normal has no same-distribution TF 2 initializer here)")
            if key not in ("uniform", "seed", "dtype"):
                raise Decline(call, f"`tf.{self.path(call.func)}` with the argument `{key}=`")
            if (self.alias in names_of(arg.value).read or names_of(arg.value).read & self.graph_names()) and not (
                    key == "dtype" and self.path(arg.value) in tfnames.DTYPES):
                raise Decline(call, "an initializer argument computed from tensors")

    def check_rnn_arguments(self, call: cst.Call) -> None:
        """An RNN cell or RNN called with the arguments ``tfnames.RNN_ARGUMENTS`` lists (measured to
        compute the same in a session and in a ``tf.function``); ``use_peepholes``, ``cell_clip``,
        ``sequence_length``... are unknown, and decline."""
        path = self.path(call.func)
        positional, keywords = tfnames.RNN_ARGUMENTS[path]
        for i, arg in enumerate(call.args):
            if arg.star:
                raise Decline(call, f"`tf.{path}` with `*args`/`**kwargs`")
            key = arg.keyword.value if arg.keyword is not None else (positional[i] if i < len(positional) else None)
            if key is None or (key not in positional and key not in keywords):
                shown = f"`{key}=`" if key else f"positional argument {i + 1}"
                raise Decline(arg, f"`tf.{path}` with {shown} (only `{'`, `'.join(positional + tuple(keywords))}` "
                                   "are measured to compute the same eagerly)")
            if key in keywords and keywords[key] is not None and not (
                    isinstance(arg.value, cst.Name) and arg.value.value == keywords[key]):
                why = f": {tfnames.RNN_WHY[key]}" if key in tfnames.RNN_WHY else " (not measured)"
                raise Decline(arg, f"`tf.{path}` with `{key}=` other than `{keywords[key]}`{why}")

    # the walk

    def outside_the_class(self) -> None:
        """Program-wide constructs that put the whole file outside the class (checked first, so
        the decline names them rather than a symptom)."""
        for stmt in self.module.body:
            if isinstance(stmt, cst.SimpleStatementLine) and any(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body):
                self.imports(stmt)
        if not self.alias:
            return
        self.find_variable_factories()
        for at, path in self.tf_paths(self.module):
            if path in _PROGRAM_WIDE:
                raise Decline(at, _DECLINED_NAMES[path])
        for call in calls_of(self.module):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in _SESSION_METHODS:
                raise Decline(call, _SESSION_METHODS[func.attr.value])

    def read(self) -> Program:
        self.outside_the_class()
        self.alias, self.prefix, self.imported, self.ops_aliases = "", "", {}, set()
        body = list(self.module.body)
        self._changes = _in_place_changes(body)
        for index, stmt in enumerate(body):
            self._top = index
            self.statement(index, stmt, top=True)
        self.check_ops_uses()
        if self.session is None:
            raise Decline(self.module, "no `with tf.Session() as sess:` block")
        if not self.alias:
            raise Decline(self.module, "TensorFlow is not imported as a module alias")
        if not self.runs:
            raise Decline(self.session, "the session block runs no training op")
        used_train = {n for run in self.runs for n in run.names if n in self.train_ops}
        if not used_train:
            raise Decline(self.session, "the session block runs no training op")
        self.check_non_slot_order()
        self.check_savers()
        self.check_unfed()
        self.check_batch_norm()
        self.check_arithmetic_chains()
        for kind, stmt in self.items:
            if kind != "forward" and self.nested_helpers:
                used = names_of(stmt).read & set(self.nested_helpers)
                if used:
                    name = sorted(used)[0]
                    raise Decline(self.nested_helpers[name], f"helper `{name}` reads module-level tensors of the "
                                  "forward pass (so it moves into the model) and is also used outside the forward pass")
        self.items = [("holder", stmt) if kind == "drop" and any(p.optimizer_only and p.node is stmt
                                                                   for p in self.placeholders) else (kind, stmt)
                      for kind, stmt in self.items]
        return Program(
            module=self.module, alias=self.alias, prefix=self.prefix, items=self.items,
            placeholders=self.placeholders, forward_names=self.forward_names, lifted=self.lifted,
            generated_optimizers=self.generated, train_ops=self.train_ops,
            global_steps=self.global_steps, session=self.session, session_name=self.session_name,
            runs=self.runs, dropped_runs=self.dropped_runs, taken=self.taken,
            feed_statements=self.feed_statements, optimizer_feeds=self.optimizer_feeds,
            late_forward=self.late_forward, guarded=self.guarded, eager_fetches=self.eager_fetches, name_needs=self.name_needs,
            trainable_calls=self.trainable_calls, variable_rewrites=self.variable_rewrites,
            collection_scopes=self.collection_scopes, savers=self.savers, saver_calls=self.saver_calls,
        )

    def check_arithmetic_chains(self) -> None:
        """Decline chains grappler regroups differently in a session and in a function:
        :func:`codemods.rules.eager.chains.check_arithmetic_chains`."""
        from codemods.rules.eager.chains import check_arithmetic_chains

        check_arithmetic_chains(self)

    def training_names(self) -> Set[str]:
        """Names of the training machinery (optimizers, train ops, initializers, global steps,
        schedules, the session block's names), which the forward pass may not read."""
        return (set(self.train_ops) | self.optimizers | self.global_steps | self.block_names | self.schedules
                | self.init_names)

    def graph_names(self) -> Set[str]:
        return (self.forward_names | {p.name for p in self.placeholders} | set(self.train_ops)
                | self.block_names | self.init_names | self.schedules)

    def statement(self, index: int, stmt: cst.BaseStatement, *, top: bool) -> None:
        # the module docstring, imports
        if index == 0 and _expr_stmt(stmt) is not None and isinstance(_expr_stmt(stmt), (cst.SimpleString, cst.ConcatenatedString)):
            self.items.append(("keep", stmt))
            return
        if isinstance(stmt, cst.SimpleStatementLine) and any(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body):
            self.imports(stmt)
            self.items.append(("import", stmt))
            return
        if isinstance(stmt, cst.If) and self._is_main(stmt):
            self.main(stmt)
            return
        if isinstance(stmt, cst.With) and self._session_item(stmt) is not None:
            self.session_block(stmt)
            self.items.append(("session", stmt))
            return
        if self.session is not None:
            self.after_session(stmt)
            self.items.append(("keep", stmt))
            return
        if isinstance(stmt, cst.FunctionDef):
            self.function(stmt)
            return
        if isinstance(stmt, cst.ClassDef):
            if self.tf_paths(stmt):
                self.model_class(stmt)
                return
            self.items.append(("keep", stmt))
            return
        self.graph_statement(index, stmt)

    def check_ops_uses(self) -> None:
        """Every use of a name bound by ``from tensorflow.python.framework import ops`` is a dropped
        module-level ``ops.reset_default_graph()`` (the emitted program drops the import)."""
        if not self.ops_aliases:
            return
        dropped = self.dropped_resets
        for stmt in self.module.body:
            if isinstance(stmt, cst.SimpleStatementLine) and all(
                    isinstance(s, cst.ImportFrom) and s.module is not None
                    and dotted(s.module) == ["tensorflow", "python", "framework"] for s in stmt.body):
                continue
            if id(stmt) in dropped:
                continue
            visitor = Names()
            stmt.visit(visitor)
            used = (visitor.read | visitor.bound) & self.ops_aliases
            if used:
                name = sorted(used)[0]
                raise Decline(stmt, f"`{name}` (from `tensorflow.python.framework`) is used other than by a "
                                    f"module-level `{name}.reset_default_graph()` before the graph is built")

    def imports(self, stmt: cst.SimpleStatementLine) -> None:
        for small in stmt.body:
            loader = mnist_loader_import(small)
            if loader is not None:
                # TF 1's MNIST loader: ``tfclip_compat.mnist`` in the emitted program; the names
                # it binds are data (NumPy arrays and Python objects), not graph
                for alias in loader.names:  # type: ignore[attr-defined]
                    bound = alias.asname.name if alias.asname is not None else alias.name
                    self.imported[bound.value if isinstance(bound, cst.Name) else "tfclip_compat"] = "tfclip_compat.mnist"
                continue
            if isinstance(small, cst.ImportFrom):
                module = dotted(small.module) if small.module is not None else None
                if (module == ["tensorflow", "python", "framework"] and not isinstance(small.names, cst.ImportStar)
                        and all(isinstance(a.name, cst.Name) and a.name.value == "ops"
                                and (a.asname is None or isinstance(a.asname.name, cst.Name)) for a in small.names)):
                    for alias in small.names:
                        self.ops_aliases.add(alias.asname.name.value if alias.asname is not None else "ops")
                    continue
                if module and module[0] == "tensorflow":
                    raise Decline(stmt, "`from tensorflow... import` (only `import tensorflow as tf`, and "
                                        "`from tensorflow.python.framework import ops` used as "
                                        "`ops.reset_default_graph()`, are followed)")
                if not isinstance(small.names, cst.ImportStar):
                    for alias in small.names:
                        bound = alias.asname.name if alias.asname is not None else alias.name
                        if isinstance(bound, cst.Name):
                            self.imported[bound.value] = ".".join(module or ["."])
                continue
            if not isinstance(small, cst.Import):
                raise Decline(stmt, "an import statement shares its line with other code")
            for alias in small.names:
                parts = dotted(alias.name) or []
                if not parts or parts[0] != "tensorflow":
                    bound = alias.asname.name if alias.asname is not None else cst.Name(parts[0] if parts else "")
                    if isinstance(bound, cst.Name):
                        self.imported[bound.value] = ".".join(parts)
                    continue
                asname = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else None
                if parts == ["tensorflow"]:
                    prefix = ""
                elif parts == ["tensorflow", "compat", "v1"] and asname:
                    prefix = "compat.v1."
                else:
                    raise Decline(stmt, f"`import {'.'.join(parts)}` (only `import tensorflow as tf` is followed)")
                name = asname or "tensorflow"
                if self.alias and self.alias != name:
                    raise Decline(stmt, "TensorFlow is imported under two names")
                self.alias, self.prefix = name, prefix

    @staticmethod
    def _is_main(stmt: cst.If) -> bool:
        test = stmt.test
        return (isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name)
                and test.left.value == "__name__" and len(test.comparisons) == 1
                and isinstance(test.comparisons[0].operator, cst.Equal)
                and isinstance(test.comparisons[0].comparator, cst.SimpleString)
                and test.comparisons[0].comparator.evaluated_value == "__main__")

    def main(self, stmt: cst.If) -> None:
        if stmt.orelse is not None:
            raise Decline(stmt, "an `else` branch after `if __name__ == \"__main__\":`")
        for inner in stmt.body.body:
            if isinstance(inner, cst.With) and self._session_item(inner) is not None:
                self.session_block(inner)
            elif self.session is not None:
                self.after_session(inner)
            else:
                self.check_plain(inner, "the `__main__` block")
        self.items.append(("main", stmt))

    def check_plain(self, stmt: cst.CSTNode, where: str) -> None:
        """A statement outside the graph: no TF, no graph names."""
        if self.alias and self.alias in names_of(stmt).read:
            raise Decline(stmt, f"TensorFlow ops built in {where} (outside the graph construction the rule follows)")
        hit = names_of(stmt).read & self.graph_names()
        if hit:
            raise Decline(stmt, f"`{sorted(hit)[0]}` (a graph tensor) is used outside a `run` call in {where}")

    def after_session(self, stmt: cst.CSTNode) -> None:
        self.check_plain(stmt, "the code after the session block")

    # graph construction

    def function(self, stmt: cst.FunctionDef) -> None:
        if stmt.name.value in self.factories_v:
            # a variable factory: every call site becomes its get_variable; the function goes
            for site, (made, scopes) in self.factories_v[stmt.name.value].items():
                code = self.variable_as_get_variable(made, scopes)
                if code is None:
                    raise Decline(stmt, f"the variable factory `{stmt.name.value}`: {self.variable_why[id(made.func)]}")
                self.variable_rewrites[site] = code
            self.helpers[stmt.name.value] = stmt
            self.items.append(("drop", stmt))
            return
        text = self.module.code_for_node(stmt)
        if ".minimize(" in text or "Optimizer" in text or "compute_gradients" in text or "apply_gradients" in text:
            self.factory(stmt)
            self.items.append(("drop", stmt))
            return
        rewritten = self.helper_variables(stmt)
        rewritten_ids = {id(c) for c in rewritten}
        for call in calls_of(stmt):
            if self.path(call.func) == "Variable" and id(call.func) not in self.variable_why and id(call) not in rewritten_ids:
                self.variable_why[id(call.func)] = (
                    f"{_TF_VARIABLE} in the helper `{stmt.name.value}`, which is not called exactly once in straight-line "
                    "module code, or not as `return tf.Variable(<value>)` of a variable factory called only there "
                    "(each call makes a new variable, whose TF 1 name the rule then cannot derive)")
        self.check_forward(stmt, tfnames.FORWARD, f"helper `{stmt.name.value}`", rewritten)
        names = names_of(stmt)
        free = names.read - names.bound
        hit = free & self.graph_names()
        name = stmt.name.value
        if hit:
            # A helper that reads module-level tensors of the forward pass (a `keep_prob`
            # placeholder, a dict of weights) moves into the model's `call`, where those names are
            # its arguments and locals: a nested function reads them when it is called, as the
            # module-level function read the globals (checked at the end: it is used nowhere else).
            bad = free & self.training_names()
            if bad:
                raise Decline(stmt, f"helper `{name}` reads `{sorted(bad)[0]}` (an optimizer, train op, "
                                    "initializer, global step or learning-rate schedule)")
            if stmt.decorators or nodes_of(stmt, cst.Global) or nodes_of(stmt, cst.Nonlocal):
                raise Decline(stmt, f"helper `{name}` reads the module-level tensor `{sorted(hit)[0]}` and is "
                                    "decorated or declares `global`/`nonlocal` names")
            self.helpers[name] = stmt
            self.check_known(stmt, free, f"helper `{name}`")
            self.nested_helpers[name] = stmt
            self.items.append(("forward", stmt))
            return
        self.helpers[name] = stmt  # recursion
        display = {n for n in free if self.imported.get(n, "").split(".")[0] in _DISPLAY_MODULES} | (free & {"print"})
        if display and self.alias not in free:
            # plain Python that plots or prints, kept where it is; the forward pass may not call it, so
            # it runs (and draws from numpy) where it ran, in the same order
            self.display_helpers[name] = sorted(display)[0]
            self.check_known(stmt, free - display, f"helper `{name}`", kept=True)
        else:
            self.check_known(stmt, free, f"helper `{name}`")
        self.helpers[name] = stmt
        self.items.append(("keep", stmt))

    def _module_call_scopes(self) -> Dict[int, List[cst.With]]:
        """id -> enclosing ``with`` blocks of every call in straight-line module code (reached
        through ``with`` blocks only: each runs once, in source order)."""
        if not hasattr(self, "_call_scopes"):
            self._call_scopes: Dict[int, List[cst.With]] = {}
            for top in self.module.body:
                for line, scopes in _lines_under_withs(top):
                    for call in calls_of(line):
                        self._call_scopes[id(call)] = scopes
        return self._call_scopes

    def _call_sites(self, name: str) -> Optional[List[cst.Call]]:
        """The calls of the module-level function ``name``, when every reference to it is one."""
        refs = [n for n in nodes_of(self.module, cst.Name) if n.value == name]
        sites = [c for c in calls_of(self.module) if isinstance(c.func, cst.Name) and c.func.value == name]
        return sites if len(refs) == len(sites) + 1 else None  # (+1: the def's own name)

    def find_variable_factories(self) -> None:
        """Deep MNIST's ``weight_variable``: a module-level function whose body is (a docstring, an
        ``initial = <value>`` line and) ``return tf.Variable(<value>[, name=<parameter or literal>])``,
        called only at module level (straight-line code, through ``variable_scope`` blocks). Each
        call makes one variable, once, in source order: it becomes the ``get_variable`` that
        ``tf.Variable(<value with the call's arguments>)`` there would (the TF 1 name counted with
        the module's other unnamed ``tf.Variable``s). Functions of any other shape stay helpers."""
        calls_at = self._module_call_scopes()
        for stmt in self.module.body:
            if not isinstance(stmt, cst.FunctionDef) or stmt.decorators or not isinstance(stmt.body, cst.IndentedBlock):
                continue
            made = self._factory_value(stmt)
            if made is None:
                continue
            value, name_arg, inner = made
            params = stmt.params
            if params.star_arg is not cst.MaybeSentinel.DEFAULT or params.star_kwarg is not None or params.kwonly_params \
                    or params.posonly_params or any(p.default is not None for p in params.params):
                continue
            names = [p.name.value for p in params.params]
            sites = self._call_sites(stmt.name.value)
            if not sites or any(id(c) not in calls_at for c in sites):
                continue
            made_at: Dict[int, Tuple[cst.Call, List[cst.With]]] = {}
            for site in sites:
                if any(a.star for a in site.args) or len(site.args) != len(names):
                    break
                bound: Dict[str, cst.BaseExpression] = {}
                for i, a in enumerate(site.args):
                    key = a.keyword.value if a.keyword is not None else names[i]
                    if key not in names or key in bound:
                        break
                    bound[key] = a.value
                if set(bound) != set(names) or any(self.alias in names_of(v).read or names_of(v).read & self.graph_names()
                                                   for v in bound.values()):
                    break
                args = [cst.Arg(value.visit(_Substitute(bound)))]
                if name_arg is not None:
                    given = name_arg.visit(_Substitute(bound))
                    if not isinstance(given, cst.SimpleString):
                        break
                    self.factory_names.append(str(given.evaluated_value))
                    args.append(cst.Arg(given, keyword=cst.Name("name")))
                made_at[id(site)] = (cst.Call(func=inner.func, args=args), calls_at[id(site)])
            else:
                self.factories_v[stmt.name.value] = made_at
                self.factory_inner.add(id(inner))

    def _factory_value(self, stmt: cst.FunctionDef) -> Optional[Tuple[cst.BaseExpression, Optional[cst.BaseExpression], cst.Call]]:
        """(initial value, name argument, the tf.Variable call) of a variable factory's body, else None."""
        body = list(stmt.body.body)  # type: ignore[union-attr]
        if body and _expr_stmt(body[0]) is not None and isinstance(_expr_stmt(body[0]), (cst.SimpleString, cst.ConcatenatedString)):
            body = body[1:]
        local: Dict[str, cst.BaseExpression] = {}
        if len(body) == 2:
            assign = _single_assign(body[0])
            if assign is None or not isinstance(assign[0], cst.Name):
                return None
            local[assign[0].value] = assign[1]
            body = body[1:]
        if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine) or len(body[0].body) != 1 \
                or not isinstance(body[0].body[0], cst.Return):
            return None
        ret = body[0].body[0].value
        if not isinstance(ret, cst.Call) or self.path(ret.func) != "Variable" or not ret.args or ret.args[0].keyword is not None:
            return None
        if len(ret.args) > 2 or (len(ret.args) == 2 and (ret.args[1].keyword is None or ret.args[1].keyword.value != "name")):
            return None
        value = ret.args[0].value
        if isinstance(value, cst.Name) and value.value in local:
            value = local.pop(value.value)
        if local:
            return None  # the local is not the initial value
        name_arg = ret.args[1].value if len(ret.args) == 2 else None
        return value, name_arg, ret

    def helper_variables(self, stmt: cst.FunctionDef) -> List[cst.CSTNode]:
        """``w = tf.Variable(tf.truncated_normal([4, 3], ...), name="w")`` in a helper the module calls
        exactly once, at module level (``logits = build_model(x)``, through ``variable_scope``
        blocks only): it runs once, as at module level, so it becomes ``get_variable`` with the TF 1
        name its scopes (the call site's, then the helper's) give it. The calls rewritten (the
        others keep their decline, with its cause)."""
        sites = self._call_sites(stmt.name.value)
        if not sites or len(sites) != 1 or id(sites[0]) not in self._module_call_scopes() \
                or not isinstance(stmt.body, cst.IndentedBlock):
            return []
        site = self._module_call_scopes()[id(sites[0])]
        rewritten: List[cst.CSTNode] = []
        for inner in stmt.body.body:
            for line, scopes in _lines_under_withs(inner):
                for call in self._assigned_variables(line):
                    if len(call.args) != 2:  # unnamed: its `Variable_N` name is not derived in helpers
                        continue
                    code = self.variable_as_get_variable(call, site + scopes)
                    if code is not None:
                        self.variable_rewrites[id(call)] = code
                        rewritten.append(call)
        return rewritten

    def model_class(self, stmt: cst.ClassDef) -> None:
        """A class whose methods build the graph (``class Model: def __init__(self, inputs): ...
        self.logits = ...``), instantiated by the forward pass: like a helper that reads
        module-level tensors, it moves into the model's ``call`` (a nested class: its methods read
        the forward pass's names as they read the globals; its variables are created by
        ``get_variable`` / ``tf.layers`` under the tracked scope, once). Checked at the end: the
        class is used only in the forward pass."""
        name = stmt.name.value
        if stmt.decorators:
            raise Decline(stmt, f"the class `{name}` that builds graph ops is decorated")
        for base in stmt.bases:
            if not (isinstance(base.value, cst.Name) and base.value.value == "object") or base.keyword is not None:
                raise Decline(stmt, f"the class `{name}` that builds graph ops derives from "
                                    f"`{self.module.code_for_node(base.value)}` (only `object` is followed)")
        if nodes_of(stmt, cst.Global) or nodes_of(stmt, cst.Nonlocal):
            raise Decline(stmt, f"the class `{name}` that builds graph ops declares `global`/`nonlocal` names")
        text = self.module.code_for_node(stmt)
        if ".minimize(" in text or "Optimizer" in text or "compute_gradients" in text or "apply_gradients" in text \
                or ".run(" in text or ".eval(" in text:
            raise Decline(stmt, f"the class `{name}` builds optimizers or training ops, or runs the session "
                                "(only a class that builds the forward pass is followed)")
        self.check_forward(stmt, tfnames.FORWARD, f"class `{name}`")
        names = names_of(stmt)
        free = names.read - names.bound
        bad = free & self.training_names()
        if bad:
            raise Decline(stmt, f"the class `{name}` reads `{sorted(bad)[0]}` (an optimizer, train op, "
                                "initializer, global step or learning-rate schedule)")
        self.helpers[name] = stmt
        self.check_known(stmt, free - {"self", "super"}, f"class `{name}`")
        self.nested_helpers[name] = stmt
        self.items.append(("forward", stmt))

    def factory(self, stmt: cst.FunctionDef) -> None:
        """``def f(loss, lr): opt = tf.train.XOptimizer(lr); ...; return opt.minimize(loss)``."""
        params = stmt.params
        if (not isinstance(params.star_arg, cst.MaybeSentinel) or params.star_kwarg is not None
                or params.kwonly_params or params.posonly_params):
            raise Decline(stmt, f"train-op helper `{stmt.name.value}` has *args/**kwargs or keyword-only parameters")
        body = list(stmt.body.body) if isinstance(stmt.body, cst.IndentedBlock) else []
        if body and _expr_stmt(body[0]) is not None and isinstance(_expr_stmt(body[0]), cst.SimpleString):
            body = body[1:]
        if not body:
            raise Decline(stmt, f"train-op helper `{stmt.name.value}` has an empty body")
        locals_: Dict[str, cst.BaseExpression] = {}
        for inner in body[:-1]:
            assign = _single_assign(inner)
            if assign is None or not isinstance(assign[0], cst.Name):
                raise Decline(inner, f"train-op helper `{stmt.name.value}`: only optimizer assignments may "
                                     "precede `return opt.minimize(loss)`")
            locals_[assign[0].value] = self.optimizer_expr(assign[1], locals_, inner)
        last = body[-1]
        ret = last.body[0] if isinstance(last, cst.SimpleStatementLine) and len(last.body) == 1 else None
        if not isinstance(ret, cst.Return) or not isinstance(ret.value, cst.Call):
            raise Decline(last, f"train-op helper `{stmt.name.value}` does not end with `return opt.minimize(loss)`")
        call = ret.value
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "minimize" and isinstance(func.value, cst.Name)
                and func.value.value in locals_):
            raise Decline(last, f"train-op helper `{stmt.name.value}` does not end with `return opt.minimize(loss)`")
        if len(call.args) != 1 or call.args[0].keyword is not None or not isinstance(call.args[0].value, cst.Name):
            raise Decline(call, f"train-op helper `{stmt.name.value}`: `minimize` with arguments other than the loss")
        loss_param = call.args[0].value.value
        param_names = [p.name.value for p in params.params]
        if loss_param not in param_names:
            raise Decline(call, f"train-op helper `{stmt.name.value}` minimizes `{loss_param}`, not a parameter")
        self.factories[stmt.name.value] = stmt
        self._factory_info = getattr(self, "_factory_info", {})
        self._factory_info[stmt.name.value] = (params, locals_[func.value.value], loss_param)

    def optimizer_expr(self, expr: cst.BaseExpression, locals_: Dict[str, cst.BaseExpression],
                       where: cst.CSTNode) -> cst.BaseExpression:
        """An optimizer built from constants; local names replaced by their expressions."""
        if isinstance(expr, cst.Name) and expr.value in locals_:
            return locals_[expr.value]
        if isinstance(expr, cst.Name) and expr.value in self.optimizers:
            return expr  # a module-level optimizer (e.g. the one a contrib wrapper wraps)
        if not isinstance(expr, cst.Call):
            raise Decline(where, "an optimizer that is not built by a `tf.train` optimizer call")
        path = self.path(expr.func)
        if path in tfnames.OPTIMIZERS:
            self.check_constant_args(expr, where)
            return expr
        if path == tfnames.CONTRIB_CLIP:
            inner = _arg(expr, 0, "optimizer")
            if inner is None:
                raise Decline(where, "`clip_gradients_by_norm` without an optimizer")
            new_inner = self.optimizer_expr(inner, locals_, where)
            rest = [a for a in expr.args if a.value is not inner]
            self.check_constant_args(cst.Call(func=expr.func, args=rest), where)
            args = [a.with_changes(value=new_inner) if a.value is inner else a for a in expr.args]
            return expr.with_changes(args=args)
        raise Decline(where, "an optimizer that is not a known `tf.train` optimizer "
                             f"({', '.join(sorted(o.split('.')[1] for o in tfnames.OPTIMIZERS))})")

    def scalar_placeholder(self, value: cst.BaseExpression) -> Optional[Placeholder]:
        """The placeholder ``value`` names when it is a float scalar (shape ``[]``), else None."""
        if not isinstance(value, cst.Name):
            return None
        for p in self.placeholders:
            if (p.name == value.value and p.default is None and p.dtype in tfnames.FLOAT_DTYPES
                    and isinstance(p.shape, (cst.List, cst.Tuple))
                    and not p.shape.elements):
                return p
        return None

    def optimizer_placeholders(self, expr: cst.CSTNode) -> List[str]:
        found: List[str] = []
        for call in calls_of(expr):
            for a in call.args:
                p = self.scalar_placeholder(a.value)
                if p is not None and p.name not in found:
                    found.append(p.name)
        return found

    def check_constant_args(self, call: cst.Call, where: cst.CSTNode) -> None:
        for a in call.args:
            if self.scalar_placeholder(a.value) is not None:
                continue  # a fed learning rate (or other scalar): assigned per step
            if isinstance(a.value, cst.Name) and a.value.value in self.schedules:
                continue  # a learning-rate schedule of the global step (a callable eagerly)
            names = names_of(a.value).read
            if self.alias in names or names & self.graph_names() or names & self.global_steps:
                raise Decline(where, "an optimizer argument computed from tensors (a learning-rate schedule "
                                     "is not migrated yet)")

    def schedule(self, name: str, call: cst.Call, stmt: cst.BaseStatement) -> None:
        """``lr = tf.train.exponential_decay(<constants>, global_step, <constants>)``, bound once."""
        step = _arg(call, 1, "global_step")
        if not (isinstance(step, cst.Name) and step.value in self.global_steps):
            raise Decline(stmt, "a learning-rate schedule of something other than the global step")
        for a in call.args:
            if a.star:
                raise Decline(stmt, "a learning-rate schedule with */** arguments")
            if a.value is step:
                continue
            names = names_of(a.value).read
            if self.alias in names or names & (self.graph_names() | self.global_steps):
                raise Decline(stmt, "a learning-rate schedule with an argument computed from tensors")
        if self.bind_counts.get(name, 0) != 1 or name in self.global_names:
            raise Decline(stmt, f"the learning-rate schedule `{name}` is rebound")
        self.schedules.add(name)

    def graph_statement(self, index: int, stmt: cst.BaseStatement) -> None:
        if isinstance(stmt, cst.SimpleStatementLine) and all(isinstance(s, cst.Pass) for s in stmt.body):
            # a no-op (in a notebook, the stand-in for an IPython line): stays where it is
            self.items.append(("keep", stmt))
            return
        if self._shows_version(stmt):
            self.items.append(("keep", stmt))  # shows TensorFlow's version (eagerly: TF 2's)
            return
        assign = _single_assign(stmt)
        expr = _expr_stmt(stmt)
        if expr is not None and isinstance(expr, cst.Call):
            path = self.path(expr.func)
            if path in _DROPPED_CALLS:
                if path == "reset_default_graph":
                    if expr.args:
                        raise Decline(stmt, "`reset_default_graph` with arguments")
                    if self.graph_started:
                        raise Decline(stmt, "`reset_default_graph()` after TensorFlow was first used (it discards "
                                            "the graph and its random seed built so far, which the eager program "
                                            "would keep)")
                    func = dotted(expr.func) or []
                    if func[0] in self.ops_aliases:
                        self.dropped_resets.add(id(stmt))
                self.items.append(("drop", stmt))
                return
        if self.alias in names_of(stmt).read:
            self.graph_started = True
        if expr is not None and isinstance(expr, cst.Call):
            path = self.path(expr.func)
            if path == "set_random_seed":
                self.items.append(("keep", stmt))
                return
        if (assign is not None and isinstance(assign[0], cst.Name) and isinstance(assign[1], cst.Call)
                and self.path(assign[1].func) == "train.Saver"):
            self.saver_statement(stmt, assign[0].value, assign[1])
            return
        if assign is not None and isinstance(assign[0], cst.Name) and self._update_ops_value(assign[1]):
            if self.bind_counts.get(assign[0].value, 0) != 1:
                raise Decline(stmt, f"`{assign[0].value}` (the UPDATE_OPS collection) is bound more than once")
            self.update_ops_names.add(assign[0].value)
            self.items.append(("drop", stmt))
            return
        if isinstance(stmt, cst.With) and self._update_dependencies(stmt):
            self.train_ops_with_updates(index, stmt)
            return
        if assign is not None and isinstance(assign[0], cst.Name) and isinstance(assign[1], cst.Call):
            name, value = assign[0].value, assign[1]
            path = self.path(value.func)
            if path in ("Session", "InteractiveSession"):
                raise Decline(stmt, f"a session opened by `{name} = tf.{path}()` (only a `with tf.Session() as "
                                    "sess:` block is followed)")
            if path == "placeholder":
                self.placeholder(name, value, stmt)
                self.items.append(("drop", stmt))
                return
            if path == "placeholder_with_default":
                self.placeholder_with_default(name, value, stmt)
                self.items.append(("drop", stmt))
                return
            if path in _INITIALIZERS:
                self.init_names.add(name)
                self.items.append(("drop", stmt))
                return
            if (path in _GLOBAL_STEP and not value.args) or (path == "Variable" and _counter_variable(value)):
                self.global_steps.add(name)
                self.items.append(("keep", stmt))
                return
            if path in _SCHEDULES:
                self.schedule(name, value, stmt)
                self.items.append(("keep", stmt))
                return
            if path in tfnames.OPTIMIZERS or path == tfnames.CONTRIB_CLIP:
                self.optimizer_expr(value, {}, stmt)
                self.optimizers.add(name)
                self.optimizer_feeds[name] = self.optimizer_placeholders(value)
                self.optimizer_code[name] = self.module.code_for_node(value)
                self.items.append(("keep", stmt))
                return
            func = value.func
            if isinstance(func, cst.Attribute) and func.attr.value == "minimize":
                self.minimize(id(stmt), name, value, stmt)
                return
            if isinstance(func, cst.Attribute) and func.attr.value == "apply_gradients":
                self.apply(id(stmt), name, value, stmt)
                return
            if isinstance(func, cst.Name) and func.value in self.factories:
                self.factory_call(id(stmt), name, value, stmt)
                return
        if any(isinstance(c.func, cst.Attribute) and c.func.attr.value == "compute_gradients" for c in calls_of(stmt)):
            self.compute(id(stmt), stmt)
            return
        if any(self.path(c.func) == "gradients" for c in calls_of(stmt)):
            self.symbolic_gradients(stmt)
            return
        if self._pending is not None:
            self.processing(stmt)
            return
        names = names_of(stmt)
        if self.alias not in names.read and not (names.read & self.graph_names()) and not (
                names.read & (set(self.helpers) - set(self.display_helpers))):
            if names.read & (self.optimizers | self.global_steps):
                raise Decline(stmt, "module-level code uses an optimizer or the global step outside training")
            self.constants |= names.bound
            self.items.append(("keep", stmt))
            return
        self.forward(stmt)
        self.items.append(("forward", stmt))

    _pending: Optional[TrainOp] = None

    # batch normalization

    def _update_ops_value(self, expr: cst.BaseExpression) -> bool:
        """``tf.get_collection(tf.GraphKeys.UPDATE_OPS)`` (the whole collection: no scope)."""
        return (isinstance(expr, cst.Call) and self.path(expr.func) == "get_collection" and len(expr.args) == 1
                and expr.args[0].keyword is None and not expr.args[0].star
                and self.path(expr.args[0].value) == "GraphKeys.UPDATE_OPS")

    def _update_dependencies(self, stmt: cst.With) -> bool:
        """``with tf.control_dependencies(update_ops):`` (or of the collection itself)."""
        if len(stmt.items) != 1 or stmt.items[0].asname is not None:
            return False
        item = stmt.items[0].item
        if not (isinstance(item, cst.Call) and self.path(item.func) == "control_dependencies"
                and len(item.args) == 1 and item.args[0].keyword is None and not item.args[0].star):
            return False
        arg = item.args[0].value
        return (isinstance(arg, cst.Name) and arg.value in self.update_ops_names) or self._update_ops_value(arg)

    def _shows_version(self, stmt: cst.BaseStatement) -> bool:
        """``tf.__version__`` or ``print("TensorFlow", tf.__version__)`` as a statement of its own (a
        notebook's first cell shows it): a string that no graph op reads."""
        expr = _expr_stmt(stmt)
        version = f"{self.alias}.__version__"

        def is_version(node: cst.BaseExpression) -> bool:
            return ".".join(dotted(node) or []) == version

        if expr is None:
            return False
        if is_version(expr):
            return True
        return (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "print"
                and "print" not in self.bind_counts and any(is_version(a.value) for a in expr.args)
                and all(a.keyword is None and a.star == "" and (is_version(a.value) or isinstance(a.value, cst.SimpleString))
                        for a in expr.args))

    def train_ops_with_updates(self, index: int, stmt: cst.With) -> None:
        """The training-op statements under ``control_dependencies(UPDATE_OPS)``: read as if at module
        level, and their train ops marked as running batch normalization's moving-statistics
        updates (eagerly, a training-mode call of the model updates them itself). Only training-op
        statements: a tensor built under those dependencies (``loss = tf.identity(loss)``) would run
        the updates in every run that fetches it."""
        before, count = set(self.train_ops), len(self.items)
        body = stmt.body.body if isinstance(stmt.body, cst.IndentedBlock) else ()
        for inner in body:
            self.graph_statement(index, inner)  # type: ignore[arg-type]
        # (a list of the trainable variables, `tvars = tf.trainable_variables()`, builds no op)
        kinds = {kind for kind, inner in self.items[count:] if not (kind == "forward" and self._variable_list(inner))}
        new = set(self.train_ops) - before
        if not new or kinds - {"trainop", "drop"} or self._pending is not None:
            raise Decline(stmt, "`control_dependencies(UPDATE_OPS)` around statements other than complete "
                                "training ops (only `minimize` / `compute_gradients` ... `apply_gradients` "
                                "are followed there)")
        self.update_train_ops |= new

    def _variable_list(self, stmt: cst.BaseStatement) -> bool:
        """``tvars = tf.trainable_variables()`` (or its collection form): a list of variables."""
        assign = _single_assign(stmt)
        return assign is not None and isinstance(assign[1], cst.Call) and id(assign[1]) in self.trainable_calls

    def check_batch_norm(self) -> None:
        """Batch normalization's moving statistics change as in TF 1 when (1) every training op is
        built under ``control_dependencies(UPDATE_OPS)`` (TF 1 updates them in every run of a training
        op; the eager model in every training-mode call) and (2) every run without a training op
        puts each batch normalization in inference mode: its ``training=`` traced to bool
        placeholders (through helper parameters and ``self.`` fields) fed a literal ``False`` there
        (TF 1 does not run the updates in such a run; a training-mode eager call would)."""
        calls = [c for c in calls_of(self.module) if self.path(c.func) == "layers.batch_normalization"]
        if not calls:
            return
        for name in sorted(self.train_ops):
            if name not in self.update_train_ops:
                raise Decline(calls[0], f"batch normalization, and the training op `{name}` is not built under "
                                        "`tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS))` "
                                        "(TF 1 would not update the moving statistics; the eager model would)")
        flags: Set[str] = set()
        for call in calls:
            found = self._bn_training(call)
            if found is None:
                raise Decline(call, "batch normalization whose `training=` the rule cannot trace to bool "
                                    "placeholders or `False`")
            flags |= found
        by_name = {p.name: p for p in self.placeholders}
        for run in self.runs:
            if run.only_global_steps or any(n in self.train_ops for n in run.names):
                continue
            for flag in sorted(flags):
                values = self._fed_values(run, flag, by_name)
                if not values or not all(isinstance(v, cst.Name) and v.value == "False" for v in values):
                    why = "`training=True`" if flag == "<True>" else f"`{flag}` is not fed `False`"
                    raise Decline(run.call, f"a `run` without a training op that may put batch normalization in "
                                            f"training mode ({why}): TF 1 would not update the moving statistics; "
                                            "the eager model would")

    def _fed_values(self, run: "RunSite", flag: str, by_name: Dict[str, "Placeholder"]) -> List[cst.BaseExpression]:
        """The literal values a run gives the placeholder ``flag`` ([] when not known)."""
        if flag == "<True>":
            return []
        value = run.feeds.get(flag)
        if value is None:
            return []
        if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name) \
                and value.value.value in self.feed_dict_values:
            return list(self.feed_dict_values[value.value.value].get(flag, []))
        return [value]

    def _bn_training(self, call: cst.Call) -> Optional[Set[str]]:
        """The bool placeholders a batch normalization's ``training=`` reads ("<True>" for a literal
        ``True``), or None when it cannot be traced."""
        positional = [a for a in call.args if a.keyword is None]
        if len(positional) > 14 or any(a.star for a in call.args):
            return None
        arg = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "training"), None)
        if arg is None:
            return set()  # `training=False`, the default
        return self._bool_sources(arg, self._owner(call), 0)

    def _owner(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The helper function or class (of this module's top level) whose body holds ``node``."""
        for stmt in self.module.body:
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) and any(n is node for n in nodes_of(stmt, type(node))):
                return stmt
        return None

    def _bool_sources(self, expr: cst.BaseExpression, owner: Optional[cst.CSTNode], depth: int) -> Optional[Set[str]]:
        if depth > 6:
            return None
        if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
            return {"<True>"} if expr.value == "True" else set()
        bool_holders = {p.name for p in self.placeholders if p.dtype == "bool"}
        if owner is None:
            return {expr.value} if isinstance(expr, cst.Name) and expr.value in bool_holders else None
        if isinstance(owner, cst.FunctionDef) and isinstance(expr, cst.Name):
            params = [p.name.value for p in owner.params.params]
            if expr.value in names_of(owner.body).bound:
                return None  # rebound in the body: not what the callers passed, nor the placeholder
            if expr.value not in params:
                return {expr.value} if expr.value in bool_holders else None
            return self._argument_sources(owner.name.value, params.index(expr.value), expr.value, depth)
        if isinstance(owner, cst.ClassDef) and isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) \
                and expr.value.value == "self":
            stores = [n for n in nodes_of(owner, cst.Assign) if len(n.targets) == 1
                      and isinstance(n.targets[0].target, cst.Attribute)
                      and isinstance(n.targets[0].target.value, cst.Name) and n.targets[0].target.value.value == "self"
                      and n.targets[0].target.attr.value == expr.attr.value]
            init = next((f for f in owner.body.body if isinstance(f, cst.FunctionDef) and f.name.value == "__init__"), None)
            if len(stores) != 1 or init is None or not any(n is stores[0] for n in nodes_of(init, cst.Assign)):
                return None
            value = stores[0].value
            params = [p.name.value for p in init.params.params]
            if isinstance(value, cst.Name) and value.value in params[1:]:
                return self._argument_sources(owner.name.value, params.index(value.value) - 1, value.value, depth)
            return self._bool_sources(value, None, depth + 1) if isinstance(value, cst.Name) and \
                value.value in ("True", "False") else None
        if isinstance(owner, cst.ClassDef) and isinstance(expr, cst.Name):
            return {expr.value} if expr.value in bool_holders else None
        return None

    def _argument_sources(self, callee: str, index: int, keyword: str, depth: int) -> Optional[Set[str]]:
        """What every call of the helper or class ``callee`` passes for its parameter at ``index``
        (``keyword``), traced further; None when a call cannot be bound or ``callee`` is used other
        than by calling it."""
        out: Set[str] = set()
        calls = [c for c in calls_of(self.module) if isinstance(c.func, cst.Name) and c.func.value == callee]
        uses = [n for n in nodes_of(self.module, cst.Name) if n.value == callee]
        if not calls or len(uses) != len(calls) + 1:  # the `def`/`class` name itself, and the calls
            return None
        for c in calls:
            if any(a.star for a in c.args):
                return None
            positional = [a for a in c.args if a.keyword is None]
            value = next((a.value for a in c.args if a.keyword is not None and a.keyword.value == keyword),
                         positional[index].value if index < len(positional) else None)
            if value is None:
                return None  # a default: not followed
            found = self._bool_sources(value, self._owner(c), depth + 1)
            if found is None:
                return None
            out |= found
        return out

    def forward(self, stmt: cst.CSTNode) -> None:
        if isinstance(stmt, cst.With):
            for item in stmt.items:
                if not isinstance(item.item, cst.Call) or self.path(item.item.func) not in ("variable_scope", "name_scope"):
                    raise Decline(stmt, "a `with` block at module level other than `tf.variable_scope`/`tf.name_scope`")
        elif not isinstance(stmt, (cst.SimpleStatementLine, cst.For, cst.If)):
            raise Decline(stmt, "a module-level statement the rule cannot place in the forward pass")
        names = names_of(stmt)
        bad = names.read & (set(self.train_ops) | self.optimizers | self.global_steps | self.block_names | self.schedules)
        if bad:
            raise Decline(stmt, f"the forward pass reads `{sorted(bad)[0]}` (an optimizer, train op, global step "
                                "or learning-rate schedule)")
        for call in calls_of(stmt):
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in (
                    "minimize", "compute_gradients", "apply_gradients", "run", "eval"):
                raise Decline(call, f"`.{call.func.attr.value}(...)` inside the forward pass")
        skip: List[cst.CSTNode] = []
        for line, scopes in _lines_under_withs(stmt):
            for call in self._assigned_variables(line):
                code = self.variable_as_get_variable(call, scopes)
                if code is not None:
                    self.variable_rewrites[id(call)] = code
                    skip.append(call)
        for call in calls_of(stmt):
            if self.path(call.func) == "trainable_variables" and not call.args:
                self.trainable_calls[id(call)] = len(self.trainable_calls)
                skip.append(call)
            elif self.path(call.func) == "get_collection" and self._trainable_collection(call) is not None:
                self.trainable_calls[id(call)] = len(self.trainable_calls)
                self.collection_scopes[id(call)] = self._trainable_collection(call)  # type: ignore[assignment]
                skip.append(call)
        self.check_forward(stmt, tfnames.FORWARD, "forward pass", skip)
        assign = _single_assign(stmt)
        if (assign is not None and isinstance(assign[0], cst.Name) and self.bind_counts.get(assign[0].value, 0) == 1
                and assign[0].value not in self.global_names
                and ((isinstance(assign[1], cst.Call) and id(assign[1]) in self.trainable_calls)
                     or self._filtered_var_list(assign[1]))):
            self.var_lists.add(assign[0].value)
        self.check_known(stmt, names.read - names.bound, "the forward pass")
        for call in calls_of(stmt):
            if self.path(call.func) == "get_variable" or id(call) in self.variable_rewrites:
                self.variable_names |= names.bound  # conservative: every name the statement binds
        for line in nodes_of(stmt, cst.SimpleStatementLine):
            assign = _single_assign(line)
            if (assign is not None and isinstance(assign[0], cst.Name) and isinstance(assign[1], cst.Call)
                    and self.path(assign[1].func) in _VARIABLE_MAKERS and self.bind_counts.get(assign[0].value, 0) == 1
                    and assign[0].value not in self.global_names and _trainable_by_default(assign[1])):
                self.direct_variables.add(assign[0].value)
        # comprehension targets are local to their comprehension, unless the statement also assigns them
        assigned = {n for t in nodes_of(stmt, cst.AssignTarget) for n in names_of(t).bound}
        self.forward_names |= names.bound - (comprehension_targets(stmt) - assigned)

    def _trainable_collection(self, call: cst.Call) -> Optional[str]:
        """``tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="d")``: the scope (a plain name,
        for which TF 1's ``re.match`` is a prefix test), else None."""
        key, scope = _arg(call, 0, "key"), _arg(call, 1, "scope")
        if len(call.args) != 2 or any(a.star for a in call.args) or key is None or \
                self.path(key) != "GraphKeys.TRAINABLE_VARIABLES":
            return None
        if not isinstance(scope, cst.SimpleString) or not isinstance(scope.evaluated_value, str):
            return None
        text = scope.evaluated_value
        if not text or any(not (c.isalnum() or c in "_/") for c in text):
            return None
        return text

    def _filtered_var_list(self, value: cst.BaseExpression) -> bool:
        """``[v for v in t_vars if v.name.startswith("d")]`` over a list of variables: a list of variables."""
        if not isinstance(value, cst.ListComp) or not isinstance(value.elt, cst.Name):
            return False
        comp = value.for_in
        if comp.inner_for_in is not None or comp.asynchronous is not None or not isinstance(comp.target, cst.Name) \
                or comp.target.value != value.elt.value or not isinstance(comp.iter, cst.Name) \
                or comp.iter.value not in self.var_lists:
            return False
        for cond in comp.ifs:
            read = names_of(cond.test).read
            if self.alias in read or read & (self.graph_names() | self.global_steps):
                return False
        return True

    _INITIAL_VALUES = {
        "truncated_normal": ("truncated_normal_initializer", ("mean", "stddev", "seed")),
        "random.truncated_normal": ("truncated_normal_initializer", ("mean", "stddev", "seed")),
        "random_normal": ("random_normal_initializer", ("mean", "stddev", "seed")),
        "random.normal": ("random_normal_initializer", ("mean", "stddev", "seed")),
        "random_uniform": ("random_uniform_initializer", ("minval", "maxval", "seed")),
        "random.uniform": ("random_uniform_initializer", ("minval", "maxval", "seed")),
        "zeros": ("zeros_initializer", ()),
        "ones": ("ones_initializer", ()),
    }
    # the arguments TF 1's signature takes by position after ``shape`` (``dtype`` is not carried:
    # the variable is float32, the initializers' default, as the op's default dtype)
    _POSITIONAL = {"truncated_normal": ("mean", "stddev"), "random.truncated_normal": ("mean", "stddev"),
                   "random_normal": ("mean", "stddev"), "random.normal": ("mean", "stddev"),
                   "random_uniform": ("minval", "maxval"), "random.uniform": ("minval", "maxval")}

    def variable_as_get_variable(self, call: cst.Call, scopes: List[cst.With]) -> Optional[str]:
        """:meth:`_as_get_variable`'s code, or None with the reason kept for the decline."""
        code, why = self._as_get_variable(call, scopes)
        if code is None:
            self.variable_why[id(call.func)] = why
        return code

    def _as_get_variable(self, call: cst.Call, scopes: List[cst.With]) -> Tuple[Optional[str], str]:
        """``w = tf.Variable(tf.truncated_normal([4, 3], stddev=0.3, seed=1), name="w")`` at module level, run
        once, as ``tf.compat.v1.get_variable("w", [4, 3], initializer=tf.compat.v1.truncated_normal_initializer(
        stddev=0.3, seed=1))``: the same TF 1 name (the enclosing ``variable_scope``s are each entered once,
        so their name scopes are their variable scopes), the same distribution, created once and reused
        by every eager call. Without ``name=`` the name is the one TF 1's graph gave it (see
        :meth:`_unnamed_variables`); a float literal (``tf.Variable(5.0)``, ``tf.Variable([.1, .2])``)
        becomes a ``constant_initializer`` of it. ``(None, why)`` when a condition fails (the decline
        stands, naming it)."""
        args = list(call.args)
        other = (None, f"{_TF_VARIABLE} with arguments other than an initial value and `name=` (only those become "
                       "`get_variable`)")
        if not args or args[0].keyword is not None or args[0].star:
            return other
        if len(args) == 2 and args[1].keyword is not None and args[1].keyword.value == "name" \
                and isinstance(args[1].value, cst.SimpleString):
            name = args[1].value.evaluated_value
            if self._variable_names().count(name) != 1:
                return None, f"the name `{name}` is given to more than one variable"
        elif len(args) == 1:
            name = self._unnamed_variables().get(id(call))  # type: ignore[assignment]
            if name is None:
                return None, (f"an unnamed {_TF_VARIABLE} whose TF 1 name (`Variable_N`) the rule cannot derive (every "
                              f"unnamed {_TF_VARIABLE} must be assigned once at module level, outside functions, loops "
                              "and branches, with no other argument, and no name string may contain `variable`)")
        else:
            return other
        for scope in scopes:
            for item in scope.items:
                scoped = (None, f"{_TF_VARIABLE} under a scope other than a `tf.variable_scope(\"name\")` entered once")
                if not isinstance(item.item, cst.Call) or self.path(item.item.func) != "variable_scope":
                    return scoped
                if len(item.item.args) != 1 or item.item.args[0].keyword is not None or not isinstance(
                        item.item.args[0].value, cst.SimpleString):
                    return scoped
                if self._scope_uses().count(item.item.args[0].value.evaluated_value) != 1:
                    return scoped
        a = self.alias
        init = args[0].value
        literal = _float_literal_shape(init)
        if literal is not None:
            return (f'{a}.compat.v1.get_variable("{name}", {literal}, '
                    f"initializer={a}.compat.v1.constant_initializer({self.module.code_for_node(init)}))"), ""
        value_why = (None, f"a {_TF_VARIABLE} whose initial value is not a float literal or `tf.zeros`/`ones`/`random_*`/"
                           "`truncated_normal`/`constant` of a literal shape with literal arguments")
        if isinstance(init, cst.Call) and self.path(init.func) == "constant":
            # ``tf.constant(0.1, shape=[32])``: a float32 fill, as ``constant_initializer(0.1)`` makes
            if len(init.args) != 2 or init.args[0].keyword is not None or init.args[1].keyword is None \
                    or init.args[1].keyword.value != "shape":
                return value_why
            fill, shape = init.args[0].value, init.args[1].value
            if not (isinstance(fill, cst.Float) or (isinstance(fill, cst.UnaryOperation) and isinstance(
                    fill.operator, cst.Minus) and isinstance(fill.expression, cst.Float))):
                return value_why
            if not self._literal_shape(shape) or isinstance(shape, cst.Name):
                return value_why
            return (f'{a}.compat.v1.get_variable("{name}", {self.module.code_for_node(shape)}, '
                    f"initializer={a}.compat.v1.constant_initializer({self.module.code_for_node(fill)}))"), ""
        if not isinstance(init, cst.Call) or self.path(init.func) not in self._INITIAL_VALUES:
            return value_why
        path = self.path(init.func)
        target, allowed = self._INITIAL_VALUES[path]  # type: ignore[index]
        positional_names = ("shape",) + self._POSITIONAL.get(path, ())  # type: ignore[arg-type]
        values: Dict[str, cst.BaseExpression] = {}
        for index, a_ in enumerate(init.args):
            if a_.star:
                return value_why
            key = a_.keyword.value if a_.keyword is not None else (
                positional_names[index] if index < len(positional_names) else None)
            if key is None or key in values or (key != "shape" and key not in allowed):
                return value_why
            values[key] = a_.value
        shape = values.pop("shape", None)
        if shape is None or not self._literal_shape(shape) or isinstance(shape, cst.Name):
            return value_why
        kwargs = []
        for key, value in values.items():
            if not isinstance(value, (cst.Integer, cst.Float)) and not (
                    isinstance(value, cst.UnaryOperation) and isinstance(value.expression, (cst.Integer, cst.Float))):
                return value_why
            kwargs.append(f"{key}={self.module.code_for_node(value)}")
        return (f'{a}.compat.v1.get_variable("{name}", {self.module.code_for_node(shape)}, '
                f"initializer={a}.compat.v1.{target}({', '.join(kwargs)}))"), ""

    def _assigned_variables(self, line: cst.SimpleStatementLine) -> List[cst.Call]:
        """The ``tf.Variable(...)`` calls a statement assigns to one name, in evaluation order: the
        value itself (``w = tf.Variable(...)``) or the values of a dict display of them
        (``weights = {"h1": tf.Variable(...), ...}``, the TensorFlow-Examples form)."""
        assign = _single_assign(line)
        if assign is None or not isinstance(assign[0], cst.Name):
            return []
        value = assign[1]
        if isinstance(value, cst.Call) and self.path(value.func) == "Variable":
            return [value]
        if isinstance(value, cst.Dict) and value.elements and all(
                isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
                and isinstance(e.value, cst.Call) and self.path(e.value.func) == "Variable" for e in value.elements):
            return [e.value for e in value.elements]  # type: ignore[misc]
        return []

    def _unnamed_variables(self) -> Dict[int, str]:
        """The TF 1 names of the module's ``tf.Variable(<value>)`` calls without ``name=``, by call id:
        ``Variable``, ``Variable_1``... counted under each ``variable_scope`` path (which
        ``get_variable`` puts in front), in the order the graph made them. Only when that order is the source order: every such call is the value of an
        assignment at module level, reached through ``with tf.variable_scope("literal")`` blocks
        only (each run once); and no name in the module (any ``name=`` string, any
        ``get_variable`` or scope name) could take part in the graph's uniquing of ``variable``.
        Otherwise {} (each unnamed ``tf.Variable`` keeps its decline)."""
        if hasattr(self, "_unnamed_cache"):
            return self._unnamed_cache
        self._unnamed_cache: Dict[int, str] = {}
        made = {site: call for sites in self.factories_v.values() for site, (call, _) in sites.items()}
        unnamed = [c for c in calls_of(self.module) if self.path(c.func) == "Variable" and id(c) not in self.factory_inner
                   and not any(a.keyword is not None and a.keyword.value == "name" for a in c.args)]
        unnamed += [c for c in made.values() if len(c.args) == 1]
        if not unnamed or any(len(c.args) != 1 for c in unnamed):
            # (`tf.Variable(0, trainable=False)`, a global step: it stays a `tf.Variable`, whose eager
            # name is not the graph's `Variable_N`)
            return self._unnamed_cache
        for c in calls_of(self.module):
            for a_ in c.args:
                value = a_.value
                if isinstance(value, cst.SimpleString) and isinstance(value.evaluated_value, str) \
                        and "variable" in value.evaluated_value.lower():
                    return self._unnamed_cache  # a name that may meet TF 1's `Variable_N`
        found: Dict[int, str] = {}
        counts: Dict[str, int] = {}
        for stmt in self.module.body:
            lines = []
            for ln, sc in _lines_under_withs(stmt):
                direct = self._assigned_variables(ln)
                sites = [made[id(c)] for c in calls_of(ln) if id(c) in made]
                if direct and sites:
                    return self._unnamed_cache  # the order of the two kinds in one line is not followed
                lines += [(ln, sc, c) for c in direct + sites]
            for line, scopes, call in lines:
                path = []
                for scope in scopes:
                    for item in scope.items:
                        if isinstance(item.item, cst.Call) and self.path(item.item.func) == "variable_scope" and \
                                item.item.args and isinstance(item.item.args[0].value, cst.SimpleString):
                            path.append(str(item.item.args[0].value.evaluated_value))
                        else:
                            path.append("<other>")
                prefix = "/".join(path)
                k = counts.get(prefix.lower(), 0)
                counts[prefix.lower()] = k + 1
                base = "Variable" if k == 0 else f"Variable_{k}"
                found[id(call)] = base  # (get_variable adds the scope path, as TF 1's name scope did)
        # (a path through another kind of scope counts under "<other>": that call's own conversion
        # declines it, naming the scope, in `_as_get_variable`)
        ids = {id(c) for c in unnamed}
        if ids <= set(found):
            self._unnamed_cache = {key: name for key, name in found.items() if key in ids}
        return self._unnamed_cache

    def _scope_uses(self) -> List[str]:
        """The literal names of every ``variable_scope``/``name_scope`` the module opens."""
        if not hasattr(self, "_scope_cache"):
            self._scope_cache = [c.args[0].value.evaluated_value for c in calls_of(self.module)
                                 if self.path(c.func) in ("variable_scope", "name_scope") and c.args
                                 and isinstance(c.args[0].value, cst.SimpleString)]
            self._scope_cache += ["<other>" for c in calls_of(self.module)
                                  if self.path(c.func) in ("variable_scope", "name_scope")
                                  and not (c.args and isinstance(c.args[0].value, cst.SimpleString))]
        return self._scope_cache

    def _variable_names(self) -> List[str]:
        """The literal names of every ``tf.Variable`` and ``get_variable`` in the module."""
        if not hasattr(self, "_variable_cache"):
            names = []
            for c in calls_of(self.module):
                path = self.path(c.func)
                value = _arg(c, 0, "name") if path == "get_variable" else (
                    next((a.value for a in c.args if a.keyword is not None and a.keyword.value == "name"), None)
                    if path == "Variable" else None)
                if path in ("get_variable", "Variable"):
                    names.append(value.evaluated_value if isinstance(value, cst.SimpleString) else "<other>")
            self._variable_cache = names + self.factory_names
        return self._variable_cache

    def _immutable_names(self) -> Set[str]:
        """Module-level names every binding of which is a number, string, bool or None, arithmetic
        of those, or a tuple of them: no change in place can reach their values."""
        if not hasattr(self, "_immutable_cache"):
            def immutable(value: cst.CSTNode) -> bool:
                if isinstance(value, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString,
                                      cst.ConcatenatedString)):
                    return True
                if isinstance(value, cst.Name):
                    return value.value in ("True", "False", "None")
                if isinstance(value, cst.UnaryOperation):
                    return immutable(value.expression)
                if isinstance(value, cst.BinaryOperation):
                    return immutable(value.left) and immutable(value.right)
                if isinstance(value, cst.Tuple):
                    return all(isinstance(e, cst.Element) and immutable(e.value) for e in value.elements)
                return False

            verdict: Dict[str, bool] = {}
            for stmt in self.module.body:
                for targets, value in _bindings_in(stmt):
                    for name in targets:
                        verdict[name] = verdict.get(name, True) and isinstance(value, cst.BaseExpression) \
                            and immutable(value) and len(targets) == 1
            self._immutable_cache = {name for name, ok in verdict.items() if ok}
        return self._immutable_cache

    def check_known(self, stmt: cst.CSTNode, read: Set[str], where: str, kept: bool = False) -> None:
        """Every name the forward pass reads is the program's own (or numpy/math, or a builtin);
        a module constant it reads is bound once (the eager step reads it when it is traced, TF 1
        read it when the graph was built); no Python side effects or numpy randomness (they run at
        every trace, and draw at another time)."""
        for name in sorted(read & _SIDE_EFFECTS):
            raise Decline(stmt, f"`{name}(...)` in {where} would run at every trace of the eager step")
        for name in sorted(read & set(self.display_helpers)):
            used = self.display_helpers[name]
            origin = f" (imported from `{self.imported[used]}`)" if used in self.imported else ""
            raise Decline(stmt, f"{where} calls `{name}`, which calls `{used}`{origin}: it would run at every trace "
                                "of the eager step")
        for name in sorted(read & self.constants):
            if self.bind_counts.get(name, 0) > 1:
                raise Decline(stmt, f"{where} reads `{name}`, which is rebound at module level (the eager "
                                    "step would read the value it has when first called)")
        for name in sorted(read & set(self.helpers)):
            if self.bind_counts.get(name, 0) > 1:
                raise Decline(stmt, f"{where} calls `{name}`, which is bound more than once at module level (TF 1 "
                                    "called the definition current when the graph was built; the eager step calls "
                                    "the one current when it is first called)")
        own = {id(at) for _, at in _changed_objects(stmt)}
        if self._sharing is None:
            self._sharing = _may_share(self.module.body, self.alias, set(self.imported) | {self.alias})
        for name in sorted(read & self.constants - self._immutable_names()):
            later = [(other, at) for other in sorted(self._sharing.get(name, {name}))
                     for index, at in self._changes.get(other, ()) if index >= self._top and id(at) not in own]
            if later:
                other, at = later[0]
                through = f" (through `{other}`, which may hold the same object)" if other != name else ""
                raise Decline(at, f"{where} reads `{name}`, which the program changes in place after the graph read "
                                  f"it{through} (TF 1 built the graph with the value it had then; the eager step "
                                  "reads the value it has when first called)")
        for name, at in _changed_objects(stmt):
            if name in read and name in self.constants:
                raise Decline(at, f"{where} changes the module-level `{name}`: the eager step would change it "
                                  "at every trace, TF 1 once, when the graph was built")
        for attribute in () if kept else Calls.attributes_of(stmt):
            parts = dotted(attribute)
            if parts and len(parts) > 1 and parts[1] == "random" and self.imported.get(parts[0], "").split(".")[0] in _PURE_MODULES:
                raise Decline(stmt, f"{where} draws from `{'.'.join(parts[:2])}`: the eager step draws when it is "
                                    "traced, after the code TF 1 ran first")
        known = (self.forward_names | {p.name for p in self.placeholders} | self.constants | set(self.helpers)
                 | {self.alias} | _BUILTINS)
        for name in sorted(read - known):
            module = self.imported.get(name)
            if module is not None and module.split(".")[0] in _PURE_MODULES:
                continue
            if module is not None:
                raise Decline(stmt, f"{where} calls into `{name}` (imported from `{module}`): variables built "
                                    "in another file are not followed")
            raise Decline(stmt, f"{where} reads `{name}`, which the rule cannot find in this file")

    def placeholder(self, name: str, call: cst.Call, stmt: cst.CSTNode) -> None:
        dtype = _arg(call, 0, "dtype")
        shape = _arg(call, 1, "shape")
        dtype_path = self.path(dtype) if dtype is not None else None
        if isinstance(dtype, cst.SimpleString) and isinstance(dtype.evaluated_value, str):
            # `tf.placeholder("float", ...)`: TF 1's `as_dtype` of the string
            dtype_path = tfnames.DTYPE_STRINGS.get(dtype.evaluated_value)
        if dtype_path not in tfnames.DTYPES:
            raise Decline(stmt, "a placeholder whose dtype is not a literal `tf.<dtype>` or a dtype string "
                                "(`\"float\"`, `\"int32\"`...)")
        if shape is not None and not self._literal_shape(shape):
            raise Decline(stmt, "a placeholder whose shape is not a list of integers, `None` and module "
                                "constants bound once")
        if name in {p.name for p in self.placeholders} or name in self.forward_names:
            raise Decline(stmt, f"`{name}` is bound twice")
        self.placeholders.append(Placeholder(name, dtype_path, shape, node=stmt))

    def placeholder_with_default(self, name: str, call: cst.Call, stmt: cst.CSTNode) -> None:
        """``tf.placeholder_with_default(False, [], name=...)``: a scalar placeholder whose default is a
        literal (bool -> ``tf.bool``, int -> ``tf.int32``, float -> ``tf.float32``, as TF 1 converts
        it); a run that does not feed it passes the default."""
        default, shape = _arg(call, 0, "input"), _arg(call, 1, "shape")
        if any(a.star or (a.keyword is not None and a.keyword.value not in ("input", "shape", "name"))
               for a in call.args):
            raise Decline(stmt, "`placeholder_with_default` with arguments other than a literal default, "
                                "a shape and a name")
        if isinstance(default, cst.Name) and default.value in ("True", "False"):
            dtype = "bool"
        elif isinstance(default, cst.Integer):
            dtype = "int32"
        elif isinstance(default, cst.Float):
            dtype = "float32"
        else:
            raise Decline(stmt, "`placeholder_with_default` whose default is not a literal bool, int or float")
        if not isinstance(shape, (cst.List, cst.Tuple)) or shape.elements:
            raise Decline(stmt, "`placeholder_with_default` of a shape other than `[]`")
        if name in {p.name for p in self.placeholders} or name in self.forward_names:
            raise Decline(stmt, f"`{name}` is bound twice")
        self.placeholders.append(Placeholder(name, dtype, shape, node=stmt, default=default))

    def _literal_shape(self, shape: cst.BaseExpression) -> bool:
        """A shape the step's ``TensorSpec`` can repeat: integers, ``None``, and module constants
        bound once before the placeholder (the spec reads them later, when the step is defined:
        a constant bound once has the same value then)."""
        if isinstance(shape, cst.Name) and shape.value == "None":
            return True
        if not isinstance(shape, (cst.List, cst.Tuple)):
            return False
        def dimension(value: cst.BaseExpression) -> bool:
            if isinstance(value, cst.Integer):
                return True
            if isinstance(value, cst.BinaryOperation) and isinstance(
                    value.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide)):
                return dimension(value.left) and dimension(value.right)  # `14 * 14 * 64`
            return (isinstance(value, cst.Name) and value.value in self.constants
                    and self.bind_counts.get(value.value, 0) == 1 and value.value not in self.imported
                    and value.value not in self.global_names)

        for e in shape.elements:
            if not isinstance(e, cst.Element):
                return False
            if (isinstance(e.value, cst.Name) and e.value.value == "None") or dimension(e.value):
                continue
            return False
        return True

    def loss_name(self, index: int, train: str, loss: cst.BaseExpression, where: cst.CSTNode) -> str:
        if isinstance(loss, cst.Name) and loss.value in self.forward_names:
            return loss.value
        lifted_name = self.fresh(f"{train}_loss")
        fake = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(lifted_name))], loss)])
        self.forward(fake)
        self.lifted.setdefault(index, []).append((lifted_name, loss))
        return lifted_name

    def global_step_kw(self, call: cst.Call, allowed: Sequence[str]) -> Optional[str]:
        step = None
        for a in call.args[1:] if call.args and call.args[0].keyword is None else call.args:
            if a.keyword is None or a.keyword.value not in allowed:
                raise Decline(call, f"`{self.module.code_for_node(call.func)}` with arguments the rule does not "
                                    "follow (only the loss/gradients and `global_step=`)")
            if a.keyword.value == "global_step":
                if not (isinstance(a.value, cst.Name) and a.value.value in self.global_steps):
                    raise Decline(a, "`global_step=` is not a global step made by `tf.train.get_or_create_global_step()` "
                                     "or `tf.Variable(0, trainable=False)`")
                step = a.value.value
        return step

    def minimize(self, index: int, name: str, call: cst.Call, stmt: cst.BaseStatement) -> None:
        func = call.func
        assert isinstance(func, cst.Attribute)
        target = func.value
        if isinstance(target, cst.Name) and target.value in self.optimizers:
            opt = target.value
        else:
            expr = self.optimizer_expr(target, {}, stmt)
            opt = self.fresh(f"{name}_optimizer")
            self.generated.setdefault(index, []).append((opt, expr))
            self.optimizers.add(opt)
            self.optimizer_feeds[opt] = self.optimizer_placeholders(expr)
            self.optimizer_code[opt] = self.module.code_for_node(expr)
        if not call.args or call.args[0].keyword not in (None,) and call.args[0].keyword.value != "loss":
            raise Decline(call, "`minimize` without a loss")
        step = self.global_step_kw(call, ("global_step", "var_list"))
        var_list = var_list_name = None
        for a in call.args[1:]:
            if a.keyword is not None and a.keyword.value == "var_list":
                if isinstance(a.value, cst.Name) and a.value.value in self.var_lists:
                    var_list_name = a.value.value
                else:
                    var_list = self.var_list(a.value, call)
        loss = self.loss_name(index, name, call.args[0].value, stmt)
        self.add_train(TrainOp(name, opt, loss, stmt, step, var_list=var_list, var_list_name=var_list_name,
                               var_reads=[var_list_name] if var_list_name else []), stmt)
        self.items.append(("trainop", stmt))

    def factory_call(self, index: int, name: str, call: cst.Call, stmt: cst.BaseStatement) -> None:
        assert isinstance(call.func, cst.Name)
        params, opt_expr, loss_param = self._factory_info[call.func.value]
        values: Dict[str, cst.BaseExpression] = {}
        names = [p.name.value for p in params.params]
        positional = [a for a in call.args if a.keyword is None]
        if any(a.star for a in call.args) or len(positional) > len(names):
            raise Decline(call, "a train-op helper called with */** arguments or too many arguments")
        for param, a in zip(names, positional):
            values[param] = a.value
        for a in call.args:
            if a.keyword is not None:
                if a.keyword.value not in names or a.keyword.value in values:
                    raise Decline(call, f"a train-op helper called with a bad keyword `{a.keyword.value}`")
                values[a.keyword.value] = a.value
        for p in params.params:
            if p.name.value not in values:
                if p.default is None:
                    raise Decline(call, f"a train-op helper called without `{p.name.value}`")
                values[p.name.value] = p.default
        loss = values.pop(loss_param)
        for param, value in values.items():
            read = names_of(value).read
            if self.alias in read or read & self.graph_names():
                raise Decline(call, f"a train-op helper's `{param}` is computed from tensors")
        free = names_of(opt_expr).read - set(names) - {self.alias}
        if free & self.taken - self.constants - {"None", "True", "False"}:
            # the helper reads module-level names: fine only if they are constants
            pass
        expr = opt_expr.visit(_Substitute(values))
        opt = self.fresh(f"{name}_optimizer")
        self.generated.setdefault(index, []).append((opt, expr))
        self.optimizers.add(opt)
        self.optimizer_feeds[opt] = self.optimizer_placeholders(expr)
        self.optimizer_code[opt] = self.module.code_for_node(expr)
        loss_name = self.loss_name(index, name, loss, stmt)
        self.add_train(TrainOp(name, opt, loss_name, stmt), stmt)
        self.items.append(("trainop", stmt))

    def add_train(self, train: TrainOp, stmt: cst.CSTNode) -> None:
        if train.name in self.train_ops or train.name in self.forward_names:
            raise Decline(stmt, f"`{train.name}` is bound twice")
        self.train_ops[train.name] = train

    def compute(self, index: int, stmt: cst.BaseStatement) -> None:
        if self._pending is not None:
            raise Decline(stmt, "a second `compute_gradients` before the first one's `apply_gradients`")
        calls = [c for c in calls_of(stmt) if isinstance(c.func, cst.Attribute) and c.func.attr.value == "compute_gradients"]
        call = calls[0]
        func = call.func
        assert isinstance(func, cst.Attribute)
        if len(calls) != 1 or not (isinstance(func.value, cst.Name) and func.value.value in self.optimizers):
            raise Decline(call, "`compute_gradients` of an optimizer the rule does not follow")
        var_list = var_list_name = None
        if len(call.args) == 2 and call.args[0].keyword is None and (
                call.args[1].keyword is None or call.args[1].keyword.value == "var_list") and not call.args[1].star:
            if isinstance(call.args[1].value, cst.Name) and call.args[1].value.value in self.var_lists:
                var_list_name = call.args[1].value.value
            else:
                var_list = self.var_list(call.args[1].value, call)
        elif len(call.args) != 1 or call.args[0].keyword is not None:
            raise Decline(call, "`compute_gradients` with arguments other than the loss and a list of variables")
        loss = call.args[0].value
        if not (isinstance(loss, cst.Name) and loss.value in self.forward_names):
            raise Decline(call, "`compute_gradients` of a loss that is not a module-level forward tensor")
        self._pending = TrainOp("", func.value.value, loss.value, stmt, block=[stmt], compute_call=call,
                                var_list=var_list, var_list_name=var_list_name,
                                var_reads=[var_list_name] if var_list_name else [])
        self._pending_index = index
        self.check_processing(stmt, skip=call)
        self.items.append(("drop", stmt))

    def symbolic_gradients(self, stmt: cst.BaseStatement) -> None:
        """``grads = ...tf.gradients(loss, tvars)...`` with ``tvars = tf.trainable_variables()``: the start
        of a gradient block whose optimizer is named by the ``apply_gradients`` that ends it."""
        if self._pending is not None:
            raise Decline(stmt, "`tf.gradients` before the previous `compute_gradients`' `apply_gradients`")
        calls = [c for c in calls_of(stmt) if self.path(c.func) == "gradients"]
        call = calls[0]
        loss, xs = _arg(call, 0, "ys"), _arg(call, 1, "xs")
        if (len(calls) != 1 or len(call.args) != 2 or any(a.star for a in call.args)
                or any(a.keyword is not None and a.keyword.value not in ("ys", "xs") for a in call.args)):
            raise Decline(call, "`tf.gradients` with arguments other than a loss and `tf.trainable_variables()`")
        if not (isinstance(loss, cst.Name) and loss.value in self.forward_names):
            raise Decline(call, "`tf.gradients` of a loss that is not a module-level forward tensor")
        if not (isinstance(xs, cst.Name) and xs.value in self.var_lists):
            raise Decline(call, "`tf.gradients` with respect to something other than a name bound once to "
                                "`tf.trainable_variables()`")
        self._pending = TrainOp("", "", loss.value, stmt, block=[stmt], compute_call=call, var_reads=[xs.value],
                                symbolic=True)
        self.check_processing(stmt, skip=call)
        self.items.append(("drop", stmt))

    def var_list(self, value: cst.BaseExpression, call: cst.Call) -> List[str]:
        """``[w, b]``: a literal list of variables the forward pass created by ``name = tf.get_variable(...)``."""
        if not isinstance(value, (cst.List, cst.Tuple)) or not value.elements:
            raise Decline(call, "a `var_list` that is not a literal list of variables (by collection or filter "
                                "is not migrated)")
        names = []
        for e in value.elements:
            if not (isinstance(e, cst.Element) and isinstance(e.value, cst.Name)
                    and e.value.value in self.direct_variables):
                raise Decline(call, "a `var_list` element that is not a variable bound once by "
                                    "`name = tf.get_variable(...)`")
            names.append(e.value.value)
        if len(set(names)) != len(names):
            raise Decline(call, "a `var_list` naming a variable twice")
        return names

    def check_processing(self, stmt: cst.CSTNode, skip: Optional[cst.Call] = None,
                         skip_as: Optional[cst.BaseExpression] = None) -> None:
        """Declines on ``stmt`` itself: ``skip`` (read as ``skip_as``, default ``None``) is left out
        of the check, on a copy the decline never names (it has no place in the file)."""
        node = stmt if skip is None else stmt.deep_replace(skip, skip_as or cst.Name("None"))
        self.check_forward(node, tfnames.PROCESSING, "gradient processing")
        names = names_of(node)
        local = comprehension_targets(node)
        bad = (names.read - local) & (self.forward_names | {p.name for p in self.placeholders} | set(self.train_ops))
        lists = bad & self.var_lists
        bad -= lists
        if bad:
            raise Decline(stmt, f"the gradient processing reads the tensor `{sorted(bad)[0]}`")
        if lists:
            if self._pending is None:
                raise Decline(stmt, "a list of variables read outside a gradient block")
            self._pending.var_reads += [n for n in sorted(lists) if n not in self._pending.var_reads]
        self.block_names |= names.bound
        known = (self.block_names | self.constants | set(self.helpers) | self.optimizers | self.global_steps | self.var_lists
                 | {self.alias, "apply_gradients"} | _BUILTINS)
        for name in sorted(names.read - known):
            module = self.imported.get(name)
            if module is None or module.split(".")[0] not in _PURE_MODULES:
                raise Decline(stmt, f"the gradient processing reads `{name}`, which the rule cannot follow")

    def processing(self, stmt: cst.BaseStatement) -> None:
        assert self._pending is not None
        self.check_processing(stmt)
        self._pending.block.append(stmt)
        self.items.append(("drop", stmt))

    def apply(self, index: int, name: str, call: cst.Call, stmt: cst.BaseStatement) -> None:
        pending = self._pending
        func = call.func
        assert isinstance(func, cst.Attribute)
        if pending is not None and pending.optimizer == "" and isinstance(func.value, cst.Name) \
                and func.value.value in self.optimizers:
            pending.optimizer = func.value.value  # the `tf.gradients` form names its optimizer here
        if pending is None or not (isinstance(func.value, cst.Name) and func.value.value == pending.optimizer):
            raise Decline(stmt, "`apply_gradients` that does not follow the same optimizer's `compute_gradients`")
        pending.global_step = self.global_step_kw(call, ("global_step", "name"))
        self.check_processing(stmt, skip=call, skip_as=cst.Call(func=cst.Name("apply_gradients"), args=call.args))
        self.block_names.discard(name)
        pending.name = name
        pending.block.append(stmt)
        self.add_train(pending, stmt)
        self._pending = None
        self.items.append(("trainop", stmt))

    # the session

    def _ops_in_block(self, detail: str) -> str:
        if self.session_object:  # no block in the source: say where the reading starts
            name = self.session_name or "the session"
            return (f"ops created after `{name}` is first used (from its first use on, a session object's "
                    "statements are read as the session block)" + detail)
        return "ops created inside the session block" + detail

    def _session_item(self, stmt: cst.With) -> Optional[str]:
        if len(stmt.items) != 1:
            return None
        item = stmt.items[0]
        if not isinstance(item.item, cst.Call) or self.path(item.item.func) not in ("Session", "InteractiveSession"):
            return None
        if item.asname is None or not isinstance(item.asname.name, cst.Name):
            raise Decline(stmt, "a session opened without `as <name>`")
        if item.item.args:
            raise Decline(stmt, "a session opened with arguments (a target or a config)")
        if self.path(item.item.func) == "InteractiveSession":
            raise Decline(stmt, _INTERACTIVE)
        return item.asname.name.value

    def session_block(self, stmt: cst.With) -> None:
        if self.session is not None:
            raise Decline(stmt, "a second session block")
        if self._pending is not None:
            raise Decline(self._pending.node, "`compute_gradients` without its `apply_gradients`")
        self.session = stmt
        self.session_name = self._session_item(stmt) or ""
        self.mark_optimizer_placeholders()
        self.find_feed_dicts(stmt)
        self.block(stmt.body.body if isinstance(stmt.body, cst.IndentedBlock) else [])

    def check_non_slot_order(self) -> None:
        """Adam's ``beta1_power``/``beta2_power`` are named in the order the optimizers are built in TF 1
        (``beta1_power``, ``beta1_power_1``...) and in the order they first apply gradients eagerly: the
        runs (in source order) must first train them in the order they were built."""
        adams = [self.train_ops[t].optimizer for t in self.train_ops
                 if "Adam" in self.optimizer_code.get(self.train_ops[t].optimizer, "Adam")]
        built = list(dict.fromkeys(adams))
        first: List[str] = []
        for run in self.runs:
            for t in sorted((n for n in run.names if n in self.train_ops), key=list(self.train_ops).index):
                opt = self.train_ops[t].optimizer
                if opt in built and opt not in first:
                    first.append(opt)
        if len(built) > 1 and first != built[:len(first)]:
            raise Decline(self.session or self.module, "two Adam optimizers first run in another order than "
                                                       "they were built (their `beta1_power` names would swap)")

    def mark_optimizer_placeholders(self) -> None:
        """Placeholders read only as optimizer arguments (a fed learning rate), checked against every
        statement of the graph construction that could read them: the forward pass, the losses lifted
        from train ops, helpers, constants (gradient processing already declines placeholders)."""
        wanted = {n for names in self.optimizer_feeds.values() for n in names}
        if not wanted:
            return
        allowed = {id(p.node) for p in self.placeholders} | {id(f) for f in self.factories.values()}
        for kind, stmt in self.items:
            assign = _single_assign(stmt)
            if kind in ("import", "session", "main") or id(stmt) in allowed:
                continue
            if kind == "keep" and assign is not None and isinstance(assign[0], cst.Name) and assign[0].value in self.optimizers:
                continue  # the optimizer's own statement
            if kind == "trainop":
                hit: Set[str] = set()
                for _, expr in self.lifted.get(id(stmt), []):
                    hit |= names_of(expr).read & wanted
            else:
                hit = names_of(stmt).read & wanted
            if hit:
                raise Decline(stmt, f"the placeholder `{sorted(hit)[0]}` is read by an optimizer and by the graph")
        for p in self.placeholders:
            if p.name in wanted:
                if self.bind_counts.get(p.name, 0) != 1 or p.name in self.global_names:
                    raise Decline(p.node or self.module, f"the placeholder `{p.name}` is rebound")
                p.optimizer_only = True
                p.param = self.fresh(f"{p.name}_value")

    def find_feed_dicts(self, session: cst.With) -> None:
        """``feed = {x: ..., y: ...}`` statements in the session block: a name bound only by literal
        dicts keyed by the same placeholders, and read only as ``feed_dict=`` of ``run`` calls (checked
        as the block is read). Each becomes a dict keyed by the placeholders' names, evaluated where
        it was, so every feed value is computed when TF 1 computed it."""
        placeholders = {p.name for p in self.placeholders}
        keysets: Dict[str, List[List[str]]] = {}
        for line in nodes_of(session, cst.SimpleStatementLine):
            assign = _single_assign(line)
            if assign is None or not isinstance(assign[0], cst.Name) or not isinstance(assign[1], cst.Dict):
                continue
            elements = assign[1].elements
            if not elements or not all(isinstance(e, cst.DictElement) and isinstance(e.key, cst.Name)
                                       and e.key.value in placeholders for e in elements):
                continue
            keys = [e.key.value for e in elements]  # type: ignore[union-attr]
            if len(set(keys)) != len(keys):
                continue
            for e in elements:
                self.feed_dict_values.setdefault(assign[0].value, {}).setdefault(
                    e.key.value, []).append(e.value)  # type: ignore[union-attr]
            keysets.setdefault(assign[0].value, []).append(keys)
            self.feed_candidates[id(line)] = assign[0].value
        module_level = (self.constants | self.forward_names | self.graph_names() | set(self.helpers)
                        | self.optimizers | self.global_steps | set(self.imported) | {self.alias, self.session_name})
        for name, sets in keysets.items():
            if name not in module_level and len({tuple(sorted(k)) for k in sets}) == 1:
                self.feed_dicts[name] = sets[0]
        self.feed_candidates = {k: v for k, v in self.feed_candidates.items() if v in self.feed_dicts}

    def feed_statement(self, stmt: cst.SimpleStatementLine) -> None:
        assign = _single_assign(stmt)
        assert assign is not None and isinstance(assign[1], cst.Dict)
        elements = []
        for e in assign[1].elements:
            assert isinstance(e, cst.DictElement) and isinstance(e.key, cst.Name)
            read = names_of(e.value).read
            hit = read & (self.graph_names() | self.global_steps | set(self.feed_dicts) | {self.session_name})
            if self.alias in read or hit:
                raise Decline(stmt, "a feed value computed from graph tensors or the session")
            elements.append(e.with_changes(key=cst.SimpleString(f'"{e.key.value}"')))
        self.feed_statements[id(stmt)] = stmt.with_changes(
            body=[stmt.body[0].with_changes(value=assign[1].with_changes(elements=elements))])

    def block(self, body: Sequence[cst.BaseStatement]) -> None:
        for stmt in body:
            self.session_statement(stmt)

    def session_statement(self, stmt: cst.BaseStatement) -> None:
        sess = self.session_name
        expr = _expr_stmt(stmt)
        if isinstance(expr, cst.Call) and self._is_init_run(expr):
            self.drop_init_run(expr)
            return
        if isinstance(expr, cst.Call) and self._is_run(expr) and not self._is_eval(expr):
            fetch = _arg(expr, 0, "fetches")
            if fetch is not None and self._is_init(fetch):
                if len(expr.args) != 1:
                    raise Decline(expr, "the initializer run with feeds or options")
                self.drop_init_run(expr)
                return
        if isinstance(stmt, (cst.For, cst.While, cst.If, cst.With)):
            header: List[cst.CSTNode] = []
            if isinstance(stmt, cst.For):
                header = [stmt.target, stmt.iter]
            elif isinstance(stmt, (cst.While, cst.If)):
                header = [stmt.test]
            else:
                header = [item for item in stmt.items]
            for part in header:
                self.plain_with_runs(part, stmt)
            self._session_depth += 1
            self._stack.append(stmt)
            self.block(stmt.body.body if isinstance(stmt.body, cst.IndentedBlock) else [])
            orelse = getattr(stmt, "orelse", None)
            while orelse is not None:
                self._stack[-1] = orelse  # an `else`/`elif` branch: not the `if` body's runs
                if isinstance(orelse, cst.If):
                    self.plain_with_runs(orelse.test, orelse)
                self.block(orelse.body.body if isinstance(orelse.body, cst.IndentedBlock) else [])
                orelse = getattr(orelse, "orelse", None)
            self._stack.pop()
            self._session_depth -= 1
            return
        if isinstance(stmt, (cst.Try, cst.FunctionDef, cst.ClassDef)) and sess in names_of(stmt).read:
            raise Decline(stmt, "the session is used inside a try/def/class in the session block")
        self.plain_with_runs(stmt, stmt)

    def saver_statement(self, stmt: cst.BaseStatement, name: str, call: cst.Call) -> None:
        """``saver = tf.train.Saver([max_to_keep=<int>][, keep_checkpoint_every_n_hours=<number>])``:
        every global variable of the graph built so far (checked at the end: the graph must be
        complete), saved under its TF 1 name; eagerly ``tfclip_compat.checkpoints.Saver``."""
        for arg in call.args:
            key = arg.keyword.value if arg.keyword is not None else None
            value = arg.value
            if isinstance(value, cst.UnaryOperation):
                value = value.expression
            literal = isinstance(value, (cst.Integer, cst.Float)) or (isinstance(value, cst.Name) and value.value == "None")
            if arg.star or key not in ("max_to_keep", "keep_checkpoint_every_n_hours") or not literal:
                shown = f"`{key}=`" if key else "a positional argument"
                raise Decline(arg, f"`tf.train.Saver` with {shown} (only `max_to_keep=` and "
                                   "`keep_checkpoint_every_n_hours=` literals are followed: the eager saver saves "
                                   "every variable of the TF 1 graph)")
        if self.bind_counts.get(name, 0) != 1:
            raise Decline(stmt, f"`{name}` (a `tf.train.Saver`) is bound more than once")
        self.savers[name] = stmt
        self.items.append(("saver", stmt))

    def _is_save(self, call: cst.Call) -> bool:
        func = call.func
        return (isinstance(func, cst.Attribute) and func.attr.value == "save" and isinstance(func.value, cst.Name)
                and func.value.value in self.savers)

    def save_site(self, call: cst.Call) -> None:
        """``saver.save(sess, path[, global_step=...])``: eagerly ``saver.save(None, ...)``, which needs
        every optimizer's variables, made at its first step: so each training op must have run
        before the save, every time the save runs (a run in a block around the save, or in a
        ``for`` loop over a ``range`` that runs at least once)."""
        args = list(call.args)
        positional = [a for a in args if a.keyword is None]
        keywords = [a.keyword.value for a in args if a.keyword is not None]
        if (any(a.star for a in args) or len(positional) != 2 or not isinstance(positional[0].value, cst.Name)
                or positional[0].value.value != self.session_name or set(keywords) - {"global_step"}):
            raise Decline(call, "a checkpoint saved other than by `saver.save(sess, path[, global_step=...])`")
        for arg in args[1:]:
            read = names_of(arg.value).read
            hit = read & (self.graph_names() | set(self.feed_dicts) | {self.session_name, self.alias})
            if hit and not (arg.keyword is not None and isinstance(arg.value, cst.Name)
                            and arg.value.value in self.global_steps):
                raise Decline(call, f"`saver.save` with an argument that reads `{sorted(hit)[0]}` (only a path and a "
                                    "Python or global-step `global_step=` are followed)")
        stack = tuple(self._stack)
        for name in sorted(self.train_ops):
            if not any(name in trains and self._runs_before(where, stack) for trains, where in self._train_runs):
                raise Decline(call, f"a checkpoint saved where the training op `{name}` may not have run yet (its "
                                    "optimizer's slots exist eagerly only after its first step; TF 1 saved their "
                                    "initial values)")
        self.saver_calls[id(call)] = call.with_changes(args=[args[0].with_changes(value=cst.Name("None"))] + args[1:])

    def _runs_before(self, where: Tuple[cst.CSTNode, ...], stack: Tuple[cst.CSTNode, ...]) -> bool:
        """A run read earlier, inside the compound statements ``where``, has run before a statement
        inside ``stack`` runs: the run's blocks around it enclose the statement too, but for ``for``
        loops over a ``range`` of at least one step."""
        common = 0
        while common < min(len(where), len(stack)) and where[common] is stack[common]:
            common += 1
        return all(isinstance(loop, cst.For) and self._runs_once_at_least(loop) for loop in where[common:])

    def _runs_once_at_least(self, loop: cst.For) -> bool:
        """``for ... in range(n)`` / ``range(a, b)`` with integers the rule can compute, at least one step."""
        it = loop.iter
        if loop.orelse is not None or not (isinstance(it, cst.Call) and isinstance(it.func, cst.Name)
                                           and it.func.value == "range" and "range" not in self.bind_counts):
            return False
        if any(a.keyword is not None or a.star for a in it.args) or not 1 <= len(it.args) <= 2:
            return False
        bounds = [self.int_value(a.value) for a in it.args]
        if any(b is None for b in bounds):
            return False
        start, stop = (0, bounds[0]) if len(bounds) == 1 else (bounds[0], bounds[1])
        return stop > start  # type: ignore[operator]

    def int_value(self, node: cst.BaseExpression) -> Optional[int]:
        """An integer literal, a module-level name bound once to one, or ``+``/``-``/``*`` of them
        (a ``range`` bound here; module-level integer constants for the chain check)."""
        if isinstance(node, cst.Integer):
            return int(node.evaluated_value)
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            inner = self.int_value(node.expression)
            return None if inner is None else -inner
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Subtract, cst.Multiply)):
            left, right = self.int_value(node.left), self.int_value(node.right)
            if left is None or right is None:
                return None
            return left + right if isinstance(node.operator, cst.Add) else (
                left - right if isinstance(node.operator, cst.Subtract) else left * right)
        if isinstance(node, cst.Name) and self.bind_counts.get(node.value, 0) == 1:
            for stmt in self.module.body:
                assign = _single_assign(stmt)
                if assign is not None and isinstance(assign[0], cst.Name) and assign[0].value == node.value:
                    return self.int_value(assign[1]) if isinstance(assign[1], cst.Integer) else None
        return None

    def check_savers(self) -> None:
        """A saver sees every variable: no graph statement builds variables or training ops after it,
        and it is used only by the saves read in the session block."""
        for name, stmt in self.savers.items():
            at = next(i for i, (_, s) in enumerate(self.items) if s is stmt)
            later = [s for kind, s in self.items[at + 1:] if kind in ("forward", "trainop", "holder")]
            if later:
                raise Decline(stmt, f"`{name} = tf.train.Saver()` is built before the graph is complete (TF 1 saves "
                                    "only the variables that exist when the saver is built)")
            uses = [n for n in nodes_of(self.module, cst.Name) if n.value == name]
            saved = {id(c.func.value) for c in self.saver_calls.values()}  # type: ignore[union-attr]
            target = _single_assign(stmt)
            if any(id(n) not in saved and (target is None or n is not target[0]) for n in uses):
                raise Decline(stmt, _saver_used_otherwise(name))

    def drop_init_run(self, call: cst.Call) -> None:
        """An initializer run goes: the eager program initializes each variable once, when the model
        is built. That is what TF 1 did only for a run before any training, run once."""
        if self._trained:
            raise Decline(call, "an initializer run after a training run (it resets the trained variables; the "
                                "eager program initializes them once)")
        if self._session_depth:
            raise Decline(call, "an initializer run inside a loop, branch or `with` of the session block (it may "
                                "reset the variables, or not run; the eager program initializes them once)")
        self.dropped_runs.append(call)

    def _is_run(self, call: cst.Call) -> bool:
        func = call.func
        return (isinstance(func, cst.Attribute) and func.attr.value == "run" and isinstance(func.value, cst.Name)
                and func.value.value == self.session_name) or self._is_eval(call)

    def _is_eval(self, call: cst.Call) -> bool:
        """``tensor.eval(feed_dict=...)`` (or ``session=sess``) of a forward tensor: ``sess.run(tensor, ...)``
        in the session block, where the block's session is the default one."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and (
                (func.attr.value == "eval" and func.value.value in self.forward_names)
                or (func.attr.value == "run" and func.value.value in self.train_ops))):  # ``train_op.run(feed_dict=...)``
            return False
        for i, a in enumerate(call.args):
            if a.star or (a.keyword is None and i > 0) or (a.keyword is not None and a.keyword.value not in ("feed_dict", "session")):
                return False
            if a.keyword is not None and a.keyword.value == "session" and not (
                    isinstance(a.value, cst.Name) and a.value.value == self.session_name):
                return False
        return True

    def _is_init_run(self, call: cst.Call) -> bool:
        """``tf.global_variables_initializer().run()`` / ``init.run()`` (optionally ``session=sess``)."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "run" and self._is_init(func.value)):
            return False
        return all(a.keyword is not None and a.keyword.value == "session" and isinstance(a.value, cst.Name)
                   and a.value.value == self.session_name for a in call.args)

    def _is_init(self, fetch: cst.BaseExpression) -> bool:
        if isinstance(fetch, cst.Name) and fetch.value in self.init_names:
            return True
        return isinstance(fetch, cst.Call) and self.path(fetch.func) in _INITIALIZERS and not fetch.args

    def plain_with_runs(self, node: cst.CSTNode, stmt: cst.CSTNode) -> None:
        if id(node) in self.feed_candidates:
            self.feed_statement(node)  # type: ignore[arg-type]
            return
        if names_of(node).bound & set(self.feed_dicts):
            raise Decline(stmt, f"the feed dict `{sorted(names_of(node).bound & set(self.feed_dicts))[0]}` is "
                                "bound other than by a literal dict of placeholders")
        runs = [c for c in calls_of(node) if self._is_run(c)]
        for call in runs:
            self.run_site(call)
        saves = [c for c in calls_of(node) if self._is_save(c)]
        for call in saves:
            self.save_site(call)
        # every run at once (a second `deep_replace` no longer finds a node the first one rebuilt:
        # `str(sess.run(A)) + str(sess.run(b))` kept its second run)
        done = runs + saves
        rest = node.visit(_ReplaceCalls({id(call) for call in done})) if done else node
        names = names_of(rest).read
        if names & set(self.feed_dicts):
            raise Decline(stmt, f"the feed dict `{sorted(names & set(self.feed_dicts))[0]}` is used other than "
                                "as `feed_dict=` of a `run`")
        if names & set(self.savers):
            raise Decline(stmt, _saver_used_otherwise(sorted(names & set(self.savers))[0]))
        if self.session_name in names:
            raise Decline(stmt, f"the session `{self.session_name}` is used other than by `{self.session_name}.run(...)`")
        for call in calls_of(rest):
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("eval", "partial_run"):
                raise Decline(call, f"`.{call.func.attr.value}(...)` in the session block")
        if self.alias in names:
            if not runs and node is stmt and self.late_forward_statement(stmt):
                return
            raise Decline(stmt, self._ops_in_block(" (only a tensor assigned once, outside loops and branches, from "
                                                   "the forward pass, creating no variables and drawing no random "
                                                   "numbers, moves into the model)"))
        hit = names & (self.graph_names() | self.global_steps)
        if hit:
            raise Decline(stmt, f"`{sorted(hit)[0]}` (a graph tensor) is used outside a `run` call")

    def _stateful_paths(self, node: cst.CSTNode) -> List[str]:
        """The TF names in ``node`` that create variables, draw random numbers or are unknown."""
        return [p for _, p in self.tf_paths(node)
                if p not in tfnames.FORWARD or p.startswith(tfnames.STATEFUL_PREFIXES) or p in _STATEFUL_NAMES]

    def _stateless(self, node: cst.CSTNode) -> bool:
        """Some TF ops in ``node``, all stateless ones the forward pass knows."""
        return bool(self.tf_paths(node)) and not self._stateful_paths(node)

    def _late_tensor(self, stmt: cst.SimpleStatementLine, name: str, node: cst.CSTNode,
                     where: Tuple[str, str] = ("forward pass", "the forward pass")) -> bool:
        """``name = <node>`` (``stmt``), stateless ops of the forward pass's tensors, placeholders and
        constants: the model's ``call`` computes it after the forward pass. False when it reads
        anything else."""
        read = names_of(node).read - comprehension_targets(node)
        model = self.forward_names | {p.name for p in self.placeholders} | self.constants | {self.alias} | _BUILTINS
        if not read <= model or read & self.training_names():
            return False
        self.check_forward(node, tfnames.FORWARD, where[0])
        self.check_known(node, read, where[1])
        self.forward_names.add(name)
        self.late_forward.append(stmt)
        return True

    def inline_fetch(self, call: cst.Call, fetch: cst.BaseExpression, feed: Optional[cst.BaseExpression]) -> Optional[str]:
        """A fetch that builds its ops in the ``run`` (``sess.run(tf.argmax(logits, 1), {x: ...})``):
        stateless ops only. Of forward tensors and placeholders: a new forward tensor the model
        computes (its name returned). Of no graph tensor at all (``tf.argmax(labels[r:r + 1], 1)``,
        not fed): computed eagerly in its place (None returned). Otherwise declined."""
        why = self._ops_in_block(" (a fetch builds new ops other than stateless ones of the forward pass)")
        if isinstance(fetch, (cst.List, cst.Tuple, cst.Dict, cst.Set, cst.ListComp, cst.GeneratorExp, cst.DictComp,
                              cst.SetComp, cst.Lambda, cst.IfExp)) or not self._stateless(fetch):
            raise Decline(call, why)
        read = names_of(fetch).read - comprehension_targets(fetch)
        graph = (self.forward_names | {p.name for p in self.placeholders} | self.graph_names() | self.global_steps
                 | set(self.helpers) | set(self.nested_helpers))
        if not read & graph:
            if feed is not None or read & {self.session_name} or read & set(self.feed_dicts):
                raise Decline(call, why)
            self.check_forward(fetch, tfnames.FORWARD, "fetch")
            self.eager_fetches[id(call)] = fetch
            return None
        name = self.fresh("fetch")
        if not self._late_tensor(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))], fetch)]),
                                 name, fetch, ("fetch", "a fetch")):
            raise Decline(call, why)
        return name

    def late_forward_statement(self, stmt: cst.CSTNode) -> bool:
        """``accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(y, 1), ...), tf.float32))`` in the
        session block, outside its loops and branches (TF 1 built it once, after the graph): a
        tensor of the forward pass built late. Its ops create no variable and draw no random
        numbers, so the model's ``call`` computes it after the forward pass; runs fetch it like
        any forward tensor. False when the statement is not such an assignment."""
        assign = _single_assign(stmt)
        if (self._session_depth or not isinstance(stmt, cst.SimpleStatementLine) or assign is None
                or not isinstance(assign[0], cst.Name)):
            return False
        name = assign[0].value
        if self.bind_counts.get(name, 0) != 1 or name in self.global_names or name in self.feed_dicts:
            return False
        return self._stateless(stmt) and self._late_tensor(stmt, name, stmt)  # type: ignore[arg-type]

    def run_site(self, call: cst.Call) -> None:
        fetch = _arg(call, 0, "fetches")
        feed = _arg(call, 1, "feed_dict")
        if self._is_eval(call):
            assert isinstance(call.func, cst.Attribute)
            fetch, feed = call.func.value, _arg(call, 0, "feed_dict")
            call_args = [a for a in call.args if a.keyword is None or a.keyword.value != "session"]
        else:
            call_args = list(call.args)
        for a in call_args:
            if a.star or (a.keyword is not None and a.keyword.value not in ("fetches", "feed_dict")):
                raise Decline(call, "`run` with options, run_metadata or */** arguments")
        if len([a for a in call_args if a.keyword is None]) > 2:
            raise Decline(call, "`run` with options or run_metadata")
        if fetch is None:
            raise Decline(call, "`run` without fetches")
        if isinstance(fetch, cst.Name):
            names, container = [fetch.value], None
        elif isinstance(fetch, (cst.List, cst.Tuple)) and fetch.elements and all(
                isinstance(e, cst.Element) and isinstance(e.value, cst.Name) for e in fetch.elements):
            names = [e.value.value for e in fetch.elements]  # type: ignore[union-attr]
            container = "list" if isinstance(fetch, cst.List) else "tuple"
        elif isinstance(fetch, cst.Dict) and fetch.elements and all(
                isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString) and isinstance(e.value, cst.Name)
                for e in fetch.elements):
            keys = [e.key.evaluated_value for e in fetch.elements]  # type: ignore[union-attr]
            if len(set(keys)) != len(keys):
                raise Decline(call, "a dict fetch with a repeated key")
            names = [e.value.value for e in fetch.elements]  # type: ignore[union-attr]
            container = "dict"
        elif isinstance(fetch, cst.SimpleString):
            raise Decline(call, "a tensor fetched by name")
        elif self.alias in names_of(fetch).read:
            inline = self.inline_fetch(call, fetch, feed)
            if inline is None:
                return  # computed eagerly where it is (no graph tensor in it)
            names, container = [inline], None
        else:
            raise Decline(call, "fetches that are not a name, a list/tuple of names or a dict of string keys to names")
        trains = [n for n in names if n in self.train_ops]
        self._trained = self._trained or bool(trains)
        if trains:
            self._train_runs.append((set(trains), tuple(self._stack)))
        for n in names:
            if n in self.train_ops or n in self.forward_names:
                continue
            if n in self.global_steps:
                if trains:
                    raise Decline(call, "the global step fetched in the same `run` as a training op "
                                        "(TF 1 leaves the order of its read and increment open)")
                continue
            raise Decline(call, f"fetch `{n}` is not a tensor or training op of the graph the rule follows")
        if trains:
            read_vars = [n for n in names if n in self.variable_names]
            if read_vars:
                raise Decline(call, f"variable `{read_vars[0]}` fetched in the same `run` as a training op "
                                    "(TF 1 leaves the order of its read and update open)")
        optimizers = [self.train_ops[n].optimizer for n in trains]
        if len(set(optimizers)) != len(optimizers) or len(set(trains)) != len(trains):
            raise Decline(call, "two training ops of one optimizer in one `run`")
        keys = [e.key for e in fetch.elements] if container == "dict" else []  # type: ignore[union-attr]
        if feed is None and all(n in self.global_steps for n in names):
            self.runs.append(RunSite(call, names, container, {}, keys, only_global_steps=True))
            return
        feeds: Dict[str, cst.BaseExpression] = {}
        if isinstance(feed, cst.Name) and feed.value in self.feed_dicts:
            for key in self.feed_dicts[feed.value]:
                feeds[key] = cst.parse_expression(f'{feed.value}["{key}"]')
        elif feed is not None:
            if not isinstance(feed, cst.Dict):
                raise Decline(call, "a feed dict that is not a literal `{placeholder: value}`")
            for element in feed.elements:
                if not isinstance(element, cst.DictElement) or not isinstance(element.key, cst.Name):
                    raise Decline(call, "a feed dict key that is not a placeholder name")
                key = element.key.value
                if key not in {p.name for p in self.placeholders} or key in feeds:
                    raise Decline(call, f"a feed of `{key}`, which is not a placeholder (or is fed twice)")
                feeds[key] = element.value
        for p in self.placeholders:
            if p.default is not None and p.name not in feeds:
                feeds[p.name] = p.default  # what TF 1 computes for a placeholder_with_default not fed
        needed = {n for t in trains for n in self.optimizer_feeds.get(self.train_ops[t].optimizer, [])}
        missing = [p.name for p in self.placeholders if p.name not in feeds and (not p.optimizer_only or p.name in needed)]
        if missing and any(p.optimizer_only for p in self.placeholders if p.name in missing):
            raise Decline(call, f"placeholder `{missing[0]}` is not fed by this `run`")
        # (round 14) a training run may leave unfed what its loss and gradient processing do not
        # need (an SVM's `prediction_grid`): checked with the evaluation runs in ``check_unfed``
        fed_optimizer = [p.name for p in self.placeholders if p.optimizer_only and p.name in feeds]
        # a run that feeds only some placeholders (``sess.run(prediction, {x: ...})``): the model
        # skips what needs the others (checked for the whole program in ``check_unfed``)
        self.runs.append(RunSite(call, names, container, feeds, keys, optimizer_feeds=fed_optimizer, unfed=missing))

    def check_unfed(self) -> None:
        """Runs that leave placeholders unfed: the model's ``call`` gets None for them and skips the
        statements that need them (``if y is not None:``), so such a run computes what TF 1's pruned
        graph computed. Every statement that needs an unfed placeholder must be a plain assignment
        of stateless ops (no variables, layers, random ops or helpers: skipping it must change no
        variable and no random stream), and no run may fetch a tensor that needs what it leaves
        unfed."""
        optional = {n for run in self.runs for n in run.unfed}
        if not optional:
            return
        needs: Dict[str, Set[str]] = {}
        units: List[Tuple[int, cst.CSTNode, Set[str], Set[str]]] = []  # (id, node, reads, binds)
        for kind, stmt in self.items:
            if kind == "forward":
                names = names_of(stmt)
                units.append((id(stmt), stmt, names.read - comprehension_targets(stmt), names.bound))
            for name, expr in self.lifted.get(id(stmt), []):
                units.append((id(expr), expr, names_of(expr).read, {name}))
        for stmt in self.late_forward:
            names = names_of(stmt)
            units.append((id(stmt), stmt, names.read - comprehension_targets(stmt), names.bound))
        for key, node, reads, binds in units:
            req = set(reads & optional)
            for name in reads:
                req |= needs.get(name, set())
            if not req:
                for name in binds:
                    needs.pop(name, None)
                continue
            where = sorted(req)[0]
            assign = _single_assign(node) if isinstance(node, cst.BaseStatement) else None
            if isinstance(node, cst.BaseStatement) and (assign is None or not all(
                    isinstance(t, cst.Name) for t in ([e.value for e in assign[0].elements]
                                                      if isinstance(assign[0], (cst.Tuple, cst.List)) else [assign[0]]))):
                raise Decline(node, f"a run leaves `{where}` unfed, and a statement of the forward pass that is not "
                                    "one assignment needs it (only plain assignments of stateless ops are skipped)")
            stateful = self._stateful_paths(node)
            helpers = reads & (set(self.helpers) | set(self.nested_helpers))
            if stateful or helpers:
                what = f"`tf.{stateful[0]}`" if stateful else f"the helper `{sorted(helpers)[0]}`"
                raise Decline(node, f"a run leaves `{where}` unfed, and {what} needs it (only stateless ops are "
                                    "skipped: a layer, variable or random op must run as in TF 1)")
            self.guarded[key] = sorted(req)
            for name in binds:
                needs[name] = req
        for run in self.runs:
            for name in run.names:
                lacking = needs.get(name, set()) & set(run.unfed)
                if lacking:
                    raise Decline(run.call, f"placeholder `{sorted(lacking)[0]}` is not fed by this `run`, "
                                            f"and the fetched `{name}` needs it")
                if name in self.train_ops:  # what the training op reads: its loss, lists, processing
                    t = self.train_ops[name]
                    read = {t.loss} | set(t.var_list or []) | set(t.var_reads)
                    for node in [t.node] + list(t.block):
                        read |= names_of(node).read
                    for used in sorted(read):
                        lacking = (needs.get(used, set()) | ({used} & optional)) & set(run.unfed)
                        if lacking:
                            raise Decline(run.call, f"placeholder `{sorted(lacking)[0]}` is not fed by this training "
                                                    f"`run`, and `{used}`, which the training op `{name}` reads, "
                                                    "needs it")
        self.name_needs = {name: sorted(req) for name, req in needs.items()}


class _Substitute(cst.CSTTransformer):
    def __init__(self, values: Dict[str, cst.BaseExpression]) -> None:
        self.values = values

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        return self.values.get(original.value, updated)


def read_program(module: cst.Module) -> Program:
    """The program model of ``module``, or :class:`Decline`."""
    return Reader(module).read()


_SESSION_CALLS = frozenset({"Session", "InteractiveSession", "MonitoredTrainingSession", "MonitoredSession",
                            "SingularMonitoredSession", "managed_session", "prepare_or_wait_for_session"})


def is_session_script(module: cst.Module) -> bool:
    """Whether ``module`` opens a session at module level (or under ``if __name__ == "__main__":``):
    the files the rule reports on. A session opened inside a function or class is not a session
    script, and the rule stays silent there."""
    body: List[cst.BaseStatement] = list(module.body)
    for stmt in module.body:
        if isinstance(stmt, cst.If) and Reader._is_main(stmt) and isinstance(stmt.body, cst.IndentedBlock):
            body.extend(stmt.body.body)
    for stmt in body:
        values: List[cst.BaseExpression] = []
        if isinstance(stmt, cst.With):
            values = [item.item for item in stmt.items]
        elif _single_assign(stmt) is not None:
            values = [_single_assign(stmt)[1]]  # type: ignore[index]
        for value in values:
            if isinstance(value, cst.Call):
                parts = dotted(value.func)
                if parts and parts[-1] in _SESSION_CALLS:
                    return True
    return False


def _module_bindings(module: cst.Module) -> Dict[str, int]:
    """How many module-scope statements bind each name (function and class bodies excluded, but a
    name a function declares `global` counts as bound more than once)."""
    counts: Dict[str, int] = {}

    def walk(statements: Sequence[cst.BaseStatement]) -> None:
        for stmt in statements:
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                counts[stmt.name.value] = counts.get(stmt.name.value, 0) + 1
                continue
            if isinstance(stmt, cst.SimpleStatementLine):
                for name in names_of(stmt).bound:
                    counts[name] = counts.get(name, 0) + 1
                continue
            if not isinstance(stmt, (cst.For, cst.While, cst.If, cst.With)):  # try, match...: count as many
                for name in names_of(stmt).bound:
                    counts[name] = counts.get(name, 0) + 2
                continue
            header = stmt.with_changes(body=cst.IndentedBlock([]))
            if hasattr(stmt, "orelse"):
                header = header.with_changes(orelse=None)
            for name in names_of(header).bound:
                counts[name] = counts.get(name, 0) + 2  # a loop or branch may bind it more than once
            for part in (stmt.body, getattr(stmt, "orelse", None)):
                while part is not None:
                    if isinstance(part, cst.IndentedBlock):
                        walk(part.body)
                        part = None
                    elif isinstance(part, (cst.Else,)):
                        walk(part.body.body if isinstance(part.body, cst.IndentedBlock) else [])
                        part = None
                    elif isinstance(part, cst.If):
                        walk(part.body.body if isinstance(part.body, cst.IndentedBlock) else [])
                        part = part.orelse
                    else:
                        part = None

    walk(module.body)
    # `global name` in a function: each call may rebind the module-level name
    for declared in nodes_of(module, cst.Global):
        for item in declared.names:
            counts[item.name.value] = counts.get(item.name.value, 0) + 2
    return counts


# -- session objects: `sess = tf.Session()` ... `sess.run(...)` ... `sess.close()` ---------------

_SESSION_OBJECT_CALLS = frozenset({"Session", "InteractiveSession"})
_INTERACTIVE = ("an `InteractiveSession`: TF 1 runs it with its own graph options (`place_pruned_graph`), and some "
                "programs then round differently from a `Session` (measured: losses 1 ulp apart on a `dynamic_rnn` "
                "+ `clip_by_global_norm` script); the eager program computes what a `Session` computes")


def _session_assignment(stmt: cst.CSTNode) -> Optional[Tuple[str, cst.Call]]:
    """``name = tf.Session(...)`` / ``tf.InteractiveSession(...)`` (any module path to them):
    ``(name, call)``."""
    assign = _single_assign(stmt)
    if assign is None or not isinstance(assign[0], cst.Name) or not isinstance(assign[1], cst.Call):
        return None
    parts = dotted(assign[1].func)
    if not parts or len(parts) < 2 or parts[-1] not in _SESSION_OBJECT_CALLS:
        return None
    return assign[0].value, assign[1]


def _session_object(stmt: cst.CSTNode) -> Optional[Tuple[str, cst.Call]]:
    """The same, opened without arguments (a target or a config the eager program would drop)."""
    found = _session_assignment(stmt)
    return found if found is not None and not found[1].args else None


def _uses_session(stmt: cst.CSTNode, name: str) -> bool:
    return name in names_of(stmt).read


def _close_call(stmt: cst.CSTNode, name: str) -> bool:
    expr = _expr_stmt(stmt)
    return (isinstance(expr, cst.Call) and not expr.args and isinstance(expr.func, cst.Attribute)
            and isinstance(expr.func.value, cst.Name) and expr.func.value.value == name
            and expr.func.attr.value == "close")


def _block_as_with(body: Sequence[cst.BaseStatement], module: cst.Module, origin: Dict[int, cst.CSTNode],
                   why: Dict[int, str]) -> Optional[List[cst.BaseStatement]]:
    """``body`` with its one session object turned into the ``with`` block TF 1 would run the same:
    the object's statement moves down to the first statement that uses the session (creating a
    session builds nothing in the graph, so the graph statements between run the same either
    way), and every statement from there to the end of the block -- a trailing ``close()``
    dropped -- becomes the block's body. None when the block has no such object or it cannot be
    read that way (``why[id(statement)]`` then says why, for the reader's decline)."""
    found = [(i, s) for i, s in enumerate(body) if _session_object(s) is not None]
    for s in body:
        if _session_assignment(s) is not None and _session_object(s) is None:
            why[id(s)] = "a session opened with arguments (a target or a config)"
    if len(found) > 1:
        for _, s in found:
            why[id(s)] = "more than one session object in the script"
    if len(found) != 1:
        return None
    at, stmt = found[0]
    name, call = _session_object(stmt)  # type: ignore[misc]
    what = f"the session `{name}`"
    if (dotted(call.func) or [""])[-1] == "InteractiveSession":
        why[id(stmt)] = _INTERACTIVE
        return None
    if _module_bindings(module).get(name, 0) != 1:
        why[id(stmt)] = f"`{name}` is bound more than once (which session a `run` uses depends on more than order)"
        return None
    for other in nodes_of(module, cst.FunctionDef) + nodes_of(module, cst.ClassDef) + nodes_of(module, cst.Lambda):
        if name in names_of(other).read:
            why[id(stmt)] = f"{what} is used inside a function or class (when it runs is not the script's order)"
            return None
    uses = [i for i in range(at + 1, len(body)) if _uses_session(body[i], name)]
    if not uses:
        why[id(stmt)] = f"{what} runs nothing in this block"
        return None
    first = uses[0]
    rest = list(body[first:])
    closes = [k for k, s in enumerate(rest) if _close_call(s, name)]
    if len(closes) > 1:
        why[id(stmt)] = f"{what} is closed more than once"
        return None
    if closes:
        k = closes[0]
        if any(_uses_session(s, name) for s in rest[k + 1:]):
            why[id(stmt)] = f"{what} is used after `{name}.close()`"
            return None
        rest = rest[:k] + rest[k + 1:]
    if not rest:
        return None
    head = rest[0].with_changes(leading_lines=[])  # (its comments move above the block)
    origin[id(head)] = rest[0]
    inner = cst.IndentedBlock(body=[head] + rest[1:])
    between = list(body[at + 1:first])
    lines = list(rest[0].leading_lines)
    if between:  # the session statement's comments stay where they were
        moved = between[0].with_changes(leading_lines=list(stmt.leading_lines) + list(between[0].leading_lines))
        origin[id(moved)] = between[0]
        between[0] = moved
    else:
        lines = list(stmt.leading_lines) + lines
    block = cst.With(items=[cst.WithItem(item=call, asname=cst.AsName(name=cst.Name(name)))], body=inner,
                     leading_lines=lines)
    origin[id(block)] = stmt
    return list(body[:at]) + between + [block]


def session_object_as_with(module: cst.Module) -> Tuple[cst.Module, Dict[int, cst.CSTNode], Dict[int, str]]:
    """``module`` with a session object at module level (or under ``if __name__ ==
    "__main__":``) read as a ``with tf.Session() as sess:`` block (:func:`_block_as_with`), and
    ``{id(new node): the original statement}`` to report on, and why a session object could not
    be read that way (by ``id`` of its statement). The module itself when there is none."""
    origin: Dict[int, cst.CSTNode] = {}
    why: Dict[int, str] = {}
    new_body = _block_as_with(module.body, module, origin, why)
    if new_body is not None:
        return module.with_changes(body=new_body), origin, why
    body = list(module.body)
    for index, stmt in enumerate(body):
        if isinstance(stmt, cst.If) and Reader._is_main(stmt) and isinstance(stmt.body, cst.IndentedBlock):
            inner = _block_as_with(stmt.body.body, module, origin, why)
            if inner is not None:
                body[index] = stmt.with_changes(body=stmt.body.with_changes(body=inner))
                origin[id(body[index])] = stmt
                return module.with_changes(body=body), origin, why
    return module, origin, why
