"""TFC103: ``opt.minimize(loss, ...)`` on a ``tf.train`` optimizer -> the TF 2 tape form."""

from __future__ import annotations

from typing import ClassVar, Dict, List, Optional

import libcst as cst

from codemods._analysis import call_args, has_comment, is_literal
from codemods._core import FixSafety, Phase
from codemods._prepass import Spec, method_calls
from codemods.tape.emit import carry_trivia
from codemods.tape.facts import MANUAL
from codemods.tape.planner import Planner, Statement, method_call, simple_reference
from codemods.tape.rule import GradientSiteRule
from codemods.tape.sites import Plan, Reject

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
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    original_optimizer = tf.train.AdamOptimizer(learning_rate=0.01)
    optimizer = tf.contrib.estimator.clip_gradients_by_norm(original_optimizer, clip_norm=5.0)
    train_op = optimizer.minimize(loss, global_step=global_step)
    ```

    ## Use instead
    ```python
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    original_optimizer = tf.compat.v1.train.AdamOptimizer(learning_rate=0.01)
    variables = tf.compat.v1.trainable_variables()
    gradients = tape.gradient(loss, variables)
    gradients, _ = tf.clip_by_global_norm(gradients, 5.0)
    train_op = original_optimizer.apply_gradients(zip(gradients, variables), global_step=global_step)
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
        if info.kind in ("foreign", "shim"):
            return None  # scipy.optimize.minimize, our own shim: not a TF1 training site
        return call

    @classmethod
    def plan(cls, planner: Planner, site: Statement, call: cst.Call) -> Optional[Plan]:
        info = planner.optimizer(call.func.value)  # type: ignore[attr-defined]
        planner.module_gate()
        from codemods.tape import optimizers

        optimizers.check(info, "minimize", allow_wrapped=True)
        args = planner.bind_args(call, "minimize", MINIMIZE_PARAMS)
        planner.check_uncarried(args, UNCARRIED, "minimize")
        loss = args.get("loss")
        if loss is None:
            raise Reject(f"`minimize` without a loss {MANUAL}")
        return _emit(planner, site, call, info, loss, args.get("var_list"), args.get("global_step"), args.get("name"))


def _emit(planner: Planner, site: Statement, call: cst.Call, info, loss: cst.BaseExpression,
          var_list: Optional[cst.BaseExpression], global_step: Optional[cst.BaseExpression],
          name: Optional[cst.BaseExpression]) -> Plan:
    facts, emit = planner.facts, planner.emit
    body, index, small = site.body, site.index, site.small
    callable_loss = planner.is_callable_loss(loss)
    if not callable_loss and not facts.graph_mode:
        raise Reject(f"a tensor loss in eager code: TF1 raised here, nothing to preserve {MANUAL}")
    if isinstance(var_list, cst.Name) and var_list.value == "None":
        var_list = None  # `var_list=None` is the default
    if callable_loss and var_list is None:
        vars_expr: Optional[str] = None  # tape.watched_variables(), as compute_gradients did for callables
    else:
        # With a callable loss TF1 called `tape.watch(var_list)`: the same as watching them
        # automatically when every one of them is trainable, which this gate proves.
        vars_expr = planner.var_list(var_list, "`minimize`")
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
            # Drop `optimizer = clip_gradients_by_norm(...)` when the minimize is its only use.
            wrapper_index = next((j for j in range(index) if _assigns(body[j], wrapper_call)), None)
            if wrapper_index is None:
                # Bound elsewhere (module level, an outer function, before a loop): rebind the name
                # to the inner optimizer -- only if every use of it is a site rewritten here, which
                # the planner checks for the whole group.
                if not (is_literal(norm) or _bound_to_literal(planner, norm)):
                    raise Reject("`clip_gradients_by_norm` is applied outside this block with a `clip_norm` that is "
                                 f"not a literal; the compat form (TFC001) keeps it working {MANUAL}")
                inner_code = facts.code(inner)
                if inner_info is not None and inner_info.kind == "tf1" and facts.graph_mode and \
                        inner_info.ctor is not None and isinstance(inner, cst.Call):
                    for old, new_name in planner.compat_rename(inner_info.ctor).items():
                        inner_code = new_name + inner_code[len(facts.code(old)):]
                binding = _binding_statement(planner, wrapper_call)
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
                    safety = FixSafety.UNSAFE
                    notes.append("a comment inside the rebound `clip_gradients_by_norm(...)` is dropped")
            elif not _accessed_outside(planner, wrapper_name, [call]):
                replacements[wrapper_index] = []
                wrapper_removed = True
                removed.append(wrapper_call)
                if has_comment(body[wrapper_index]):
                    safety = FixSafety.UNSAFE
                    notes.append("a comment on the removed `clip_gradients_by_norm` line is dropped")
        if not isinstance(inner, (cst.Name, cst.Call)):
            raise Reject(f"the wrapped optimizer is neither a name nor a constructor call {MANUAL}")
        if isinstance(inner, cst.Call) and not wrapper_removed:
            # Re-spelling the constructor would make a second optimizer (its own slots).
            raise Reject(f"the wrapped optimizer is built inline and the wrapper is used elsewhere {MANUAL}")
        if group is None and inner_info is not None and inner_info.kind == "tf1" and facts.graph_mode and \
                inner_info.ctor is not None:
            rename = planner.compat_rename(inner_info.ctor)
            if isinstance(inner, cst.Call):
                for old, new_name in rename.items():
                    opt_code = new_name + opt_code[len(facts.code(old)):]
            else:
                renames.update(rename)
    elif info.kind == "tf1" and facts.graph_mode and info.ctor is not None:
        renames.update(planner.compat_rename(info.ctor))
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


def _binding_statement(planner: Planner, wrapper_call: cst.Call) -> Optional[cst.SimpleStatementLine]:
    """``name = clip_gradients_by_norm(...)`` as a statement that can be deleted (its block keeps
    at least one other statement)."""
    assign = planner.facts.parent(wrapper_call)
    line = planner.facts.parent(assign) if isinstance(assign, cst.Assign) else None
    block = planner.facts.parent(line) if isinstance(line, cst.SimpleStatementLine) else None
    if not isinstance(block, (cst.Module, cst.IndentedBlock)) or len(line.body) != 1 or len(block.body) < 2:
        return None
    return line


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


def _bound_to_literal(planner: Planner, node: cst.BaseExpression) -> bool:
    """A name bound once, to a literal: the same value wherever it is read."""
    if not isinstance(node, cst.Name):
        return False
    found = planner.facts.assignments(node)
    value = planner.facts.assigned_value(found[0]) if len(found) == 1 else None
    return value is not None and is_literal(value)


def _assigns(stmt: cst.BaseStatement, value: cst.CSTNode) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.Assign) and stmt.body[0].value is value)


def _accessed_outside(planner: Planner, name: cst.Name, allowed: List[cst.CSTNode]) -> bool:
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
