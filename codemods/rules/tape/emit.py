"""The one tape-form emitter: new statements for a site, and the block rebuild that applies plans.

Every TF 2 rule produces the same shape::

    with tf.GradientTape() as tape:        # tape_header
        <the statements of the tape region, unchanged>
        loss_value = <loss expression>     # tape_extra (only when the loss is not a name)
    variables = <var_list>                 # or tape.watched_variables() for callable losses
    gradients = tape.gradient(loss, variables)
    <the clipping, unchanged or rewritten onto the new names>
    <target> = opt.apply_gradients(zip(gradients, variables), <global_step=, name=>)

:class:`Emitter` builds those statements in the module's own spelling of TensorFlow;
:func:`rebuild` applies the plans of one block.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import libcst as cst

from codemods.rules.analysis import fresh_name
from codemods.rules.tape.facts import ModuleFacts
from codemods.rules.tape.sites import Plan


class Emitter:
    def __init__(self, facts: ModuleFacts) -> None:
        self.facts = facts
        self.spelling = facts.spelling

    def stmt(self, code: str) -> cst.BaseStatement:
        return cst.parse_statement(code + "\n", config=self.facts.module.config_for_parsing)

    def fresh(self, base: str) -> str:
        return fresh_name(base, self.facts.taken)

    def tape_header(self, tape: str) -> str:
        return f"with {self.spelling.v2_name('GradientTape')}() as {tape}:"

    def clip_global_norm(self, grads: str, clip_norm: str) -> cst.BaseStatement:
        return self.stmt(f"{grads}, _ = {self.spelling.v2_name('clip_by_global_norm')}({grads}, {clip_norm})")

    def loss_statements(self, loss: cst.BaseExpression, callable_loss: bool) -> Tuple[str, List[cst.BaseStatement]]:
        """Name of the loss inside the tape, and the statements to append to the tape body."""
        code = self.facts.module.code_for_node
        if callable_loss:
            name = self.fresh("loss_value")
            if isinstance(loss, cst.Lambda):
                return name, [self.stmt(f"{name} = {code(loss.body).strip()}")]
            return name, [self.stmt(f"{name} = {code(loss).strip()}()")]
        if isinstance(loss, cst.Name):
            return loss.value, []
        name = self.fresh("loss_value")
        return name, [self.stmt(f"{name} = {code(loss).strip()}")]

    def tape_gradient(self, tape: str, loss_name: str, vars_expr: Optional[str], simple_vars: bool,
                      *, graph_callable: bool = False) -> Tuple[str, str, List[cst.BaseStatement]]:
        """``(gradients, variables, statements)``: the variables (the tape's watched variables
        when ``vars_expr`` is None, what ``compute_gradients`` did for a callable loss) and
        ``tape.gradient``. ``graph_callable``: TF1 ran the gradient of a callable loss under
        ``control_dependencies([loss])`` in graph mode, so the loss op runs with the update."""
        grads = self.fresh("gradients")
        new: List[cst.BaseStatement] = []
        if vars_expr is None:
            variables = self.fresh("variables")
            new.append(self.stmt(f"{variables} = {tape}.watched_variables()"))
        elif simple_vars:
            variables = vars_expr
        else:
            variables = self.fresh("variables")
            new.append(self.stmt(f"{variables} = {vars_expr}"))
        gradient = f"{grads} = {tape}.gradient({loss_name}, {variables})"
        if graph_callable:
            deps = self.spelling.v1_name("control_dependencies")
            new.append(self.stmt(f"with {deps}([{loss_name}]):\n    {gradient}"))
        else:
            new.append(self.stmt(gradient))
        return grads, variables, new

    def replace_value(self, small: cst.BaseSmallStatement, new_value: str) -> cst.BaseStatement:
        """``small`` (an assignment, ``return`` or expression statement) with a new value."""
        code = self.facts.module.code_for_node
        if isinstance(small, cst.Assign):
            targets = "".join(code(t.target).strip() + " = " for t in small.targets)
            return self.stmt(f"{targets}{new_value}")
        if isinstance(small, cst.Return):
            return self.stmt(f"return {new_value}")
        return self.stmt(new_value)


def carry_trivia(old: cst.BaseStatement, new: List[cst.BaseStatement]) -> List[cst.BaseStatement]:
    """Comments above ``old`` go above ``new[0]``; its end-of-line comment goes on ``new[-1]``."""
    if not new or not isinstance(old, cst.SimpleStatementLine):
        return new
    new = list(new)
    new[0] = new[0].with_changes(leading_lines=old.leading_lines)
    last = new[-1]
    if isinstance(last, cst.SimpleStatementLine):
        new[-1] = last.with_changes(trailing_whitespace=old.trailing_whitespace)
    return new


class _BlankLines(cst.CSTTransformer):
    """Blank lines moved one level deeper must not gain trailing whitespace."""

    def leave_EmptyLine(self, original: cst.EmptyLine, updated: cst.EmptyLine) -> cst.EmptyLine:
        if updated.comment is None and updated.indent:
            return updated.with_changes(indent=False, whitespace=cst.SimpleWhitespace(""))
        return updated


def _unindented_blanks(stmt: cst.BaseStatement) -> cst.BaseStatement:
    return stmt.visit(_BlankLines())  # type: ignore[return-value]


def rebuild(body: List[cst.BaseStatement], plans: Sequence[Plan],
            site_plans: Sequence[Plan] = ()) -> List[cst.BaseStatement]:
    """``body`` with every plan applied: the tape regions of ``plans`` wrapped, and the
    replacements of ``site_plans`` (plans whose gradient statement is in this block) spliced."""
    starts = {plan.region_start: plan for plan in plans if plan.region_start >= 0}
    replacements: Dict[int, List[cst.BaseStatement]] = {}
    for plan in site_plans:
        replacements.update(plan.replacements)
    out: List[cst.BaseStatement] = []
    k = 0
    while k < len(body):
        plan = starts.get(k)
        if plan is not None:
            inner: List[cst.BaseStatement] = []
            for j in range(plan.region_start, plan.region_end):
                inner.extend(replacements.pop(j, [body[j]]))
            inner.extend(plan.tape_extra)
            leading: Sequence[cst.EmptyLine] = ()
            if plan.region_start < plan.region_end and inner:
                leading = getattr(inner[0], "leading_lines", ())
                inner[0] = inner[0].with_changes(leading_lines=())
            elif plan.site_block is None and replacements.get(plan.grad_index):
                first = replacements[plan.grad_index][0]
                leading = getattr(first, "leading_lines", ())
                replacements[plan.grad_index][0] = first.with_changes(leading_lines=())
            inner = [_unindented_blanks(s) for s in inner]
            header = cst.parse_statement(plan.tape_header + "\n    pass\n")
            assert isinstance(header, cst.With)
            out.append(header.with_changes(body=cst.IndentedBlock(body=inner), leading_lines=leading))
            if plan.region_end > k:
                k = plan.region_end
                continue
        if k in replacements:
            out.extend(replacements[k])
        else:
            out.append(body[k])
        k += 1
    return out
