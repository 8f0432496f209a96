"""``apply_gradients`` calls whose gradients no rule followed: reported, never left silent.

TFC101-TFC103 start from the gradient computation (``compute_gradients``, ``tf.gradients``,
``minimize``) and :mod:`codemods.rules.tape.unfollowed` reports the computations they cannot follow.
What is left is an ``apply_gradients`` of a TF1 optimizer whose gradients come from somewhere no
rule starts: a parameter (an optimizer wrapper's own ``apply_gradients``, a helper called with
gradients from another function or file), a removed ``tf.contrib.eager`` gradient function, a
loop that clips ``tf.gradients`` element by element, constants in a test. Such a call still
trains with a ``tf.compat.v1`` optimizer on gradients TF 2 computes differently (with a tape), so
``check`` must not pass it in silence. :func:`unfollowed_applies` traces the gradient argument
back through the assignments, ``for`` targets and ``append``/``extend`` calls of its function (and,
for ``self.x``, of its class) and reports the call unless:

* the trace reaches a ``tf.GradientTape`` (``tape.gradient``): already the TF 2 form, or our own
  output;
* the trace reaches a ``compute_gradients`` / ``tf.gradients`` call that a rule planned or
  declined (the finding is there, on the same flow);
* in eager code (``tf.enable_eager_execution()``), the gradients come from neither a removed
  ``tf.contrib.eager`` function nor ``tf.gradients`` (a parameter, say): a caller's tape computed
  them, which is the TF 2 form already (TFC104 owns the optimizer there);
* the optimizer is not a TF1 one: a Keras optimizer (``tf.keras.optimizers.*``, ``keras.*``), our
  shim, another library's object -- or, for an optimizer whose class is unknown here (an attribute,
  a parameter), a module that shows no TF1 sign at all (no graph-mode API, no ``tf.train``
  optimizer, no ``tf.contrib``), so TF 2 code applying tape gradients it got from a caller is
  never flagged.

Nothing is rewritten here, so nothing here can change training.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Set, Tuple

import libcst as cst

from codemods.rules.analysis import dotted_name
from codemods.rules.tape import optimizers
from codemods.rules.tape.shim_optimizers import built_by_shim
from codemods.rules.tfnames import GRAPH_MODE_MARKERS, OPTIMIZER_WRAPPERS, TF1_OPTIMIZERS
from codemods.rules.tape.facts import EAGER_SWITCHES, MANUAL
from codemods.rules.tape.sites import Decline
from codemods.rules.tape.syntax import subtargets, dotted_reads
from codemods.rules.tape.tfapi import EAGER_GRADIENT_FUNCTIONS

if TYPE_CHECKING:  # pragma: no cover
    from codemods.rules.tape.planner import Planner

# Constructors of optimizers that are not TF1 ones (the TF 2 form already).
_KERAS_PREFIXES = ("tf.keras.", "tf.optimizers.", "keras.", "tf_keras.")
_STEPS = 8  # how many assignments back a gradient argument is traced


def unfollowed_applies(planner: "Planner", applies: Iterable[cst.Call], reported: Set[int]) -> List[Decline]:
    """A :class:`Decline` for each call of ``applies`` (``apply_gradients`` calls of receivers that
    are not foreign) that no finding covers (see the module docstring). ``reported`` holds the ids
    of the gradient calls already planned or declined."""
    facts = planner.facts
    tf1_module = tf1_only_module(facts.tf_used)
    out: List[Decline] = []
    for apply in applies:
        if id(apply) in reported or not apply.args:
            continue
        receiver = apply.func.value  # type: ignore[attr-defined]
        optimizer = optimizer_kind(planner, receiver)
        if optimizer is None or (optimizer == "unknown" and not tf1_module):
            continue
        trace = _Trace(planner, apply)
        if trace.tape or trace.followed(reported):
            continue
        if not facts.graph_mode and not (trace.eager or trace.gradient_calls):
            continue  # eager: the gradients a caller passes come from a tape (TFC104 owns the optimizer)
        out.append(Decline("apply", apply, (
            f"`{facts.code(apply.func, 40)}` applies gradients that no TF 2 rule follows: {trace.origin()}; "
            f"the rules rewrite only gradients computed by `compute_gradients`/`tf.gradients`/`minimize` in "
            f"the same block. In TF 2, compute them with `tf.GradientTape` (`tape.gradient(loss, variables)`) "
            f"and apply them with this optimizer, or keep the `tf.compat.v1` optimizer as it is {MANUAL}")))
    return out


# TF1-only API beyond the graph-mode markers: removed in TF 2 (tf_upgrade_v2 renames them to
# `tf.compat.v1`), so a module using one is TF1 code.
_TF1_ONLY = {"tf.gradients", "tf.initialize_all_variables", "tf.variable_scope", "tf.get_collection",
             "tf.trainable_variables", "tf.global_variables", "tf.train.Saver", "tf.summary.FileWriter",
             "tf.train.get_or_create_global_step", "tf.train.get_global_step",
             "tf.local_variables_initializer", "tf.assign", "tf.assign_add", "tf.train.Optimizer"}
_TF1_ONLY_PREFIXES = ("tf.contrib.", "tf.layers.", "tf.losses.")


def tf1_evidence_names() -> Tuple[str, ...]:
    """Identifiers one of which a module spells whenever :func:`unfollowed_applies` can report
    (a TF1 optimizer or wrapper class for a known receiver, a TF1-only API for an unknown one):
    the pre-pass's necessary condition (TFC202's ``SITES``)."""
    dotted = GRAPH_MODE_MARKERS | TF1_OPTIMIZERS | EAGER_SWITCHES | _TF1_ONLY | OPTIMIZER_WRAPPERS
    last = {name.rsplit(".", 1)[1] for name in dotted}
    prefixes = {prefix.split(".")[1] for prefix in _TF1_ONLY_PREFIXES}
    return tuple(sorted(last | prefixes | {"DistributedOptimizer", "clip_gradients_by_norm"}))


def tf1_only_module(tf_used: Set[str]) -> bool:
    """The module uses TF1-only API (graph mode, ``tf.train`` optimizers, contrib, TF1 eager)."""
    markers = GRAPH_MODE_MARKERS | TF1_OPTIMIZERS | EAGER_SWITCHES | _TF1_ONLY
    return bool(tf_used & markers) or any(name.startswith(_TF1_ONLY_PREFIXES) for name in tf_used)


def optimizer_kind(planner: "Planner", receiver: cst.BaseExpression) -> Optional[str]:
    """``"tf1"`` for a receiver known to be a TF1 optimizer (or a wrapper / subclass of one),
    ``"unknown"`` when its class is unknown here, None when it is not a TF1 optimizer."""
    facts = planner.facts
    info = planner.optimizer(receiver)
    if info.kind in ("tf1", "wrapped", "wrapper"):
        return "tf1"
    if info.kind == "custom":
        return "unknown"  # a class of this module that may derive from a TF optimizer
    if info.kind in optimizers.NOT_TF1_SITE_KINDS or built_by_shim(facts, receiver):
        return None  # (built_by_shim: tfclip_compat's own optimizers, `tfc.wrap_optimizer(...)`)
    if "not defined in this file" in info.what:
        return None  # a fragment: nothing to follow, and the rules' business if it is a site
    ctor = _constructor(facts, receiver)
    if ctor is not None:
        names = facts.tf_names(ctor.func) | facts.qualified(ctor.func)
        if any(name.startswith(_KERAS_PREFIXES) for name in names):
            return None
        if isinstance(ctor.func, cst.Name) and ctor.func.value == "super":
            return None  # an optimizer subclass calling its base: the class is reported, not this call
    return "unknown"


def _constructor(facts, receiver: cst.BaseExpression) -> Optional[cst.Call]:
    if isinstance(receiver, cst.Call):
        return receiver
    if isinstance(receiver, cst.Name):
        found = facts.assignments(receiver)
        values = [facts.assigned_value(a) for a in found]
        if len(values) == 1 and isinstance(values[0], cst.Call):
            return values[0]
    return None


class _Trace:
    """Where the gradients given to one ``apply_gradients`` call come from, traced back through
    its function (and, for ``self.x``, its class)."""

    def __init__(self, planner: "Planner", apply: cst.Call) -> None:
        facts = self.facts = planner.facts
        self.scope = _scope(facts, apply)
        self.klass = facts.class_of(apply)
        self.tape = False
        self.gradient_calls: List[cst.Call] = []
        self.eager: List[cst.Call] = []
        self.params: List[str] = []
        self.placeholders: List[cst.Call] = []
        gradients = _gradient_argument(apply)
        self.expression = facts.code(gradients, 40)
        bindings = _Bindings(facts, self.scope)
        if self.klass is not None:
            bindings.add_class(self.klass)
        direct = dotted_reads(gradients)
        wanted = direct | {n for arg in apply.args for n in dotted_reads(arg.value)
                           if arg.keyword is None or arg.keyword.value not in ("name", "global_step")}
        for arg in apply.args:
            self._inspect(arg.value)
        seen: Set[str] = set()
        for _ in range(_STEPS):
            new = wanted - seen
            if not new:
                break
            seen |= new
            for name in sorted(new):
                for value in bindings.values.get(name, ()):
                    self._inspect(value)
                    wanted |= dotted_reads(value)
        params = _params(facts, apply)
        self.params = sorted(name for name in direct if name in params and not bindings.values.get(name))

    def _inspect(self, node: cst.CSTNode) -> None:
        found = _CallsIn()
        node.visit(found)
        for call in found.calls:
            func = call.func
            attr = func.attr.value if isinstance(func, cst.Attribute) else (
                func.value if isinstance(func, cst.Name) else "")
            if attr == "gradient" and isinstance(func, cst.Attribute):
                self.tape = True
            elif attr == "GradientTape":
                self.tape = True
            elif attr == "compute_gradients" and isinstance(func, cst.Attribute):
                self.gradient_calls.append(call)
            elif attr == "gradients" and "tf.gradients" in self.facts.tf_names(func):
                self.gradient_calls.append(call)
            elif self._eager(func):
                self.eager.append(call)
            elif isinstance(func, (cst.Name, cst.Attribute)) and "tf.placeholder" in self.facts.tf_names(func):
                self.placeholders.append(call)

    def _eager(self, func: cst.BaseExpression) -> bool:
        names = self.facts.tf_names(func) if isinstance(func, (cst.Name, cst.Attribute)) else set()
        if names & EAGER_GRADIENT_FUNCTIONS:
            return True
        last = func.attr.value if isinstance(func, cst.Attribute) else ""
        return bool(last) and any(name.endswith("." + last) for name in EAGER_GRADIENT_FUNCTIONS)

    def followed(self, reported: Set[int]) -> bool:
        """The gradients come from a computation a rule planned or declined (reported there)."""
        return not self.eager and any(id(call) in reported for call in self.gradient_calls)

    def origin(self) -> str:
        facts = self.facts
        if self.eager:
            call = self.eager[0]
            return (f"they come from {facts.where(call, 50)}, a `tf.contrib.eager` gradient function, removed "
                    f"in TF 2")
        if self.gradient_calls:
            call = self.gradient_calls[0]
            return f"they come from {facts.where(call, 50)} through a path the rules do not follow (a loop, " \
                   f"another object or method)"
        if self.placeholders:
            return (f"they are fed through {facts.where(self.placeholders[0], 50)} (computed outside this "
                    f"graph, e.g. accumulated over episodes, and fed in)")
        if self.params:
            names = ", ".join(f"`{name}`" for name in self.params[:3])
            function = self.scope.name.value if isinstance(self.scope, cst.FunctionDef) else "the function"
            what = "a parameter" if len(self.params) == 1 else "parameters"
            return f"they arrive as {names}, {what} of `{function}`, computed by its callers"
        return f"`{self.expression}` is not computed from a loss in this function"


def _gradient_argument(apply: cst.Call) -> cst.BaseExpression:
    """The ``grads_and_vars`` argument of an ``apply_gradients`` call (its first, or by keyword)."""
    for arg in apply.args:
        if arg.keyword is not None and arg.keyword.value == "grads_and_vars":
            return arg.value
    return apply.args[0].value


def _scope(facts, node: cst.CSTNode) -> cst.CSTNode:
    """The function holding ``node`` (a lambda binds nothing but its parameters: its enclosing
    function's assignments are what it reads), or the module."""
    for anc in facts.ancestors(node):
        if isinstance(anc, cst.FunctionDef):
            return anc
    return facts.module


def _params(facts, node: cst.CSTNode) -> Set[str]:
    """Parameters of every function and lambda enclosing ``node`` up to its function."""
    out: Set[str] = set()
    for anc in facts.ancestors(node):
        if isinstance(anc, (cst.FunctionDef, cst.Lambda)):
            params = anc.params
            every = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
            for star in (params.star_arg, params.star_kwarg):
                if isinstance(star, cst.Param):
                    every.append(star)
            out |= {p.name.value for p in every}
        if isinstance(anc, cst.FunctionDef):
            break
    return out


class _CallsIn(cst.CSTVisitor):
    def __init__(self) -> None:
        self.calls: List[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)


class _Bindings(cst.CSTVisitor):
    """What each dotted name is assigned in one scope (not in nested functions or classes):
    assignment values, ``for`` iterables, ``append``/``extend``/``insert`` arguments."""

    def __init__(self, facts, scope: cst.CSTNode) -> None:
        self.facts = facts
        self.root = scope
        self.values: Dict[str, List[cst.CSTNode]] = {}
        scope.visit(self)

    def add_class(self, klass: cst.ClassDef) -> None:
        """``self.x`` bindings of every method of ``klass``."""
        for stmt in klass.body.body:
            if isinstance(stmt, cst.FunctionDef) and stmt is not self.root:
                other = _Bindings(self.facts, stmt)
                for name, values in other.values.items():
                    if name.startswith("self."):
                        self.values.setdefault(name, []).extend(values)

    def _nested(self, node: cst.CSTNode) -> bool:
        return node is not self.root

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return not self._nested(node)

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return not self._nested(node)

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return not self._nested(node)

    def _bind(self, target: cst.BaseExpression, value: cst.CSTNode) -> None:
        for sub in subtargets(target):
            name = dotted_name(sub) if isinstance(sub, (cst.Name, cst.Attribute)) else None
            if name is None and isinstance(sub, cst.Subscript):
                name = dotted_name(sub.value) if isinstance(sub.value, (cst.Name, cst.Attribute)) else None
            if name:
                self.values.setdefault(name, []).append(value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind(node.target, node.value)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target, node.iter)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("append", "extend", "insert"):
            name = dotted_name(func.value) if isinstance(func.value, (cst.Name, cst.Attribute)) else None
            if name:
                for arg in node.args:
                    self.values.setdefault(name, []).append(arg.value)
