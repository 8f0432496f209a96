"""Facts about one module that every part of the planner asks: metadata, names, module gates.

:class:`ModuleFacts` is built once per module from resolved libcst metadata (scopes, qualified
names, parents, lazily positions) -- it never depends on which rule is running -- and answers:
how the module spells TensorFlow, which canonical TF name a node refers to, which identifiers are
taken, and the module-level reasons no tape rewrite can be proven (:meth:`module_gate`).
"""

from __future__ import annotations

from typing import Dict, Iterator, List, Mapping, Optional, Set

import libcst as cst
from libcst._metadata_dependent import LazyValue
from libcst.metadata import (
    Assignment,
    ImportAssignment,
    ParentNodeProvider,
    PositionProvider,
    QualifiedNameProvider,
    ScopeProvider,
)

from codemods.rules.analysis import TfSpelling, all_identifiers, dotted_name, tf_spelling
from codemods.rules.tfnames import GRAPH_MODE_MARKERS, TF1_OPTIMIZERS, canonical_names
from codemods.rules.tape import tfapi
from codemods.rules.tape.syntax import match_capture_names

MANUAL = "(manual edit required)"

# Switches that make variables TF1 ``RefVariable``s, which a tape cannot differentiate (measured:
# ``AttributeError: 'RefVariable' object has no attribute '_id'``).
REF_VARIABLE_SWITCHES = {"tf.disable_v2_behavior", "tf.disable_resource_variables"}
EAGER_SWITCHES = {"tf.enable_eager_execution", "tf.enable_v2_behavior"}
# TF1 (v1) control flow: a tape's gradient through v1 cond/while_loop is not tf.gradients'.
CONTROL_FLOW_V1_SWITCHES = {"tf.disable_control_flow_v2", "tf.disable_v2_tensorshape_and_control_flow"}
# A tape ignores the gradient registry overrides (measured: DIFF on `Sign` -> `Identity`).
GRADIENT_OVERRIDES = {"tf.RegisterGradient", "tf.Graph.gradient_override_map"}


class ModuleFacts:
    """One module's metadata and module-wide facts (see the module docstring)."""

    def __init__(self, module: cst.Module, metadata: Mapping[type, Mapping[cst.CSTNode, object]],
                 resolve_positions=None) -> None:
        self.module = module
        self._scopes = metadata[ScopeProvider]
        self._qualified = metadata[QualifiedNameProvider]
        self._parents = metadata[ParentNodeProvider]
        self._resolve_positions = resolve_positions
        self._positions: Optional[Mapping[cst.CSTNode, object]] = None
        self.spelling: TfSpelling = tf_spelling(module)
        self.taken: Set[str] = all_identifiers(module)
        self.unimported_tf = False  # `tf.X` read without any import: a fragment
        self.tf_used: Set[str] = set()
        self.attr_names_stored: Set[str] = set()
        self.mentions: Set[str] = set()  # every Name/attribute identifier spelled in the module
        # names bound by `match` capture patterns (libcst's scopes do not record them), by name
        self.match_captures: Dict[str, List[cst.Name]] = {}
        self._aliasing: Set[int] = set()  # assignments being followed by _module_alias
        self._scan()
        self.graph_mode = bool(self.tf_used & GRAPH_MODE_MARKERS) or not (self.tf_used & EAGER_SWITCHES)
        self.imports_tf = bool(self.tf_used) or not self.spelling.needs_import

    # -- metadata ---------------------------------------------------------------------
    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        return self._parents.get(node)  # type: ignore[return-value]

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        current = self.parent(node)
        while current is not None:
            yield current
            current = self.parent(current)

    def scope(self, node: cst.CSTNode):
        return self._scopes.get(node)

    def _qualified_names(self, node: cst.CSTNode):
        value = self._qualified.get(node, ())
        return value() if isinstance(value, LazyValue) else value

    def qualified(self, node: cst.CSTNode) -> Set[str]:
        return {q.name for q in self._qualified_names(node)}  # type: ignore[union-attr]

    def line(self, node: cst.CSTNode) -> int:
        """1-based line of ``node`` (positions are resolved on first use only)."""
        if self._positions is None:
            if self._resolve_positions is None:
                return 0
            self._positions = self._resolve_positions()
        pos = self._positions.get(node)  # type: ignore[union-attr]
        return pos.start.line if pos is not None else 0  # type: ignore[union-attr]

    def code(self, node: cst.CSTNode, limit: int = 0) -> str:
        text = " ".join(self.module.code_for_node(node).split())
        if limit and len(text) > limit:
            text = text[: limit - 3] + "..."
        return text

    def where(self, node: cst.CSTNode, limit: int = 50) -> str:
        """```code``` (line N) for messages."""
        line = self.line(node)
        return f"`{self.code(node, limit)}`" + (f" (line {line})" if line else "")

    def tf_names(self, node: cst.CSTNode) -> Set[str]:
        """Canonical TF names a Name/Attribute refers to. In a fragment that never imports
        TensorFlow (a snippet pasted from an answer), ``tf.X`` and bare TF1 optimizer class names
        are recognised too, but only to *report*: :meth:`module_gate` declines every fix there."""
        if not isinstance(node, (cst.Name, cst.Attribute)):
            return set()  # libcst also names Call nodes after their function: not what is meant here
        names = canonical_names(self._qualified_names(node))  # type: ignore[arg-type]
        if names:
            return names
        dotted = dotted_name(node)
        if dotted is None:
            return names
        probe: cst.CSTNode = node
        while isinstance(probe, cst.Attribute):
            probe = probe.value
        if not isinstance(probe, cst.Name):
            return names
        scope = self.scope(probe)
        head = dotted.split(".")[0]
        if scope is not None and list(scope[head]):
            module = self._module_alias(probe)
            if module is not None:  # `rnn = tf.nn.rnn_cell` ... `rnn.GRUCell` is `tf.nn.rnn_cell.GRUCell`
                return {module + dotted[len(head):]}
            return names
        if scope is None:
            return names
        if head == "tf" and "." in dotted:
            self.unimported_tf = True
            return {dotted}
        if "." not in dotted and f"tf.train.{dotted}" in TF1_OPTIMIZERS:
            self.unimported_tf = True
            return {f"tf.train.{dotted}"}
        return names

    def _module_alias(self, name: cst.Name) -> Optional[str]:
        """The TF module ``name`` stands for when every binding of it is a plain assignment of
        one and the same module of :data:`~codemods.rules.tape.tfapi.TF_MODULES`
        (``rnn = tf.nn.rnn_cell``), else None."""
        from codemods.rules.tape.tfapi import TF_MODULES  # noqa: PLC0415 - tfapi imports nothing of ours

        if self.match_captures.get(name.value):
            return None
        found = self.assignments(name)
        if not found or any(id(a) in self._aliasing for a in found):
            return None  # (a cycle of assignments)
        modules = set()
        self._aliasing |= {id(a) for a in found}
        try:
            for assignment in found:
                value = self.assigned_value(assignment)
                if not isinstance(value, (cst.Name, cst.Attribute)):
                    return None
                resolved = self.tf_names(value)
                if len(resolved) != 1 or next(iter(resolved)) not in TF_MODULES:
                    return None
                modules |= resolved
        finally:
            self._aliasing -= {id(a) for a in found}
        return next(iter(modules)) if len(modules) == 1 else None

    def assignments(self, name: cst.Name) -> list:
        scope = self.scope(name)
        if scope is None:
            return []
        return list(scope[name.value])

    def assigned_value(self, assignment) -> Optional[cst.BaseExpression]:
        """The value of ``x = value`` for an assignment of plain name ``x`` (one target)."""
        if not isinstance(assignment, Assignment):
            return None
        parent = self.parent(assignment.node)
        if isinstance(parent, cst.AssignTarget):
            assign = self.parent(parent)
            if isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(
                    assign.targets[0].target, cst.Name):
                return assign.value
        if isinstance(parent, cst.AnnAssign) and parent.value is not None and parent.target is assignment.node:
            return parent.value
        return None

    def is_import(self, assignment) -> bool:
        return isinstance(assignment, ImportAssignment)

    # -- module-wide scan -------------------------------------------------------------
    def _scan(self) -> None:
        facts = self

        class Scan(cst.CSTVisitor):
            def visit_Attribute(self, node: cst.Attribute) -> None:
                facts.tf_used |= facts.tf_names(node)
                facts.mentions.add(node.attr.value)

            def visit_Name(self, node: cst.Name) -> None:
                facts.tf_used |= facts.tf_names(node)
                facts.mentions.add(node.value)

            def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
                for sub in _targets(node.target):
                    if isinstance(sub, cst.Attribute):
                        facts.attr_names_stored.add(sub.attr.value)

            def visit_MatchCase(self, node: cst.MatchCase) -> None:
                for name in match_capture_names(node.pattern):
                    facts.match_captures.setdefault(name.value, []).append(name)

            def visit_Arg(self, node: cst.Arg) -> None:
                if node.keyword is not None:
                    if node.keyword.value == "use_resource" and isinstance(node.value, cst.Name) \
                            and node.value.value == "True":
                        facts.mentions.add("kw:use_resource=True")  # a resource variable, what TF 2 makes
                    else:
                        facts.mentions.add("kw:" + node.keyword.value)

        self.module.visit(Scan())

    # -- module gates ---------------------------------------------------------------------
    def module_gate(self) -> Optional[str]:
        """Why no tape rewrite in this module can be proven, or None. One reason per gate."""
        if self.unimported_tf:
            return ("this file uses `tf` without importing TensorFlow (a fragment): names and the loss cannot be "
                    f"resolved, so no rewrite is provable {MANUAL}")
        if self.tf_used & REF_VARIABLE_SWITCHES or "kw:use_resource" in self.mentions:
            found = [f"`{name}()`" for name in sorted(self.tf_used & REF_VARIABLE_SWITCHES)]
            if "kw:use_resource" in self.mentions:
                found.append("`use_resource=` other than `True`")
            return (f"this module uses TF1 reference variables ({', '.join(found)}); a `tf.GradientTape` cannot "
                    f"differentiate them. Remove that first, or keep `compute_gradients`/`minimize` {MANUAL}")
        if self.tf_used & CONTROL_FLOW_V1_SWITCHES:
            return ("this module switches to TF1 control flow (`disable_control_flow_v2`); a tape is not proven to "
                    f"differentiate v1 `cond`/`while_loop` as `tf.gradients` does {MANUAL}")
        if self.tf_used & GRADIENT_OVERRIDES or "gradient_override_map" in self.mentions \
                or "RegisterGradient" in self.mentions:
            return ("this module overrides gradients (`gradient_override_map`/`RegisterGradient`); a "
                    "`tf.GradientTape` ignores those overrides (measured: it uses the op's own gradient), so the "
                    f"gradients would change {MANUAL}")
        cached = sorted(n for n in self.tf_used if tfapi.is_cached_read(n))
        if cached or self.mentions & {"kw:" + k for k in tfapi.CACHED_READ_KEYWORDS} \
                or self.mentions & tfapi.CACHED_READ_METHODS:
            what = f"`{cached[0]}`" if cached else "`caching_device`"
            return (f"this module creates cached reads of variables ({what}); TF makes them while a "
                    "`tf.GradientTape` is paused, so a tape gives those variables no gradient (measured: "
                    f"`static_rnn` cells and `variable_scope(caching_device=...)` weights stop training) {MANUAL}")
        if any(n.startswith("tf.distribute.") for n in self.tf_used):
            return ("this module uses `tf.distribute`: `compute_gradients`/`minimize` scale a MEAN loss by "
                    f"1/replicas and a tape does not; see TFC201 {MANUAL}")
        return None

    def variable_set_gate(self) -> Optional[str]:
        """Why ``tf.compat.v1.trainable_variables()`` may not be what a tape can differentiate."""
        if "TRAINABLE_RESOURCE_VARIABLES" in self.mentions:
            return ("this module uses the `TRAINABLE_RESOURCE_VARIABLES` collection, which `compute_gradients` "
                    f"also differentiates and a rewrite to `trainable_variables()` would not {MANUAL}")
        if "trainable" in self.attr_names_stored:
            return ("this module assigns `.trainable` on an object: variables listed as trainable may not be "
                    f"watched by a `tf.GradientTape` (it watches `variable.trainable` ones only) {MANUAL}")
        if self.tf_used & {"tf.add_to_collection", "tf.add_to_collections", "tf.get_collection_ref"} and (
                "TRAINABLE_VARIABLES" in self.mentions or "trainable_variables" in self.mentions):
            return ("this module adds to a variables collection by hand: `trainable_variables()` may list a "
                    "variable created with `trainable=False`, which `compute_gradients` differentiates but a "
                    f"`tf.GradientTape` does not watch {MANUAL}")
        return None

    def function_of(self, node: cst.CSTNode) -> Optional[cst.FunctionDef]:
        for anc in self.ancestors(node):
            if isinstance(anc, cst.FunctionDef):
                return anc
        return None

    def in_compiled_function(self, node: cst.CSTNode) -> bool:
        """``node`` is inside a function decorated with ``tf.function``: TF 2 code, where
        ``tf.gradients`` runs in a graph context (TFC301 writes its steps so), not a TF 1 site."""
        for anc in self.ancestors(node):
            if isinstance(anc, cst.FunctionDef):
                for decorator in anc.decorators:
                    expr = decorator.decorator
                    expr = expr.func if isinstance(expr, cst.Call) else expr
                    if self.tf_names(expr) & {"tf.function", "tf.compat.v1.function", "tf.compat.v2.function"}:
                        return True
        return False

    def class_of(self, node: cst.CSTNode) -> Optional[cst.ClassDef]:
        for anc in self.ancestors(node):
            if isinstance(anc, cst.ClassDef):
                return anc
        return None


def _targets(target: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    yield target
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _targets(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _targets(target.value)


def resolve_metadata(wrapper) -> Dict[type, Mapping[cst.CSTNode, object]]:
    """The three providers the planner needs, resolved (and cached) on ``wrapper``."""
    return {provider: wrapper.resolve(provider)
            for provider in (ScopeProvider, QualifiedNameProvider, ParentNodeProvider)}


def position_resolver(wrapper):
    return lambda: wrapper.resolve(PositionProvider)


def children_of(node: cst.CSTNode) -> List[cst.CSTNode]:
    return list(node.children)
