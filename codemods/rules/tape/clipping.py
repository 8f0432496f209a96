"""Recognising the gradient clipping between a gradient computation and ``apply_gradients``.

Shared by TFC101 and TFC102. Only these transforms are known (anything else -- ``MyCapper(g)``,
a lambda, an unknown function -- is declined: the rewrite would have to guess what it does):

* ``grads, norm = tf.clip_by_global_norm(grads, c)`` on the gradient list;
* ``grads = [CLIP(g, ...) for g in grads]`` with ``CLIP`` one of ``tf.clip_by_value`` /
  ``clip_by_norm`` / ``clip_by_average_norm`` applied to each gradient, optionally guarded by
  ``None if g is None else CLIP(g)``;
* for (gradient, variable) pairs: ``[(CLIP(g), v) for g, v in pairs]`` (optionally
  ``if g is not None``), or ``[(CLIP(gv[0]), gv[1]) for gv in pairs]``.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

import libcst as cst

from codemods.rules.analysis import names_bound, names_read
from codemods.rules.tape.facts import MANUAL, ModuleFacts
from codemods.rules.tape.planner import method_call, single_small, statement_value
from codemods.rules.tape.sites import Reject

PER_TENSOR_CLIPS = {"tf.clip_by_value", "tf.clip_by_norm", "tf.clip_by_average_norm"}
CLIPS = PER_TENSOR_CLIPS | {"tf.clip_by_global_norm"}
KNOWN = "`tf.clip_by_value`/`clip_by_norm`/`clip_by_average_norm`/`clip_by_global_norm`"


def follow(facts: ModuleFacts, body: List[cst.BaseStatement], index: int, chain: Tuple[str, ...]):
    """Trace the gradient names bound at ``index`` to an ``apply_gradients`` statement.

    Returns ``(apply_index, clip_indices, other_uses)`` or None (never reaches it: a look-alike).
    Only the *gradient* names stay live through a clip: ``grads, norm = clip_by_global_norm(...)``
    makes ``grads`` live, not ``norm`` (a summary of the norm is not a use of the gradients).
    """
    live = set(chain)
    clips: List[int] = []
    others: List[cst.CSTNode] = []
    for j in range(index + 1, len(body)):
        stmt = body[j]
        reads = names_read(stmt) & live
        small = single_small(stmt)
        value = statement_value(small) if small is not None else None
        if value is not None and reads and method_call(value, "apply_gradients") is not None:
            return j, clips, others
        if not reads:
            live -= names_bound(stmt)
            continue
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and value is not None:
            bound = _chain_names(small.targets[0].target) or ()
            clips.append(j)
            if isinstance(value, cst.Call) and "tf.clip_by_global_norm" in facts.tf_names(value.func) and bound:
                live |= {bound[0]}
            else:
                live |= set(bound)
            continue
        others.append(stmt)
    return None


def _chain_names(target: cst.BaseExpression) -> Optional[Tuple[str, ...]]:
    if isinstance(target, cst.Name):
        return (target.value,)
    if isinstance(target, (cst.Tuple, cst.List)) and all(isinstance(e.value, cst.Name) for e in target.elements):
        return tuple(e.value.value for e in target.elements)  # type: ignore[attr-defined]
    return None


chain_names = _chain_names


def check_list_clip(facts: ModuleFacts, small: Optional[cst.BaseSmallStatement], grads: str) -> str:
    """``new, _ = tf.clip_by_global_norm(grads, c)`` or ``new = [CLIP(g) for g in grads]``; returns
    the name the clipped list is bound to (often ``grads`` again, or ``clipped_gradients``)."""
    if not isinstance(small, cst.Assign) or len(small.targets) != 1:
        raise Reject(f"unrecognised gradient transform {MANUAL}", small)
    value = small.value
    target = small.targets[0].target
    if isinstance(value, cst.Call) and "tf.clip_by_global_norm" in facts.tf_names(value.func):
        first = value.args[0].value if value.args else None
        if (isinstance(first, cst.Name) and first.value == grads and isinstance(target, (cst.Tuple, cst.List))
                and target.elements and isinstance(target.elements[0].value, cst.Name)
                and not any(a.star for a in value.args)
                and not any(a.keyword and a.keyword.value == "use_norm" for a in value.args)):
            return target.elements[0].value.value
    if isinstance(value, cst.ListComp) and isinstance(target, cst.Name):
        comp = value.for_in
        if (comp.inner_for_in is None and not comp.ifs and isinstance(comp.target, cst.Name)
                and isinstance(comp.iter, cst.Name) and comp.iter.value == grads
                and per_tensor_clip(facts, value.elt, comp.target.value)):
            return target.value
    raise Reject(f"cannot prove what {facts.where(small, 60)} does to the gradients "
                 f"(only {KNOWN} are known) {MANUAL}", small)


def unzip_pairs(small: Optional[cst.BaseSmallStatement], pairs: str) -> Optional[tuple]:
    """``grads, variables = zip(*pairs)`` -> ``("grads", "variables")``."""
    if not (isinstance(small, cst.Assign) and len(small.targets) == 1):
        return None
    target, value = small.targets[0].target, small.value
    if (isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2
            and all(isinstance(e.value, cst.Name) for e in target.elements)
            and isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "zip"
            and len(value.args) == 1 and value.args[0].star == "*"
            and isinstance(value.args[0].value, cst.Name) and value.args[0].value.value == pairs):
        return tuple(e.value.value for e in target.elements)  # type: ignore[attr-defined]
    return None


def per_tensor_clip(facts: ModuleFacts, expr: cst.BaseExpression, grad: str, indexed: bool = False) -> bool:
    """``CLIP(grad, consts...)``, optionally ``None if grad is None else ...`` (either order).
    ``indexed``: the gradient is spelled ``grad[0]`` (``for gv in grads_and_vars``)."""

    def is_grad(node: cst.BaseExpression) -> bool:
        if indexed:
            return is_index(node, grad, 0)
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
                    and per_tensor_clip(facts, clip_branch, grad, indexed))
        return False
    if isinstance(expr, cst.Call) and facts.tf_names(expr.func) & PER_TENSOR_CLIPS:
        if not expr.args or expr.args[0].star or expr.args[0].keyword is not None:
            return False
        if not is_grad(expr.args[0].value):
            return False
        return all(grad not in names_read(a.value) for a in expr.args[1:]) and not any(a.star for a in expr.args)
    return False


def pair_clip(facts: ModuleFacts, small: Optional[cst.BaseSmallStatement], pairs: str, grads: str,
              variables: str) -> Tuple[str, str]:
    """Rewrite ``[(CLIP(g), v) for g, v in pairs]`` -> ("list", ``[CLIP(g) for g in grads]``);
    with an ``if`` filter -> ("pairs", the same comprehension over ``zip(grads, variables)``)."""
    bad = Reject(f"cannot prove what {facts.where(small, 60) if small is not None else 'the transform'} does to "
                 f"the gradients (only {KNOWN} applied to each gradient are known; a custom function such as "
                 f"`MyCapper` may do anything) {MANUAL}", small)
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
    module = facts.module
    if isinstance(loop.target, cst.Tuple) and len(loop.target.elements) == 2 and all(
            isinstance(e.value, cst.Name) for e in loop.target.elements):
        g_name = loop.target.elements[0].value.value  # type: ignore[attr-defined]
        v_name = loop.target.elements[1].value.value  # type: ignore[attr-defined]
        if not (isinstance(v_expr, cst.Name) and v_expr.value == v_name):
            raise bad
        if not per_tensor_clip(facts, g_expr, g_name) or v_name in names_read(g_expr):
            raise bad
        if loop.ifs:
            if not all(is_not_none_filter(f.test, g_name) for f in loop.ifs):
                raise bad
            return ("pairs", module.code_for_node(comp.with_deep_changes(loop, iter=cst.parse_expression(
                f"zip({grads}, {variables})"))).strip())
        new_comp = cst.ListComp(elt=g_expr, for_in=cst.CompFor(target=cst.Name(g_name), iter=cst.Name(grads)))
        return ("list", module.code_for_node(new_comp))
    if isinstance(loop.target, cst.Name):
        gv = loop.target.value
        if not is_index(v_expr, gv, 1) or loop.ifs or not per_tensor_clip(facts, g_expr, gv, indexed=True):
            raise bad
        grad = "grad"
        while grad in names_read(g_expr) or grad in (grads, variables):
            grad += "_"
        g_plain = replace_index(g_expr, gv, 0, grad)
        if g_plain is None:
            raise bad
        new_comp = cst.ListComp(elt=g_plain, for_in=cst.CompFor(target=cst.Name(grad), iter=cst.Name(grads)))
        return ("list", module.code_for_node(new_comp))
    raise bad


def is_not_none_filter(test: cst.BaseExpression, grad: str) -> bool:
    return (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
            and isinstance(test.left, cst.Name) and test.left.value == grad
            and isinstance(test.comparisons[0].operator, cst.IsNot)
            and isinstance(test.comparisons[0].comparator, cst.Name)
            and test.comparisons[0].comparator.value == "None")


def is_index(expr: cst.BaseExpression, name: str, index: int) -> bool:
    return (isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name) and expr.value.value == name
            and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index)
            and isinstance(expr.slice[0].slice.value, cst.Integer)
            and expr.slice[0].slice.value.value == str(index))


class _IndexReplacer(cst.CSTTransformer):
    def __init__(self, name: str, index: int, new: str) -> None:
        self.name, self.index, self.new = name, index, new

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript) -> cst.BaseExpression:
        if is_index(original, self.name, self.index):
            return cst.Name(self.new)
        return updated


def replace_index(expr: cst.BaseExpression, name: str, index: int, new: str) -> Optional[cst.BaseExpression]:
    """``expr`` with ``name[index]`` -> ``new``; None if ``name`` is also used otherwise."""
    out = expr.visit(_IndexReplacer(name, index, new))
    if any(isinstance(n, cst.Name) and n.value == name for n in _walk(out)):
        return None
    return out  # type: ignore[return-value]


def check_apply_zip(facts: ModuleFacts, apply_call: cst.Call, grads: str, variables: str) -> None:
    first = apply_call.args[0].value if apply_call.args else None
    ok = (isinstance(first, cst.Call) and isinstance(first.func, cst.Name) and first.func.value == "zip"
          and len(first.args) == 2 and isinstance(first.args[0].value, cst.Name)
          and first.args[0].value.value == grads and isinstance(first.args[1].value, cst.Name)
          and first.args[1].value.value == variables)
    if not ok:
        raise Reject(f"`apply_gradients` is not fed `zip({grads}, {variables})` {MANUAL}", apply_call)


def _walk(node: cst.CSTNode):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)
