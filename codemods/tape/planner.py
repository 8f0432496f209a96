"""The driver: find gradient sites, ask the rules' matchers, prove or decline, resolve overlaps.

:func:`plan_module` runs once per module (shared by TFC101-TFC103, TFC202 and TFC104 through
:func:`shared_planner`). For every statement of every block it asks each TF 2 site rule
(``GradientSiteRule`` subclasses, in registry order) whether the statement is its site; the first
that matches plans it -- a :class:`~codemods.tape.sites.Plan` -- or raises
:class:`~codemods.tape.sites.Reject`, which becomes a :class:`~codemods.tape.sites.Decline`
(TFC202). Calls of ``minimize``/``compute_gradients`` that are not statements of their own
(inside ``tf.cond`` lambdas, expressions) are declined; plans whose regions overlap are declined.

The gates every site passes (each documented where it is checked):

* :meth:`Planner.module_gate` -- fragments, reference variables, v1 control flow, gradient
  overrides, ``tf.distribute`` (:meth:`~codemods.tape.facts.ModuleFacts.module_gate`);
* ``optimizers.check`` -- only ``tf.train`` optimizers, optionally inside
  ``clip_gradients_by_norm``;
* :meth:`Planner.bind_args` / :meth:`Planner.check_uncarried` -- arguments with no tape equivalent;
* :meth:`Planner.loss_region` -- the backward slice and its boundary (:mod:`codemods.tape.slicing`);
* :meth:`Planner.var_list` -- the variables after the rewrite are the variables before;
* per-rule gates in the rule files (the clipping shape, names removed but still read).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Set, Tuple, Type

import libcst as cst
from libcst.metadata import Assignment

from codemods._analysis import call_args, dotted_name
from codemods._core import FixSafety
from codemods.tape import optimizers
from codemods.tape.effects import Analyzer
from codemods.tape.emit import Emitter
from codemods.tape.facts import MANUAL, ModuleFacts
from codemods.tape.sites import Block, Decline, Plan, Reject
from codemods.tape.slicing import tape_region
from codemods.tape.tfapi import CONTROL, LOOPS

TRAINABLE_LIST_CALLS = {"tf.trainable_variables"}
VARIABLE_CONSTRUCTORS = {"tf.Variable": 1, "tf.get_variable": 5}  # positional index of `trainable`
CONTROL_FLOW = set(CONTROL) | set(LOOPS)


@dataclass
class PlannerOptions:
    """What the planner's output depends on besides the module."""

    add_clip_norm: Optional[float] = None


@dataclass
class Statement:
    """One statement of a block, as the matchers see it."""

    block: Block
    body: List[cst.BaseStatement]
    index: int
    small: cst.BaseSmallStatement
    value: cst.BaseExpression


@dataclass
class LossRegion:
    start: int
    end: int
    safety: FixSafety
    note: str
    block: Optional[Block] = None  # set when the region is in an enclosing block (see lift)
    anchor: Optional[int] = None  # index in ``block`` of the statement containing the site


class Planner:
    """Plans every gradient site of one module (see the module docstring)."""

    def __init__(self, facts: ModuleFacts, options: PlannerOptions, rules: Sequence[type]) -> None:
        self.facts = facts
        self.module = facts.module
        self.options = options
        self.rules = rules
        self.analyzer = Analyzer(facts)
        self.emit = Emitter(facts)
        self.plans: List[Plan] = []
        self.declines: List[Decline] = []
        self._handled: Set[int] = set()

    # -- the run -----------------------------------------------------------------------
    def run(self) -> "Planner":
        blocks = _BlockCollector()
        self.module.visit(blocks)
        for block in blocks.blocks:
            self._plan_block(block)
        calls = _GradientCalls()
        self.module.visit(calls)
        for call, method in calls.calls:
            if id(call) not in self._handled:
                self._stray_call(call, method)
        self._drop_overlaps()
        self._check_groups()
        return self

    def _check_groups(self) -> None:
        """Gate: a name rebound by a group of plans (``optimizer = clip_gradients_by_norm(opt, c)``
        -> ``optimizer = opt``) must be used only at those sites. Why: any other use would then see
        the optimizer without its clipping."""
        groups: Dict[int, List[Plan]] = {}
        for plan in self.plans:
            if plan.group is not None:
                key = id(self.facts.scope(plan.group)), plan.group.value
                groups.setdefault(hash(key), []).append(plan)
        for plans in groups.values():
            name = plans[0].group
            assert name is not None
            scope = self.facts.scope(name)
            receivers = {id(plan.node.func.value) for plan in plans}  # type: ignore[attr-defined]
            others = [a.node for a in (scope.accesses[name.value] if scope is not None else ())
                      if id(a.node) not in receivers]
            if not others:
                continue
            reason = (f"`{name.value}` (a `clip_gradients_by_norm` optimizer bound elsewhere) is also used at "
                      f"{self.facts.where(others[0], 40)}, so it cannot be rebound to the inner optimizer; the "
                      f"compat form (TFC001) keeps it working {MANUAL}")
            for plan in plans:
                self.plans.remove(plan)
                self.declines.append(Decline(plan.kind, plan.node, reason))

    def _plan_block(self, block: Block) -> None:
        body = list(block.body)
        for index, stmt in enumerate(body):
            small = single_small(stmt)
            if small is None:
                continue
            value = statement_value(small)
            if value is None:
                continue
            site = Statement(block, body, index, small, value)
            for rule in self.rules:
                call = rule.match(self, site)
                if call is None:
                    continue
                self._handled.add(id(call))
                try:
                    plan = rule.plan(self, site, call)
                except Reject as reject:
                    self.declines.append(Decline(rule.KIND, reject.node or call, reject.reason))
                else:
                    if plan is not None:
                        self.plans.append(plan)
                break

    def _stray_call(self, call: cst.Call, method: str) -> None:
        """``minimize``/``compute_gradients`` that is not a statement of its own: declined.
        Why: a tape must wrap the statements that compute the loss, which a lambda of
        ``tf.cond`` or a larger expression does not have."""
        kind = {"compute_gradients": "compute_apply", "minimize": "minimize"}[method]
        info = optimizers.classify(self.facts, call.func.value)  # type: ignore[attr-defined]
        if info.kind in ("foreign", "shim") or not self.facts.imports_tf:
            return
        where = self._enclosing_control_flow(call)
        if where:
            reason = f"`{method}` is called inside `{where}`; a tape cannot be placed around the branch's loss {MANUAL}"
        else:
            reason = (f"`{method}` is not a statement of its own (it is part of a larger expression); "
                      f"rewrite it as `with tf.GradientTape()` + `apply_gradients` by hand {MANUAL}")
        self.declines.append(Decline(kind, call, reason))

    def _enclosing_control_flow(self, node: cst.CSTNode) -> Optional[str]:
        for current in self.facts.ancestors(node):
            if isinstance(current, cst.Call):
                names = self.facts.tf_names(current.func) & CONTROL_FLOW
                if names:
                    return sorted(names)[0]
        return None

    def _drop_overlaps(self) -> None:
        """Gate: two plans may not share statements of a block. Why: one tape per loss cannot be
        placed around shared statements without reordering code."""
        spans: Dict[int, List[Tuple[Plan, int, int]]] = {}
        for plan in self.plans:
            if plan.site_block is None:
                spans.setdefault(id(plan.block), []).append((plan, plan.region_start, plan.last_index))
            else:
                spans.setdefault(id(plan.block), []).append((plan, plan.region_start, plan.anchor or 0))
                spans.setdefault(id(plan.site_block), []).append((plan, plan.grad_index, plan.last_index))
        clashing: Set[int] = set()
        for entries in spans.values():
            for plan, start, last in entries:
                if any(other is not plan and not (last < o_start or o_last < start)
                       for other, o_start, o_last in entries):
                    clashing.add(id(plan))
        keep: List[Plan] = []
        for plan in self.plans:
            if id(plan) in clashing:
                self.declines.append(Decline(
                    plan.kind, plan.node,
                    "several gradient computations share the statements that compute their losses; "
                    f"one tape per loss cannot be placed without reordering code {MANUAL}"))
            else:
                keep.append(plan)
        self.plans = keep

    # -- gates and helpers the rules share ---------------------------------------------------
    def module_gate(self) -> None:
        reason = self.facts.module_gate()
        if reason:
            raise Reject(reason)

    def optimizer(self, receiver: cst.BaseExpression) -> optimizers.Optimizer:
        return optimizers.classify(self.facts, receiver)

    @staticmethod
    def bind_args(call: cst.Call, method: str, params: Tuple[str, ...]) -> Dict[str, cst.BaseExpression]:
        """Bind a TF1 method call's arguments to its signature, as Python would; anything that
        cannot be bound statically (``*args``, unknown names) is a decline."""
        positional, keywords = call_args(call)
        if positional is None:
            raise Reject(f"`{method}` is called with `*args`/`**kwargs` {MANUAL}")
        if len(positional) > len(params):
            raise Reject(f"too many arguments to `{method}` {MANUAL}")
        args = dict(zip(params, positional))
        for key, value in keywords.items():
            if key not in params or key in args:
                raise Reject(f"unexpected argument `{key}` to `{method}` {MANUAL}")
            args[key] = value
        return args

    @staticmethod
    def check_uncarried(args: Dict[str, cst.BaseExpression], names: Sequence[str], method: str) -> None:
        """Gate: arguments a tape cannot reproduce. Their defaults are fine, and so is
        ``colocate_gradients_with_ops`` (device placement only: the same values on one device);
        ``aggregation_method`` changes the summation order, ``grad_loss``/``grad_ys`` the seed."""
        for key in names:
            value = args.get(key)
            if value is None or key == "colocate_gradients_with_ops":
                continue
            if isinstance(value, cst.Name) and value.value == "None" and key != "gate_gradients":
                continue
            if key == "gate_gradients" and (
                    (isinstance(value, cst.Integer) and value.value == "1")
                    or (isinstance(value, cst.Attribute) and value.attr.value == "GATE_OP")):
                continue
            raise Reject(f"`{method}(..., {key}=...)` has no `tf.GradientTape` equivalent {MANUAL}")

    def is_callable_loss(self, loss: cst.BaseExpression) -> bool:
        if isinstance(loss, cst.Lambda):
            if loss.params.params or loss.params.star_arg != cst.MaybeSentinel.DEFAULT or loss.params.kwonly_params:
                raise Reject(f"the loss lambda takes parameters {MANUAL}")
            return True
        if isinstance(loss, cst.Name):
            found = self.facts.assignments(loss)
            if found and all(isinstance(a, Assignment) and isinstance(a.node, cst.FunctionDef) for a in found):
                return True
            values = [self.facts.assigned_value(a) for a in found]
            if values and all(isinstance(v, cst.Lambda) for v in values):
                return True
            if any(isinstance(a, Assignment) and isinstance(a.node, cst.Param) for a in found):
                raise Reject(f"the loss `{loss.value}` is a parameter (a tensor or a callable computed by the "
                             f"caller, maybe in another file); a tape must record its computation {MANUAL}")
        return False

    def loss_region(self, site: Statement, loss: cst.BaseExpression, callable_loss: bool) -> LossRegion:
        """Gate and slice: which statements of the block go inside the tape (see
        :mod:`codemods.tape.slicing`). A callable loss is called inside the tape, exactly as
        ``compute_gradients`` did in TF1 (it used a tape for callables), so nothing moves."""
        if callable_loss:
            return LossRegion(site.index, site.index, FixSafety.SAFE, "")
        if isinstance(loss, cst.Name) or isinstance(loss, (cst.Call, cst.BinaryOperation, cst.Subscript,
                                                            cst.Attribute, cst.UnaryOperation, cst.List,
                                                            cst.Tuple)):
            pass
        else:
            raise Reject(f"unsupported loss expression `{self.facts.code(loss, 50)}` {MANUAL}")
        block, body, index = site.block, site.body, site.index
        lifted = self._lift(site, loss)
        if lifted is not None:
            block, body, index = lifted
        function = self.facts.function_of(block) if not isinstance(block, cst.Module) else None
        region = tape_region(
            self.analyzer, body, index, loss, loss_is_name=isinstance(loss, cst.Name),
            in_loop=self._in_loop(block),
            # Collections filled before the block runs are visible only when the block is the module
            # itself: every earlier statement is then in the slice's reach.
            at_module_level=isinstance(block, cst.Module),
            function_name=function.name.value if function is not None else None,
            site_node=site.body[site.index] if lifted is not None else None)
        safety = FixSafety.UNSAFE if region.unsafe else FixSafety.SAFE
        result = LossRegion(region.start, region.end, safety, "; ".join(region.unsafe))
        if lifted is not None:
            result.block, result.anchor = block, index
        return result

    def make_plan(self, kind: str, call: cst.Call, site: Statement, region: LossRegion, tape: str,
                  extra: List[cst.BaseStatement], replacements: Dict[int, List[cst.BaseStatement]], last: int,
                  safety: FixSafety, note: str, renames: Dict[cst.CSTNode, str], message: str,
                  removed: Optional[List[cst.CSTNode]] = None) -> Plan:
        """The :class:`Plan` of a site whose tape region ``region`` may lie in an enclosing block."""
        lifted = region.block is not None
        return Plan(kind, call, region.block if lifted else site.block, region.start, region.end, site.index,
                    self.emit.tape_header(tape), extra, replacements, last, safety, note, renames, message,
                    list(removed or []), site_block=site.block if lifted else None, anchor=region.anchor)

    def _lift(self, site: Statement, loss: cst.BaseExpression):
        """``(block, body, index)`` of the enclosing block when the site sits in the body of
        ``with`` statements that only set TF contexts (``control_dependencies``, ``name_scope``,
        ``variable_scope``, ``device``) and its loss (a name) is computed above them. Why exact:
        the gradient and apply ops stay inside those contexts, as ``minimize`` created them."""
        if not isinstance(loss, cst.Name):
            return None
        block: Block = site.block
        index = site.index
        lifted = None
        while True:
            body = list(block.body)
            if any(loss.value in self.analyzer.statement_effects(body[j]).binds for j in range(index)):
                return lifted
            stmt = self.facts.parent(block)
            if not (isinstance(stmt, cst.With) and self._context_only(stmt)):
                return lifted
            outer = self.facts.parent(stmt)
            if not isinstance(outer, (cst.Module, cst.IndentedBlock)):
                return lifted
            for j in range(index):  # statements above the site inside the `with` must not touch the loss
                effects = self.analyzer.statement_effects(body[j])
                if effects.gradients or effects.mutates:
                    return None
            outer_body = list(outer.body)
            index = next(k for k, s in enumerate(outer_body) if s is stmt)
            block = outer
            lifted = (block, outer_body, index)

    def _context_only(self, stmt: cst.With) -> bool:
        from codemods.tape.tfapi import CONTEXTS

        for item in stmt.items:
            call = item.item
            if not (isinstance(call, cst.Call) and self.facts.tf_names(call.func) & CONTEXTS):
                return False
        return True

    def _in_loop(self, block: Block) -> bool:
        for anc in [block] + list(self.facts.ancestors(block)):
            if isinstance(anc, (cst.For, cst.While)):
                return True
            if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return False
        return False

    def _module_level_block(self, block: Block) -> bool:
        """A block nested in module-level statements only (``with``/``if`` at module level)."""
        return not any(isinstance(a, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) for a in self.facts.ancestors(block))

    def var_list(self, var_list: Optional[cst.BaseExpression], what: str) -> Optional[str]:
        """Gate: the variables the rewrite differentiates are the ones ``what`` did. Absent: TF1's
        default, ``trainable_variables()`` (plus the TRAINABLE_RESOURCE_VARIABLES collection,
        which :meth:`ModuleFacts.variable_set_gate` proves empty). Given: every variable must be
        provably trainable (a tape watches only trainable variables)."""
        gate = self.facts.variable_set_gate()
        if gate:
            raise Reject(gate)
        if var_list is None or (isinstance(var_list, cst.Name) and var_list.value == "None"):
            return self.facts.spelling.v1_name("trainable_variables()")
        if not self.trainable(var_list):
            raise Reject(f"cannot show that every variable in `{self.facts.code(var_list, 60)}` is trainable: "
                         f"{what} differentiates any variable, a `tf.GradientTape` only watches trainable ones "
                         f"{MANUAL}")
        return self.facts.code(var_list)

    def trainable(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """Whether ``expr`` provably evaluates to trainable variables only."""
        if depth > 5:
            return False
        if isinstance(expr, cst.Call):
            names = self.facts.tf_names(expr.func)
            if names & TRAINABLE_LIST_CALLS:
                return True
            if "tf.get_collection" in names and expr.args:
                return "tf.GraphKeys.TRAINABLE_VARIABLES" in self.facts.tf_names(expr.args[0].value)
            if isinstance(expr.func, cst.Name) and expr.func.value == "list" and len(expr.args) == 1:
                return self.trainable(expr.args[0].value, depth + 1)
            return False
        if isinstance(expr, cst.Attribute):
            return expr.attr.value in ("trainable_variables", "trainable_weights")
        if isinstance(expr, (cst.List, cst.Tuple)):
            return bool(expr.elements) and all(
                not isinstance(e, cst.StarredElement) and self._trainable_variable(e.value) for e in expr.elements)
        if isinstance(expr, cst.ListComp):
            comp = expr.for_in
            return (comp.inner_for_in is None and isinstance(comp.target, cst.Name)
                    and isinstance(expr.elt, cst.Name) and expr.elt.value == comp.target.value
                    and self.trainable(comp.iter, depth + 1))
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
            return self.trainable(expr.left, depth + 1) and self.trainable(expr.right, depth + 1)
        if isinstance(expr, cst.Name):
            found = self.facts.assignments(expr)
            if len(found) != 1:
                return False
            value = self.facts.assigned_value(found[0])
            return value is not None and self.trainable(value, depth + 1)
        return False

    def _trainable_variable(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Name):
            found = self.facts.assignments(expr)
            if len(found) != 1:
                return False
            value = self.facts.assigned_value(found[0])
            if value is None:
                return False
            expr = value
        if isinstance(expr, cst.Call):
            names = self.facts.tf_names(expr.func) & set(VARIABLE_CONSTRUCTORS)
            if not names:
                return False
            positional, keywords = call_args(expr)
            if positional is None:
                return False
            position = VARIABLE_CONSTRUCTORS[sorted(names)[0]]
            flag = keywords.get("trainable", positional[position] if len(positional) > position else None)
            return flag is None or (isinstance(flag, cst.Name) and flag.value == "True")
        return False

    def compat_rename(self, ctor: cst.Call) -> Dict[cst.CSTNode, str]:
        """Spell a TF1 optimizer constructor as ``tf.compat.v1.train.X`` if it is not already
        (graph-mode modules keep TF1 optimizers: Keras 3 optimizers do not run in TF1 graphs)."""
        from codemods._names import TF1_OPTIMIZERS

        names = self.facts.tf_names(ctor.func) & TF1_OPTIMIZERS
        if not names:
            return {}
        cls = sorted(names)[0].split(".")[-1]
        current = self.facts.code(ctor.func)
        wanted = self.facts.spelling.v1_name(f"train.{cls}")
        if current == wanted or any(q.startswith("tensorflow.compat.v1.") for q in self.facts.qualified(ctor.func)):
            return {}
        return {ctor.func: wanted}

    def clip_norm_option(self) -> Optional[str]:
        value = self.options.add_clip_norm
        return None if value is None else repr(float(value))


# -- small syntax helpers the rules share ---------------------------------------------------

def single_small(stmt: cst.BaseStatement) -> Optional[cst.BaseSmallStatement]:
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        return stmt.body[0]
    return None


def statement_value(small: Optional[cst.BaseSmallStatement]) -> Optional[cst.BaseExpression]:
    if isinstance(small, (cst.Assign, cst.Expr, cst.Return)):
        return small.value
    return None


def method_call(node: Optional[cst.BaseExpression], method: str) -> Optional[cst.Call]:
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == method:
        return node
    return None


def simple_reference(node: Optional[cst.BaseExpression]) -> bool:
    if isinstance(node, cst.Name):
        return True
    if isinstance(node, cst.Attribute):
        return simple_reference(node.value)
    return False


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


def tf_name_dotted(node: cst.CSTNode) -> Optional[str]:
    return dotted_name(node) if isinstance(node, (cst.Name, cst.Attribute)) else None


def rules_for_planning(rules: Optional[Sequence[type]] = None) -> List[Type]:
    """The TF 2 site rules of ``rules`` (the engine's rule set; default: the registry's), in
    order (imported here: the registry imports the rules)."""
    from codemods.tape.rule import GradientSiteRule

    if rules is None:
        from codemods._registry import RULES as rules
    return [rule for rule in rules if issubclass(rule, GradientSiteRule) and rule.KIND]
