"""The planner behind the TF 2 form rules: find gradient sites, prove or decline, rewrite.

A *gradient site* is one of

* ``compute_apply`` (TFC101): ``opt.compute_gradients(loss)`` -> optional clipping ->
  ``opt.apply_gradients(...)`` in one block;
* ``tf_gradients`` (TFC102): ``grads = tf.gradients(loss, tvars)`` -> optional
  ``tf.clip_by_global_norm`` -> ``opt.apply_gradients(zip(grads, tvars), ...)``;
* ``minimize`` (TFC103): ``opt.minimize(loss, ...)`` on a ``tf.train.*Optimizer``, possibly
  wrapped by ``tf.contrib.estimator.clip_gradients_by_norm``.

For each site the planner either builds a :class:`Plan` (the TF 2 form: the statements that
compute the loss wrapped in ``with tf.GradientTape() as tape:``, ``tape.gradient``, the same
clipping, ``apply_gradients(zip(...))``) or a :class:`Decline` (a reason, reported as TFC202,
code untouched). Look-alikes (``compute_gradients``/``tf.gradients`` whose result never
reaches ``apply_gradients``, ``minimize`` on a non-TensorFlow object) produce nothing.

What "provably equivalent" means here (the gates, each documented where it is checked):

1. **Resource variables.** A tape cannot differentiate TF1 ``RefVariable``s (measured:
   ``AttributeError: 'RefVariable' object has no attribute '_id'``), so a module that calls
   ``disable_v2_behavior``/``disable_resource_variables`` is declined.
2. **The loss is computed in the same block.** The backward slice of the loss (every earlier
   statement of the block binding a name the loss reads, transitively) and everything between
   it and the gradient call is wrapped in the tape, so every op on a path variable -> loss is
   recorded. A name the slice reads but does not bind must be an import, a builtin, a
   function/class, a literal, or a value from a source that carries no gradient path
   (placeholders, constants, variables and Keras objects, whose *reads* happen inside the
   tape). A function parameter may carry such a path: the fix is then **unsafe**. A loss that
   is itself a parameter, a global computed elsewhere, or undefined (a fragment) is declined.
3. **The variables are trainable.** ``compute_gradients``/``tf.gradients`` differentiate any
   variable; a tape watches only trainable ones. ``var_list`` must be absent (then
   ``tf.compat.v1.trainable_variables()``, the TF1 default) or built from
   ``trainable_variables()``, ``model.trainable_variables``/``trainable_weights``,
   ``tf.get_collection(TRAINABLE_VARIABLES)``, or variables created here without
   ``trainable=False``.
4. **Nothing the tape cannot carry over:** ``gate_gradients``, ``aggregation_method``,
   ``colocate_gradients_with_ops``, ``grad_loss``, ``grad_ys``, ``stop_gradients`` arguments,
   a distribution strategy (``compute_gradients`` scales MEAN losses by 1/replicas), a call
   inside ``tf.cond``/a lambda/an expression, a wrapper optimizer (CrossShard, SyncReplicas,
   Horovod) or a custom optimizer subclass are declined.
5. **Clipping unchanged:** only ``tf.clip_by_value``/``clip_by_norm``/``clip_by_average_norm``
   applied to each gradient (optionally guarded by ``is None``) or ``tf.clip_by_global_norm``
   on the list are recognised; any other transform (``MyCapper(gv[0])``, lambdas, unknown
   functions) is declined.

Graph-mode modules keep their ``tf.compat.v1.train`` optimizers (Keras 3 optimizers do not
work there); the emitted TF 2 form runs in graph mode and eagerly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
from libcst.metadata import (
    Assignment,
    ImportAssignment,
    ParentNodeProvider,
    QualifiedNameProvider,
    ScopeProvider,
)

from codemods._analysis import (
    BUILTIN_NAMES,
    DATA_MODULES,
    TAPE_SAFE_SOURCES,
    TfSpelling,
    all_identifiers,
    call_args,
    dotted_name,
    fresh_name,
    has_comment,
    is_literal,
    names_bound,
    names_read,
    tape_unsafe_reason,
    tf_spelling,
)
from codemods._base import FixSafety, TfcCodemod
from codemods._names import GRAPH_MODE_MARKERS, OPTIMIZER_WRAPPERS, TF1_OPTIMIZERS, tf_names_of

Block = Union[cst.Module, cst.IndentedBlock]

PER_TENSOR_CLIPS = {"tf.clip_by_value", "tf.clip_by_norm", "tf.clip_by_average_norm"}
CLIP_GRADIENTS_BY_NORM = "tf.contrib.estimator.clip_gradients_by_norm"
TRAINABLE_LIST_CALLS = {"tf.trainable_variables"}
VARIABLE_CONSTRUCTORS = {"tf.Variable", "tf.get_variable"}
REF_VARIABLE_SWITCHES = {"tf.disable_v2_behavior", "tf.disable_resource_variables"}
EAGER_SWITCHES = {"tf.enable_eager_execution", "tf.enable_v2_behavior"}
# Control-flow functions whose branch callables must not be rewritten.
CONTROL_FLOW = {"tf.cond", "tf.case", "tf.while_loop", "tf.switch_case"}
UNCARRIED_ARGS = ("gate_gradients", "aggregation_method", "colocate_gradients_with_ops", "grad_loss")
GRADIENTS_UNCARRIED = ("grad_ys", "gate_gradients", "aggregation_method",
                       "colocate_gradients_with_ops", "stop_gradients", "unconnected_gradients", "name")

MANUAL = "(manual edit required)"


@dataclass
class Decline:
    """A recognised site that cannot be rewritten provably; reported as TFC202."""

    kind: str
    node: cst.CSTNode
    reason: str


@dataclass
class Plan:
    """A provable rewrite of one site, applied to one block."""

    kind: str
    node: cst.CSTNode  # the gradient call: diagnostic position
    block: Block
    region_start: int  # first statement moved into the tape (== grad_index: none)
    region_end: int  # one past the last statement moved into the tape
    grad_index: int  # the statement computing the gradients
    tape_header: str  # "with tf.GradientTape() as tape:"
    tape_extra: List[cst.BaseStatement]  # statements appended inside the tape
    replacements: Dict[int, List[cst.BaseStatement]]
    last_index: int  # last statement touched (for overlap checks)
    safety: FixSafety = FixSafety.SAFE
    note: str = ""
    renames: Dict[cst.CSTNode, str] = field(default_factory=dict)
    message: str = ""
    removed: List[cst.CSTNode] = field(default_factory=list)  # deleted calls (imports to drop)


class _Reject(Exception):
    """Internal: a gate failed; carries the TFC202 reason."""

    def __init__(self, reason: str, node: Optional[cst.CSTNode] = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.node = node


def _code(module: cst.Module, node: cst.CSTNode) -> str:
    return module.code_for_node(node).strip()


def _single_small(stmt: cst.BaseStatement) -> Optional[cst.BaseSmallStatement]:
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        return stmt.body[0]
    return None


def _bind_v1_args(call: cst.Call, method: str, params: Tuple[str, ...]) -> Dict[str, cst.BaseExpression]:
    """Bind a TF1 optimizer method call's arguments to its signature ``params``, as Python
    would; anything we cannot bind statically (``*args``, unknown names) is a decline."""
    positional, keywords = call_args(call)
    if positional is None:
        raise _Reject(f"`{method}` is called with `*args`/`**kwargs` {MANUAL}")
    if len(positional) > len(params):
        raise _Reject(f"too many arguments to `{method}` {MANUAL}")
    args = dict(zip(params, positional))
    for key, value in keywords.items():
        if key not in params or key in args:
            raise _Reject(f"unexpected argument `{key}` to `{method}` {MANUAL}")
        args[key] = value
    return args


def _method_call(node: cst.BaseExpression, method: str) -> Optional[cst.Call]:
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == method
    ):
        return node
    return None


class Planner:
    """Finds and plans every gradient site of one module (see the module docstring)."""

    def __init__(self, rule: TfcCodemod, module: cst.Module) -> None:
        self.rule = rule
        self.module = module
        self.spelling: TfSpelling = tf_spelling(module)
        self.taken: Set[str] = all_identifiers(module)
        self.plans: List[Plan] = []
        self.declines: List[Decline] = []
        self._handled: Set[int] = set()
        self.removed_calls: List[cst.Call] = []  # whose imports may become unused
        self.unimported_tf = False  # set when `tf.X` is read without any import (a fragment)
        used = _UsedTfNames(self)
        module.visit(used)
        self.tf_used = used.names
        self.ref_variables = bool(self.tf_used & REF_VARIABLE_SWITCHES)
        self.graph_mode = bool(self.tf_used & GRAPH_MODE_MARKERS) or not (self.tf_used & EAGER_SWITCHES)
        self.distributed = any(n.startswith("tf.distribute.") for n in self.tf_used)
        self.imports_tf = bool(self.tf_used) or not self.spelling.needs_import

    # -- metadata helpers -------------------------------------------------------------
    def tf_names(self, node: cst.CSTNode) -> Set[str]:
        """Canonical TF names of a node. In a fragment that never imports TensorFlow (a
        snippet pasted from an answer), ``tf.X`` and bare TF1 optimizer class names are
        recognised too, but only to *report*: :meth:`_module_gates` declines every fix there."""
        names = tf_names_of(self.rule, node)
        if names:
            return names
        dotted = dotted_name(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
        if dotted is None:
            return names
        head = dotted.split(".")[0]
        if isinstance(node, cst.Attribute):
            probe: cst.CSTNode = node
            while isinstance(probe, cst.Attribute):
                probe = probe.value
        else:
            probe = node
        if not isinstance(probe, cst.Name):
            return names
        scope = self.scope(probe)
        if scope is None or list(scope[head]):
            return names
        if head == "tf" and "." in dotted:
            self.unimported_tf = True
            return {dotted}
        if "." not in dotted and f"tf.train.{dotted}" in TF1_OPTIMIZERS:
            self.unimported_tf = True
            return {f"tf.train.{dotted}"}
        return names

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        try:
            return self.rule.get_metadata(ParentNodeProvider, node)
        except KeyError:
            return None

    def scope(self, node: cst.CSTNode):
        try:
            return self.rule.get_metadata(ScopeProvider, node)
        except KeyError:
            return None

    def assignments(self, name: cst.Name) -> list:
        scope = self.scope(name)
        if scope is None:
            return []
        return list(scope[name.value])

    def assigned_value(self, name: cst.Name) -> Optional[cst.BaseExpression]:
        """The value of the only assignment of ``name`` (``x = value``), else None."""
        found = self.assignments(name)
        if len(found) != 1 or not isinstance(found[0], Assignment):
            return None
        target = found[0].node
        parent = self.parent(target)
        if isinstance(parent, cst.AssignTarget):
            assign = self.parent(parent)
            if isinstance(assign, cst.Assign) and len(assign.targets) == 1:
                return assign.value
        return None

    def accesses_outside(self, name: cst.Name, allowed: Sequence[cst.CSTNode]) -> bool:
        """Whether ``name`` (resolved in its scope) is read anywhere outside ``allowed`` nodes."""
        scope = self.scope(name)
        if scope is None:
            return True
        allowed_ids: Set[int] = set()
        for node in allowed:
            for sub in _walk(node):
                allowed_ids.add(id(sub))
        for access in scope.accesses[name.value]:
            if id(access.node) not in allowed_ids:
                return True
        return False

    # -- entry point ------------------------------------------------------------------
    def run(self) -> None:
        blocks = _BlockCollector()
        self.module.visit(blocks)
        for block in blocks.blocks:
            self._plan_block(block)
        # Sites not at statement level (inside tf.cond lambdas, expressions, ...).
        calls = _GradientCalls()
        self.module.visit(calls)
        for call, method in calls.calls:
            if id(call) in self._handled:
                continue
            self._stray_call(call, method)
        self._drop_overlaps()

    def _stray_call(self, call: cst.Call, method: str) -> None:
        kind = {"compute_gradients": "compute_apply", "minimize": "minimize"}.get(method)
        if kind is None:
            return
        receiver = call.func.value  # type: ignore[attr-defined]
        info = self.classify_optimizer(receiver)
        if info[0] == "foreign" or not self.imports_tf:
            return
        where = self._enclosing_control_flow(call)
        if where:
            reason = f"`{method}` is called inside `{where}`; a tape cannot be placed around the branch's loss {MANUAL}"
        else:
            reason = (f"`{method}` is not a statement of its own (it is part of a larger expression); "
                      f"rewrite it as `with tf.GradientTape()` + `apply_gradients` by hand {MANUAL}")
        self.declines.append(Decline(kind, call, reason))

    def _enclosing_control_flow(self, node: cst.CSTNode) -> Optional[str]:
        current = self.parent(node)
        while current is not None:
            if isinstance(current, cst.Call):
                names = self.tf_names(current.func) & CONTROL_FLOW
                if names:
                    return sorted(names)[0]
            current = self.parent(current)
        return None

    def _drop_overlaps(self) -> None:
        by_block: Dict[int, List[Plan]] = {}
        for plan in self.plans:
            by_block.setdefault(id(plan.block), []).append(plan)
        keep: List[Plan] = []
        for plans in by_block.values():
            for plan in plans:
                clash = [
                    other for other in plans
                    if other is not plan
                    and not (plan.last_index < other.region_start or other.last_index < plan.region_start)
                ]
                if clash:
                    self.declines.append(Decline(
                        plan.kind, plan.node,
                        "several gradient computations share the statements that compute their losses; "
                        f"one tape per loss cannot be placed without reordering code {MANUAL}",
                    ))
                else:
                    keep.append(plan)
        self.plans = keep

    # -- per block --------------------------------------------------------------------
    def _plan_block(self, block: Block) -> None:
        body = list(block.body)
        for index, stmt in enumerate(body):
            small = _single_small(stmt)
            if small is None:
                continue
            value = _statement_value(small)
            if value is None:
                continue
            try:
                self._plan_statement(block, body, index, small, value)
            except _Reject as reject:
                call = _find_gradient_call(value, self)
                kind = call[1] if call else "minimize"
                node = reject.node or (call[0] if call else small)
                self.declines.append(Decline(kind, node, reject.reason))

    def _plan_statement(self, block: Block, body: List[cst.BaseStatement], index: int,
                        small: cst.BaseSmallStatement, value: cst.BaseExpression) -> None:
        # `opt.minimize(...)` as a whole statement value
        call = _method_call(value, "minimize")
        if call is not None:
            self._handled.add(id(call))
            kind_info = self.classify_optimizer(call.func.value)  # type: ignore[attr-defined]
            if kind_info[0] == "foreign" or not self.imports_tf:
                return
            self._plan_minimize(block, body, index, small, call, kind_info)
            return
        # `x = opt.compute_gradients(...)` / `g, v = zip(*opt.compute_gradients(...))`
        compute = _method_call(value, "compute_gradients")
        zipped = False
        if compute is None and _is_zip_star(value):
            compute = _method_call(value.args[0].value, "compute_gradients")  # type: ignore[attr-defined]
            zipped = compute is not None
        if compute is not None:
            self._handled.add(id(compute))
            kind_info = self.classify_optimizer(compute.func.value)  # type: ignore[attr-defined]
            if kind_info[0] == "foreign" or not self.imports_tf:
                return
            self._plan_compute(block, body, index, small, compute, zipped, kind_info)
            return
        if isinstance(value, cst.Call) and "tf.gradients" in self.tf_names(value.func):
            self._plan_tf_gradients(block, body, index, small, value)

    # -- optimizer classification ----------------------------------------------------
    def classify_optimizer(self, receiver: cst.BaseExpression, depth: int = 0) -> tuple:
        """``("tf1", ctor_call, class)``, ``("wrapped", wrapper_call, inner_info, wrapper_name)``,
        ``("wrapper", name)``, ``("custom", name)``, ``("foreign", name)`` or ``("unknown", why)``."""
        if depth > 5:
            return ("unknown", "the optimizer is built through too many names")
        if isinstance(receiver, cst.Call):
            names = self.tf_names(receiver.func)
            tf1 = names & TF1_OPTIMIZERS
            if tf1:
                return ("tf1", receiver, sorted(tf1)[0])
            if CLIP_GRADIENTS_BY_NORM in names:
                positional, keywords = call_args(receiver)
                if positional is None:
                    return ("unknown", "`clip_gradients_by_norm` is called with `*args`/`**kwargs`")
                inner = positional[0] if positional else keywords.get("optimizer")
                if inner is None:
                    return ("unknown", "`clip_gradients_by_norm` has no optimizer argument")
                return ("wrapped", receiver, self.classify_optimizer(inner, depth + 1), None)
            wrappers = names & OPTIMIZER_WRAPPERS
            if wrappers:
                return ("wrapper", sorted(wrappers)[0])
            qualified = self._qualified(receiver.func)
            if any(q.endswith("DistributedOptimizer") for q in qualified):
                return ("wrapper", sorted(qualified)[0])
            if isinstance(receiver.func, cst.Name) and self._is_local_class(receiver.func):
                return ("custom", receiver.func.value)
            if qualified and not names and all(q.split(".")[0] in ("scipy", "numpy", "torch", "jax", "optax")
                                               for q in qualified):
                return ("foreign", sorted(qualified)[0])
            return ("unknown", f"`{_code(self.module, receiver.func)}` is not a `tf.train` optimizer class")
        if isinstance(receiver, cst.Name):
            found = self.assignments(receiver)
            if not found:
                return ("unknown", f"`{receiver.value}` is not defined in this file")
            if any(isinstance(a, ImportAssignment) for a in found):
                qualified = self._qualified(receiver)
                if qualified and all(q.split(".")[0] in ("scipy", "numpy", "torch", "jax", "optax") for q in qualified):
                    return ("foreign", sorted(qualified)[0])
                return ("unknown", f"`{receiver.value}` is imported; its optimizer class is unknown here")
            if any(isinstance(a.node, cst.Param) for a in found if isinstance(a, Assignment)):
                return ("unknown", f"the optimizer `{receiver.value}` is a parameter; its class is unknown here")
            values = []
            for a in found:
                value = self.assigned_value_of(a)
                if value is None:
                    return ("unknown", f"`{receiver.value}` is not bound by a plain assignment")
                values.append(value)
            infos = [self.classify_optimizer(v, depth + 1) for v in values]
            for info in infos:
                if info[0] in ("wrapper", "custom", "foreign"):
                    return info
            if len(infos) != 1:
                return ("unknown", f"`{receiver.value}` is assigned more than once")
            info = infos[0]
            if info[0] == "tf1":
                return ("tf1", info[1], info[2], receiver)
            if info[0] == "wrapped":
                return ("wrapped", info[1], info[2], receiver)
            return info
        if isinstance(receiver, cst.Attribute):
            return ("unknown", f"the optimizer `{_code(self.module, receiver)}` is an attribute; its class is unknown here")
        return ("unknown", "the optimizer expression is not a name or a constructor call")

    def assigned_value_of(self, assignment) -> Optional[cst.BaseExpression]:
        if not isinstance(assignment, Assignment):
            return None
        parent = self.parent(assignment.node)
        if isinstance(parent, cst.AssignTarget):
            assign = self.parent(parent)
            if isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(
                assign.targets[0].target, cst.Name
            ):
                return assign.value
        return None

    def _qualified(self, node: cst.CSTNode) -> Set[str]:
        try:
            return {q.name for q in self.rule.get_metadata(QualifiedNameProvider, node, set())}
        except KeyError:
            return set()

    def _is_local_class(self, name: cst.Name) -> bool:
        return any(
            isinstance(a, Assignment) and isinstance(a.node, cst.ClassDef)
            for a in self.assignments(name)
        )

    def _optimizer_gate(self, info: tuple, method: str, allow_wrapped: bool) -> None:
        kind = info[0]
        if kind == "tf1":
            return
        if kind == "wrapped" and allow_wrapped:
            inner = info[2]
            if inner[0] != "tf1":
                self._optimizer_gate(inner, method, allow_wrapped=False)
            return
        if kind == "wrapped":
            raise _Reject(f"`clip_gradients_by_norm` wraps another wrapper here {MANUAL}")
        if kind == "wrapper":
            raise _Reject(
                f"`{method}` on `{info[1]}`: the wrapper does more than the wrapped optimizer "
                f"(cross-replica aggregation/sync), which a tape + `apply_gradients` does not reproduce {MANUAL}"
            )
        if kind == "custom":
            raise _Reject(
                f"`{method}` on the custom optimizer class `{info[1]}`: it may override "
                f"`compute_gradients`/`minimize`, so a tape is not provably the same {MANUAL}"
            )
        raise _Reject(f"cannot prove this is a `tf.train` optimizer: {info[1]} {MANUAL}")

    # -- gates shared by all kinds -----------------------------------------------------
    def _module_gates(self) -> None:
        if self.unimported_tf:
            raise _Reject(
                "this file uses `tf` without importing TensorFlow (a fragment): names and the loss cannot be "
                f"resolved, so no rewrite is provable {MANUAL}"
            )
        if self.ref_variables:
            raise _Reject(
                "this module disables resource variables (`disable_v2_behavior`/`disable_resource_variables`); "
                "a `tf.GradientTape` cannot differentiate TF1 reference variables. Remove that call first, "
                f"or keep `compute_gradients`/`minimize` {MANUAL}"
            )
        if self.distributed:
            raise _Reject(
                "this module uses `tf.distribute`: `compute_gradients`/`minimize` scale a MEAN loss by "
                f"1/replicas and a tape does not; see TFC201 {MANUAL}"
            )

    # -- the loss slice ---------------------------------------------------------------
    def loss_region(self, body: List[cst.BaseStatement], index: int, loss: cst.BaseExpression,
                    callable_loss: bool) -> Tuple[int, int, FixSafety, str]:
        """First statement index to wrap in the tape, and the safety of doing so."""
        if callable_loss:
            return index, index, FixSafety.SAFE, ""
        if isinstance(loss, cst.Name):
            # The loss itself must be computed in this block.
            bound_here = any(loss.value in names_bound(body[j]) for j in range(index))
            if not bound_here:
                origin = self._origin(loss)
                raise _Reject(
                    f"the loss `{loss.value}` {origin}; a `tf.GradientTape` must record the ops that "
                    f"compute it, so wrap that computation yourself {MANUAL}"
                )
        elif not isinstance(loss, (cst.Call, cst.BinaryOperation, cst.Subscript, cst.Attribute)):
            raise _Reject(f"unsupported loss expression `{_code(self.module, loss)}` {MANUAL}")
        needed = names_read(loss)
        start = index
        end: Optional[int] = None
        for j in range(index - 1, -1, -1):
            bound = names_bound(body[j])
            if bound & needed and not self._tape_neutral(body[j]):
                start = j
                if end is None:
                    end = j + 1  # statements after the last one computing the loss stay outside
                needed |= names_read(body[j])
        if end is None:
            end = index
        bound_in_region: Set[str] = set()
        for j in range(start, end):
            why = tape_unsafe_reason(body[j])
            if why:
                raise _Reject(f"a statement that computes the loss contains {why}, which cannot move inside "
                              f"`with tf.GradientTape()` {MANUAL}", body[j])
            if _find_any_gradient_call(body[j], self):
                raise _Reject("another gradient computation sits among the statements that compute the loss "
                              f"{MANUAL}", body[j])
            bound_in_region |= names_bound(body[j])
        safety = FixSafety.SAFE
        notes: List[str] = []
        region_ids = {id(n) for j in range(start, end) for n in _walk(body[j])}
        for name in sorted(needed - bound_in_region):
            verdict = self._external_verdict(name, body[index], region_ids)
            if verdict is None:
                continue
            level, text = verdict
            if level == "unsafe":
                safety = FixSafety.UNSAFE
                notes.append(text)
            else:
                raise _Reject(text)
        if isinstance(loss, cst.Name) and loss.value not in bound_in_region:
            raise _Reject(
                f"the loss `{loss.value}` {self._origin(loss)}; a `tf.GradientTape` must record the ops that "
                f"compute it, so wrap that computation yourself {MANUAL}"
            )
        if start == index:
            end = index
        return start, end, safety, "; ".join(notes)

    def _origin(self, name: cst.Name) -> str:
        found = self.assignments(name)
        if not found:
            return "is not defined in this file (a fragment, or it comes from elsewhere)"
        if any(isinstance(a, ImportAssignment) for a in found):
            return "is imported from another module"
        if all(isinstance(a, Assignment) and self._tape_safe_source(self.assigned_value_of(a) or cst.Name("_"))
               for a in found):
            return "is an input or a constant, not computed from variables"
        if any(isinstance(a, Assignment) and isinstance(a.node, cst.Param) for a in found):
            return "is a parameter (computed by the caller, maybe in another file)"
        return "is computed outside this block"

    def _tape_neutral(self, stmt: cst.BaseStatement) -> bool:
        """Imports, defs, classes and ``x = <tape-safe source>``: nothing to record, keep outside."""
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            return True
        small = _single_small(stmt)
        if isinstance(small, (cst.Import, cst.ImportFrom)):
            return True
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
            return self._tape_safe_source(small.value)
        return False

    def _external_verdict(self, name: str, anchor: cst.BaseStatement,
                          region_ids: Set[int] = frozenset()) -> Optional[Tuple[str, str]]:
        """None = safe to read from outside the tape; ("unsafe"|"decline", message)."""
        if name in BUILTIN_NAMES:
            return None
        small = _single_small(anchor)
        probe = _scope_probe(self, anchor)
        scope = self.scope(probe) if probe is not None else None
        if scope is None:
            return ("decline", f"cannot resolve `{name}` {MANUAL}")
        found = list(scope[name])
        if not found:
            return ("decline", f"the loss reads `{name}`, which is not defined in this file {MANUAL}")
        verdicts = []
        for assignment in found:
            if isinstance(assignment, ImportAssignment):
                continue
            node = getattr(assignment, "node", None)
            if id(node) in region_ids:
                continue
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                continue
            if isinstance(node, cst.Param):
                verdicts.append(("unsafe", f"the loss reads the parameter `{name}`: if the caller computed it from "
                                           "trainable variables, those paths are outside the tape"))
                continue
            value = self.assigned_value_of(assignment)
            if value is not None and self._tape_safe_source(value):
                continue
            verdicts.append(("decline", f"the loss reads `{name}`, computed outside the statements that can be "
                                        f"wrapped in the tape (it may depend on trainable variables) {MANUAL}"))
        del small
        for level in ("decline", "unsafe"):
            for verdict in verdicts:
                if verdict[0] == level:
                    return verdict
        return None

    def _tape_safe_source(self, value: cst.BaseExpression) -> bool:
        if is_literal(value):
            return True
        if isinstance(value, cst.Call):
            names = self.tf_names(value.func)
            if any(n.startswith(p) for n in names for p in TAPE_SAFE_SOURCES) or names & TF1_OPTIMIZERS:
                return True
            qualified = self._qualified(value.func)
            if qualified and not names and all(q.split(".")[0] in DATA_MODULES for q in qualified):
                return True
        return False

    # -- var_list ---------------------------------------------------------------------
    def trainable(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """Whether ``expr`` provably evaluates to trainable variables only."""
        if depth > 5:
            return False
        if isinstance(expr, cst.Call):
            names = self.tf_names(expr.func)
            if names & TRAINABLE_LIST_CALLS:
                return True
            if "tf.get_collection" in names and expr.args:
                key = self.tf_names(expr.args[0].value)
                return "tf.GraphKeys.TRAINABLE_VARIABLES" in key
            if isinstance(expr.func, cst.Name) and expr.func.value == "list" and len(expr.args) == 1:
                return self.trainable(expr.args[0].value, depth + 1)
            return False
        if isinstance(expr, cst.Attribute):
            return expr.attr.value in ("trainable_variables", "trainable_weights")
        if isinstance(expr, (cst.List, cst.Tuple)):
            return bool(expr.elements) and all(
                not isinstance(e, cst.StarredElement) and self._trainable_variable(e.value, depth)
                for e in expr.elements
            )
        if isinstance(expr, cst.ListComp):
            comp = expr.for_in
            return (
                comp.inner_for_in is None
                and isinstance(comp.target, cst.Name)
                and isinstance(expr.elt, cst.Name)
                and expr.elt.value == comp.target.value
                and self.trainable(comp.iter, depth + 1)
            )
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
            return self.trainable(expr.left, depth + 1) and self.trainable(expr.right, depth + 1)
        if isinstance(expr, cst.Name):
            value = self.assigned_value(expr)
            return value is not None and self.trainable(value, depth + 1)
        return False

    def _trainable_variable(self, expr: cst.BaseExpression, depth: int) -> bool:
        if isinstance(expr, cst.Name):
            value = self.assigned_value(expr)
            if value is None:
                return False
            expr = value
        if isinstance(expr, cst.Call) and self.tf_names(expr.func) & VARIABLE_CONSTRUCTORS:
            _, keywords = call_args(expr)
            if keywords is None:
                return False
            flag = keywords.get("trainable")
            return flag is None or (isinstance(flag, cst.Name) and flag.value == "True")
        return False

    def var_list_expr(self, var_list: Optional[cst.BaseExpression], what: str) -> str:
        if var_list is None or (isinstance(var_list, cst.Name) and var_list.value == "None"):
            return self.spelling.v1_name("trainable_variables()")
        if not self.trainable(var_list):
            raise _Reject(
                f"cannot show that every variable in `{_code(self.module, var_list)}` is trainable: "
                f"{what} differentiates any variable, a `tf.GradientTape` only watches trainable ones {MANUAL}"
            )
        return _code(self.module, var_list)

    # -- building --------------------------------------------------------------------
    def stmt(self, code: str) -> cst.BaseStatement:
        return cst.parse_statement(code + "\n", config=self.module.config_for_parsing)

    def tape_header(self, tape: str) -> str:
        return f"with {self.spelling.v2_name('GradientTape')}() as {tape}:"

    def _loss_statements(self, loss: cst.BaseExpression, callable_loss: bool) -> Tuple[str, List[cst.BaseStatement]]:
        """Name of the loss inside the tape and statements to append in the tape body."""
        if callable_loss:
            name = fresh_name("loss_value", self.taken)
            if isinstance(loss, cst.Lambda):
                return name, [self.stmt(f"{name} = {_code(self.module, loss.body)}")]
            return name, [self.stmt(f"{name} = {_code(self.module, loss)}()")]
        if isinstance(loss, cst.Name):
            return loss.value, []
        name = fresh_name("loss_value", self.taken)
        return name, [self.stmt(f"{name} = {_code(self.module, loss)}")]

    def _is_callable_loss(self, loss: cst.BaseExpression) -> bool:
        if isinstance(loss, cst.Lambda):
            if loss.params.params or loss.params.star_arg != cst.MaybeSentinel.DEFAULT or loss.params.kwonly_params:
                raise _Reject(f"the loss lambda takes parameters {MANUAL}")
            return True
        if isinstance(loss, cst.Name):
            found = self.assignments(loss)
            if found and all(isinstance(a, Assignment) and isinstance(a.node, cst.FunctionDef) for a in found):
                return True
            value = self.assigned_value(loss)
            if isinstance(value, cst.Lambda):
                return True
            if any(isinstance(a, Assignment) and isinstance(a.node, cst.Param) for a in found):
                raise _Reject(f"the loss `{loss.value}` is a parameter (a tensor or a callable computed by the "
                              f"caller, maybe in another file); a tape must record its computation {MANUAL}")
        return False

    def _check_uncarried(self, keywords: Dict[str, cst.BaseExpression], names: Sequence[str], method: str) -> None:
        for key in names:
            if key in keywords:
                raise _Reject(f"`{method}(..., {key}=...)` has no `tf.GradientTape` equivalent {MANUAL}")

    # -- minimize (TFC103) -----------------------------------------------------------------
    def _plan_minimize(self, block: Block, body: List[cst.BaseStatement], index: int,
                       small: cst.BaseSmallStatement, call: cst.Call, info: tuple) -> None:
        self._module_gates()
        self._optimizer_gate(info, "minimize", allow_wrapped=True)
        args = _bind_v1_args(call, "minimize", (
            "loss", "global_step", "var_list", "gate_gradients", "aggregation_method",
            "colocate_gradients_with_ops", "name", "grad_loss"))
        self._check_uncarried(args, UNCARRIED_ARGS, "minimize")
        loss = args.get("loss")
        if loss is None:
            raise _Reject(f"`minimize` without a loss {MANUAL}")
        self._emit(block, body, index, small, call, "minimize", info, loss, args.get("var_list"),
                   args.get("global_step"), args.get("name"))

    def _tape_gradient(self, tape: str, loss_name: str, vars_expr: Optional[str],
                       var_list: Optional[cst.BaseExpression]) -> Tuple[str, str, List[cst.BaseStatement]]:
        """The statements computing the gradients with the tape: ``(grads, variables, stmts)``.
        Without a var_list the tape's watched variables are used (what TF1 did for a callable
        loss); a non-trivial var_list expression is bound to a fresh name first."""
        grads = fresh_name("gradients", self.taken)
        new: List[cst.BaseStatement] = []
        if vars_expr is None:
            variables = fresh_name("variables", self.taken)
            new.append(self.stmt(f"{variables} = {tape}.watched_variables()"))
        elif _simple_reference(var_list):
            variables = vars_expr
        else:
            variables = fresh_name("variables", self.taken)
            new.append(self.stmt(f"{variables} = {vars_expr}"))
        new.append(self.stmt(f"{grads} = {tape}.gradient({loss_name}, {variables})"))
        return grads, variables, new

    def _emit(self, block: Block, body: List[cst.BaseStatement], index: int, small: cst.BaseSmallStatement,
              call: cst.Call, kind: str, info: tuple, loss: cst.BaseExpression,
              var_list: Optional[cst.BaseExpression], global_step: Optional[cst.BaseExpression],
              name: Optional[cst.BaseExpression]) -> None:
        self.removed_calls.clear()
        callable_loss = self._is_callable_loss(loss)
        if not callable_loss and not self.graph_mode:
            raise _Reject(f"a tensor loss in eager code: TF1 raised here, nothing to preserve {MANUAL}")
        start, end, safety, note = self.loss_region(body, index, loss, callable_loss)
        if isinstance(var_list, cst.Name) and var_list.value == "None":
            var_list = None  # `var_list=None` is the default
        if callable_loss and var_list is None:
            vars_expr = None  # tape.watched_variables(), as compute_gradients did for callables
        else:
            vars_expr = self.var_list_expr(var_list, "`compute_gradients`")
        if has_comment(small):
            safety = FixSafety.UNSAFE
            note = "; ".join(filter(None, [note, "a comment inside the rewritten statement is dropped"]))
        # optimizer object and clipping
        clip_norm: Optional[str] = None
        renames: Dict[cst.CSTNode, str] = {}
        replacements: Dict[int, List[cst.BaseStatement]] = {}
        receiver = call.func.value  # type: ignore[attr-defined]
        opt_code = _code(self.module, receiver)
        if info[0] == "wrapped":
            wrapper_call: cst.Call = info[1]
            inner_info = info[2]
            positional, keywords = call_args(wrapper_call)
            norm = positional[1] if len(positional) > 1 else keywords.get("clip_norm")
            if norm is None or not (is_literal(norm) or isinstance(norm, cst.Name)):
                raise _Reject(f"the `clip_norm` of `clip_gradients_by_norm` is not a literal or a name {MANUAL}")
            clip_norm = _code(self.module, norm)
            inner = positional[0] if positional else keywords["optimizer"]
            opt_code = _code(self.module, inner)
            wrapper_name = info[3]
            wrapper_removed = wrapper_name is None  # an inline wrapper disappears with the call
            if isinstance(wrapper_name, cst.Name):
                # Drop `optimizer = clip_gradients_by_norm(...)` when the minimize is its only use.
                wrapper_index = _statement_index_binding(body, wrapper_name.value, wrapper_call, index)
                if wrapper_index is None:
                    raise _Reject("`clip_gradients_by_norm` is applied outside this block; "
                                  f"the compat form (TFC001) keeps it working {MANUAL}")
                if not self.accesses_outside(wrapper_name, [call]):
                    replacements[wrapper_index] = []
                    wrapper_removed = True
                    self.removed_calls.append(wrapper_call)
                    wrapper_stmt = body[wrapper_index]
                    if has_comment(wrapper_stmt):
                        safety = FixSafety.UNSAFE
                        note = "; ".join(filter(None, [note, "a comment on the removed "
                                                             "`clip_gradients_by_norm` line is dropped"]))
            if not isinstance(inner, (cst.Name, cst.Call)):
                raise _Reject(f"the wrapped optimizer is neither a name nor a constructor call {MANUAL}")
            if isinstance(inner, cst.Call) and not wrapper_removed:
                # Re-spelling the constructor would make a second optimizer (its own slots).
                raise _Reject(f"the wrapped optimizer is built inline and the wrapper is used elsewhere {MANUAL}")
            if inner_info[0] == "tf1" and self.graph_mode:
                rename = self._compat_rename(inner_info[1])
                if isinstance(inner, cst.Call):
                    # the constructor moves into the apply_gradients statement: spell it there
                    for old, new_name in rename.items():
                        opt_code = new_name + opt_code[len(_code(self.module, old)):]
                else:
                    renames.update(rename)
        elif info[0] == "tf1" and self.graph_mode:
            renames.update(self._compat_rename(info[1]))
        if clip_norm is None and self.rule.add_clip_norm is not None:
            clip_norm = repr(float(self.rule.add_clip_norm))
        tape = fresh_name("tape", self.taken)
        loss_name, extra = self._loss_statements(loss, callable_loss)
        grads, variables, new = self._tape_gradient(tape, loss_name, vars_expr, var_list)
        if clip_norm is not None:
            new.append(self.stmt(f"{grads}, _ = {self.spelling.v2_name('clip_by_global_norm')}({grads}, {clip_norm})"))
        apply_args = [f"zip({grads}, {variables})"]
        if global_step is not None:
            apply_args.append(f"global_step={_code(self.module, global_step)}")
        if name is not None:
            apply_args.append(f"name={_code(self.module, name)}")
        apply = f"{opt_code}.apply_gradients({', '.join(apply_args)})"
        new.append(self._replace_value(small, apply))
        replacements[index] = self._carry_trivia(body[index], new)
        last = max([index] + list(replacements))
        first = min([start] + list(replacements))
        message = ("`minimize` -> `tf.GradientTape` + `apply_gradients`"
                   + (" with `tf.clip_by_global_norm`" if clip_norm is not None else ""))
        self.plans.append(Plan(kind, call, block, start, end, index, self.tape_header(tape), extra,
                               replacements, last, safety, note, renames, message, list(self.removed_calls)))
        self.removed_calls.clear()
        del first

    def _compat_rename(self, ctor: cst.Call) -> Dict[cst.CSTNode, str]:
        """Spell a TF1 optimizer constructor as ``tf.compat.v1.train.X`` if it is not already."""
        names = self.tf_names(ctor.func) & TF1_OPTIMIZERS
        if not names:
            return {}
        cls = sorted(names)[0].split(".")[-1]
        current = _code(self.module, ctor.func)
        wanted = self.spelling.v1_name(f"train.{cls}")
        qualified = self._qualified(ctor.func)
        if current == wanted or any(q.startswith("tensorflow.compat.v1.") for q in qualified):
            return {}
        return {ctor.func: wanted}

    def _replace_value(self, small: cst.BaseSmallStatement, new_value: str) -> cst.BaseStatement:
        if isinstance(small, cst.Assign):
            targets = "".join(_code(self.module, t.target) + " = " for t in small.targets)
            return self.stmt(f"{targets}{new_value}")
        if isinstance(small, cst.Return):
            return self.stmt(f"return {new_value}")
        return self.stmt(new_value)

    def _carry_trivia(self, old: cst.BaseStatement, new: List[cst.BaseStatement]) -> List[cst.BaseStatement]:
        """Comments above ``old`` go above ``new[0]``; its end-of-line comment goes on ``new[-1]``."""
        if not new or not isinstance(old, cst.SimpleStatementLine):
            return new
        new = list(new)
        new[0] = new[0].with_changes(leading_lines=old.leading_lines)
        last = new[-1]
        if isinstance(last, cst.SimpleStatementLine):
            new[-1] = last.with_changes(trailing_whitespace=old.trailing_whitespace)
        return new

    # -- compute_gradients -> apply_gradients (TFC101) ------------------------------------
    def _plan_compute(self, block: Block, body: List[cst.BaseStatement], index: int,
                      small: cst.BaseSmallStatement, compute: cst.Call, zipped: bool, info: tuple) -> None:
        if not isinstance(small, cst.Assign) or len(small.targets) != 1:
            return  # not bound to a name: nothing reaches apply_gradients through this statement
        target = small.targets[0].target
        chain = _chain_names(target)
        if chain is None:
            return
        flow = self._follow(body, index, chain)
        if flow is None:
            return  # look-alike: the result never reaches apply_gradients here
        apply_index, clip_indices, other_uses = flow
        # The gradient transform first: the most useful reason for a custom capper.
        for k in clip_indices:
            if len(chain) == 2:
                self._check_list_clip(_single_small(body[k]), chain[0])
            elif k == clip_indices[0]:
                self._pair_clip(_single_small(body[k]), chain[0], "gradients", "variables")
        self._module_gates()
        self._optimizer_gate(info, "compute_gradients", allow_wrapped=True)
        if other_uses:
            raise _Reject(f"the gradients are also used by other statements (line of `{_code(self.module, other_uses[0])[:40]}`); "
                          f"they would change type from tuple to list {MANUAL}", compute)
        args = _bind_v1_args(compute, "compute_gradients", (
            "loss", "var_list", "gate_gradients", "aggregation_method", "colocate_gradients_with_ops",
            "grad_loss"))
        self._check_uncarried(args, UNCARRIED_ARGS, "compute_gradients")
        loss = args.get("loss")
        if loss is None:
            raise _Reject(f"`compute_gradients` without a loss {MANUAL}")
        apply_small = _single_small(body[apply_index])
        apply_call = _method_call(_statement_value(apply_small), "apply_gradients")  # type: ignore[arg-type]
        assert apply_call is not None
        receiver = compute.func.value  # type: ignore[attr-defined]
        if _code(self.module, apply_call.func.value) != _code(self.module, receiver):  # type: ignore[attr-defined]
            raise _Reject(f"`compute_gradients` and `apply_gradients` are called on different objects {MANUAL}")
        if info[0] == "wrapped":
            raise _Reject("`compute_gradients`/`apply_gradients` on a `clip_gradients_by_norm` optimizer: "
                          f"the compat form (TFC001) keeps it working {MANUAL}")
        callable_loss = self._is_callable_loss(loss)
        if not callable_loss and not self.graph_mode:
            raise _Reject(f"a tensor loss in eager code: TF1 raised here, nothing to preserve {MANUAL}")
        start, end, safety, note = self.loss_region(body, index, loss, callable_loss)
        var_list = args.get("var_list")
        if isinstance(var_list, cst.Name) and var_list.value == "None":
            var_list = None  # `var_list=None` is the default
        if callable_loss and var_list is None:
            vars_expr: Optional[str] = None
        else:
            vars_expr = self.var_list_expr(var_list, "`compute_gradients`")
        touched = [small] + [_single_small(body[k]) for k in clip_indices] + [apply_small]
        if any(has_comment(s) for s in touched if s is not None):
            safety = FixSafety.UNSAFE
            note = "; ".join(filter(None, [note, "a comment inside a rewritten statement is dropped"]))
        tape = fresh_name("tape", self.taken)
        loss_name, extra = self._loss_statements(loss, callable_loss)
        renames: Dict[cst.CSTNode, str] = {}
        if info[0] == "tf1" and self.graph_mode:
            renames.update(self._compat_rename(info[1]))
        replacements: Dict[int, List[cst.BaseStatement]] = {}
        add_clip = self.rule.add_clip_norm is not None and not clip_indices
        clip_norm = repr(float(self.rule.add_clip_norm)) if add_clip else None
        if zipped:
            grads, variables = chain
            new: List[cst.BaseStatement] = []
            if vars_expr is None:
                new.append(self.stmt(f"{variables} = {tape}.watched_variables()"))
            else:
                new.append(self.stmt(f"{variables} = {vars_expr}"))
            new.append(self.stmt(f"{grads} = {tape}.gradient({loss_name}, {variables})"))
            if add_clip:
                new.append(self.stmt(f"{grads}, _ = {self.spelling.v2_name('clip_by_global_norm')}({grads}, {clip_norm})"))
            for k in clip_indices:
                self._check_list_clip(_single_small(body[k]), grads)
            self._check_apply_zip(apply_call, grads, variables)
            replacements[index] = self._carry_trivia(body[index], new)
        else:
            (pairs,) = chain
            grads, variables, new = self._tape_gradient(tape, loss_name, vars_expr, var_list)
            if len(clip_indices) > 1:
                raise _Reject(f"more than one statement transforms the gradients {MANUAL}")
            apply_value_args = list(apply_call.args)
            if not apply_value_args or apply_value_args[0].keyword not in (None,) and \
                    apply_value_args[0].keyword.value != "grads_and_vars":  # type: ignore[union-attr]
                raise _Reject(f"`apply_gradients` without gradients {MANUAL}")
            rest = [a for a in apply_value_args[1:]]
            rest_code = "".join(", " + _code(self.module, a).rstrip(",") for a in rest)
            if clip_indices:
                k = clip_indices[0]
                clip_small = _single_small(body[k])
                fed = apply_value_args[0].value
                clipped_target = clip_small.targets[0].target  # type: ignore[union-attr]
                if not (isinstance(fed, cst.Name) and isinstance(clipped_target, cst.Name)
                        and fed.value == clipped_target.value):
                    raise _Reject(f"the clipped gradients do not feed `apply_gradients` directly {MANUAL}")
                comp_code = self._pair_clip(clip_small, pairs, grads, variables)
                if comp_code[0] == "list":
                    replacements[k] = self._carry_trivia(body[k], [self.stmt(f"{grads} = {comp_code[1]}")])
                    apply = f"{_code(self.module, receiver)}.apply_gradients(zip({grads}, {variables}){rest_code})"
                    replacements[apply_index] = self._carry_trivia(
                        body[apply_index], [self._replace_value(apply_small, apply)])
                else:
                    replacements[k] = self._carry_trivia(
                        body[k], [self.stmt(f"{clipped_target.value} = {comp_code[1]}")])
            else:
                fed = apply_value_args[0].value
                if not (isinstance(fed, cst.Name) and fed.value == pairs):
                    raise _Reject(f"the gradients do not feed `apply_gradients` directly {MANUAL}")
                if add_clip:
                    new.append(self.stmt(
                        f"{grads}, _ = {self.spelling.v2_name('clip_by_global_norm')}({grads}, {clip_norm})"))
                apply = f"{_code(self.module, receiver)}.apply_gradients(zip({grads}, {variables}){rest_code})"
                replacements[apply_index] = self._carry_trivia(body[apply_index], [self._replace_value(apply_small, apply)])
            replacements[index] = self._carry_trivia(body[index], new)
        message = "`compute_gradients` -> `tf.GradientTape` + `tape.gradient`, clipping kept"
        self.plans.append(Plan("compute_apply", compute, block, start, end, index, self.tape_header(tape), extra,
                               replacements, apply_index, safety, note, renames, message))

    def _follow(self, body: List[cst.BaseStatement], index: int, chain: Tuple[str, ...]):
        """Trace the names bound at ``index`` to an ``apply_gradients`` statement of the block.

        Returns ``(apply_index, clip_statement_indices, other_uses)`` or None (never reaches it).
        """
        live = set(chain)
        clips: List[int] = []
        others: List[cst.CSTNode] = []
        for j in range(index + 1, len(body)):
            stmt = body[j]
            reads = names_read(stmt) & live
            small = _single_small(stmt)
            value = _statement_value(small) if small is not None else None
            if value is not None:
                apply = _method_call(value, "apply_gradients")
                if apply is not None and reads:
                    return j, clips, others
            if not reads:
                if names_bound(stmt) & live:
                    live -= names_bound(stmt)
                continue
            if isinstance(small, cst.Assign) and len(small.targets) == 1 and value is not None:
                bound = _chain_names(small.targets[0].target) or ()
                clips.append(j)
                live |= set(bound)
                continue
            others.append(stmt)
        return None

    def _check_list_clip(self, small: Optional[cst.BaseSmallStatement], grads: str) -> None:
        """``grads, _ = tf.clip_by_global_norm(grads, c)`` or ``grads = [CLIP(g) for g in grads]``."""
        if not isinstance(small, cst.Assign):
            raise _Reject(f"unrecognised gradient transform {MANUAL}", small)
        value = small.value
        target = small.targets[0].target
        if isinstance(value, cst.Call) and "tf.clip_by_global_norm" in self.tf_names(value.func):
            first = value.args[0].value if value.args else None
            if (isinstance(first, cst.Name) and first.value == grads and isinstance(target, cst.Tuple)
                    and isinstance(target.elements[0].value, cst.Name)
                    and target.elements[0].value.value == grads
                    and not any(a.star for a in value.args)
                    and not any(a.keyword and a.keyword.value in ("use_norm",) for a in value.args)):
                return
        if isinstance(value, cst.ListComp) and isinstance(target, cst.Name) and target.value == grads:
            comp = value.for_in
            if (comp.inner_for_in is None and not comp.ifs and isinstance(comp.target, cst.Name)
                    and isinstance(comp.iter, cst.Name) and comp.iter.value == grads
                    and self._per_tensor_clip(value.elt, comp.target.value)):
                return
        raise _Reject(
            f"cannot prove what `{_code(self.module, small)[:60]}` does to the gradients "
            f"(only `tf.clip_by_value`/`clip_by_norm`/`clip_by_average_norm`/`clip_by_global_norm` are known) {MANUAL}",
            small,
        )

    def _per_tensor_clip(self, expr: cst.BaseExpression, grad: str, indexed: bool = False) -> bool:
        """``CLIP(grad, consts...)``, optionally ``None if grad is None else ...`` (either order).
        ``indexed``: the gradient is spelled ``grad[0]`` (``for gv in grads_and_vars``)."""

        def is_grad(node: cst.BaseExpression) -> bool:
            if indexed:
                return _is_index(node, grad, 0)
            return isinstance(node, cst.Name) and node.value == grad

        if isinstance(expr, cst.IfExp):
            test = expr.test
            if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and is_grad(test.left) \
                    and isinstance(test.comparisons[0].comparator, cst.Name) \
                    and test.comparisons[0].comparator.value == "None":
                op = test.comparisons[0].operator
                if isinstance(op, cst.Is):
                    none_branch, clip_branch = expr.body, expr.orelse
                elif isinstance(op, cst.IsNot):
                    clip_branch, none_branch = expr.body, expr.orelse
                else:
                    return False
                return (isinstance(none_branch, cst.Name) and none_branch.value == "None"
                        and self._per_tensor_clip(clip_branch, grad, indexed))
            return False
        if isinstance(expr, cst.Call) and self.tf_names(expr.func) & PER_TENSOR_CLIPS:
            if not expr.args or expr.args[0].star or expr.args[0].keyword is not None:
                return False
            if not is_grad(expr.args[0].value):
                return False
            return all(grad not in names_read(a.value) for a in expr.args[1:]) and not any(a.star for a in expr.args)
        return False

    def _pair_clip(self, small: Optional[cst.BaseSmallStatement], pairs: str, grads: str, variables: str) -> Tuple[str, str]:
        """Rewrite ``[(CLIP(g), v) for g, v in pairs]`` -> ("list", ``[CLIP(g) for g in grads]``);
        with an ``if`` filter -> ("pairs", the same comprehension over ``zip(grads, variables)``)."""
        bad = _Reject(
            "cannot prove what the comprehension does to the gradients (only "
            "`tf.clip_by_value`/`clip_by_norm`/`clip_by_average_norm` applied to each gradient are known; "
            f"a custom function such as `MyCapper` may do anything) {MANUAL}", small)
        if not isinstance(small, cst.Assign) or not isinstance(small.value, cst.ListComp):
            raise bad
        comp = small.value
        loop = comp.for_in
        if loop.inner_for_in is not None or not isinstance(loop.iter, cst.Name) or loop.iter.value != pairs:
            raise bad
        elt = comp.elt
        if not isinstance(elt, cst.Tuple) or len(elt.elements) != 2:
            raise bad
        g_expr, v_expr = elt.elements[0].value, elt.elements[1].value
        if isinstance(loop.target, cst.Tuple) and len(loop.target.elements) == 2 and all(
                isinstance(e.value, cst.Name) for e in loop.target.elements):
            g_name = loop.target.elements[0].value.value  # type: ignore[attr-defined]
            v_name = loop.target.elements[1].value.value  # type: ignore[attr-defined]
            if not (isinstance(v_expr, cst.Name) and v_expr.value == v_name):
                raise bad
            if not self._per_tensor_clip(g_expr, g_name) or v_name in names_read(g_expr):
                raise bad
            if loop.ifs:
                if not all(self._is_not_none_filter(f.test, g_name) for f in loop.ifs):
                    raise bad
                return ("pairs", _code(self.module, comp.with_deep_changes(loop, iter=cst.parse_expression(
                    f"zip({grads}, {variables})"))))
            new_comp = cst.ListComp(elt=g_expr, for_in=cst.CompFor(target=cst.Name(g_name), iter=cst.Name(grads)))
            return ("list", self.module.code_for_node(new_comp))
        if isinstance(loop.target, cst.Name):
            gv = loop.target.value
            v_ok = _is_index(v_expr, gv, 1)
            if not v_ok or loop.ifs or not self._per_tensor_clip(g_expr, gv, indexed=True):
                raise bad
            grad = "grad"
            while grad in names_read(g_expr) or grad in (grads, variables):
                grad += "_"
            g_plain = _replace_index(g_expr, gv, 0, grad)
            if g_plain is None:
                raise bad
            new_comp = cst.ListComp(elt=g_plain, for_in=cst.CompFor(target=cst.Name(grad), iter=cst.Name(grads)))
            return ("list", self.module.code_for_node(new_comp))
        raise bad

    def _is_not_none_filter(self, test: cst.BaseExpression, grad: str) -> bool:
        return (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
                and isinstance(test.left, cst.Name) and test.left.value == grad
                and isinstance(test.comparisons[0].operator, cst.IsNot)
                and isinstance(test.comparisons[0].comparator, cst.Name)
                and test.comparisons[0].comparator.value == "None")

    def _check_apply_zip(self, apply_call: cst.Call, grads: str, variables: str) -> None:
        first = apply_call.args[0].value if apply_call.args else None
        ok = (isinstance(first, cst.Call) and isinstance(first.func, cst.Name) and first.func.value == "zip"
              and len(first.args) == 2 and isinstance(first.args[0].value, cst.Name)
              and first.args[0].value.value == grads and isinstance(first.args[1].value, cst.Name)
              and first.args[1].value.value == variables)
        if not ok:
            raise _Reject(f"`apply_gradients` is not fed `zip({grads}, {variables})` {MANUAL}", apply_call)

    # -- tf.gradients (TFC102) -------------------------------------------------------
    def _plan_tf_gradients(self, block: Block, body: List[cst.BaseStatement], index: int,
                           small: cst.BaseSmallStatement, call: cst.Call) -> None:
        self._handled.add(id(call))
        if not isinstance(small, cst.Assign) or len(small.targets) != 1:
            return
        target = small.targets[0].target
        if not isinstance(target, cst.Name):
            return
        flow = self._follow(body, index, (target.value,))
        if flow is None:
            return  # look-alike: e.g. a gradient penalty
        apply_index, clip_indices, other_uses = flow
        apply_small = _single_small(body[apply_index])
        apply_call = _method_call(_statement_value(apply_small), "apply_gradients")  # type: ignore[arg-type]
        zip_arg = apply_call.args[0].value if apply_call is not None and apply_call.args else None
        if not (isinstance(zip_arg, cst.Call) and isinstance(zip_arg.func, cst.Name) and zip_arg.func.value == "zip"
                and len(zip_arg.args) == 2):
            return  # fed some other way: not the BERT shape
        self._module_gates()
        if other_uses:
            raise _Reject(f"the gradients are also used by other statements {MANUAL}", call)
        positional, keywords = call_args(call)
        if positional is None:
            raise _Reject(f"`tf.gradients` is called with `*args`/`**kwargs` {MANUAL}")
        args = dict(zip(("ys", "xs") + GRADIENTS_UNCARRIED, positional))
        args.update(keywords)
        self._check_uncarried(args, GRADIENTS_UNCARRIED, "tf.gradients")
        loss, xs = args.get("ys"), args.get("xs")
        if loss is None or xs is None:
            raise _Reject(f"`tf.gradients` without `ys`/`xs` {MANUAL}")
        if not isinstance(xs, cst.Name):
            raise _Reject(f"`tf.gradients` differentiates `{_code(self.module, xs)}`, not a named variable list {MANUAL}")
        fed_vars = zip_arg.args[1].value
        if not (isinstance(fed_vars, cst.Name) and fed_vars.value == xs.value):
            raise _Reject(f"`apply_gradients` pairs the gradients with other variables than `{xs.value}` {MANUAL}")
        for k in clip_indices:
            self._check_list_clip(_single_small(body[k]), target.value)
        self.var_list_expr(xs, "`tf.gradients`")
        if not self.graph_mode:
            raise _Reject(f"`tf.gradients` in eager code: TF1 raised here, nothing to preserve {MANUAL}")
        start, end, safety, note = self.loss_region(body, index, loss, callable_loss=False)
        if has_comment(small):
            safety = FixSafety.UNSAFE
            note = "; ".join(filter(None, [note, "a comment inside the rewritten statement is dropped"]))
        tape = fresh_name("tape", self.taken)
        loss_name, extra = self._loss_statements(loss, False)
        new = [self.stmt(f"{target.value} = {tape}.gradient({loss_name}, {xs.value})")]
        if self.rule.add_clip_norm is not None and not clip_indices:
            new.append(self.stmt(f"{target.value}, _ = {self.spelling.v2_name('clip_by_global_norm')}"
                                 f"({target.value}, {float(self.rule.add_clip_norm)!r})"))
        replacements = {index: self._carry_trivia(body[index], new)}
        message = "`tf.gradients` -> `tf.GradientTape` + `tape.gradient`"
        self.plans.append(Plan("tf_gradients", call, block, start, end, index, self.tape_header(tape), extra,
                               replacements, apply_index, safety, note, {}, message))


# -- small helpers -----------------------------------------------------------------------

def _walk(node: cst.CSTNode):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)


def _first_name(node: cst.CSTNode) -> Optional[cst.Name]:
    for sub in _walk(node):
        if isinstance(sub, cst.Name):
            return sub
    return None


def _scope_probe(planner: "Planner", node: cst.CSTNode) -> Optional[cst.Name]:
    """A Name inside ``node`` that the ScopeProvider knows (keyword names are not scoped)."""
    for sub in _walk(node):
        if isinstance(sub, cst.Name) and planner.scope(sub) is not None:
            return sub
    return None


def _statement_value(small: Optional[cst.BaseSmallStatement]) -> Optional[cst.BaseExpression]:
    if isinstance(small, cst.Assign):
        return small.value
    if isinstance(small, cst.Expr):
        return small.value
    if isinstance(small, cst.Return):
        return small.value
    return None


def _is_zip_star(value: cst.BaseExpression) -> bool:
    return (isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "zip"
            and len(value.args) == 1 and value.args[0].star == "*")


def _chain_names(target: cst.BaseExpression) -> Optional[Tuple[str, ...]]:
    if isinstance(target, cst.Name):
        return (target.value,)
    if isinstance(target, (cst.Tuple, cst.List)) and all(isinstance(e.value, cst.Name) for e in target.elements):
        return tuple(e.value.value for e in target.elements)  # type: ignore[attr-defined]
    return None


def _simple_reference(node: Optional[cst.BaseExpression]) -> bool:
    if isinstance(node, cst.Name):
        return True
    if isinstance(node, cst.Attribute):
        return _simple_reference(node.value)
    return False


def _is_index(expr: cst.BaseExpression, name: str, index: int) -> bool:
    return (isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name) and expr.value.value == name
            and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index)
            and isinstance(expr.slice[0].slice.value, cst.Integer)
            and expr.slice[0].slice.value.value == str(index))


class _IndexReplacer(cst.CSTTransformer):
    def __init__(self, name: str, index: int, new: str) -> None:
        self.name, self.index, self.new = name, index, new
        self.other = False

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript) -> cst.BaseExpression:
        if _is_index(original, self.name, self.index):
            return cst.Name(self.new)
        return updated

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        return updated


def _replace_index(expr: cst.BaseExpression, name: str, index: int, new: str) -> Optional[cst.BaseExpression]:
    """``expr`` with ``name[index]`` -> ``new``; None if ``name`` is also used otherwise."""
    out = expr.visit(_IndexReplacer(name, index, new))
    # every remaining use of `name` must be the replacement itself
    leftovers = [n for n in _walk(expr) if _is_index(n, name, 1 - index)] if index in (0, 1) else []
    if leftovers:
        return None
    return out  # type: ignore[return-value]


def _statement_index_binding(body: List[cst.BaseStatement], name: str, value: cst.CSTNode, before: int) -> Optional[int]:
    for j in range(before):
        small = _single_small(body[j])
        if isinstance(small, cst.Assign) and small.value is value:
            return j
    return None


class _BlockCollector(cst.CSTVisitor):
    def __init__(self) -> None:
        self.blocks: List[Block] = []

    def visit_Module(self, node: cst.Module) -> None:
        self.blocks.append(node)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.blocks.append(node)


class _GradientCalls(cst.CSTVisitor):
    def __init__(self) -> None:
        self.calls: List[Tuple[cst.Call, str]] = []

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in ("minimize", "compute_gradients"):
            self.calls.append((node, node.func.attr.value))


class _UsedTfNames(cst.CSTVisitor):
    def __init__(self, planner: "Planner") -> None:
        self.planner = planner
        self.names: Set[str] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.names |= self.planner.tf_names(node)

    def visit_Name(self, node: cst.Name) -> None:
        self.names |= self.planner.tf_names(node)


def _find_gradient_call(value: cst.BaseExpression, planner: Planner) -> Optional[Tuple[cst.Call, str]]:
    for method, kind in (("minimize", "minimize"), ("compute_gradients", "compute_apply")):
        for sub in _walk(value):
            if _method_call(sub, method) is not None:  # type: ignore[arg-type]
                return sub, kind  # type: ignore[return-value]
    for sub in _walk(value):
        if isinstance(sub, cst.Call) and "tf.gradients" in planner.tf_names(sub.func):
            return sub, "tf_gradients"
    return None


def _find_any_gradient_call(stmt: cst.CSTNode, planner: Planner) -> bool:
    for sub in _walk(stmt):
        if isinstance(sub, cst.Call):
            if isinstance(sub.func, cst.Attribute) and sub.func.attr.value in (
                    "minimize", "compute_gradients", "apply_gradients", "gradient"):
                return True
            if planner.tf_names(sub.func) & {"tf.gradients", "tf.GradientTape"}:
                return True
    return False


# -- the rule base ------------------------------------------------------------------------

def shared_planner(rule: TfcCodemod, module: cst.Module, *, run: bool = True) -> Planner:
    """The module's :class:`Planner`, computed once per engine run and shared by the rules
    (it depends only on the module, its metadata and the options, which they share)."""
    cache = rule.shared_cache()
    planner = cache.get("planner")
    if planner is None or planner.module is not module:
        planner = Planner(rule, module)
        cache["planner"] = planner
        cache["planner_ran"] = False
    planner.rule = rule  # metadata is read through the rule that is running now
    if run and not cache.get("planner_ran"):
        planner.run()
        cache["planner_ran"] = True
    return planner


class GradientSiteRule(TfcCodemod):
    """Base of TFC101-TFC103 and TFC202: plan once per module, rewrite this rule's kinds."""

    KINDS: ClassVar[FrozenSet[str]] = frozenset()
    REPORT_DECLINES: ClassVar[bool] = False
    TOKENS: ClassVar[tuple] = ("compute_gradients", "minimize", "gradients")
    METADATA_DEPENDENCIES = (QualifiedNameProvider, ScopeProvider, ParentNodeProvider)

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        # Plan first; traverse (and rebuild) the tree only when this rule rewrites something.
        self._plan(tree)
        if not self._block_plans and not self._renames:
            return tree
        return tree.visit(self)

    def _plan(self, node: cst.Module) -> None:
        planner = shared_planner(self, node)
        self._block_plans: Dict[int, List[Plan]] = {}
        self._renames: Dict[int, str] = {}
        self._spelling = planner.spelling
        if self.REPORT_DECLINES:
            for decline in planner.declines:
                self.report(decline.node, decline.reason, fix=FixSafety.NONE)
            return
        for plan in planner.plans:
            if plan.kind not in self.KINDS:
                continue
            message = plan.message + (f" (unsafe: {plan.note})" if plan.safety is FixSafety.UNSAFE else "")
            applied = self.may_fix(plan.node, plan.safety)
            self.report(plan.node, message, fix=plan.safety, applied=applied)
            if applied:
                for removed in plan.removed:
                    RemoveImportsVisitor.remove_unused_import_by_node(self.context, removed)
                self._block_plans.setdefault(id(plan.block), []).append(plan)
                for node_, new in plan.renames.items():
                    self._renames[id(node_)] = new
        if self._block_plans and planner.spelling.needs_import:
            AddImportsVisitor.add_needed_import(self.context, "tensorflow", asname="tf")

    def _renamed(self, original: cst.CSTNode, updated: cst.BaseExpression) -> cst.BaseExpression:
        new = self._renames.get(id(original))
        if new is None:
            return updated
        return cst.parse_expression(new)

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        return self._renamed(original_node, updated_node)

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self._renamed(original_node, updated_node)

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        plans = self._block_plans.get(id(original_node))
        if not plans:
            return updated_node
        return updated_node.with_changes(body=self._rebuild(list(updated_node.body), plans))

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        plans = self._block_plans.get(id(original_node))
        if not plans:
            return updated_node
        return updated_node.with_changes(body=self._rebuild(list(updated_node.body), plans))

    def _rebuild(self, body: List[cst.BaseStatement], plans: List[Plan]) -> List[cst.BaseStatement]:
        starts = {plan.region_start: plan for plan in plans}
        replacements: Dict[int, List[cst.BaseStatement]] = {}
        for plan in plans:
            replacements.update(plan.replacements)
        out: List[cst.BaseStatement] = []
        k = 0
        while k < len(body):
            plan = starts.get(k)
            if plan is not None:
                inner: List[cst.BaseStatement] = []
                for j in range(plan.region_start, plan.region_end):
                    inner.extend(replacements.pop(j, [body[j]]))
                inner.extend(plan.tape_extra)
                leading: Sequence[cst.EmptyLine] = ()
                if plan.region_start < plan.region_end and inner:
                    leading = getattr(inner[0], "leading_lines", ())
                    inner[0] = inner[0].with_changes(leading_lines=())
                elif replacements.get(plan.grad_index):
                    first = replacements[plan.grad_index][0]
                    leading = getattr(first, "leading_lines", ())
                    replacements[plan.grad_index][0] = first.with_changes(leading_lines=())
                header = cst.parse_statement(plan.tape_header + "\n    pass\n")
                assert isinstance(header, cst.With)
                out.append(header.with_changes(body=cst.IndentedBlock(body=inner), leading_lines=leading))
                if plan.region_end > k:
                    k = plan.region_end
                    continue
            if k in replacements:
                out.extend(replacements[k])
            else:
                out.append(body[k])
            k += 1
        return out
