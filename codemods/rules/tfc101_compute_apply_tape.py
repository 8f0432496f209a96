"""TFC101: ``compute_gradients`` -> clip -> ``apply_gradients`` becomes the TF 2 tape form."""

from __future__ import annotations

from typing import ClassVar, Dict, List, Optional, Set

import libcst as cst

from codemods.rules.tape.shim_optimizers import built_by_shim
from codemods.rules.analysis import has_comment, names_read
from codemods.rules import FixSafety, Phase, Spec, all_of, method_calls, names
from codemods.rules.tape import clipping, optimizers
from codemods.rules.tape.emit import carry_trivia
from codemods.rules.tape.facts import MANUAL
from codemods.rules.tape.planner import Planner, Statement, method_call, simple_reference, single_small, statement_value
from codemods.rules.tape.rule import GradientSiteRule
from codemods.rules.tape.sites import Plan, Reject
from codemods.rules.tape.unwrap import unwrap

COMPUTE_PARAMS = ("loss", "var_list", "gate_gradients", "aggregation_method", "colocate_gradients_with_ops",
                  "grad_loss")
UNCARRIED = ("gate_gradients", "aggregation_method", "colocate_gradients_with_ops", "grad_loss")


class ComputeApplyToTape(GradientSiteRule):
    """## What it does
    Rewrites the TF1 three-step training idiom, ``opt.compute_gradients(loss)`` -> clip each
    gradient (``tf.clip_by_value``/``clip_by_norm``/``clip_by_average_norm``, in a list
    comprehension, with or without ``None`` checks) or all of them (``zip(*...)`` +
    ``tf.clip_by_global_norm``) -> ``opt.apply_gradients(...)``, into the TF 2 idiom: the
    statements that compute the loss go inside ``with tf.GradientTape() as tape:``, the
    gradients come from ``tape.gradient(loss, variables)``, the *same* clipping is applied,
    and ``opt.apply_gradients(zip(gradients, variables))`` applies them.

    ## Why is this bad?
    ``compute_gradients`` exists only on ``tf.compat.v1`` optimizers and only builds graph
    ops: it is the part of a TF1 program that keeps it from moving to TF 2 optimizers,
    ``tf.function`` and eager debugging.

    ## Example
    ```python
    import numpy as np
    import tensorflow.compat.v1 as tf

    x = tf.constant(np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(8, 3))
    y = tf.constant(np.linspace(0.0, 1.0, 8, dtype=np.float32).reshape(8, 1))
    w = tf.get_variable("w", [3, 1])
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    optimizer = tf.train.AdamOptimizer(1e-3)
    gradients, variables = zip(*optimizer.compute_gradients(loss))
    gradients, _ = tf.clip_by_global_norm(gradients, 5.0)
    train_op = optimizer.apply_gradients(zip(gradients, variables))
    ```

    ## Use instead
    ```python
    import numpy as np
    import tensorflow.compat.v1 as tf

    x = tf.constant(np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(8, 3))
    y = tf.constant(np.linspace(0.0, 1.0, 8, dtype=np.float32).reshape(8, 1))
    w = tf.get_variable("w", [3, 1])
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    optimizer = tf.train.AdamOptimizer(1e-3)
    variables = tf.trainable_variables()
    gradients = tape.gradient(loss, variables)
    gradients, _ = tf.clip_by_global_norm(gradients, 5.0)
    train_op = optimizer.apply_gradients(zip(gradients, variables))
    ```
    In graph-mode modules the optimizer stays a ``tf.compat.v1.train`` optimizer (spelled with
    the module's own alias); ``global_step=`` and ``var_list`` are kept. With
    ``--add-clip-norm X`` a bare ``compute_gradients`` -> ``apply_gradients`` also gets
    ``tf.clip_by_global_norm(gradients, X)``.

    ## Fix safety
    Safe when the loss is computed in the same block from values a tape can see and the
    variable list is provably trainable: executed equivalence tests compare every trained
    variable, the loss and the global step with the TF1 program (rtol 1e-5). Unsafe when the
    loss reads a function parameter (a caller may have computed it from variables outside the
    tape) or a comment inside a rewritten statement would be dropped. Anything else
    (a custom gradient transform such as ``MyCapper(gv[0])``, a loss from elsewhere,
    ``gate_gradients=``...) is reported as TFC202 and left untouched.
    """

    CODE: ClassVar[str] = "TFC101"
    NAME: ClassVar[str] = "compute-apply-to-tape"
    SUMMARY: ClassVar[str] = "`compute_gradients` + clipping + `apply_gradients` -> `tf.GradientTape` form"
    DESCRIPTION = SUMMARY
    PHASE: ClassVar[Phase] = Phase.TF2_FORM
    SITES: ClassVar[Spec] = all_of(method_calls("compute_gradients"), names("apply_gradients"))
    KIND: ClassVar[str] = "compute_apply"

    @classmethod
    def match(cls, planner: Planner, site: Statement) -> Optional[cst.Call]:
        """``x = opt.compute_gradients(...)`` or ``g, v = zip(*opt.compute_gradients(...))``."""
        value = site.value
        compute = method_call(value, "compute_gradients")
        if compute is None and _is_zip_star(value):
            compute = method_call(value.args[0].value, "compute_gradients")  # type: ignore[attr-defined]
        if compute is None or not planner.facts.imports_tf:
            return None
        if planner.optimizer(compute.func.value).kind in optimizers.NOT_TF1_SITE_KINDS:  # type: ignore[attr-defined]
            return None
        return compute

    @classmethod
    def plan(cls, planner: Planner, site: Statement, compute: cst.Call) -> Optional[Plan]:
        facts, emit = planner.facts, planner.emit
        if built_by_shim(facts, compute.func.value):  # type: ignore[attr-defined]
            return None  # tfclip_compat's own optimizer: the compat form already, no TF1 site
        body, index, small = site.body, site.index, site.small
        zipped = compute is not site.value
        if not isinstance(small, cst.Assign) or len(small.targets) != 1:
            return None  # not bound to a name: nothing reaches apply_gradients through this statement
        chain = clipping.chain_names(small.targets[0].target)
        if chain is None:
            return None
        flow = clipping.follow(facts, body, index, chain)
        if flow is None:
            return None  # look-alike: the result never reaches apply_gradients here
        apply_index, clip_indices, other_uses = flow
        # `gvs = opt.compute_gradients(loss)` then `grads, tvars = zip(*gvs)` on its own line: the
        # zipped form, with the gradient statements where `compute_gradients` was.
        unzip_index: Optional[int] = None
        if len(chain) == 1 and clip_indices:
            unzipped = clipping.unzip_pairs(single_small(body[clip_indices[0]]), chain[0])
            if unzipped is not None:
                unzip_index, clip_indices = clip_indices[0], clip_indices[1:]
                pairs_name, chain = chain[0], unzipped
                zipped = True
        # The gradient transform first: the most useful reason for a custom capper.
        current = chain[0]
        for k in clip_indices:
            if len(chain) == 2:
                current = clipping.check_list_clip(facts, single_small(body[k]), current)
            elif k == clip_indices[0]:
                clipping.pair_clip(facts, single_small(body[k]), chain[0], "gradients", "variables")
        planner.module_gate()
        info = planner.optimizer(compute.func.value)  # type: ignore[attr-defined]
        optimizers.check(info, "compute_gradients", allow_wrapped=True)
        if other_uses:
            raise Reject(f"the gradients are also used by {facts.where(other_uses[0], 50)} before `apply_gradients`; "
                         f"the rewrite would change what it sees {MANUAL}", compute)
        args = planner.gates.bind_args(compute, "compute_gradients", COMPUTE_PARAMS)
        planner.gates.check_uncarried(args, UNCARRIED, "compute_gradients")
        loss = args.get("loss")
        if loss is None:
            raise Reject(f"`compute_gradients` without a loss {MANUAL}")
        apply_small = single_small(body[apply_index])
        apply_call = method_call(statement_value(apply_small), "apply_gradients")
        assert apply_call is not None and apply_small is not None
        receiver = compute.func.value  # type: ignore[attr-defined]
        if facts.code(apply_call.func.value) != facts.code(receiver):  # type: ignore[attr-defined]
            raise Reject(f"`compute_gradients` and `apply_gradients` are called on different objects {MANUAL}")
        # On a `clip_gradients_by_norm` optimizer: TF 1.15's wrapper clipped the global norm in
        # `compute_gradients` (before any clipping of the user's) and applied with the inner one.
        unwrapped = unwrap(planner, site, info, [compute, apply_call]) if info.kind == "wrapped" else None
        callable_loss = planner.gates.is_callable_loss(loss)
        if not callable_loss and not facts.graph_mode:
            raise Reject(f"a tensor loss in eager code: TF1 raised here, nothing to preserve {MANUAL}")
        var_list = args.get("var_list")
        if isinstance(var_list, cst.Name) and var_list.value == "None":
            var_list = None  # `var_list=None` is the default
        vars_expr: Optional[str] = None
        if not (callable_loss and var_list is None):
            vars_expr = planner.gates.var_list(var_list, "`compute_gradients`")
        region = planner.loss_region(site, loss, callable_loss)
        safety, notes = region.safety, [region.note] if region.note else []
        touched = [small] + [single_small(body[k]) for k in clip_indices] + [apply_small]
        if any(has_comment(s) for s in touched if s is not None):
            safety = FixSafety.UNSAFE
            notes.append("a comment inside a rewritten statement is dropped")
        rewritten = [body[index]] + [body[k] for k in clip_indices] + [body[apply_index]]
        if unwrapped is not None and unwrapped.notes:
            safety = FixSafety.UNSAFE
            notes += unwrapped.notes
        tape = emit.fresh("tape")
        loss_name, extra = emit.loss_statements(loss, callable_loss)
        renames: Dict[cst.CSTNode, str] = {}
        if info.kind == "tf1" and facts.graph_mode and info.ctor is not None:
            renames.update(planner.gates.compat_rename(info.ctor))
        replacements: Dict[int, List[cst.BaseStatement]] = {}
        clip_norm = planner.clip_norm_option() if not clip_indices else None
        receiver_code = facts.code(receiver)
        if unwrapped is not None:
            clip_norm = unwrapped.clip_norm
            replacements.update(unwrapped.replacements)
            renames.update(unwrapped.renames)
            receiver_code = unwrapped.opt_code
            if receiver_code != facts.code(receiver):
                renames[apply_call.func.value] = receiver_code  # type: ignore[attr-defined]
        graph_callable = callable_loss and facts.graph_mode
        if zipped:
            grads, variables = chain
            new: List[cst.BaseStatement] = []
            if vars_expr is None:
                new.append(emit.stmt(f"{variables} = {tape}.watched_variables()"))
            else:
                new.append(emit.stmt(f"{variables} = {vars_expr}"))
            gradient = f"{grads} = {tape}.gradient({loss_name}, {variables})"
            if graph_callable:
                new.append(emit.stmt(f"with {facts.spelling.v1_name('control_dependencies')}([{loss_name}]):\n"
                                     f"    {gradient}"))
            else:
                new.append(emit.stmt(gradient))
            if clip_norm is not None:
                new.append(emit.clip_global_norm(grads, clip_norm))
            clipping.check_apply_zip(facts, apply_call, current, variables)
            if unzip_index is not None:
                between = [body[j] for j in range(index + 1, unzip_index)]
                if any({grads, variables} & names_read(stmt) for stmt in between):
                    raise Reject(f"`{grads}`/`{variables}` are read before `zip(*{pairs_name})` binds them {MANUAL}")
                if _read_elsewhere(planner, small.targets[0].target, rewritten + [body[unzip_index]]):
                    # TF1 returned exactly `list(zip(grads, var_list))`: keep the name for its other readers.
                    new.append(emit.stmt(f"{pairs_name} = list(zip({grads}, {variables}))"))
                replacements[unzip_index] = []
            replacements[index] = carry_trivia(body[index], new)
        else:
            (pairs,) = chain
            grads, variables, new = emit.tape_gradient(tape, loss_name, vars_expr, simple_reference(var_list),
                                                       graph_callable=graph_callable)
            if len(clip_indices) > 1:
                raise Reject(f"more than one statement transforms the gradients {MANUAL}")
            apply_args = list(apply_call.args)
            if not apply_args or (apply_args[0].keyword is not None
                                  and apply_args[0].keyword.value != "grads_and_vars"):
                raise Reject(f"`apply_gradients` without gradients {MANUAL}")
            rest_code = "".join(", " + facts.code(a).rstrip(",") for a in apply_args[1:])
            if unwrapped is not None:  # the wrapper's clipping comes first (TF1 returned clipped pairs)
                new.append(emit.clip_global_norm(grads, clip_norm))
                clip_norm = None
            if _read_elsewhere(planner, small.targets[0].target, rewritten):
                # TF1 returned exactly `list(zip(grads, var_list))`: keep the name for its other readers.
                new.append(emit.stmt(f"{pairs} = list(zip({grads}, {variables}))"))
            fed = apply_args[0].value
            if clip_indices:
                k = clip_indices[0]
                clip_small = single_small(body[k])
                clipped_target = clip_small.targets[0].target  # type: ignore[union-attr]
                if not (isinstance(fed, cst.Name) and isinstance(clipped_target, cst.Name)
                        and fed.value == clipped_target.value):
                    raise Reject(f"the clipped gradients do not feed `apply_gradients` directly {MANUAL}")
                form, comp_code = clipping.pair_clip(facts, clip_small, pairs, grads, variables)
                if form == "list":
                    clipped = [emit.stmt(f"{grads} = {comp_code}")]
                    if _read_elsewhere(planner, clipped_target, rewritten):
                        clipped.append(emit.stmt(f"{clipped_target.value} = list(zip({grads}, {variables}))"))
                    replacements[k] = carry_trivia(body[k], clipped)
                    apply = f"{receiver_code}.apply_gradients(zip({grads}, {variables}){rest_code})"
                    replacements[apply_index] = carry_trivia(body[apply_index], [emit.replace_value(apply_small, apply)])
                else:
                    replacements[k] = carry_trivia(body[k], [emit.stmt(f"{clipped_target.value} = {comp_code}")])
            else:
                if not (isinstance(fed, cst.Name) and fed.value == pairs):
                    raise Reject(f"the gradients do not feed `apply_gradients` directly {MANUAL}")
                if clip_norm is not None:
                    new.append(emit.clip_global_norm(grads, clip_norm))
                apply = f"{receiver_code}.apply_gradients(zip({grads}, {variables}){rest_code})"
                replacements[apply_index] = carry_trivia(body[apply_index], [emit.replace_value(apply_small, apply)])
            replacements[index] = carry_trivia(body[index], new)
        message = "`compute_gradients` -> `tf.GradientTape` + `tape.gradient`, clipping kept"
        plan = planner.make_plan("compute_apply", compute, site, region, tape, extra, replacements, apply_index,
                                 safety, "; ".join(notes), renames, message,
                                 unwrapped.removed if unwrapped is not None else None)
        if unwrapped is not None:
            plan.group, plan.deletions = unwrapped.group, unwrapped.deletions
            plan.group_uses = [compute.func.value, apply_call.func.value]  # type: ignore[attr-defined]
        return plan


def _is_zip_star(value: cst.BaseExpression) -> bool:
    return (isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "zip"
            and len(value.args) == 1 and value.args[0].star == "*")


def _read_elsewhere(planner: Planner, target: cst.BaseExpression, rewritten: List[cst.CSTNode]) -> bool:
    """Whether the name bound by ``target`` is read outside the statements the rewrite replaces
    (a summary of ``grads_and_vars`` after ``apply_gradients``, say)."""
    if not isinstance(target, cst.Name):
        return False
    scope = planner.facts.scope(target)
    if scope is None:
        return True
    inside: Set[int] = set()
    for stmt in rewritten:
        stack = [stmt]
        while stack:
            current = stack.pop()
            inside.add(id(current))
            stack.extend(current.children)
    return any(id(access.node) not in inside for access in scope.accesses[target.value])
