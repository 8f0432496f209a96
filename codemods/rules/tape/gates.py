"""The gates the TF 2 rules share, one method each, each documented where it is checked.

Argument binding (``bind_args``) and arguments a tape cannot carry (``check_uncarried``);
callable losses (``is_callable_loss``); the variable set (``var_list``, ``trainable``): the
variables the rewrite differentiates are the ones TF1 did; the ``tf.compat.v1`` spelling of a
kept TF1 optimizer (``compat_rename``). The module gate and the loss slice are in
:mod:`codemods.rules.tape.facts` and :mod:`codemods.rules.tape.slicing`.
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

import libcst as cst
from libcst.metadata import Assignment, BuiltinAssignment

from codemods.rules.analysis import call_args
from codemods.rules.tape.facts import MANUAL, ModuleFacts
from codemods.rules.tape.kinds import MUTATING_METHODS, PURE_BUILTINS
from codemods.rules.tape.sites import Reject
from codemods.rules.tape.tfapi import OPTIMIZER_GRADIENT_METHODS

TRAINABLE_LIST_CALLS = {"tf.trainable_variables"}
VARIABLE_CONSTRUCTORS = {"tf.Variable": 1, "tf.get_variable": 5}  # positional index of `trainable`


# Why each argument stops the rewrite (said in the decline; none of them is "impossible").
_UNCARRIED_WHY = {
    "grad_ys": "a tape takes the seed as `tape.gradient(..., output_gradients=...)`, a form these rules do "
               "not write yet",
    "grad_loss": "a tape takes the seed as `tape.gradient(..., output_gradients=...)`, a form these rules do "
                 "not write yet",
    "aggregation_method": "a tape always sums gradients the default way, so the rounding could change",
    "gate_gradients": "a tape has no gating (`GATE_GRAPH`/`GATE_NONE` order the gradient ops differently)",
    "stop_gradients": "a tape has no `stop_gradients`; wrap those tensors in `tf.stop_gradient` inside the tape",
}


# Python 2/3 compatibility modules whose names are the builtins (`from six.moves import zip`).
_BUILTIN_MODULES = ("builtins", "six.moves", "future.builtins", "past.builtins", "__builtin__")


def _compat_builtin(qualified, name: str) -> bool:
    return bool(qualified) and qualified <= {f"{module}.{name}" for module in _BUILTIN_MODULES}


class _ListChanges(cst.CSTVisitor):
    """The first place the list bound to one name may change in place (``name.append(v)``,
    ``name[i] = v``, ``del name[i]``) or escape to code that may change it (an alias ``a = name``,
    an argument of a function that is neither TF's nor a pure builtin). Narrower than
    :meth:`~codemods.rules.tape.mutations.Mutations.container_mutated`, which also follows aliases
    through ``zip``/``list`` and calls such as ``apply_gradients``: a variable list is only read
    there, and counting those would decline every ``zip(grads, tvars)``."""

    def __init__(self, facts: ModuleFacts, name: cst.Name) -> None:
        self.facts = facts
        self.name = name.value
        self.own = {id(a) for a in facts.assignments(name)}
        self.found: Optional[cst.CSTNode] = None

    def visit_Name(self, node: cst.Name) -> None:
        facts = self.facts
        if self.found is not None or node.value != self.name:
            return
        if {id(a) for a in facts.assignments(node)} != self.own:
            return  # another binding of the spelling
        parent = facts.parent(node)
        grand = facts.parent(parent) if parent is not None else None
        if isinstance(parent, cst.Attribute) and parent.value is node:
            if parent.attr.value in MUTATING_METHODS or parent.attr.value.startswith("__"):
                self.found = grand if isinstance(grand, cst.Call) else parent
        elif isinstance(parent, cst.Subscript) and parent.value is node:
            if isinstance(grand, (cst.AssignTarget, cst.Del)) or (
                    isinstance(grand, cst.AugAssign) and grand.target is parent):
                self.found = grand
        elif isinstance(parent, cst.Assign) and parent.value is node:
            self.found = parent  # an alias: changes through it are not followed
        elif isinstance(parent, cst.Arg) and isinstance(grand, cst.Call) and not self._reads_only(grand.func):
            self.found = grand

    def _reads_only(self, func: cst.BaseExpression) -> bool:
        """A pure builtin (also through ``six.moves``), a TF function, or an optimizer's gradient method."""
        facts = self.facts
        if isinstance(func, cst.Name) and func.value in PURE_BUILTINS and (
                all(isinstance(a, BuiltinAssignment) for a in facts.assignments(func))
                or _compat_builtin(facts.qualified(func), func.value)):
            return True
        return bool(facts.tf_names(func)) or (
            isinstance(func, cst.Attribute) and func.attr.value in OPTIMIZER_GRADIENT_METHODS)


class _FieldChanges(_ListChanges):
    """The same question for a field, by spelling over the whole module (``obj.f`` for any
    ``obj``): every store of ``.f`` and the first place the list stored there may change in place
    or escape. A store whose value is not one plain expression (``a.f = b.f = ...``, unpacking,
    ``for``/``with`` targets, annotated or augmented stores, ``del``) or any ``setattr``/``vars``/
    ``__dict__`` in the module counts as a change: the stored values are then not all known."""

    def __init__(self, facts: ModuleFacts, attr: str) -> None:
        self.facts = facts
        self.attr = attr
        self.stores: list = []
        self.found: Optional[cst.CSTNode] = None

    def visit_Name(self, node: cst.Name) -> None:
        parent = self.facts.parent(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return  # a field's name, not a use of the builtin
        if self.found is None and node.value in ("setattr", "vars"):
            self.found = node

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self.found is not None:
            return
        if node.attr.value == "__dict__":
            self.found = node
            return
        if node.attr.value != self.attr:
            return
        facts = self.facts
        parent = facts.parent(node)
        grand = facts.parent(parent) if parent is not None else None
        if isinstance(parent, cst.AssignTarget) and parent.target is node:
            if isinstance(grand, cst.Assign) and len(grand.targets) == 1:
                self.stores.append(grand.value)
            else:
                self.found = grand or parent  # `a.f = b.f = [...]`: one list under two names
            return
        if isinstance(parent, (cst.Element, cst.StarredElement)):
            self.found = parent  # in a display (a store by unpacking, or the list escaping into another)
            return
        if isinstance(parent, (cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.AsName, cst.Del)) and (
                getattr(parent, "target", None) is node or getattr(parent, "name", None) is node):
            self.found = parent  # a store whose value is not one plain expression, or `del`
            return
        # a load: only where the list is read, never where it could escape (an allow-list)
        if isinstance(parent, cst.Arg) and isinstance(grand, cst.Call) and self._reads_only(grand.func):
            return
        if isinstance(parent, (cst.For, cst.CompFor)) and parent.iter is node:
            return
        if isinstance(parent, (cst.BinaryOperation, cst.Comparison, cst.ComparisonTarget)):
            return
        if isinstance(parent, cst.Subscript) and parent.value is node and not isinstance(
                grand, (cst.AssignTarget, cst.Del, cst.AugAssign)):
            return
        if isinstance(parent, cst.Attribute) and parent.value is node and not (
                parent.attr.value in MUTATING_METHODS or parent.attr.value.startswith("__")):
            return
        self.found = grand if isinstance(grand, cst.Call) else parent


class Gates:
    """The gates the TF 2 rules share (``planner.gates``): each answers one question about a site
    from the module's facts alone, or raises :class:`~codemods.rules.tape.sites.Reject`."""

    def __init__(self, facts: ModuleFacts) -> None:
        self.facts = facts

    @staticmethod
    def bind_args(call: cst.Call, method: str, params: Tuple[str, ...]) -> Dict[str, cst.BaseExpression]:
        """Bind a TF1 method call's arguments to its signature, as Python would; anything that
        cannot be bound statically (``*args``, unknown names) is a decline."""
        positional, keywords = call_args(call)
        if positional is None:
            raise Reject(f"`{method}` is called with `*args`/`**kwargs` {MANUAL}")
        if len(positional) > len(params):
            raise Reject(f"too many arguments to `{method}` {MANUAL}")
        args = dict(zip(params, positional))
        for key, value in keywords.items():
            if key not in params or key in args:
                raise Reject(f"unexpected argument `{key}` to `{method}` {MANUAL}")
            args[key] = value
        return args

    @staticmethod
    def check_uncarried(args: Dict[str, cst.BaseExpression], names: Sequence[str], method: str) -> None:
        """Gate: arguments a tape cannot reproduce. Their defaults are fine, and so is
        ``colocate_gradients_with_ops`` (device placement only: the same values on one device);
        ``aggregation_method`` changes the summation order, ``grad_loss``/``grad_ys`` the seed."""
        for key in names:
            value = args.get(key)
            if value is None or key == "colocate_gradients_with_ops":
                continue
            if isinstance(value, cst.Name) and value.value == "None" and key != "gate_gradients":
                continue
            if key == "gate_gradients" and (
                    (isinstance(value, cst.Integer) and value.value == "1")
                    or (isinstance(value, cst.Attribute) and value.attr.value == "GATE_OP")):
                continue
            raise Reject(f"`{method}(..., {key}=...)`: {_UNCARRIED_WHY.get(key, 'a tape has no such option')} {MANUAL}")

    def is_callable_loss(self, loss: cst.BaseExpression) -> bool:
        if isinstance(loss, cst.Lambda):
            if loss.params.params or loss.params.star_arg != cst.MaybeSentinel.DEFAULT or loss.params.kwonly_params:
                raise Reject(f"the loss lambda takes parameters {MANUAL}")
            return True
        if isinstance(loss, cst.Name):
            found = self.facts.assignments(loss)
            if found and all(isinstance(a, Assignment) and isinstance(a.node, cst.FunctionDef) for a in found):
                return True
            values = [self.facts.assigned_value(a) for a in found]
            if values and all(isinstance(v, cst.Lambda) for v in values):
                return True
            if any(isinstance(a, Assignment) and isinstance(a.node, cst.Param) for a in found):
                raise Reject(f"the loss `{loss.value}` is a parameter (a tensor or a callable computed by the "
                             f"caller, maybe in another file); a tape must record its computation {MANUAL}")
        return False

    def var_list(self, var_list: Optional[cst.BaseExpression], what: str) -> Optional[str]:
        """Gate: the variables the rewrite differentiates are the ones ``what`` did. Absent: TF1's
        default, ``trainable_variables()`` (plus the TRAINABLE_RESOURCE_VARIABLES collection,
        which :meth:`ModuleFacts.variable_set_gate` proves empty). Given: every variable must be
        provably trainable (a tape watches only trainable variables)."""
        gate = self.facts.variable_set_gate()
        if gate:
            raise Reject(gate)
        if var_list is None or (isinstance(var_list, cst.Name) and var_list.value == "None"):
            return self.facts.spelling.v1_name("trainable_variables()")
        mutated = self._list_changed(var_list) if isinstance(var_list, cst.Name) else None
        if isinstance(var_list, cst.Attribute) and isinstance(var_list.value, cst.Name) \
                and var_list.attr.value not in ("trainable_variables", "trainable_weights"):
            mutated = self._field_changes(var_list.attr.value).found
        if mutated is not None:
            raise Reject(f"the variable list `{self.facts.code(var_list, 60)}` is changed in place ({self.facts.where(mutated, 40)}), "
                         f"so it may hold variables that are not trainable: {what} differentiates any variable, a "
                         f"`tf.GradientTape` only watches trainable ones {MANUAL}", mutated)
        if not self.trainable(var_list):
            raise Reject(f"cannot show that every variable in `{self.facts.code(var_list, 60)}` is trainable: "
                         f"{what} differentiates any variable, a `tf.GradientTape` only watches trainable ones "
                         f"{MANUAL}")
        return self.facts.code(var_list)

    def trainable(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """Whether ``expr`` provably evaluates to trainable variables only."""
        if depth > 5:
            return False
        if isinstance(expr, cst.Call):
            names = self.facts.tf_names(expr.func)
            if names & TRAINABLE_LIST_CALLS:
                return True
            if "tf.get_collection" in names and expr.args:
                return "tf.GraphKeys.TRAINABLE_VARIABLES" in self.facts.tf_names(expr.args[0].value)
            if isinstance(expr.func, cst.Name) and expr.func.value == "list" and len(expr.args) == 1:
                return self.trainable(expr.args[0].value, depth + 1)
            return False
        if isinstance(expr, cst.Attribute):
            if expr.attr.value in ("trainable_variables", "trainable_weights"):
                return True
            if not isinstance(expr.value, cst.Name):
                return False
            # `self.d_vars`: every store of the field, anywhere in the module, is a list of
            # trainable variables, and nothing changes the list in place
            changes = self._field_changes(expr.attr.value)
            return changes.found is None and bool(changes.stores) and all(
                self.trainable(value, depth + 1) for value in changes.stores)
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Slice):
            # `tf.trainable_variables()[:2]`: a slice of a list of trainable variables is one too (an
            # index is not a list: tape.gradient would return one tensor where TF1 returned a list)
            return self.trainable(expr.value, depth + 1)
        if isinstance(expr, (cst.List, cst.Tuple)):
            return bool(expr.elements) and all(
                not isinstance(e, cst.StarredElement) and self._trainable_variable(e.value) for e in expr.elements)
        if isinstance(expr, cst.ListComp):
            comp = expr.for_in
            return (comp.inner_for_in is None and isinstance(comp.target, cst.Name)
                    and isinstance(expr.elt, cst.Name) and expr.elt.value == comp.target.value
                    and self.trainable(comp.iter, depth + 1))
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
            return self.trainable(expr.left, depth + 1) and self.trainable(expr.right, depth + 1)
        if isinstance(expr, cst.Name):
            # every binding a plain assignment of trainable variables (one per notebook section,
            # say): whichever reaches this use, the variables are trainable
            values = [self.facts.assigned_value(a) for a in self.facts.assignments(expr)]
            if self._list_changed(expr) is not None:
                return False  # `tvars.append(v)`: what the list holds is no longer what it was built from
            return bool(values) and all(v is not None and self.trainable(v, depth + 1) for v in values)
        return False

    def _field_changes(self, attr: str) -> "_FieldChanges":
        changes = _FieldChanges(self.facts, attr)
        self.facts.module.visit(changes)
        return changes

    def _list_changed(self, name: cst.Name) -> Optional[cst.CSTNode]:
        """Where the list bound to ``name`` may change in place, or None (see :class:`_ListChanges`)."""
        changes = _ListChanges(self.facts, name)
        self.facts.module.visit(changes)
        return changes.found

    def _trainable_variable(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        if depth > 5:
            return False
        if isinstance(expr, cst.Name):
            # every binding a trainable variable (one per notebook section, say): whichever
            # reaches this use is one
            values = [self.facts.assigned_value(a) for a in self.facts.assignments(expr)]
            return bool(values) and all(v is not None and self._trainable_variable(v, depth + 1) for v in values)
        if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name) and len(expr.slice) == 1 \
                and isinstance(expr.slice[0].slice, cst.Index):
            # `weights['h1']`: every binding of `weights` a dict display of trainable variables that
            # nothing changes in place (an item store, `update`, an alias or a call that may change it)
            values = [self.facts.assigned_value(a) for a in self.facts.assignments(expr.value)]
            return (bool(values) and self._list_changed(expr.value) is None and all(
                isinstance(v, cst.Dict) and v.elements and all(
                    isinstance(e, cst.DictElement) and self._trainable_variable(e.value, depth + 1)
                    for e in v.elements) for v in values))
        if isinstance(expr, cst.Call):
            names = self.facts.tf_names(expr.func) & set(VARIABLE_CONSTRUCTORS)
            if not names:
                return False
            positional, keywords = call_args(expr)
            if positional is None:
                return False
            position = VARIABLE_CONSTRUCTORS[sorted(names)[0]]
            flag = keywords.get("trainable", positional[position] if len(positional) > position else None)
            return flag is None or (isinstance(flag, cst.Name) and flag.value == "True")
        return False

    def compat_rename(self, ctor: cst.Call) -> Dict[cst.CSTNode, str]:
        """Spell a TF1 optimizer constructor as ``tf.compat.v1.train.X`` if it is not already
        (graph-mode modules keep TF1 optimizers: Keras 3 optimizers do not run in TF1 graphs)."""
        from codemods.rules.tfnames import TF1_OPTIMIZERS

        names = self.facts.tf_names(ctor.func) & TF1_OPTIMIZERS
        if not names:
            return {}
        cls = sorted(names)[0].split(".")[-1]
        current = self.facts.code(ctor.func)
        wanted = self.facts.spelling.v1_name(f"train.{cls}")
        if current == wanted or any(q.startswith("tensorflow.compat.v1.") for q in self.facts.qualified(ctor.func)):
            return {}
        return {ctor.func: wanted}
