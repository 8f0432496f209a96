"""TFC103: ``opt.minimize(loss, ...)`` on a ``tf.train`` optimizer -> the TF 2 tape form."""

from __future__ import annotations

from typing import ClassVar, Dict, List, Optional

import libcst as cst

from codemods.rules.tape import optimizers
from codemods.rules.tape.shim_optimizers import built_by_shim
from codemods.rules.analysis import has_comment, is_literal
from codemods.rules import FixSafety, Phase, Spec, method_calls
from codemods.rules.tape.emit import carry_trivia
from codemods.rules.tape.facts import MANUAL
from codemods.rules.tape.planner import Planner, Statement, method_call, simple_reference
from codemods.rules.tape.rule import GradientSiteRule
from codemods.rules.tape.sites import Plan, Reject
from codemods.rules.tape.unwrap import unwrap

MINIMIZE_PARAMS = ("loss", "global_step", "var_list", "gate_gradients", "aggregation_method",
                   "colocate_gradients_with_ops", "name", "grad_loss")
UNCARRIED = ("gate_gradients", "aggregation_method", "colocate_gradients_with_ops", "grad_loss")


class MinimizeToTape(GradientSiteRule):
    """## What it does
    Rewrites ``opt.minimize(loss, global_step=..., var_list=..., name=...)`` on a
    ``tf.train.*Optimizer`` (tensor loss, lambda or function) into ``with
    tf.GradientTape() as tape:`` around the statements computing the loss,
    ``tape.gradient`` and ``opt.apply_gradients(zip(gradients, variables), global_step=...)``.
    When ``opt`` is ``tf.contrib.estimator.clip_gradients_by_norm(inner, clip_norm)`` (same
    block), the wrapper disappears and ``tf.clip_by_global_norm(gradients, clip_norm)`` is
    applied before ``inner.apply_gradients``. With ``--add-clip-norm X`` a bare ``minimize``
    gets ``tf.clip_by_global_norm(gradients, X)``.

    ## Why is this bad?
    ``minimize`` hides the gradients, so they cannot be clipped, inspected or aggregated,
    and ``tf.contrib`` (the usual way to clip them) does not exist in TF 2.

    ## Example
    ```python
    import numpy as np
    import tensorflow as tf

    x = tf.constant(np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(8, 3))
    y = tf.constant(np.linspace(0.0, 1.0, 8, dtype=np.float32).reshape(8, 1))
    hidden = tf.layers.dense(x, 4, activation=tf.nn.relu)
    loss = tf.reduce_mean(tf.square(tf.layers.dense(hidden, 1) - y))
    original_optimizer = tf.train.AdamOptimizer(learning_rate=0.01)
    optimizer = tf.contrib.estimator.clip_gradients_by_norm(original_optimizer, clip_norm=5.0)
    train_op = optimizer.minimize(loss)
    ```

    ## Use instead
    ```python
    import numpy as np
    import tensorflow as tf

    x = tf.constant(np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(8, 3))
    y = tf.constant(np.linspace(0.0, 1.0, 8, dtype=np.float32).reshape(8, 1))
    with tf.GradientTape() as tape:
        hidden = tf.layers.dense(x, 4, activation=tf.nn.relu)
        loss = tf.reduce_mean(tf.square(tf.layers.dense(hidden, 1) - y))
    original_optimizer = tf.compat.v1.train.AdamOptimizer(learning_rate=0.01)
    variables = tf.compat.v1.trainable_variables()
    gradients = tape.gradient(loss, variables)
    gradients, _ = tf.clip_by_global_norm(gradients, 5.0)
    train_op = original_optimizer.apply_gradients(zip(gradients, variables))
    ```

    ## Fix safety
    Safe when the loss is computed in the same block (or is a callable) and the variable
    list is absent or provably trainable; proven by executed equivalence tests for every
    ``tf.train`` optimizer class. Unsafe when the loss reads a function parameter or a
    comment would be dropped. ``minimize`` inside ``tf.cond``, under a
    ``control_dependencies`` block that does not also compute the loss, on CrossShard/
    SyncReplicas/Horovod wrappers or custom optimizer subclasses, with ``gate_gradients``/
    ``aggregation_method``/``colocate_gradients_with_ops``/``grad_loss``, or with a loss from
    another file is reported as TFC202 and left untouched.
    """

    CODE: ClassVar[str] = "TFC103"
    NAME: ClassVar[str] = "minimize-to-tape"
    SUMMARY: ClassVar[str] = "`optimizer.minimize` -> `tf.GradientTape` + `apply_gradients`"
    DESCRIPTION = SUMMARY
    PHASE: ClassVar[Phase] = Phase.TF2_FORM
    SITES: ClassVar[Spec] = method_calls("minimize")
    KIND: ClassVar[str] = "minimize"

    @classmethod
    def match(cls, planner: Planner, site: Statement) -> Optional[cst.Call]:
        call = method_call(site.value, "minimize") or _tuple_element_call(site.value)
        if call is None or not planner.facts.imports_tf:
            return None
        info = planner.optimizer(call.func.value)  # type: ignore[attr-defined]
        if info.kind in optimizers.NOT_TF1_SITE_KINDS:
            return None  # scipy.optimize.minimize, our own shim: not a TF1 training site
        return call

    @classmethod
    def plan(cls, planner: Planner, site: Statement, call: cst.Call) -> Optional[Plan]:
        if built_by_shim(planner.facts, call.func.value):  # type: ignore[attr-defined]
            # tfclip_compat's own optimizer (`tfc.wrap_optimizer(...)`): the compat form already,
            # no TF1 site (a look-alike: matched, so the planner does not call it a stray call).
            return None
        info = planner.optimizer(call.func.value)  # type: ignore[attr-defined]
        planner.module_gate()
        from codemods.rules.tape import optimizers

        optimizers.check(info, "minimize", allow_wrapped=True)
        args = planner.gates.bind_args(call, "minimize", MINIMIZE_PARAMS)
        planner.gates.check_uncarried(args, UNCARRIED, "minimize")
        loss = args.get("loss")
        if loss is None:
            raise Reject(f"`minimize` without a loss {MANUAL}")
        return _emit(planner, site, call, info, loss, args.get("var_list"), args.get("global_step"), args.get("name"))


def _emit(planner: Planner, site: Statement, call: cst.Call, info, loss: cst.BaseExpression,
          var_list: Optional[cst.BaseExpression], global_step: Optional[cst.BaseExpression],
          name: Optional[cst.BaseExpression]) -> Plan:
    facts, emit = planner.facts, planner.emit
    body, index, small = site.body, site.index, site.small
    callable_loss = planner.gates.is_callable_loss(loss)
    if not callable_loss and not facts.graph_mode:
        raise Reject(f"a tensor loss in eager code: TF1 raised here, nothing to preserve {MANUAL}")
    if isinstance(var_list, cst.Name) and var_list.value == "None":
        var_list = None  # `var_list=None` is the default
    if callable_loss and var_list is None:
        vars_expr: Optional[str] = None  # tape.watched_variables(), as compute_gradients did for callables
    else:
        # With a callable loss TF1 called `tape.watch(var_list)`: the same as watching them
        # automatically when every one of them is trainable, which this gate proves.
        vars_expr = planner.gates.var_list(var_list, "`minimize`")
    region = planner.loss_region(site, loss, callable_loss)
    safety, notes = region.safety, [region.note] if region.note else []
    if has_comment(small):
        safety = FixSafety.UNSAFE
        notes.append("a comment inside the rewritten statement is dropped")
    removed: List[cst.CSTNode] = []
    deletions: List[cst.CSTNode] = []
    group: Optional[cst.Name] = None
    clip_norm: Optional[str] = None
    renames: Dict[cst.CSTNode, str] = {}
    replacements: Dict[int, List[cst.BaseStatement]] = {}
    receiver = call.func.value  # type: ignore[attr-defined]
    opt_code = facts.code(receiver)
    if info.kind == "wrapped":
        unwrapped = unwrap(planner, site, info, [call])
        opt_code, clip_norm, group = unwrapped.opt_code, unwrapped.clip_norm, unwrapped.group
        replacements.update(unwrapped.replacements)
        renames.update(unwrapped.renames)
        removed += unwrapped.removed
        deletions += unwrapped.deletions
        if unwrapped.notes:
            safety = FixSafety.UNSAFE
            notes += unwrapped.notes
    elif info.kind == "tf1" and facts.graph_mode and info.ctor is not None:
        renames.update(planner.gates.compat_rename(info.ctor))
    if clip_norm is None:
        clip_norm = planner.clip_norm_option()
    tape = emit.fresh("tape")
    loss_name, extra = emit.loss_statements(loss, callable_loss)
    grads, variables, new = emit.tape_gradient(tape, loss_name, vars_expr, simple_reference(var_list),
                                               graph_callable=callable_loss and facts.graph_mode)
    if clip_norm is not None:
        new.append(emit.clip_global_norm(grads, clip_norm))
    apply_args = [f"zip({grads}, {variables})"]
    if global_step is not None:
        apply_args.append(f"global_step={facts.code(global_step)}")
    if name is not None:
        apply_args.append(f"name={facts.code(name)}")
    apply_code = f"{opt_code}.apply_gradients({', '.join(apply_args)})"
    if site.value is call:
        new.append(emit.replace_value(small, apply_code))
    else:  # `return opt.minimize(loss), loss`: the call is replaced where it stands
        new.append(cst.SimpleStatementLine(body=[small.with_deep_changes(call, **_as_fields(
            cst.parse_expression(apply_code)))]))
    replacements[index] = carry_trivia(body[index], new)
    last = max([index] + list(replacements))
    message = ("`minimize` -> `tf.GradientTape` + `apply_gradients`"
               + (" with `tf.clip_by_global_norm`" if clip_norm is not None else ""))
    plan = planner.make_plan("minimize", call, site, region, tape, extra, replacements, last, safety,
                             "; ".join(notes), renames, message, removed)
    plan.group = group
    plan.deletions = deletions
    return plan


def _tuple_element_call(value: cst.BaseExpression) -> Optional[cst.Call]:
    """``opt.minimize(loss), loss``: one ``minimize`` among plain reads (names, attributes,
    literals), so running the gradient computation before the statement changes no order."""
    if not isinstance(value, (cst.Tuple, cst.List)):
        return None
    calls = [e.value for e in value.elements if method_call(e.value, "minimize") is not None]
    others = [e.value for e in value.elements if method_call(e.value, "minimize") is None]
    if len(calls) != 1 or not all(_plain_read(o) for o in others):
        return None
    return calls[0]  # type: ignore[return-value]


def _plain_read(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Name) or is_literal(expr):
        return True
    return isinstance(expr, cst.Attribute) and _plain_read(expr.value)


def _as_fields(call: cst.BaseExpression) -> dict:
    assert isinstance(call, cst.Call)
    return {"func": call.func, "args": call.args}


