"""The driver: find gradient sites, ask the rules' matchers, prove or decline, resolve overlaps.

:func:`plan_module` runs once per module (shared by TFC101-TFC103, TFC202 and TFC104 through
:func:`shared_planner`). For every statement of every block it asks each TF 2 site rule
(``GradientSiteRule`` subclasses, in registry order) whether the statement is its site; the first
that matches plans it -- a :class:`~codemods.rules.tape.sites.Plan` -- or raises
:class:`~codemods.rules.tape.sites.Reject`, which becomes a :class:`~codemods.rules.tape.sites.Decline`
(TFC202). Calls of ``minimize``/``compute_gradients`` that are not statements of their own
(inside ``tf.cond`` lambdas, expressions) are declined; plans whose regions overlap are declined.

The gates every site passes (each documented where it is checked):

* :meth:`Planner.module_gate` -- fragments, reference variables, v1 control flow, gradient
  overrides, ``tf.distribute`` (:meth:`~codemods.rules.tape.facts.ModuleFacts.module_gate`);
* ``optimizers.check`` -- only ``tf.train`` optimizers, optionally inside
  ``clip_gradients_by_norm``;
* :meth:`Planner.bind_args` / :meth:`Planner.check_uncarried` -- arguments with no tape equivalent;
* :meth:`Planner.loss_region` -- the backward slice and its boundary (:mod:`codemods.rules.tape.slicing`);
* :meth:`Planner.var_list` -- the variables after the rewrite are the variables before;
* per-rule gates in the rule files (the clipping shape, names removed but still read).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst

from codemods.rules.analysis import dotted_name
from codemods.engine.core import FixSafety
from codemods.rules.tape import optimizers
from codemods.rules.tape.effects import Analyzer
from codemods.rules.tape.emit import Emitter
from codemods.rules.tape.facts import MANUAL, ModuleFacts
from codemods.rules.tape.gates import Gates
from codemods.rules.tape.overlaps import check_groups, drop_overlaps
from codemods.rules.tape.sites import Block, Decline, Plan, Reject
from codemods.rules.tape.slicing import tape_region
from codemods.rules.tape.tfapi import OPTIMIZER_GRADIENT_METHODS
from codemods.rules.tape.tfapi import CONTROL, LOOPS

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
        self.gates = Gates(facts)
        self.emit = Emitter(facts)
        self.plans: List[Plan] = []
        self.declines: List[Decline] = []
        self._handled: Set[int] = set()

    # -- the run -----------------------------------------------------------------------
    def run(self) -> "Planner":
        blocks = _BlockCollector()
        self.module.visit(blocks)
        for block in blocks.blocks:
            if not (isinstance(block, cst.IndentedBlock) and self.facts.in_compiled_function(block)):
                self._plan_block(block)
        calls = _GradientCalls()
        self.module.visit(calls)
        for call, method in calls.calls:
            if id(call) not in self._handled and not self.facts.in_compiled_function(call):
                self._stray_call(call, method)
        self.plans = drop_overlaps(self.plans, self.declines)
        check_groups(self.facts, self.plans, self.declines)
        return self

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
                    # Reported at the training site (the reason names the statement it blames).
                    self.declines.append(Decline(rule.KIND, call, reject.reason))
                else:
                    if plan is not None:
                        self.plans.append(plan)
                break

    def _stray_call(self, call: cst.Call, method: str) -> None:
        """``minimize``/``compute_gradients`` that is not a statement of its own: declined.
        Why: a tape must wrap the statements that compute the loss, which a lambda of
        ``tf.cond`` or a larger expression does not have."""
        kind = {"compute_gradients": "compute_apply", "minimize": "minimize"}[method]
        info = self.optimizer(call.func.value)  # type: ignore[attr-defined]
        if info.kind in optimizers.NOT_TF1_SITE_KINDS or not self.facts.imports_tf:
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

    # -- gates and helpers the rules share ---------------------------------------------------
    def module_gate(self) -> None:
        reason = self.facts.module_gate()
        if reason:
            raise Reject(reason)

    def optimizer(self, receiver: cst.BaseExpression) -> optimizers.Optimizer:
        return optimizers.classify(self.facts, receiver, analyzer=self.analyzer)

    def loss_region(self, site: Statement, loss: cst.BaseExpression, callable_loss: bool) -> LossRegion:
        """Gate and slice: which statements of the block go inside the tape (see
        :mod:`codemods.rules.tape.slicing`). A callable loss is called inside the tape, exactly as
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
        root = loss
        field = None
        while isinstance(root, cst.Attribute):
            field = root.attr.value
            root = root.value  # `self.loss`: the object must not change inside the `with` either
        if not isinstance(root, cst.Name) or not (isinstance(loss, cst.Name) or isinstance(loss, cst.Attribute)):
            return None
        if not (isinstance(loss, cst.Attribute) and isinstance(loss.value, cst.Name)):
            field = None  # `a.b.loss`: any store into `a` may change it
        block: Block = site.block
        index = site.index
        lifted = None
        while True:
            body = list(block.body)
            if not all(self._leaves_loss(body[j], root.value, field) for j in range(index)):
                return lifted
            stmt = self.facts.parent(block)
            if not (isinstance(stmt, cst.With) and self._context_only(stmt)):
                return lifted
            outer = self.facts.parent(stmt)
            if not isinstance(outer, (cst.Module, cst.IndentedBlock)):
                return lifted
            for j in range(index):  # statements above the site inside the `with` must not touch the loss
                effects = self.analyzer.statement_effects(body[j])
                if effects.mutates and not self._leaves_loss(body[j], root.value, field, plain_object=True):
                    return None
                if effects.gradients and not self._gradient_site(body[j]):
                    return None
            outer_body = list(outer.body)
            index = next(k for k, s in enumerate(outer_body) if s is stmt)
            block = outer
            lifted = (block, outer_body, index)

    def _leaves_loss(self, stmt: cst.BaseStatement, root: str, field: Optional[str],
                     plain_object: bool = False) -> bool:
        """Whether ``stmt`` leaves the loss ``root`` (``root.field``) as it was: it neither binds nor
        changes ``root``, or (a loss read off a field of ``self``) it only stores another field of
        it, ``self.d_optim = opt.minimize(self.d_loss)`` beside ``self.g_loss`` -- of an object
        whose class defines no property or ``__setattr__`` (a store then changes that field alone).
        ``plain_object``: nor through another name that may refer to the same object (the statements
        inside a ``with``: an optimizer's own ``minimize`` changes the optimizer, which is fine)."""
        effects = self.analyzer.statement_effects(stmt)
        if root in effects.binds:
            return False
        if plain_object and any(root in self.analyzer.aliases(name) for name in effects.mutates - {root}):
            return False  # another name of the loss's object changed (`m = self` ... `m.g_loss = ...`)
        if root not in effects.mutates:
            return True
        small = single_small(stmt)
        if field is None or not isinstance(small, cst.Assign) or len(small.targets) != 1:
            return False
        target = small.targets[0].target
        if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
                and target.value.value == root and target.attr.value != field):
            return False
        if root in self.analyzer.expression_effects(small.value, stmt).mutates:
            return False
        return self._plain_self(target.value)

    def _plain_self(self, name: cst.Name) -> bool:
        """``name`` is the receiver of a method of a class of this file that defines no property,
        descriptor or attribute hook, and whose bases are ``object`` or nothing."""
        function = self.facts.function_of(name)
        if function is None or not function.params.params or function.params.params[0].name.value != name.value:
            return False
        body = self.facts.parent(function)
        cls = self.facts.parent(body) if body is not None else None
        if not isinstance(cls, cst.ClassDef) or function.decorators:
            return False
        if any(not (isinstance(b.value, cst.Name) and b.value.value == "object") or b.keyword for b in cls.bases):
            return False
        for stmt in cls.body.body:
            if isinstance(stmt, cst.FunctionDef):
                if stmt.decorators or stmt.name.value in ("__setattr__", "__getattr__", "__getattribute__"):
                    return False
            elif not isinstance(stmt, cst.SimpleStatementLine):
                return False
        return True

    def _gradient_site(self, stmt: cst.BaseStatement) -> bool:
        """``x = opt.minimize(...)`` / ``opt.apply_gradients(...)``: another training site (its own
        ops are created after the loss; it changes no value the loss reads)."""
        value = statement_value(single_small(stmt))
        return isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
            value.func.attr.value in OPTIMIZER_GRADIENT_METHODS

    def _context_only(self, stmt: cst.With) -> bool:
        from codemods.rules.tape.tfapi import CONTEXTS

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
