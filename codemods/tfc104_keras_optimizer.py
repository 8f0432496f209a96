"""TFC104: in provably eager code, a ``tf.train`` optimizer becomes its Keras class."""

from __future__ import annotations

from typing import ClassVar, Dict, List, Optional, Tuple, Union

import libcst as cst
from libcst.metadata import (
    ParentNodeProvider,
    QualifiedNameProvider,
    ScopeProvider,
)

from codemods._analysis import call_args, is_literal
from codemods._base import FixSafety, TfcCodemod
from codemods.tape.facts import EAGER_SWITCHES, REF_VARIABLE_SWITCHES
from codemods.tape.rule import shared_planner
from codemods._names import GRAPH_MODE_MARKERS, TF1_OPTIMIZERS

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
    tf.enable_eager_execution()
    opt = tf.train.AdagradOptimizer(0.1)
    ...
    opt.apply_gradients(zip(gradients, variables), global_step=global_step)
    ```

    ## Use instead
    ```python
    tf.enable_eager_execution()
    opt = tf.keras.optimizers.Adagrad(learning_rate=0.1, initial_accumulator_value=0.1, epsilon=0.0)
    ...
    opt.apply_gradients(zip(gradients, variables))
    global_step.assign_add(1)
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
    TOKENS: ClassVar[tuple] = ("enable_eager_execution", "enable_v2_behavior")
    REQUIRES: ClassVar[tuple] = (("Optimizer",),)  # every TF1 optimizer class name ends so
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
        for use in self._uses_of(target):
            attr = self.get_metadata(ParentNodeProvider, use, None)
            apply = self.get_metadata(ParentNodeProvider, attr, None) if attr is not None else None
            expr = self.get_metadata(ParentNodeProvider, apply, None) if apply is not None else None
            line = self.get_metadata(ParentNodeProvider, expr, None) if expr is not None else None
            if not (isinstance(attr, cst.Attribute) and attr.attr.value == "apply_gradients"
                    and isinstance(apply, cst.Call) and isinstance(expr, cst.Expr)
                    and isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1):
                return  # used some other way (minimize, slots, an assigned op): not ours to convert
            statements.append((line, apply))
        if not statements:
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
            if value is not None:
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
            if step is not None:
                extra.append(f"{self._code(step)}.assign_add(1)")
            self._apply_new[id(line)] = [new_apply] + extra

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
