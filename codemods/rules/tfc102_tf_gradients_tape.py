"""TFC102: ``tf.gradients`` + clip + ``apply_gradients(zip(...))`` -> the TF 2 tape form."""

from __future__ import annotations

from typing import ClassVar, List, Optional, Set

import libcst as cst

from codemods.rules import Phase, Spec, all_of, calls, names
from codemods.rules.tape import clipping
from codemods.rules.tape.emit import carry_trivia
from codemods.rules.tape.facts import MANUAL
from codemods.rules.tape.planner import Planner, Statement, method_call
from codemods.rules.tape.rule import GradientSiteRule
from codemods.rules.tape.sites import Plan, Reject

GRADIENTS_PARAMS = ("ys", "xs", "grad_ys", "name", "colocate_gradients_with_ops", "gate_gradients",
                    "aggregation_method", "stop_gradients", "unconnected_gradients")
UNCARRIED = ("gate_gradients", "aggregation_method", "colocate_gradients_with_ops", "stop_gradients",
             "unconnected_gradients")


class TfGradientsToTape(GradientSiteRule):
    """## What it does
    Rewrites the BERT ``create_optimizer`` shape: ``grads = tf.gradients(loss, tvars)``,
    optionally ``(grads, _) = tf.clip_by_global_norm(grads, clip_norm=1.0)``, then
    ``optimizer.apply_gradients(zip(grads, tvars), global_step=global_step)``, into
    ``with tf.GradientTape() as tape:`` around the statements computing ``loss`` and
    ``grads = tape.gradient(loss, tvars)``. Clipping and ``apply_gradients`` (any
    optimizer, ``global_step`` included) are untouched.

    ## Why is this bad?
    ``tf.gradients`` only works in graph mode; it raises inside eager code and is the one
    line that keeps such a training function from running under TF 2 ``tf.function``.

    ## Example
    ```python
    import numpy as np
    import tensorflow.compat.v1 as tf

    x = tf.constant(np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(8, 3))
    y = tf.constant(np.linspace(0.0, 1.0, 8, dtype=np.float32).reshape(8, 1))
    w = tf.get_variable("w", [3, 1])
    global_step = tf.train.get_or_create_global_step()
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    tvars = tf.trainable_variables()
    grads = tf.gradients(loss, tvars)
    (grads, _) = tf.clip_by_global_norm(grads, clip_norm=1.0)
    optimizer = tf.train.AdamOptimizer(1e-3)
    train_op = optimizer.apply_gradients(zip(grads, tvars), global_step=global_step)
    ```

    ## Use instead
    ```python
    import numpy as np
    import tensorflow.compat.v1 as tf

    x = tf.constant(np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(8, 3))
    y = tf.constant(np.linspace(0.0, 1.0, 8, dtype=np.float32).reshape(8, 1))
    w = tf.get_variable("w", [3, 1])
    global_step = tf.train.get_or_create_global_step()
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    tvars = tf.trainable_variables()
    grads = tape.gradient(loss, tvars)
    (grads, _) = tf.clip_by_global_norm(grads, clip_norm=1.0)
    optimizer = tf.train.AdamOptimizer(1e-3)
    train_op = optimizer.apply_gradients(zip(grads, tvars), global_step=global_step)
    ```

    ## Fix safety
    Safe when the loss is computed in the same block and ``tvars`` is provably trainable
    (proven by executed equivalence tests). ``tf.gradients`` whose result never reaches
    ``apply_gradients`` (a gradient penalty, a saliency map) is a look-alike and is left
    alone without a diagnostic. A loss passed in as a parameter (the real BERT function),
    ``grad_ys=``/``stop_gradients=``/``gate_gradients=`` and other unprovable shapes are
    reported as TFC202 and left untouched.
    """

    CODE: ClassVar[str] = "TFC102"
    NAME: ClassVar[str] = "tf-gradients-to-tape"
    SUMMARY: ClassVar[str] = "`tf.gradients` + `apply_gradients` -> `tf.GradientTape` form"
    DESCRIPTION = SUMMARY
    PHASE: ClassVar[Phase] = Phase.TF2_FORM
    SITES: ClassVar[Spec] = all_of(calls("gradients"), names("apply_gradients"))
    KIND: ClassVar[str] = "tf_gradients"

    @classmethod
    def match(cls, planner: Planner, site: Statement) -> Optional[cst.Call]:
        """``tf.gradients(...)`` as the statement's value, or inside ``tf.clip_by_global_norm(...)``,
        ``zip(..., variables)`` or ``list(zip(...))`` (char-rnn, the PTB model, gpt-2)."""
        return _gradients_call(planner, site.value)

    @classmethod
    def plan(cls, planner: Planner, site: Statement, call: cst.Call) -> Optional[Plan]:
        facts, emit = planner.facts, planner.emit
        body, index, small = site.body, site.index, site.small
        if not isinstance(small, cst.Assign) or len(small.targets) != 1:
            return None
        carriers = _carriers(planner, small.targets[0].target, small.value, call)
        if not carriers:
            return None
        reach = _reaches_apply(planner, body, index, carriers)
        if reach is None:
            return None  # look-alike: a gradient penalty, a saliency map -- not a training site
        apply_index, hazard = reach
        planner.module_gate()
        if hazard is not None:
            raise Reject(f"the gradients are used by {facts.where(hazard, 50)}, which differentiates again; a tape's "
                         f"gradient ops are not proven to differentiate like `tf.gradients`' {MANUAL}", hazard)
        args = planner.gates.bind_args(call, "tf.gradients", GRADIENTS_PARAMS)
        planner.gates.check_uncarried(args, UNCARRIED, "tf.gradients")
        loss, xs = args.get("ys"), args.get("xs")
        if loss is None or xs is None:
            raise Reject(f"`tf.gradients` without `ys`/`xs` {MANUAL}")
        # tf.gradients returns a list; tape.gradient too when its sources are a list, which
        # `trainable` proves (and that every variable in it is trainable: a tape watches only those).
        planner.gates.var_list(xs, "`tf.gradients`")
        if not facts.graph_mode:
            raise Reject(f"`tf.gradients` in eager code: TF1 raised here, nothing to preserve {MANUAL}")
        region = planner.loss_region(site, loss, callable_loss=False)
        safety, note = region.safety, region.note
        tape = emit.fresh("tape")
        loss_name, extra = emit.loss_statements(loss, False)
        # `grad_ys` seeds the backward pass; a tape takes the same seed as `output_gradients`
        # (evaluated where `tf.gradients` was: same statement, same values).
        grad_ys = args.get("grad_ys")
        if isinstance(grad_ys, cst.Name) and grad_ys.value == "None":
            grad_ys = None
        seed = f", output_gradients={facts.code(grad_ys)}" if grad_ys is not None else ""
        renames = {call: f"{tape}.gradient({loss_name}, {facts.code(xs)}{seed})"}
        replacements = {}
        clip_norm = planner.clip_norm_option()
        target = small.targets[0].target
        if clip_norm is not None and small.value is call and isinstance(target, cst.Name) \
                and not _clipped(planner, body, index, target.value, apply_index):
            renames = {}
            replacements[index] = carry_trivia(body[index], [
                emit.stmt(f"{target.value} = {tape}.gradient({loss_name}, {facts.code(xs)}{seed})"),
                emit.clip_global_norm(target.value, clip_norm)])
        message = "`tf.gradients` -> `tf.GradientTape` + `tape.gradient`"
        return planner.make_plan("tf_gradients", call, site, region, tape, extra, replacements, apply_index,
                                 safety, note, renames, message)


def _gradients_call(planner: Planner, value: cst.BaseExpression) -> Optional[cst.Call]:
    facts = planner.facts
    if isinstance(value, cst.Call):
        if "tf.gradients" in facts.tf_names(value.func):
            return value
        inner = value.args[0].value if value.args else None
        names = facts.tf_names(value.func)
        is_zip = isinstance(value.func, cst.Name) and value.func.value in ("zip", "list")
        if inner is not None and ("tf.clip_by_global_norm" in names or is_zip):
            return _gradients_call(planner, inner)
    return None


def _carriers(planner: Planner, target: cst.BaseExpression, value: cst.BaseExpression,
              call: cst.Call) -> List[str]:
    """The spelled targets (``g``, ``self.gradients``) that hold the gradients (not a norm)."""
    facts = planner.facts
    if isinstance(value, cst.Call) and "tf.clip_by_global_norm" in facts.tf_names(value.func):
        if isinstance(target, (cst.Tuple, cst.List)) and target.elements:
            return [facts.code(target.elements[0].value)]
        return []
    return [facts.code(target)]


def _reaches_apply(planner: Planner, body: List[cst.BaseStatement], index: int, carriers: List[str]):
    """``(apply_index, hazard)`` when the gradients reach an ``apply_gradients`` call later in the
    block (through any statements); ``hazard`` is a statement that differentiates what they became."""
    facts = planner.facts
    live: Set[str] = set(carriers)
    apply_index = None
    hazard = None
    for j in range(index + 1, len(body)):
        stmt = body[j]
        rebound = _plain_rebinding(facts, stmt)
        if rebound is not None:
            # `grads = <value>`: only the value reads; a value that does not read the gradients
            # ends them under the names it binds (one notebook section after another)
            targets, value = rebound
            if not {facts.code(n) for n in _walk(value) if isinstance(n, (cst.Name, cst.Attribute))} & live:
                live -= targets
                continue
        used = {facts.code(n) for n in _walk(stmt) if isinstance(n, (cst.Name, cst.Attribute))} & live
        if not used:
            continue
        if _differentiates(planner, stmt) and hazard is None:
            hazard = stmt
        if apply_index is None and any(method_call(n, "apply_gradients") is not None for n in _walk(stmt)):
            apply_index = j
        for sub in _walk(stmt):
            if isinstance(sub, cst.AssignTarget):
                live |= {facts.code(t) for t in _flat_targets(sub.target)}
            elif isinstance(sub, cst.For):
                live |= {facts.code(t) for t in _flat_targets(sub.target)}
    if apply_index is None:
        return None
    return apply_index, hazard


def _plain_rebinding(facts, stmt: cst.BaseStatement):
    """``(targets, value)`` of a statement that is one plain assignment to names (``g = ...``,
    ``g, n = ...``), executed unconditionally where it stands; else None."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.Assign)):
        return None
    assign = stmt.body[0]
    targets: Set[str] = set()
    for target in assign.targets:
        for element in _flat_targets(target.target):
            if not isinstance(element, cst.Name):
                return None
            targets.add(element.value)
    return targets, assign.value


def _differentiates(planner: Planner, stmt: cst.CSTNode) -> bool:
    for sub in _walk(stmt):
        if isinstance(sub, cst.Call):
            if isinstance(sub.func, cst.Attribute) and sub.func.attr.value in ("minimize", "compute_gradients",
                                                                               "gradient"):
                return True
            if planner.facts.tf_names(sub.func) & {"tf.gradients", "tf.hessians", "tf.GradientTape"}:
                return True
    return False


def _clipped(planner: Planner, body: List[cst.BaseStatement], index: int, name: str, apply_index: int) -> bool:
    for j in range(index + 1, apply_index + 1):
        for sub in _walk(body[j]):
            if isinstance(sub, cst.Call) and planner.facts.tf_names(sub.func) & clipping.CLIPS:
                return True
    return False


def _flat_targets(target: cst.BaseExpression):
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _flat_targets(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _flat_targets(target.value)
    else:
        yield target


def _walk(node: cst.CSTNode):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)
