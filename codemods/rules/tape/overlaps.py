"""Sites whose tape regions overlap: one ``with`` of several tapes, or a decline; and groups of
sites that must be rewritten together (an optimizer name rebound by all its sites).
"""

from __future__ import annotations

from typing import Dict, List, Set, Tuple

import libcst as cst

from codemods.rules.tape.facts import MANUAL, ModuleFacts
from codemods.rules.tape.sites import Decline, Plan


def check_groups(facts: ModuleFacts, plans: List[Plan], declines: List[Decline]) -> None:
    """Gate: a name rebound by a group of plans (``optimizer = clip_gradients_by_norm(opt, c)``
    -> ``optimizer = opt``) must be used only at those sites. Why: any other use would then see
    the optimizer without its clipping. The plans of such a group move from ``plans`` to
    ``declines``."""
    groups: Dict[int, List[Plan]] = {}
    for plan in plans:
        if plan.group is not None:
            key = id(facts.scope(plan.group)), plan.group.value
            groups.setdefault(hash(key), []).append(plan)
    for group in groups.values():
        name = group[0].group
        assert name is not None
        scope = facts.scope(name)
        receivers = {id(use) for plan in group
                     for use in (plan.group_uses or [plan.node.func.value])}  # type: ignore[attr-defined]
        others = [a.node for a in (scope.accesses[name.value] if scope is not None else ())
                  if id(a.node) not in receivers]
        if not others:
            continue
        reason = (f"`{name.value}` (a `clip_gradients_by_norm` optimizer bound elsewhere) is also used at "
                  f"{facts.where(others[0], 40)}, so it cannot be rebound to the inner optimizer; the "
                  f"compat form (TFC001) keeps it working {MANUAL}")
        for plan in group:
            plans.remove(plan)
            declines.append(Decline(plan.kind, plan.node, reason))


def drop_overlaps(plans: List[Plan], declines: List[Decline]) -> List[Plan]:
    """Gate: two plans may not share statements of a block -- unless they can share one ``with``
    of several tapes (a GAN: two losses computed by the same statements, both gradient
    statements after all of them). Why exact: every tape records every op of the shared
    statements; each computes its own gradient. Otherwise one tape per loss cannot be placed
    without reordering code. Returns the plans kept (the others are declined)."""
    spans: Dict[int, List[Tuple[Plan, int, int]]] = {}
    for plan in plans:
        if plan.site_block is None:
            spans.setdefault(id(plan.block), []).append((plan, plan.region_start, plan.last_index))
        else:
            spans.setdefault(id(plan.block), []).append((plan, plan.region_start, plan.anchor or 0))
            spans.setdefault(id(plan.site_block), []).append((plan, plan.grad_index, plan.last_index))
    clashing: Dict[int, Set[int]] = {}
    by_id = {id(plan): plan for plan in plans}
    for entries in spans.values():
        for plan, start, last in entries:
            for other, o_start, o_last in entries:
                if other is not plan and not (last < o_start or o_last < start):
                    clashing.setdefault(id(plan), set()).add(id(other))
    merged: Set[int] = set()
    for component in _components(clashing):
        if _merge([by_id[i] for i in component]):
            merged |= component
    keep: List[Plan] = []
    for plan in plans:
        if id(plan) in clashing and id(plan) not in merged:
            declines.append(Decline(
                plan.kind, plan.node,
                "several gradient computations share the statements that compute their losses; "
                f"one tape per loss cannot be placed without reordering code {MANUAL}"))
        else:
            keep.append(plan)
    return keep


def _components(edges: Dict[int, Set[int]]) -> List[Set[int]]:
    seen: Set[int] = set()
    out: List[Set[int]] = []
    for node in edges:
        if node in seen:
            continue
        stack, component = [node], set()
        while stack:
            current = stack.pop()
            if current in component:
                continue
            component.add(current)
            stack.extend(edges.get(current, ()))
        seen |= component
        out.append(component)
    return out


def _merge(plans: List[Plan]) -> bool:
    """Put ``plans`` under one ``with`` of several tapes when that is exact: same block, regions
    that end before every gradient statement, no plan with its site in a nested block."""
    block = plans[0].block
    if any(p.block is not block or p.region_start >= p.region_end for p in plans):
        return False
    # each plan's `loss_value = self.d_loss` (a loss that is not a name) goes inside the shared
    # `with`, in the order of the plans; their names must differ
    extra_names = [t.target.value for p in plans for s in p.tape_extra for small in getattr(s, "body", ())
                   if isinstance(small, cst.Assign) for t in small.targets if isinstance(t.target, cst.Name)]
    if len(extra_names) != len(set(extra_names)) or len(extra_names) != sum(len(p.tape_extra) for p in plans):
        return False

    def position(p: Plan) -> int:  # where the gradient statement is, in the region's block
        return p.anchor if p.site_block is not None and p.anchor is not None else p.grad_index

    start = min(p.region_start for p in plans)
    end = max(p.region_end for p in plans)
    if any(position(p) < end for p in plans):
        return False
    touched = [k for p in plans if p.site_block is None for k in p.replacements]
    if any(start <= k < end for k in touched):
        return False
    from codemods.rules.tape.slicing import cell_boundary  # noqa: PLC0415 - keep overlaps free of the slicer

    body = list(block.body)
    if any(cell_boundary(body[k]) for k in range(start + 1, end)):
        return False
    leader, *followers = sorted(plans, key=position)
    items = [p.tape_header[len("with "):-1] for p in [leader] + followers]
    leader.tape_header = "with " + ", ".join(items) + ":"
    leader.region_start, leader.region_end = start, end
    leader.tape_extra = [s for p in [leader] + followers for s in p.tape_extra]
    for p in followers:
        p.region_start = p.region_end = -1  # the leader's `with` records for them
        p.leader = leader
    leader.followers = followers
    return True
