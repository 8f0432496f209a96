"""``tf.contrib.estimator.clip_gradients_by_norm(opt, c)`` at a site: apply with ``opt``, clip with ``c``.

TF 1.15's wrapper clipped the gradients by their global norm in ``compute_gradients`` and applied
them with the inner optimizer, so the tape form is ``tf.clip_by_global_norm(gradients, c)``
followed by ``opt.apply_gradients``. The wrapper's binding goes away when the site is its only
use; bound elsewhere, it is rebound to the inner optimizer when every use of the name is a site
rewritten together (a *group*, checked by the planner); otherwise the site is declined (TFC001's
compat form keeps it working).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

import libcst as cst

from codemods.rules.analysis import call_args, has_comment, is_literal
from codemods.rules.tape.facts import MANUAL
from codemods.rules.tape.sites import Reject


@dataclass
class Unwrapped:
    """How a site uses the optimizer inside a ``clip_gradients_by_norm`` wrapper."""

    opt_code: str  # the optimizer that applies, spelled for the site
    clip_norm: Optional[str] = None
    replacements: Dict[int, List[cst.BaseStatement]] = field(default_factory=dict)  # in the site's block
    renames: Dict[cst.CSTNode, str] = field(default_factory=dict)
    removed: List[cst.CSTNode] = field(default_factory=list)  # calls whose imports may become unused
    deletions: List[cst.CSTNode] = field(default_factory=list)
    group: Optional[cst.Name] = None
    notes: List[str] = field(default_factory=list)  # reasons the fix is unsafe


def unwrap(planner, site, info, uses: List[cst.CSTNode]) -> Unwrapped:
    """``info`` is a ``wrapped`` optimizer; ``uses`` are the calls of this site on it."""
    facts = planner.facts
    body, index = site.body, site.index
    out = Unwrapped(opt_code="")
    replacements, renames, removed, deletions, notes = (out.replacements, out.renames, out.removed, out.deletions,
                                                        out.notes)
    group: Optional[cst.Name] = None
    wrapper_call: cst.Call = info.ctor
    inner_info = info.inner
    positional, keywords = call_args(wrapper_call)
    norm = positional[1] if len(positional) > 1 else keywords.get("clip_norm")
    if norm is None or not (is_literal(norm) or isinstance(norm, cst.Name)):
        raise Reject(f"the `clip_norm` of `clip_gradients_by_norm` is not a literal or a name {MANUAL}")
    clip_norm = facts.code(norm)
    inner = positional[0] if positional else keywords["optimizer"]
    opt_code = facts.code(inner)
    wrapper_name = info.name
    wrapper_removed = wrapper_name is None  # an inline wrapper disappears with the call
    if isinstance(wrapper_name, cst.Name):
        # Drop `optimizer = clip_gradients_by_norm(...)` when this site is its only use.
        wrapper_index = next((j for j in range(index) if assigns(body[j], wrapper_call)), None)
        if wrapper_index is None:
            # Bound elsewhere (module level, an outer function, before a loop): rebind the name
            # to the inner optimizer -- only if every use of it is a site rewritten here, which
            # the planner checks for the whole group.
            if not (is_literal(norm) or bound_to_literal(planner, norm)):
                raise Reject("`clip_gradients_by_norm` is applied outside this block with a `clip_norm` that is "
                             f"not a literal; the compat form (TFC001) keeps it working {MANUAL}")
            inner_code = facts.code(inner)
            if inner_info is not None and inner_info.kind == "tf1" and facts.graph_mode and \
                    inner_info.ctor is not None and isinstance(inner, cst.Call):
                for old, new_name in planner.gates.compat_rename(inner_info.ctor).items():
                    inner_code = new_name + inner_code[len(facts.code(old)):]
            binding = binding_statement(planner, wrapper_call)
            if isinstance(inner, cst.Name) and binding is not None:
                deletions.append(binding)  # `optimizer = clip(base, c)` goes; the sites use `base`
                opt_code = inner.value
            else:
                renames[wrapper_call] = inner_code  # `optimizer = clip(Adam(...), c)` -> `= Adam(...)`
                opt_code = wrapper_name.value
            group = wrapper_name
            wrapper_removed = True
            removed.append(wrapper_call)
            if has_comment(wrapper_call):
                notes.append("a comment inside the rebound `clip_gradients_by_norm(...)` is dropped")
        elif not accessed_outside(planner, wrapper_name, uses):
            replacements[wrapper_index] = []
            wrapper_removed = True
            removed.append(wrapper_call)
            if has_comment(body[wrapper_index]):
                notes.append("a comment on the removed `clip_gradients_by_norm` line is dropped")
    if not isinstance(inner, (cst.Name, cst.Call)):
        raise Reject(f"the wrapped optimizer is neither a name nor a constructor call {MANUAL}")
    if isinstance(inner, cst.Call) and not wrapper_removed:
        # Re-spelling the constructor would make a second optimizer (its own slots).
        raise Reject(f"the wrapped optimizer is built inline and the wrapper is used elsewhere {MANUAL}")
    if group is None and inner_info is not None and inner_info.kind == "tf1" and facts.graph_mode and \
            inner_info.ctor is not None:
        rename = planner.gates.compat_rename(inner_info.ctor)
        if isinstance(inner, cst.Call):
            for old, new_name in rename.items():
                opt_code = new_name + opt_code[len(facts.code(old)):]
        else:
            renames.update(rename)

    out.opt_code, out.clip_norm, out.group = opt_code, clip_norm, group
    return out


def assigns(stmt: cst.BaseStatement, value: cst.CSTNode) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.Assign) and stmt.body[0].value is value)


def bound_to_literal(planner, node: cst.BaseExpression) -> bool:
    """A name bound once, to a literal: the same value wherever it is read."""
    if not isinstance(node, cst.Name):
        return False
    found = planner.facts.assignments(node)
    value = planner.facts.assigned_value(found[0]) if len(found) == 1 else None
    return value is not None and is_literal(value)


def binding_statement(planner, wrapper_call: cst.Call) -> Optional[cst.SimpleStatementLine]:
    """``name = clip_gradients_by_norm(...)`` as a statement that can be deleted (its block keeps
    at least one other statement)."""
    assign = planner.facts.parent(wrapper_call)
    line = planner.facts.parent(assign) if isinstance(assign, cst.Assign) else None
    block = planner.facts.parent(line) if isinstance(line, cst.SimpleStatementLine) else None
    if not isinstance(block, (cst.Module, cst.IndentedBlock)) or len(line.body) != 1 or len(block.body) < 2:
        return None
    return line


def accessed_outside(planner, name: cst.Name, allowed: List[cst.CSTNode]) -> bool:
    scope = planner.facts.scope(name)
    if scope is None:
        return True
    allowed_ids = set()
    for node in allowed:
        stack = [node]
        while stack:
            current = stack.pop()
            allowed_ids.add(id(current))
            stack.extend(current.children)
    return any(id(access.node) not in allowed_ids for access in scope.accesses[name.value])
