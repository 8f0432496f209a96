"""TFC203: a training site still in TF 1 form after ``fix`` (opt-in: ``--select TFC203``)."""

from __future__ import annotations

from typing import ClassVar, List, Set, Tuple

import libcst as cst
from libcst.metadata import ParentNodeProvider, QualifiedNameProvider, ScopeProvider

from codemods.rules import FixSafety, Phase, Spec, TfcCodemod
from codemods.rules.tape import optimizers
from codemods.rules.tape.rule import KIND_CODES, shared_planner
from codemods.rules import tfc202_unprovable_gradient_site as tfc202  # a module: `libcst.tool list` lists its rule once

# The optimizer kinds (``codemods.rules.tape.optimizers.classify``) whose ``minimize``/``compute_gradients``
# is the TF 1 training API: ``tf.train`` classes, wrappers of them (contrib, the shim, Horovod,
# CrossShard...), and optimizer classes of the user's own that may derive from them.
TF1_KINDS = {"tf1", "wrapped", "shim", "wrapper", "custom"}
SHIM_REASON = ("its optimizer is `tfclip_compat.clip_gradients_by_norm(...)` (the compat form, which TFC001 writes "
               "where the TF 2 rules cannot prove a `tf.GradientTape` rewrite), and no rule rewrites the shim's "
               "wrapper: moving this site to a tape is a manual edit")


class Tf1TrainingSiteLeft(TfcCodemod):
    """## What it does
    Lists every training site still in TF 1 form in the code as ``fix`` leaves it, with the
    reason it was left: ``minimize``/``compute_gradients``/``tf.gradients`` sites the TF 2
    rules recognise but cannot prove (TFC202's reasons), sites whose TF 2 rewrite was not
    applied (an unsafe fix without ``--unsafe-fixes``, a ``# noqa``, a rule not selected),
    and sites in the compat form, such as
    ``tfclip_compat.clip_gradients_by_norm(opt, 5.0).minimize(loss)``, which no rule rewrites
    further and which TFC202 therefore no longer reports after ``fix``. It runs after every
    fix, and only when selected: with ``--select TFC`` (every rule) ``check`` lists what
    ``fix`` will leave; ``--select TFC203`` alone lists the sites in TF 1 form in the code as
    it is (a site another rule would rewrite is listed as "not selected").

    ## Why is this bad?
    A site left in TF 1 form runs on TF 2 only through ``tf.compat.v1`` (or the shim), and
    after ``fix`` nothing else points at it. Selected in a pre-commit hook, this rule holds
    a codebase at "no new TF 1 training code": a new ``minimize`` is a finding until it is
    written with ``tf.GradientTape`` or marked ``# noqa: TFC203``.

    ## Example
    ```python
    import tensorflow.compat.v1 as tf
    import tfclip_compat


    def build_train_op(loss):
        optimizer = tfclip_compat.clip_gradients_by_norm(tf.train.AdamOptimizer(0.01), clip_norm=5.0)
        return optimizer.minimize(loss)
    ```

    ## Use instead
    ```python
    import tensorflow as tf

    optimizer = tf.keras.optimizers.Adam(0.01, clipnorm=5.0)


    def train_step(model, x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        variables = model.trainable_variables
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
    ```
    Write the step with ``tf.GradientTape`` by hand (the loss computed under the tape), or
    keep the TF 1 site and silence it with ``# noqa: TFC203``.

    ## Fix safety
    No fix: diagnostic only, the code is left untouched. Off unless selected.
    """

    CODE: ClassVar[str] = "TFC203"
    NAME: ClassVar[str] = "tf1-training-site-left"
    SUMMARY: ClassVar[str] = "training site still in TF 1 form after `fix`, and why (opt-in: `--select TFC203`)"
    DESCRIPTION = SUMMARY
    PHASE: ClassVar[Phase] = Phase.LEFT
    OPT_IN: ClassVar[bool] = True
    # The sites are TFC202's (the planner's declines and plans) and `minimize`/`compute_gradients`
    # calls, which TFC202's SITES already require.
    SITES: ClassVar[Spec] = tfc202.UnprovableGradientSite.SITES
    METADATA_DEPENDENCIES = (QualifiedNameProvider, ScopeProvider, ParentNodeProvider)

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        planner = shared_planner(self, tree)
        seen: Set[Tuple[int, int]] = set()  # where a site was reported (a decline's node may be the call's)

        def new(node: cst.CSTNode) -> bool:
            start = self.position(node).start
            fresh = (start.line, start.column) not in seen
            seen.add((start.line, start.column))
            return fresh

        for decline in planner.declines:
            new(decline.node)
            if _keras_receiver(planner.facts, decline.node):
                continue  # `minimize` of a Keras optimizer is the TF 2 API (Keras 2's `minimize(loss, var_list)`)
            self.report(decline.node, f"training site still in TF 1 form: {decline.reason}", fix=FixSafety.NONE)
        for plan in planner.plans:
            if not new(plan.node):
                continue
            code = KIND_CODES[plan.kind]
            if plan.safety is FixSafety.UNSAFE and not self.unsafe_fixes:
                why = f"its {code} rewrite is unsafe ({plan.note}); `fix --unsafe-fixes` applies it"
            elif self.suppressed(plan.node, code):
                why = f"a `# noqa` silences {code} here"
            else:
                why = f"{code} rewrites it, but that rule is not selected (or fixes are not applied)"
            self.report(plan.node, f"training site still in TF 1 form: {why}", fix=FixSafety.NONE)
        for call in _gradient_calls(tree):
            if not new(call):
                continue
            receiver = call.func.value  # type: ignore[attr-defined]
            info = optimizers.classify(planner.facts, receiver)
            if info.kind not in TF1_KINDS:
                continue  # a Keras or foreign optimizer, or one the planner already reported
            method = call.func.attr.value  # type: ignore[attr-defined]
            why = SHIM_REASON if info.kind == "shim" else (
                f"`{method}` on `{info.what}` is a shape of training site the TF 2 rules do not rewrite")
            self.report(call, f"training site still in TF 1 form: {why}", fix=FixSafety.NONE)
        return tree


def _keras_receiver(facts, node: cst.CSTNode) -> bool:
    """``node`` is ``opt.minimize(...)``/``opt.compute_gradients(...)`` where ``opt`` is bound once, to
    a ``tf.keras.optimizers`` class (or is such a constructor call)."""
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
        return False
    receiver = node.func.value
    if isinstance(receiver, cst.Name):
        found = facts.assignments(receiver)
        receiver = facts.assigned_value(found[0]) if len(found) == 1 else None
    if not isinstance(receiver, cst.Call):
        return False
    names = facts.tf_names(receiver.func)
    return bool(names) and all(n.startswith(("tf.keras.optimizers.", "tf.optimizers.")) for n in names)


def _gradient_calls(tree: cst.Module) -> List[cst.Call]:
    """Every ``X.minimize(...)`` / ``X.compute_gradients(...)`` call."""

    class Finder(cst.CSTVisitor):
        def __init__(self) -> None:
            self.found: List[cst.Call] = []

        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in ("minimize", "compute_gradients"):
                self.found.append(node)

    finder = Finder()
    tree.visit(finder)
    return finder.found
