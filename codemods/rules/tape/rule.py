"""The codemod base of the TF 2 site rules (TFC101-TFC103) and their report (TFC202).

A site rule is a :class:`GradientSiteRule` with a ``KIND``, a ``match`` (is this statement my
site? cheap and syntactic) and a ``plan`` (prove it with the planner's gates and emit the tape
form, or raise :class:`~codemods.rules.tape.sites.Reject`). The planner runs once per module and is
shared by every rule (:func:`shared_planner`); each rule then applies the plans of its own kind.
"""

from __future__ import annotations

from typing import ClassVar, Dict, List, Optional, Sequence, Type

import libcst as cst
from libcst.metadata import ParentNodeProvider, QualifiedNameProvider, ScopeProvider

from codemods.engine.base import ENGINE_RULES_KEY, FixSafety, TfcCodemod
from codemods.rules.tape.emit import rebuild
from codemods.rules.tape.facts import ModuleFacts, position_resolver, resolve_metadata
from codemods.rules.tape.planner import Planner, PlannerOptions, Statement
from codemods.rules.tape.unfollowed import unfollowed
from codemods.rules.tape.sites import Plan

# The rule code of each site kind (a follower in a group of tapes is reported under its own code).
KIND_CODES = {"compute_apply": "TFC101", "tf_gradients": "TFC102", "minimize": "TFC103"}


def shared_planner(rule: TfcCodemod, module: cst.Module, *, run: bool = True) -> Planner:
    """The module's :class:`Planner`, computed once per engine run and shared by the rules (it
    depends only on the module, its metadata and ``--add-clip-norm``)."""
    cache = rule.shared_cache()
    options = PlannerOptions(add_clip_norm=rule.add_clip_norm)
    planner = cache.get("planner")
    if planner is None or planner.module is not module or planner.options != options:
        wrapper = rule.context.wrapper
        assert wrapper is not None, "the planner runs inside a rule's transform"
        facts = ModuleFacts(module, resolve_metadata(wrapper), position_resolver(wrapper))
        planner = Planner(facts, options, rules_for_planning(rule.context.scratch.get(ENGINE_RULES_KEY)))
        cache["planner"] = planner
        cache["planner_ran"] = False
    if run and not cache.get("planner_ran"):
        planner.run()
        # What no rule followed is reported, never left silent (codemods/rules/tape/unfollowed.py).
        planner.declines.extend(unfollowed(planner))
        cache["planner_ran"] = True
    return planner


class GradientSiteRule(TfcCodemod):
    """Base of TFC101-TFC103 and TFC202: plan once per module, rewrite this rule's kind."""

    KIND: ClassVar[str] = ""  # the site kind this rule matches and rewrites ("" = report only)
    REPORT_DECLINES: ClassVar[bool] = False
    TOKENS: ClassVar[tuple] = ("compute_gradients", "minimize", "gradients")
    METADATA_DEPENDENCIES = (QualifiedNameProvider, ScopeProvider, ParentNodeProvider)

    # -- the matcher interface -----------------------------------------------------------
    @classmethod
    def match(cls, planner: Planner, site: Statement) -> Optional[cst.Call]:
        """The gradient call if ``site`` is this rule's kind of site, else None."""
        return None

    @classmethod
    def plan(cls, planner: Planner, site: Statement, call: cst.Call) -> Optional[Plan]:
        """The provable rewrite (raise ``Reject`` to decline; None for a look-alike)."""
        return None

    # -- the codemod -----------------------------------------------------------------------
    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        # Plan first; traverse (and rebuild) the tree only when this rule rewrites something.
        self._plan(tree)
        if not self._block_plans and not self._renames and not self._deletions:
            return tree
        return tree.visit(self)

    def _plan(self, node: cst.Module) -> None:
        planner = shared_planner(self, node)
        self._block_plans: Dict[int, List[Plan]] = {}  # by the block holding the tape region
        self._site_plans: Dict[int, List[Plan]] = {}  # by the block holding the gradient statement
        self._renames: Dict[int, str] = {}
        self._deletions: set = set()
        if self.REPORT_DECLINES:
            for decline in planner.declines:
                self.report(decline.node, decline.reason, fix=FixSafety.NONE)
            return
        # This rule applies its own plans, and the followers of those it leads (one `with` of
        # several tapes is written by one rule, whatever rule matched each site).
        mine = [plan for plan in planner.plans if plan.kind == self.KIND and plan.leader is None]
        mine += [f for plan in list(mine) for f in plan.followers]
        applied_of = {id(plan): self.may_fix(plan.node, plan.safety, KIND_CODES[plan.kind]) for plan in mine}
        changed = True
        while changed:  # a group (or a team of tapes) is applied together or not at all
            changed = False
            for plan in mine:
                group = [p for p in mine if plan.group is not None and p.group is plan.group]
                team = [plan.leader or plan] + (plan.leader or plan).followers
                if applied_of[id(plan)] and not all(applied_of.get(id(p), False) for p in group + team):
                    applied_of[id(plan)] = False
                    changed = True
        for plan in mine:
            message = plan.message + (f" (unsafe: {plan.note})" if plan.safety is FixSafety.UNSAFE else "")
            applied = applied_of[id(plan)]
            self.report(plan.node, message, fix=plan.safety, applied=applied, code=KIND_CODES[plan.kind])
            if applied:
                # Imported only for a file being rewritten: libcst.codemod costs ~0.25 s to import.
                from libcst.codemod.visitors import RemoveImportsVisitor

                for removed in plan.removed:
                    RemoveImportsVisitor.remove_unused_import_by_node(self.context, removed)
                self._block_plans.setdefault(id(plan.block), []).append(plan)
                self._site_plans.setdefault(id(plan.site_block or plan.block), []).append(plan)
                for node_, new in plan.renames.items():
                    self._renames[id(node_)] = new
                self._deletions |= {id(node_) for node_ in plan.deletions}
        if self._block_plans and planner.facts.spelling.needs_import:
            from libcst.codemod.visitors import AddImportsVisitor

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

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine,
                                  updated_node: cst.SimpleStatementLine):
        if id(original_node) in self._deletions:
            return cst.RemovalSentinel.REMOVE
        return updated_node

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        return self._renamed(original_node, updated_node)

    def _rebuilt(self, original_node, updated_node):
        plans = self._block_plans.get(id(original_node), [])
        site_plans = self._site_plans.get(id(original_node), [])
        if not plans and not site_plans:
            return updated_node
        return updated_node.with_changes(body=rebuild(list(updated_node.body), plans, site_plans))

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        return self._rebuilt(original_node, updated_node)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        return self._rebuilt(original_node, updated_node)


def rules_for_planning(rules: Optional[Sequence[type]] = None) -> List[Type]:
    """The TF 2 site rules of ``rules`` (the engine's rule set; default: the registry's), in
    order (the registry is imported here: it imports the rules)."""
    if rules is None:
        from codemods.engine.registry import RULES as rules
    return [rule for rule in rules if issubclass(rule, GradientSiteRule) and rule.KIND]
