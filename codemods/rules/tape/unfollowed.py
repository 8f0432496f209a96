"""Training sites no TF 2 rule followed: reported (TFC202), never left silent.

The site rules (TFC101-TFC103) recognise a ``compute_gradients`` / ``tf.gradients`` flow only
when it reaches ``apply_gradients`` within one block; a flow through a loop of towers, another
object's attributes, another method or another file is not a look-alike (a norm monitor, a
gradient penalty) but a training site they cannot follow. Silence there would let ``check`` (and
the pre-commit hook) pass TF1 training code, so :func:`unfollowed` reports what it can show:

* a ``compute_gradients`` call of a TF optimizer, with no plan or decline: where the same
  function (or, in a method, the same class) also calls ``apply_gradients``, as a flow the rules
  do not follow; otherwise (returned, stored, only measured) as a TF1 optimizer method whose
  gradients are not applied here, when the optimizer is a TF1 one or the module is TF1 code;
* a ``tf.gradients`` call, with no plan or decline, whose result is read by an
  ``apply_gradients`` call of the same function (a name) or the same class (``self.x``);
* ``tf.contrib.eager`` gradient functions (``implicit_gradients`` and friends), removed in TF 2;
* ``opt.minimize`` / ``opt.compute_gradients`` of a TF optimizer used as a value (``step =
  opt.minimize``, ``functools.partial(opt.minimize, ...)``): its calls are out of sight.
* an ``apply_gradients`` of a TF1 optimizer whose gradients no rule starts from
  (:mod:`codemods.rules.tape.applies`).

Each is a :class:`~codemods.rules.tape.sites.Decline` saying what was not followed; nothing is
rewritten here, so nothing here can change training.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, List, Optional, Set, Tuple

import libcst as cst

from codemods.rules.tape import optimizers
from codemods.rules.tape.shim_optimizers import built_by_shim
from codemods.rules.analysis import dotted_name
from codemods.rules.tape.applies import optimizer_kind, tf1_only_module, unfollowed_applies
from codemods.rules.tape.facts import MANUAL
from codemods.rules.tape.sites import Decline
from codemods.rules.tape.tfapi import EAGER_GRADIENT_FUNCTIONS
from codemods.rules.tape.syntax import dotted_reads

if TYPE_CHECKING:  # pragma: no cover
    from codemods.rules.tape.planner import Planner

_ELSEWHERE = "statements in another block, function or object"
# What an eager gradient function becomes (the TF 2 idiom the report points to).
_TAPE_HINT = ("compute the loss inside `with tf.GradientTape() as tape:` and take "
              "`tape.gradient(loss, variables)`")


def unfollowed(planner: "Planner") -> List[Decline]:
    """The training sites of ``planner``'s module that no plan or decline covers (see above)."""
    facts = planner.facts
    if not facts.imports_tf:
        return []
    covered = {id(p.node) for p in planner.plans} | {id(d.node) for d in planner.declines}
    calls = _Calls()
    facts.module.visit(calls)
    for found in (calls.computes, calls.applies, calls.gradients, calls.eager, calls.references):
        found[:] = [node for node in found if not facts.in_compiled_function(node)]
    applies = [c for c in calls.applies if not _foreign(planner, c)]
    out: List[Decline] = []
    for call in calls.eager:
        names = (facts.tf_names(call.func) | _through_alias(facts, call.func)) & EAGER_GRADIENT_FUNCTIONS
        if names and id(call) not in covered:
            name = sorted(names)[0]
            out.append(Decline("minimize", call, (
                f"`{name}` was removed in TF 2 (`tf.contrib.eager` is gone): {_TAPE_HINT}, then "
                f"`optimizer.apply_gradients(zip(gradients, variables))` {MANUAL}")))
    for ref in calls.references:
        parent = facts.parent(ref)
        if isinstance(parent, cst.Call) and parent.func is ref:
            continue  # a call: the rules' business
        if not facts.imports_tf or _foreign_receiver(planner, ref.value):
            continue
        out.append(Decline("minimize", ref, (
            f"`{facts.code(ref, 40)}` is used as a value, not called here; the TF 2 rules rewrite only direct "
            f"calls, so wherever it is called the training site needs a hand-written `tf.GradientTape` {MANUAL}")))
    out.extend(_unfollowed_flows(planner, calls, applies, covered))
    # apply_gradients of gradients no rule starts from (codemods/rules/tape/applies.py)
    reported = covered | {id(d.node) for d in out}
    out.extend(unfollowed_applies(planner, applies, reported))
    return out


def _unfollowed_flows(planner: "Planner", calls: "_Calls", applies: List[cst.Call],
                      covered: Set[int]) -> List[Decline]:
    """``compute_gradients`` / ``tf.gradients`` calls no rule planned or declined: flows that reach
    an ``apply_gradients`` by a path the rules do not follow, and (``compute_gradients`` of a TF1
    optimizer) gradients not applied in their function or class at all -- returned, stored,
    applied in another file or only measured; still a TF1-only method (a tape computes them in
    TF 2), so reported, never silent."""
    facts = planner.facts
    tf1_module = tf1_only_module(facts.tf_used)
    out: List[Decline] = []
    for call in calls.computes:
        if id(call) in covered or _foreign(planner, call):
            continue
        if any(_same_unit(facts, call, apply) for apply in applies):
            out.append(Decline("compute_apply", call, (
                f"the gradients of `{facts.code(call.func, 40)}` are not followed to an `apply_gradients` in "
                f"the same block (they go through {_through(planner, call) or _ELSEWHERE}); the TF 2 rules "
                f"rewrite only `compute_gradients` -> clip -> `apply_gradients` within one block, so this "
                f"training site needs a hand-written `tf.GradientTape` {MANUAL}")))
            continue
        kind = optimizer_kind(planner, call.func.value)  # type: ignore[attr-defined]
        if kind is None or (kind == "unknown" and not tf1_module):
            continue
        out.append(Decline("compute_apply", call, (
            f"the gradients of `{facts.code(call.func, 40)}` are not applied in this function or class "
            f"({_unapplied_through(planner, call)}); `compute_gradients` is a TF1 optimizer method, and the "
            f"TF 2 rules rewrite it only when `apply_gradients` follows in the same block. In TF 2, compute "
            f"them with `tf.GradientTape` (`tape.gradient(loss, variables)`) where the loss is computed, or "
            f"keep the `tf.compat.v1` optimizer as it is {MANUAL}")))
    for call in calls.gradients:
        if id(call) in covered or "tf.gradients" not in facts.tf_names(call.func):
            continue
        apply = _applied(planner, call, applies)
        if apply is None:
            continue  # a gradient penalty, a saliency map: not a training site
        out.append(Decline("tf_gradients", call, (
            f"the result of `tf.gradients` reaches `apply_gradients` ({facts.where(apply, 50)}) by a path the "
            f"TF 2 rules do not follow (another block, method or object); this training site needs a "
            f"hand-written `tf.GradientTape` {MANUAL}")))
    return out


def _unapplied_through(planner: "Planner", call: cst.Call) -> str:
    """Where the unapplied result of ``call`` goes, in words."""
    through = _through(planner, call)
    if through is None:
        return "they are only read in this function: measured, or passed on to other code"
    return f"they go through {through}"


def _through_alias(facts, func: cst.BaseExpression) -> Set[str]:
    """``tfe.implicit_gradients`` with ``tfe = tf.contrib.eager`` (every binding of ``tfe`` a plain
    assignment of a TF module): the TF names it spells."""
    if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)):
        return set()
    found = facts.assignments(func.value)
    modules: Set[str] = set()
    for assignment in found:
        value = facts.assigned_value(assignment)
        names = facts.tf_names(value) if isinstance(value, (cst.Name, cst.Attribute)) else set()
        if len(names) != 1:
            return set()
        modules |= names
    return {f"{module}.{func.attr.value}" for module in modules} if len(modules) == 1 else set()


def _foreign(planner: "Planner", call: cst.Call) -> bool:
    """The receiver is not a TF optimizer (``scipy.optimize``, our shim, ...)."""
    return _foreign_receiver(planner, call.func.value)  # type: ignore[attr-defined]


def _foreign_receiver(planner: "Planner", receiver: cst.BaseExpression) -> bool:
    info = planner.optimizer(receiver)
    if info.kind == "unknown" and built_by_shim(planner.facts, receiver):
        return True  # tfclip_compat's own optimizer (`tfc.wrap_optimizer(...)`): the compat form already
    return info.kind in optimizers.NOT_TF1_SITE_KINDS or (info.kind == "unknown" and "not defined in this file" in info.what)


def _through(planner: "Planner", call: cst.Call) -> Optional[str]:
    """Where the result of ``call`` goes, in words, for the report; None when it only stays in
    names of its block."""
    facts = planner.facts
    for node in facts.ancestors(call):
        if isinstance(node, cst.For):
            return f"a loop (`for {facts.code(node.target, 20)} in {facts.code(node.iter, 30)}`)"
        if isinstance(node, cst.While):
            return f"a loop (`while {facts.code(node.test, 30)}`)"
        if isinstance(node, cst.Return):
            return "the `return` of its function, to the caller"
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
            if any(isinstance(t, (cst.Attribute, cst.Subscript)) for t in targets):
                return f"`{facts.code(targets[0], 40)}`, an attribute or item"
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            break
    return None


def _applied(planner: "Planner", call: cst.Call, applies: List[cst.Call]) -> Optional[cst.Call]:
    """An ``apply_gradients`` call that reads the result of ``call``: a name of the same
    function, or ``self.x`` of the same class (the result's binding, from its ``Assign``)."""
    facts = planner.facts
    targets = _targets(facts, call)
    if not targets:
        return None
    scope = _scope(facts, call)
    for apply in applies:
        read = {name for arg in apply.args for name in dotted_reads(arg.value)}
        for target in targets & read:
            if target.startswith("self.") and _class(facts, apply) is _class(facts, call) is not None:
                return apply
            if "." not in target and _scope(facts, apply) is scope:
                return apply
    return None


def _targets(facts, call: cst.Call) -> Set[str]:
    """Dotted names the statement holding ``call`` binds (``g``, ``self.grads``, ``g, _``)."""
    for node in facts.ancestors(call):
        if isinstance(node, cst.Assign):
            out: Set[str] = set()
            for target in node.targets:
                for elem in _flatten(target.target):
                    name = dotted_name(elem) if isinstance(elem, (cst.Name, cst.Attribute)) else None
                    if name and name != "_":
                        out.add(name)
            return out
        if isinstance(node, cst.BaseStatement):
            return set()
    return set()


def _flatten(target: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _flatten(element.value)
    else:
        yield target


def _same_unit(facts, a: cst.CSTNode, b: cst.CSTNode) -> bool:
    """``a`` and ``b`` are in the same function, the same class, or both at module level."""
    cls = _class(facts, a)
    if cls is not None:
        return _class(facts, b) is cls
    return _scope(facts, a) is _scope(facts, b) and _class(facts, b) is None


def _scope(facts, node: cst.CSTNode) -> Optional[cst.CSTNode]:
    for anc in facts.ancestors(node):
        if isinstance(anc, (cst.FunctionDef, cst.Lambda)):
            return anc
    return None


def _class(facts, node: cst.CSTNode) -> Optional[cst.ClassDef]:
    for anc in facts.ancestors(node):
        if isinstance(anc, cst.ClassDef):
            return anc
    return None


class _Calls(cst.CSTVisitor):
    """Every ``compute_gradients`` / ``apply_gradients`` method call, every call named
    ``gradients`` and every call of an eager gradient function's last name."""

    _EAGER = {name.rsplit(".", 1)[1] for name in EAGER_GRADIENT_FUNCTIONS}

    def __init__(self) -> None:
        self.computes: List[cst.Call] = []
        self.applies: List[cst.Call] = []
        self.gradients: List[cst.Call] = []
        self.eager: List[cst.Call] = []
        self.references: List[cst.Attribute] = []

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in ("minimize", "compute_gradients"):
            self.references.append(node)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        last: Tuple[str, bool] = ("", False)
        if isinstance(func, cst.Attribute):
            last = (func.attr.value, True)
        elif isinstance(func, cst.Name):
            last = (func.value, False)
        name, is_method = last
        if is_method and name == "compute_gradients":
            self.computes.append(node)
        elif is_method and name == "apply_gradients":
            self.applies.append(node)
        elif name == "gradients":
            self.gradients.append(node)
        elif name in self._EAGER:
            self.eager.append(node)
