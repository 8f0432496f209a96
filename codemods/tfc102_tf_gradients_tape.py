"""TFC102: ``tf.gradients`` + clip + ``apply_gradients(zip(...))`` -> the TF 2 tape form."""

from __future__ import annotations

from typing import ClassVar, Optional

import libcst as cst

from codemods._analysis import call_args, has_comment
from codemods._core import FixSafety
from codemods.tape import clipping
from codemods.tape.emit import carry_trivia
from codemods.tape.facts import MANUAL
from codemods.tape.planner import Planner, Statement, method_call, single_small, statement_value
from codemods.tape.rule import GradientSiteRule
from codemods.tape.sites import Plan, Reject

GRADIENTS_PARAMS = ("ys", "xs", "grad_ys", "name", "colocate_gradients_with_ops", "gate_gradients",
                    "aggregation_method", "stop_gradients", "unconnected_gradients")
UNCARRIED = ("grad_ys", "gate_gradients", "aggregation_method", "colocate_gradients_with_ops", "stop_gradients",
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
    tvars = tf.trainable_variables()
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    grads = tf.gradients(loss, tvars)
    (grads, _) = tf.clip_by_global_norm(grads, clip_norm=1.0)
    train_op = optimizer.apply_gradients(zip(grads, tvars), global_step=global_step)
    ```

    ## Use instead
    ```python
    tvars = tf.trainable_variables()
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    grads = tape.gradient(loss, tvars)
    (grads, _) = tf.clip_by_global_norm(grads, clip_norm=1.0)
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
    TOKENS: ClassVar[tuple] = ("gradients(",)
    REQUIRES: ClassVar[tuple] = (("apply_gradients",),)
    KIND: ClassVar[str] = "tf_gradients"

    @classmethod
    def match(cls, planner: Planner, site: Statement) -> Optional[cst.Call]:
        value = site.value
        if isinstance(value, cst.Call) and "tf.gradients" in planner.facts.tf_names(value.func):
            return value
        return None

    @classmethod
    def plan(cls, planner: Planner, site: Statement, call: cst.Call) -> Optional[Plan]:
        facts, emit = planner.facts, planner.emit
        body, index, small = site.body, site.index, site.small
        if not isinstance(small, cst.Assign) or len(small.targets) != 1:
            return None
        target = small.targets[0].target
        if not isinstance(target, cst.Name):
            return None
        flow = clipping.follow(facts, body, index, (target.value,))
        if flow is None:
            return None  # look-alike: e.g. a gradient penalty
        apply_index, clip_indices, other_uses = flow
        apply_small = single_small(body[apply_index])
        apply_call = method_call(statement_value(apply_small), "apply_gradients")
        zip_arg = apply_call.args[0].value if apply_call is not None and apply_call.args else None
        if not (isinstance(zip_arg, cst.Call) and isinstance(zip_arg.func, cst.Name) and zip_arg.func.value == "zip"
                and len(zip_arg.args) == 2):
            return None  # fed some other way: not the BERT shape
        planner.module_gate()
        if other_uses:
            raise Reject(f"the gradients are also used by {facts.where(other_uses[0], 50)} before "
                         f"`apply_gradients` {MANUAL}", call)
        positional, _ = call_args(call)
        if positional is None:
            raise Reject(f"`tf.gradients` is called with `*args`/`**kwargs` {MANUAL}")
        args = planner.bind_args(call, "tf.gradients", GRADIENTS_PARAMS)
        planner.check_uncarried(args, UNCARRIED, "tf.gradients")
        loss, xs = args.get("ys"), args.get("xs")
        if loss is None or xs is None:
            raise Reject(f"`tf.gradients` without `ys`/`xs` {MANUAL}")
        if not isinstance(xs, cst.Name):
            raise Reject(f"`tf.gradients` differentiates `{facts.code(xs, 50)}`, not a named variable list {MANUAL}")
        fed_vars = zip_arg.args[1].value
        if not (isinstance(fed_vars, cst.Name) and fed_vars.value == xs.value):
            raise Reject(f"`apply_gradients` pairs the gradients with other variables than `{xs.value}` {MANUAL}")
        for k in clip_indices:
            clipping.check_list_clip(facts, single_small(body[k]), target.value)
        planner.var_list(xs, "`tf.gradients`")
        if not facts.graph_mode:
            raise Reject(f"`tf.gradients` in eager code: TF1 raised here, nothing to preserve {MANUAL}")
        region = planner.loss_region(site, loss, callable_loss=False)
        safety, note = region.safety, region.note
        if has_comment(small):
            safety = FixSafety.UNSAFE
            note = "; ".join(filter(None, [note, "a comment inside the rewritten statement is dropped"]))
        tape = emit.fresh("tape")
        loss_name, extra = emit.loss_statements(loss, False)
        new = [emit.stmt(f"{target.value} = {tape}.gradient({loss_name}, {xs.value})")]
        clip_norm = planner.clip_norm_option()
        if clip_norm is not None and not clip_indices:
            new.append(emit.clip_global_norm(target.value, clip_norm))
        replacements = {index: carry_trivia(body[index], new)}
        message = "`tf.gradients` -> `tf.GradientTape` + `tape.gradient`"
        return Plan("tf_gradients", call, site.block, region.start, region.end, index, emit.tape_header(tape),
                    extra, replacements, apply_index, safety, note, {}, message)
