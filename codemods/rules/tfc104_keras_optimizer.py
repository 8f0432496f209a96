"""TFC104: in provably eager code, a ``tf.train`` optimizer becomes its Keras class.

Longer than ~400 lines because the rule carries its own gates (eager proof, every use an
``apply_gradients``, checkpoints, learning-rate kinds) and one table of TF1 defaults per
optimizer class; the class docstring is the rule's documentation.
"""

from __future__ import annotations

from typing import ClassVar, Dict, List, Optional, Tuple, Union

import libcst as cst
from libcst.metadata import (
    GlobalScope,
    ParentNodeProvider,
    QualifiedNameProvider,
    ScopeProvider,
)

from codemods.rules.analysis import call_args, is_literal
from codemods.rules import FixSafety, Phase, Spec, TfcCodemod, all_of, calls, names
from codemods.rules.tape.facts import EAGER_SWITCHES, MANUAL, REF_VARIABLE_SWITCHES
from codemods.rules.tape.rule import shared_planner
from codemods.rules.tfnames import GRAPH_MODE_MARKERS, TF1_OPTIMIZERS

# TF1 signature (positional order) and defaults, from tensorflow/python/training/*.py (TF 1.15).
TF1_SIGNATURES: Dict[str, Tuple[Tuple[str, Optional[str]], ...]] = {
    "GradientDescentOptimizer": (("learning_rate", None), ("use_locking", "False"), ("name", None)),
    "MomentumOptimizer": (("learning_rate", None), ("momentum", None), ("use_locking", "False"),
                          ("name", None), ("use_nesterov", "False")),
    "AdamOptimizer": (("learning_rate", "0.001"), ("beta1", "0.9"), ("beta2", "0.999"), ("epsilon", "1e-08"),
                      ("use_locking", "False"), ("name", None)),
    "AdagradOptimizer": (("learning_rate", None), ("initial_accumulator_value", "0.1"), ("use_locking", "False"),
                         ("name", None)),
    "AdadeltaOptimizer": (("learning_rate", "0.001"), ("rho", "0.95"), ("epsilon", "1e-08"), ("use_locking", "False"),
                          ("name", None)),
    "FtrlOptimizer": (("learning_rate", None), ("learning_rate_power", "-0.5"), ("initial_accumulator_value", "0.1"),
                      ("l1_regularization_strength", "0.0"), ("l2_regularization_strength", "0.0"),
                      ("use_locking", "False"), ("name", None), ("accum_name", None), ("linear_name", None),
                      ("l2_shrinkage_regularization_strength", "0.0"), ("beta", None)),
}

# TF1 class -> (Keras class, [(keras kwarg, TF1 arg or a constant "=value")], safety, why unsafe)
KERAS_EQUIVALENTS: Dict[str, Tuple[str, List[Tuple[str, str]], FixSafety, str]] = {
    "GradientDescentOptimizer": ("SGD", [("learning_rate", "learning_rate")], FixSafety.SAFE, ""),
    "AdagradOptimizer": ("Adagrad", [("learning_rate", "learning_rate"),
                                     ("initial_accumulator_value", "initial_accumulator_value"),
                                     ("epsilon", "=0.0")], FixSafety.SAFE, ""),
    "AdadeltaOptimizer": ("Adadelta", [("learning_rate", "learning_rate"), ("rho", "rho"), ("epsilon", "epsilon")],
                          FixSafety.SAFE, ""),
    "FtrlOptimizer": ("Ftrl", [("learning_rate", "learning_rate"), ("learning_rate_power", "learning_rate_power"),
                               ("initial_accumulator_value", "initial_accumulator_value"),
                               ("l1_regularization_strength", "l1_regularization_strength"),
                               ("l2_regularization_strength", "l2_regularization_strength"),
                               ("l2_shrinkage_regularization_strength", "l2_shrinkage_regularization_strength"),
                               ("beta", "beta")], FixSafety.SAFE, ""),
    "AdamOptimizer": ("Adam", [("learning_rate", "learning_rate"), ("beta_1", "beta1"), ("beta_2", "beta2"),
                               ("epsilon", "epsilon")], FixSafety.UNSAFE,
                      "Keras computes the bias corrections as `beta**t` where TF1 multiplies accumulators: "
                      "float32 rounding differs (measured up to 7e-5 relative after 20 steps)"),
    "MomentumOptimizer": ("SGD", [("learning_rate", "learning_rate"), ("momentum", "momentum"),
                                  ("nesterov", "use_nesterov")], FixSafety.UNSAFE,
                          "Keras accumulates `-lr * g` where TF1 accumulates `g` and scales by lr: the same "
                          "update for a constant learning rate, rounded differently (measured up to 7e-5 "
                          "relative after 20 steps)"),
}
# Where an optimizer's state is saved (the gate names the first one it finds).
CHECKPOINTS = {"tf.train.Checkpoint", "tf.train.CheckpointManager", "tf.train.Saver", "tf.contrib.eager.Saver",
               "tf.contrib.eager.Checkpoint", "tf.train.MonitoredTrainingSession", "tf.estimator.Estimator"}
# The shim function that carries a TF1 optimizer's checkpointed state into its Keras equivalent.
RESTORE_FUNCTION = "tfclip_compat.restore_v1_optimizer_state"

KEEP_REASONS = {
    "RMSPropOptimizer": "TF1 RMSProp starts its mean-square accumulator at 1.0 and Keras `RMSprop` at 0.0, so "
                        "the first steps differ; the optimizer stays `tf.compat.v1.train.RMSPropOptimizer`",
    "ProximalGradientDescentOptimizer": "Keras has no proximal gradient descent; keep `tf.compat.v1.train`",
    "ProximalAdagradOptimizer": "Keras has no proximal Adagrad; keep `tf.compat.v1.train`",
    "AdagradDAOptimizer": "Keras has no Adagrad-DA; keep `tf.compat.v1.train`",
}


class KerasOptimizerInEagerCode(TfcCodemod):
    """## What it does
    In code that is provably eager (it calls ``tf.enable_eager_execution()`` /
    ``enable_v2_behavior()`` and nothing graph-only: no Session, placeholder,
    ``get_variable``...), replaces a ``tf.train.*Optimizer`` whose only uses are
    ``opt.apply_gradients(...)`` statements (what TFC101-TFC103 produce) by its Keras 3
    class with every TF1 default written out (Adam/Adadelta ``epsilon=1e-08``, Adagrad
    ``epsilon=0.0``, ``beta1`` -> ``beta_1``, ``use_nesterov`` -> ``nesterov``, an explicit
    ``learning_rate``); ``apply_gradients(..., global_step=gs)`` becomes
    ``apply_gradients(...)`` followed by ``gs.assign_add(1)``.

    ## Why is this bad?
    ``tf.compat.v1.train`` optimizers are frozen TF1 code; Keras optimizers are the TF 2
    API (``tf.function``, ``tf.distribute``, checkpoints by object).

    ## Example
    ```python
    import numpy as np
    import tensorflow as tf

    tf.enable_eager_execution()
    w = tf.Variable(np.ones((3, 1), np.float32))
    x = np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(8, 3)


    def compute_loss():
        return tf.reduce_mean(tf.square(tf.matmul(x, w)))


    def make_train_step():
        optimizer = tf.train.AdagradOptimizer(0.1)

        def train_step():
            optimizer.minimize(compute_loss, var_list=[w])
            return compute_loss()

        return train_step


    train_step = make_train_step()
    ```

    ## Use instead
    ```python
    import numpy as np
    import tensorflow as tf

    tf.enable_eager_execution()
    w = tf.Variable(np.ones((3, 1), np.float32))
    x = np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(8, 3)


    def compute_loss():
        return tf.reduce_mean(tf.square(tf.matmul(x, w)))


    def make_train_step():
        optimizer = tf.keras.optimizers.Adagrad(learning_rate=0.1, initial_accumulator_value=0.1, epsilon=0.0)

        def train_step():
            with tf.GradientTape() as tape:
                loss_value = compute_loss()
            variables = [w]
            gradients = tape.gradient(loss_value, variables)
            optimizer.apply_gradients(zip(gradients, variables))
            return compute_loss()

        return train_step


    train_step = make_train_step()
    ```

    ## Fix safety
    Safe for GradientDescent, Adagrad, Adadelta and Ftrl (the executed equivalence tests
    agree to rtol 1e-5). Unsafe for Adam and Momentum: the same update formula, rounded
    differently in float32 (measured up to 7e-5 relative after 20 steps of a small model).
    No fix, with the reason, for RMSProp (TF1 starts its mean square at 1.0), Momentum with
    a non-constant learning rate, the proximal/DA optimizers, ``use_locking=True``, or an
    optimizer used in any other way than ``apply_gradients`` statements. Graph-mode code
    is never touched: Keras 3 optimizers do not work in TF1 graphs.
    """

    CODE: ClassVar[str] = "TFC104"
    NAME: ClassVar[str] = "keras-optimizer-in-eager-code"
    SUMMARY: ClassVar[str] = "`tf.train` optimizer in eager code -> Keras optimizer with TF1 defaults"
    DESCRIPTION = SUMMARY
    PHASE: ClassVar[Phase] = Phase.TF2_FORM
    # An eager switch is used, and a TF1 optimizer class is called (under its own name, or
    # a name imported as it).
    SITES: ClassVar[Spec] = all_of(names("enable_eager_execution", "enable_v2_behavior"),
                                   calls(*sorted(name.rsplit(".", 1)[1] for name in TF1_OPTIMIZERS)))
    METADATA_DEPENDENCIES = (QualifiedNameProvider, ScopeProvider, ParentNodeProvider)

    def visit_Module(self, node: cst.Module) -> None:
        self._ctor_new: Dict[int, str] = {}
        self._apply_new: Dict[int, List[str]] = {}
        planner = shared_planner(self, node, run=False)
        used = planner.facts.tf_used
        if not (used & EAGER_SWITCHES) or used & GRAPH_MODE_MARKERS or used & REF_VARIABLE_SWITCHES:
            return
        self._planner = planner
        self._module = node
        finder = _OptimizerAssignments(self)
        node.visit(finder)
        for assign, call, cls in finder.found:
            self._consider(assign, call, cls)

    def _code(self, node: cst.CSTNode) -> str:
        return self._module.code_for_node(node).strip()

    def _consider(self, assign: cst.Assign, call: cst.Call, cls: str) -> None:
        short = cls.split(".")[-1]
        if short in KEEP_REASONS:
            self.report(call, KEEP_REASONS[short], fix=FixSafety.NONE)
            return
        if short not in KERAS_EQUIVALENTS:
            return
        target = assign.targets[0].target
        if not isinstance(target, cst.Name):
            return
        # Every use must be `NAME.apply_gradients(...)` as a statement of its own.
        statements: List[Tuple[cst.SimpleStatementLine, cst.Call]] = []
        scope = self.get_metadata(ScopeProvider, target, None)
        if scope is None:
            return
        other_uses: List[cst.CSTNode] = []
        for use in self._uses_of(target):
            attr = self.get_metadata(ParentNodeProvider, use, None)
            apply = self.get_metadata(ParentNodeProvider, attr, None) if attr is not None else None
            expr = self.get_metadata(ParentNodeProvider, apply, None) if apply is not None else None
            line = self.get_metadata(ParentNodeProvider, expr, None) if expr is not None else None
            if not (isinstance(attr, cst.Attribute) and attr.attr.value == "apply_gradients"
                    and isinstance(apply, cst.Call) and isinstance(expr, cst.Expr)
                    and isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1):
                other_uses.append(use)
                continue
            statements.append((line, apply))
        checkpoint = self._checkpoint_reference(target, other_uses)
        if checkpoint is not None:
            # Gate: the optimizer's state may live in a checkpoint. Keras names its slots and step
            # counter differently, so restoring an old checkpoint silently starts them at zero
            # (measured: Adam 166%, Momentum 190x off five steps after a restore).
            self.report(call, f"the optimizer `{target.value}` may be saved in checkpoints ({checkpoint}): a Keras "
                              "optimizer would not restore its TF1 slots and step counter from them (they come back "
                              f"as zeros); keep the `tf.compat.v1.train` optimizer, or move its state with "
                              f"`{RESTORE_FUNCTION}` before switching {MANUAL}", fix=FixSafety.NONE)
            return
        escape = self._escape(other_uses)
        if escape is not None:
            self.report(call, f"the optimizer `{target.value}` leaves this code ({escape}): whoever receives it may "
                              f"checkpoint it or use TF1-only methods, which a Keras optimizer does not keep {MANUAL}",
                        fix=FixSafety.NONE)
            return
        if other_uses or not statements:
            return  # used some other way (minimize, slots, an assigned op): not ours to convert
        why = self._variable_set_reason(statements)
        if why:
            self.report(call, why, fix=FixSafety.NONE)
            return
        positional, keywords = call_args(call)
        if positional is None:
            self.report(call, "the optimizer is built with `*args`/`**kwargs`; cannot map it to Keras "
                              "(manual edit required)")
            return
        signature = TF1_SIGNATURES[short]
        if len(positional) > len(signature):
            return
        args: Dict[str, cst.BaseExpression] = {}
        for (name, _), value in zip(signature, positional):
            args[name] = value
        names = [n for n, _ in signature]
        for key, value in keywords.items():
            if key not in names:
                return
            args[key] = value
        locking = args.get("use_locking")
        if locking is not None and not (isinstance(locking, cst.Name) and locking.value == "False"):
            self.report(call, "`use_locking=` has no Keras equivalent; the optimizer stays `tf.compat.v1.train` "
                              "(manual edit required)")
            return
        lr_why = self._learning_rate_reason(args.get("learning_rate"))
        if lr_why:
            self.report(call, lr_why, fix=FixSafety.NONE)
            return
        keras_cls, mapping, safety, why = KERAS_EQUIVALENTS[short]
        if short == "MomentumOptimizer":
            lr = args.get("learning_rate")
            if lr is None or not (is_literal(lr) or self._bound_to_literal(lr)):
                self.report(call, "Momentum with a learning rate that may change: Keras accumulates `-lr * g`, TF1 "
                                  "`g`, so a decaying rate trains differently; the optimizer stays "
                                  "`tf.compat.v1.train.MomentumOptimizer` (manual edit required)")
                return
        defaults = dict(signature)
        kwargs: List[str] = []
        for keras_name, source in mapping:
            if source.startswith("="):
                kwargs.append(f"{keras_name}={source[1:]}")
                continue
            value = args.get(source)
            if value is not None and keras_name == "learning_rate" and isinstance(value, cst.Integer):
                kwargs.append(f"{keras_name}={float(value.evaluated_value)!r}")  # Keras 3 refuses an int
            elif value is not None:
                kwargs.append(f"{keras_name}={self._code(value)}")
            elif keras_name == "beta":
                kwargs.append("beta=0.0")
            elif defaults.get(source) is not None:
                kwargs.append(f"{keras_name}={defaults[source]}")
            else:
                return  # a required TF1 argument is missing: the TF1 call itself was invalid
        if "name" in args:
            kwargs.append(f"name={self._code(args['name'])}")
        spelling = self._planner.facts.spelling
        new_ctor = f"{spelling.v2_name('keras.optimizers.' + keras_cls)}({', '.join(kwargs)})"
        message = f"`{short}` in eager code -> `{spelling.v2_name('keras.optimizers.' + keras_cls)}` with the TF1 defaults"
        if safety is FixSafety.UNSAFE:
            message += f" (unsafe: {why})"
        applied = self.may_fix(call, safety)
        self.report(call, message, fix=safety, applied=applied)
        if not applied:
            return
        self._ctor_new[id(call)] = new_ctor
        for line, apply in statements:
            positional_a, keywords_a = call_args(apply)
            if positional_a is None or not positional_a:
                continue
            extra: List[str] = []
            step = keywords_a.get("global_step") or (positional_a[1] if len(positional_a) > 1 else None)
            new_apply = f"{self._code(apply.func)}({self._code(positional_a[0])})"
            if step is not None and not (isinstance(step, cst.Name) and step.value == "None"):
                extra.append(f"{self._code(step)}.assign_add(1)")
            self._apply_new[id(line)] = [new_apply] + extra

    def _checkpoint_reference(self, target: cst.Name, other_uses: List[cst.CSTNode]) -> Optional[str]:
        """Where the optimizer's state may be checkpointed: a Checkpoint/Saver in this file that
        names it or saves every variable, or -- since other modules cannot be seen -- a
        module-level name another module can import."""
        facts = self._planner.facts
        for use in other_uses:
            for anc in facts.ancestors(use):
                if isinstance(anc, cst.Call) and facts.tf_names(anc.func) & CHECKPOINTS:
                    return f"{facts.where(anc)}"
        for node, name in self._checkpoint_calls():
            if name.endswith("Saver") and not node.args:
                return f"{facts.where(node)} saves every variable"
        scope = self.get_metadata(ScopeProvider, target, None)
        if isinstance(scope, GlobalScope):
            return "it is a module-level name, which another module can import and checkpoint"
        return None

    def _escape(self, uses: List[cst.CSTNode]) -> Optional[str]:
        """The first use that hands the optimizer object on (returned, passed, stored)."""
        facts = self._planner.facts
        for use in uses:
            parent = facts.parent(use)
            if isinstance(parent, cst.Attribute) and parent.value is use:
                continue  # a method call or attribute read on it: not handing it on
            for anc in [parent] + list(facts.ancestors(use)):
                if isinstance(anc, (cst.Return, cst.Assign, cst.Arg, cst.Element, cst.DictElement, cst.Yield)):
                    return facts.where(facts.parent(anc) if isinstance(anc, (cst.Arg, cst.Element)) else anc, 50)
                if isinstance(anc, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                    break
        return None

    def _checkpoint_calls(self) -> List[Tuple[cst.Call, str]]:
        facts = self._planner.facts
        found: List[Tuple[cst.Call, str]] = []

        class Finder(cst.CSTVisitor):
            def visit_Call(self, node: cst.Call) -> None:
                names = facts.tf_names(node.func) & CHECKPOINTS
                if names:
                    found.append((node, sorted(names)[0]))

        self._module.visit(Finder())
        return found

    def _variable_set_reason(self, statements: List[Tuple[cst.SimpleStatementLine, cst.Call]]) -> Optional[str]:
        """Gate: a Keras optimizer only accepts the variables it was first applied to ("can only be
        called for the variables it was originally built with"), where a TF1 optimizer takes any."""
        facts = self._planner.facts
        if len(statements) > 1:
            lines = ", ".join(str(facts.line(line)) for line, _ in statements)
            return (f"the optimizer is applied at several places (lines {lines}); a Keras optimizer only accepts the "
                    f"variables it was first applied to, a TF1 optimizer any {MANUAL}")
        _, apply = statements[0]
        positional, _ = call_args(apply)
        pairs = positional[0] if positional else None
        variables = pairs.args[1].value if (isinstance(pairs, cst.Call) and isinstance(pairs.func, cst.Name)
                                            and pairs.func.value == "zip" and len(pairs.args) == 2) else None
        if isinstance(variables, (cst.List, cst.Tuple)):
            return self._fixed_variables(variables)
        if not isinstance(variables, cst.Name):
            return (f"cannot show which variables reach `apply_gradients`; a Keras optimizer only accepts the "
                    f"variables it was first applied to {MANUAL}")
        found = facts.assignments(variables)
        values = [facts.assigned_value(a) for a in found]
        if len(values) != 1 or values[0] is None:
            return (f"`{variables.value}` is bound more than once; a Keras optimizer only accepts the variables it was "
                    f"first applied to {MANUAL}")
        value = values[0]
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
                value.func.attr.value == "watched_variables":
            return ("the variables are whatever the tape watched (`tape.watched_variables()`), which may grow between "
                    "steps; a Keras optimizer only accepts the variables it was first applied to (pass `var_list=` "
                    f"to `minimize`) {MANUAL}")
        if isinstance(value, (cst.List, cst.Tuple)):
            return self._fixed_variables(value)
        if isinstance(value, cst.Attribute) and value.attr.value in ("trainable_variables", "trainable_weights"):
            return None
        return (f"cannot show that `{facts.code(value, 40)}` is the same variables at every step; a Keras optimizer "
                f"only accepts the variables it was first applied to {MANUAL}")

    def _fixed_variables(self, display: Union[cst.List, cst.Tuple]) -> Optional[str]:
        """``[w, b]``: the same variables at every step when each name is bound once, outside loops."""
        facts = self._planner.facts
        for element in display.elements:
            name = element.value
            found = facts.assignments(name) if isinstance(name, cst.Name) else []
            if len(found) != 1 or any(isinstance(a, (cst.For, cst.While)) for a in facts.ancestors(
                    getattr(found[0], "node", name))):
                return (f"cannot show that `{facts.code(display, 40)}` holds the same variables at every step; a Keras "
                        f"optimizer only accepts the variables it was first applied to {MANUAL}")
        return None

    def _learning_rate_reason(self, lr: Optional[cst.BaseExpression]) -> Optional[str]:
        """Gate: Keras 3 takes a Python float, a schedule or a callable as ``learning_rate``; a
        ``tf.Variable`` (often assigned for manual decay), a tensor or a numpy scalar raise."""
        if lr is None or isinstance(lr, (cst.Float, cst.Integer)) or (
                isinstance(lr, cst.UnaryOperation) and isinstance(lr.expression, (cst.Float, cst.Integer))):
            return None
        if self._bound_to_literal(lr):
            found = self._planner.facts.assignments(lr)  # type: ignore[arg-type]
            value = self._planner.facts.assigned_value(found[0])
            if isinstance(value, cst.Float):
                return None
        return (f"the learning rate `{self._code(lr)}` is not a float literal: Keras 3 optimizers accept only a Python "
                f"float, a schedule or a callable (a `tf.Variable`, a tensor, an int or a numpy scalar raise) {MANUAL}")

    def _uses_of(self, target: cst.Name) -> List[cst.Name]:
        """Every Name in the module that resolves to the assignment ``target`` (nested scopes included)."""
        uses: List[cst.Name] = []
        for node in _names_called(self._module, target.value):
            if node is target:
                continue
            scope = self.get_metadata(ScopeProvider, node, None)
            if scope is None:
                continue
            bound = {id(getattr(a, "node", None)) for a in scope[node.value]}
            if id(target) in bound:
                uses.append(node)
        return uses

    def _bound_to_literal(self, node: cst.BaseExpression) -> bool:
        if not isinstance(node, cst.Name):
            return False
        found = self._planner.facts.assignments(node)
        value = self._planner.facts.assigned_value(found[0]) if len(found) == 1 else None
        return value is not None and is_literal(value)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        new = getattr(self, "_ctor_new", {}).get(id(original_node))
        return cst.parse_expression(new) if new is not None else updated_node

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> Union[cst.BaseStatement, cst.FlattenSentinel]:
        new = getattr(self, "_apply_new", {}).get(id(original_node))
        if new is None:
            return updated_node
        config = self._module.config_for_parsing
        lines = [cst.parse_statement(code + "\n", config=config) for code in new]
        lines[0] = lines[0].with_changes(leading_lines=original_node.leading_lines,
                                         trailing_whitespace=original_node.trailing_whitespace)
        return cst.FlattenSentinel(lines)


class _OptimizerAssignments(cst.CSTVisitor):
    """``name = tf.train.XOptimizer(...)`` assignments."""

    def __init__(self, rule: KerasOptimizerInEagerCode) -> None:
        self.rule = rule
        self.found: List[Tuple[cst.Assign, cst.Call, str]] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.value, cst.Call):
            names = self.rule._planner.facts.tf_names(node.value.func) & TF1_OPTIMIZERS
            if names:
                self.found.append((node, node.value, sorted(names)[0]))


def _names_called(module: cst.Module, value: str) -> List[cst.Name]:
    """Name nodes spelled ``value`` (attribute names and keywords excluded)."""

    class Finder(cst.CSTVisitor):
        def __init__(self) -> None:
            self.found: List[cst.Name] = []

        def visit_Name(self, node: cst.Name) -> None:
            if node.value == value:
                self.found.append(node)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            return False

        def visit_Arg(self, node: cst.Arg) -> bool:
            node.value.visit(self)
            return False

    finder = Finder()
    module.visit(finder)
    return finder.found
