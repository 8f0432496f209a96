"""The compat form shared by TFC001-TFC004: a removed TF1 helper -> ``tfclip_compat.<name>``.

A rule subclasses :class:`ShimRewrite` and sets ``TARGETS`` (canonical TF name -> shim
name, from ``codemods.rules.tfnames``) and ``NAMESPACES`` (the contrib modules those helpers
live in). Everything else is common:

* sites are matched by *qualified name* (``QualifiedNameProvider`` + ``canonical``), so
  every import form works: ``import tensorflow as tf``, ``import tensorflow.compat.v1 as
  tf``, ``from tensorflow import contrib``, ``from tensorflow.contrib import training as
  ct``, ``from tensorflow.contrib.estimator import clip_gradients_by_norm``, aliases,
  ``tf_upgrade_v2`` output;
* only the callee expression is replaced, by ``tfclip_compat.<name>``; the arguments,
  comments and formatting of the call stay byte for byte;
* ``import tfclip_compat`` is added through ``AddImportsVisitor``; a contrib import whose
  last use was rewritten is removed through ``RemoveImportsVisitor`` (only then: an
  import that was unused before is not ours to touch);
* a call is bound against the TF 1.15 signature (``codemods.rules.compat.contrib_signatures``):
  ``*args``/``**kwargs``, unknown keywords or too many positionals -> diagnostic, no fix;
  arguments the shim may not reproduce exactly -> unsafe fix;
* what cannot be proven is declined with a diagnostic and left untouched: a contrib
  module reached dynamically (``getattr(tf.contrib, name)``, ``ct = tf.contrib.training``
  in a file that names one of the helpers), a star import from a contrib module, a name
  bound both to a contrib helper and to something else, a local ``tfclip_compat`` that
  the new import would shadow.
* a rule with ``FOLLOW_ALIASES`` also resolves plain module aliases (``slim =
  tf.contrib.slim``, ``codemods.rules.compat.aliases``) and drops an alias whose every use it rewrote.

Longer than ~400 lines because it is the whole compat form of four rules: matching by
qualified name, argument binding against the TF 1.15 signatures, module aliases, and the
import bookkeeping share state per module; splitting them would pass that state around.
"""

from __future__ import annotations

from typing import ClassVar, Dict, FrozenSet, List, Mapping, Optional, Set, Tuple

import libcst as cst
from libcst.metadata import (
    ExpressionContext,
    ExpressionContextProvider,
    ImportAssignment,
    QualifiedNameProvider,
    QualifiedNameSource,
    ScopeProvider,
)

from codemods.rules.compat.aliases import DropDeadAliases, alias_modules, chain_root, find_aliases, served_key
from codemods.engine.base import FixSafety, TfcCodemod
from codemods.rules.compat.contrib_signatures import HELPERS, SHIM_MISSING, HelperSpec
from codemods.rules.tfnames import canonical, canonical_names
from codemods.engine.prepass import Spec, all_of, any_of, dynamic_access, names, star_import

SHIM_MODULE = "tfclip_compat"

# Builtins that turn a module object into a dynamic lookup we cannot follow.
_DYNAMIC_ACCESS = {"builtins.getattr", "builtins.vars", "builtins.dir", "builtins.hasattr"}


def _dotted_name(node: cst.BaseExpression) -> Optional[str]:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = _dotted_name(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


def shim_sites(targets: Mapping[str, str], namespaces: FrozenSet[str]) -> Spec:
    """What the pre-pass looks for, from a rule's tables. Every finding is at a node whose
    qualified name (built by libcst from an import and an attribute chain, every part of it
    spelled in the code) is one of ``targets`` -- so the helper's own name is spelled there --
    or one of ``namespaces``: a star import from it, a ``getattr``-style lookup into it, or
    the module used as a value in a file that also spells a helper. So every part shared by
    all the names (``contrib``) is spelled, and one of their module parts after it
    (``training`` for ``tf.contrib.training.create_train_op``) too."""
    helpers = sorted({target.rsplit(".", 1)[1] for target in targets})
    found = names(*helpers)
    if namespaces:
        parts = sorted({part for module in namespaces for part in module.split(".")[1:2]})
        found = any_of(found, star_import(*parts), dynamic_access(*parts))
    modules = [t.split(".")[1:-1] for t in targets] + [n.split(".")[1:] for n in sorted(namespaces)]  # after "tf"
    if not all(module[:1] == ["contrib"] for module in modules):
        return found
    if all(len(module) >= 2 for module in modules):
        found = all_of(names(*sorted({module[1] for module in modules})), found)
    return all_of(names("contrib"), found)


def _is_contrib_module(module: str) -> bool:
    name = canonical(module)
    return name is not None and (name == "tf.contrib" or name.startswith("tf.contrib."))


class ShimRewrite(TfcCodemod):
    """Base of the compat rules (not a rule itself: ``TARGETS`` is empty)."""

    METADATA_DEPENDENCIES = (
        QualifiedNameProvider,
        ScopeProvider,
        ExpressionContextProvider,
    )
    # canonical TF name (``tf.contrib.training.create_train_op``) -> shim name
    TARGETS: ClassVar[Mapping[str, str]] = {}
    # canonical module names whose dynamic use this rule reports (``tf.contrib.training``)
    NAMESPACES: ClassVar[FrozenSet[str]] = frozenset()
    # How the message says the helper is gone.
    GONE: ClassVar[str] = "was removed in TensorFlow 2"
    # Resolve `name = <contrib module>` aliases (codemods.rules.compat.aliases) instead of declining them.
    FOLLOW_ALIASES: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs) -> None:  # type: ignore[no-untyped-def]
        if "SITES" not in cls.__dict__ and cls.TARGETS:
            cls.SITES = shim_sites(cls.TARGETS, cls.NAMESPACES)
        super().__init_subclass__(**kwargs)

    # -- per-module state -------------------------------------------------------------

    def visit_Module(self, node: cst.Module) -> None:
        self._replace: Dict[int, str] = {}  # id(original callee/reference) -> shim name
        self._handled: Set[int] = set()  # ids of nodes already decided (no second report)
        self._attr_names: Set[int] = set()  # ids of Name nodes that are an Attribute's .attr
        self._dotted: Set[int] = set()  # ids of nodes that are an Attribute's .value
        self._rewritten: Set[str] = set()  # dotted names of rewritten expressions
        self._contrib_imports: List[Tuple[str, str, Optional[str], Optional[str]]] = []
        self._alias_uses: Dict[int, Tuple[str, Tuple[cst.Assign, ...]]] = {}
        self._alias_values: Set[int] = set()  # ids of the values of resolved alias statements
        self._served_aliases: Set[Tuple[str, str]] = set()
        if self.FOLLOW_ALIASES:
            scopes = {s for s in self.metadata.get(ScopeProvider, {}).values() if s is not None}
            self._alias_uses, assigns = find_aliases(
                node, list(scopes), lambda n: self._names(n)[0], alias_modules(list(self.TARGETS))
            )
            # An alias nothing reads is no way to the helpers: its value is checked as before
            # (a module used as a value), so `L = tf.contrib.layers` beside a `def f(L):
            # L.optimize_loss(...)` that cannot be resolved is still reported.
            read = {id(stmt) for _, stmts in self._alias_uses.values() for stmt in stmts}
            self._alias_values = {id(a.value) for a, _ in assigns.values() if id(a) in read}
        self._unresolved_helper_uses = self._count_unresolved_helper_uses(node)
        self._shim_clash = self._find_shim_clash()

    def _count_unresolved_helper_uses(self, module: cst.Module) -> int:
        """How many ``x.<helper>`` accesses do not resolve to an import (``L.optimize_loss``
        after ``L = tf.contrib.layers``, ``self.layers.optimize_loss``)."""
        helpers = {t.rsplit(".", 1)[1] for t in self.TARGETS}
        code = self.module_code(module)
        if not any(h in code for h in helpers):
            return 0
        count = 0
        for node in _walk(module):
            if isinstance(node, cst.Attribute) and node.attr.value in helpers:
                root = chain_root(node)
                if root is not None and id(root[0]) in self._alias_uses:
                    continue
                raw = self.get_metadata(QualifiedNameProvider, node, set())
                if not any(qn.source is not QualifiedNameSource.LOCAL for qn in raw):
                    count += 1
        return count

    def _find_shim_clash(self) -> Optional[str]:
        """Why ``import tfclip_compat`` would clash with a local name, or None."""
        scopes = {s for s in self.metadata.get(ScopeProvider, {}).values() if s is not None}
        for scope in scopes:
            for assignment in scope.assignments[SHIM_MODULE]:
                if isinstance(assignment, ImportAssignment):
                    names = [a.evaluated_name for a in assignment.node.names] if isinstance(
                        assignment.node, cst.Import
                    ) else []
                    if isinstance(assignment.node, cst.Import) and any(
                        n == SHIM_MODULE or n.startswith(SHIM_MODULE + ".") for n in names
                    ):
                        continue
                try:
                    pos = self.position(assignment.node)
                except KeyError:
                    pos = None
                where = f" (line {pos.start.line})" if pos is not None else ""
                return f"the name `{SHIM_MODULE}` is already bound to something else{where}"
        return None

    # -- imports ----------------------------------------------------------------------

    def visit_Import(self, node: cst.Import) -> bool:
        for alias in node.names:
            full = alias.evaluated_name
            if _is_contrib_module(full):
                asname = alias.evaluated_alias
                bound = asname if asname is not None else full.split(".")[0]
                self._contrib_imports.append((bound, full, None, asname))
        return False  # names in an import are bindings, not uses

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if node.relative or node.module is None:
            return False
        module = _dotted_name(node.module)
        if module is None:
            return False
        if isinstance(node.names, cst.ImportStar):
            if canonical(module) in self.NAMESPACES:
                self._decline(
                    node,
                    f"`from {module} import *` hides which removed helpers are used",
                    f"import the helpers by name from `{SHIM_MODULE}`",
                )
            return False
        for alias in node.names:
            name = alias.evaluated_name
            full = f"{module}.{name}"
            if _is_contrib_module(full) or canonical(full) in self.TARGETS:
                asname = alias.evaluated_alias
                bound = asname if asname is not None else name
                self._contrib_imports.append((bound, module, name, asname))
        return False

    # -- sites ------------------------------------------------------------------------

    def _names(self, node: cst.CSTNode) -> Tuple[Set[str], bool]:
        """Canonical TF names of ``node`` and whether the binding is ambiguous."""
        root = chain_root(node) if self._alias_uses else None
        if root is not None and id(root[0]) in self._alias_uses:
            return {self._alias_uses[id(root[0])][0] + root[1]}, False
        try:
            raw = self.get_metadata(QualifiedNameProvider, node, set())
        except KeyError:
            return set(), False
        names = canonical_names(raw)
        others = [
            qn
            for qn in raw
            if qn.source is QualifiedNameSource.LOCAL or canonical(qn.name) is None
        ]
        return names, bool(names and others)

    def _target(self, names: Set[str]) -> Optional[str]:
        hits = sorted(n for n in names if n in self.TARGETS)
        return hits[0] if hits else None

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._dotted.add(id(node.value))
        self._attr_names.add(id(node.attr))
        self._check_reference(node)

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self._attr_names:
            self._check_reference(node)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, (cst.Name, cst.Attribute)):
            return
        names, ambiguous = self._names(func)
        target = self._target(names)
        if target is not None:
            self._handled.add(id(func))
            self._site(node, func, target, ambiguous, call=node)
            return
        # getattr(tf.contrib.training, name): a dynamic lookup into a contrib module.
        raw = self.get_metadata(QualifiedNameProvider, func, set())
        if node.args and any(qn.name in _DYNAMIC_ACCESS for qn in raw):
            first = node.args[0].value
            module = self._namespace_of(first)
            if module is not None:
                self._handled.add(id(first))
                self._decline(
                    node,
                    f"`{module}` is accessed dynamically, so the removed helpers it "
                    "provides cannot be located",
                    f"call the `{SHIM_MODULE}` function directly",
                )

    def _namespace_of(self, node: cst.BaseExpression) -> Optional[str]:
        if not isinstance(node, (cst.Name, cst.Attribute)):
            return None
        names, _ = self._names(node)
        hits = sorted(names & self.NAMESPACES)
        return hits[0] if hits else None

    def _check_reference(self, node: cst.BaseExpression) -> None:
        if id(node) in self._handled or id(node) in self._alias_values:
            return
        names, ambiguous = self._names(node)
        if not names:
            return
        target = self._target(names)
        if target is not None:
            self._handled.add(id(node))
            ctx = self.get_metadata(ExpressionContextProvider, node, ExpressionContext.LOAD)
            if ctx is ExpressionContext.LOAD:
                self._site(node, node, target, ambiguous, call=None)
            return
        module = self._namespace_of(node)
        if module is None or id(node) in self._dotted:
            return
        # The module object escapes (`ct = tf.contrib.training`, passed as an argument):
        # uses through it cannot be resolved. Report only when the file has an
        # `x.<helper>` access that resolves to no import, so `layers = tf.contrib.layers`
        # used for `layers.conv2d` only stays quiet.
        if self._unresolved_helper_uses:
            self._handled.add(id(node))
            self._decline(
                node,
                f"`{module}` is used as a value, so calls through it cannot be resolved",
                f"call the `{SHIM_MODULE}` functions directly",
            )

    # -- decisions --------------------------------------------------------------------

    def _decline(self, node: cst.CSTNode, why: str, remedy: str) -> None:
        self.report(node, f"{why}: {remedy} (manual edit required)", fix=FixSafety.NONE)

    def _safety(
        self, spec: HelperSpec, func: cst.BaseExpression, call: Optional[cst.Call], ambiguous: bool
    ) -> Tuple[FixSafety, str]:
        """Fix safety of one site and the reason when it is not SAFE."""
        if spec.shim_name in SHIM_MISSING:
            return FixSafety.NONE, f"`{SHIM_MODULE}` has no `{spec.shim_name}` yet"
        if self._shim_clash is not None:
            return FixSafety.NONE, self._shim_clash
        if ambiguous:
            return FixSafety.NONE, "the name is also bound to something else in this file"
        unsafe: List[str] = []
        module = self.context.module
        if module is not None and "#" in module.code_for_node(func):
            unsafe.append("a comment inside the callee expression would be dropped")
        if call is None:
            if spec.unsafe_params:
                unsafe.append(
                    "the helper is used as a value, so arguments the shim treats differently "
                    f"({', '.join(sorted(spec.unsafe_params))}) cannot be ruled out"
                )
            return (FixSafety.UNSAFE, "; ".join(unsafe)) if unsafe else (FixSafety.SAFE, "")
        args, kwargs = [], {}
        for arg in call.args:
            if arg.star:
                return FixSafety.NONE, f"`{arg.star}` arguments cannot be checked statically"
            if arg.keyword is None:
                args.append(arg.value)
            else:
                kwargs[arg.keyword.value] = arg.value
        try:
            bound = spec.signature().bind(*args, **kwargs)
        except TypeError as exc:
            return FixSafety.NONE, f"the arguments do not match the TF 1.15 signature ({exc})"
        passed = set(bound.arguments)
        unsupported = sorted(passed & spec.unsupported_params)
        if unsupported:
            return FixSafety.NONE, f"`{SHIM_MODULE}` does not support `{unsupported[0]}`"
        for name in sorted(passed & set(spec.unsafe_params)):
            value = bound.arguments[name]
            if not (isinstance(value, cst.Name) and value.value == "None"):
                unsafe.append(f"`{name}`: {spec.unsafe_params[name]}")
        return (FixSafety.UNSAFE, "; ".join(unsafe)) if unsafe else (FixSafety.SAFE, "")

    def _site(
        self,
        report_at: cst.CSTNode,
        func: cst.BaseExpression,
        target: str,
        ambiguous: bool,
        call: Optional[cst.Call],
    ) -> None:
        shim = self.TARGETS[target]
        spec = HELPERS[shim]
        safety, why = self._safety(spec, func, call, ambiguous)
        new = f"`{SHIM_MODULE}.{shim}`"
        if safety is FixSafety.NONE:
            remedy = f"use {new}"
            if shim in SHIM_MISSING:
                remedy = "vendor the TF 1.15 helper or clip with `tfclip_compat.clip_by_global_norm`"
            self._decline(report_at, f"`{target}` {self.GONE} and {why}", remedy)
            return
        applied = self.may_fix(report_at, safety)
        message = f"`{target}` {self.GONE}: use {new} (same signature and numerics)"
        if safety is FixSafety.UNSAFE:
            message += f"; unsafe: {why}"
        self.report(report_at, message, fix=safety, applied=applied)
        if applied:
            self._replace[id(func)] = shim
            dotted = _dotted_name(func)
            if dotted is not None:
                self._rewritten.add(dotted)
            self._serve_aliases(func)

    def _serve_aliases(self, func: cst.BaseExpression) -> None:
        """Mark the alias statements a rewritten callee read (and those their values read)."""
        root = chain_root(func)
        pending = [root[0]] if root is not None else []
        while pending:
            use = self._alias_uses.get(id(pending.pop()))
            for assign in use[1] if use is not None else ():
                if served_key(assign) not in self._served_aliases:
                    self._served_aliases.add(served_key(assign))
                    value_root = chain_root(assign.value)
                    if value_root is not None:
                        pending.append(value_root[0])

    # -- rewriting --------------------------------------------------------------------

    def _replacement(self, original: cst.BaseExpression) -> cst.BaseExpression:
        shim = self._replace[id(original)]
        return cst.Attribute(
            value=cst.Name(SHIM_MODULE),
            attr=cst.Name(shim),
            lpar=original.lpar,
            rpar=original.rpar,
        )

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.BaseExpression:
        if id(original_node) in self._replace:
            return self._replacement(original_node)
        return updated_node

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        if id(original_node) in self._replace:
            return self._replacement(original_node)
        return updated_node

    def _served_a_rewrite(self, bound: str, module: str, obj: Optional[str], asname: Optional[str]) -> bool:
        """Whether this contrib import provided one of the rewritten expressions."""
        if obj is None and asname is None:  # `import tensorflow.contrib.training`
            return any(d.startswith(module + ".") for d in self._rewritten)
        return any(d == bound or d.startswith(bound + ".") for d in self._rewritten)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        self._dotted_imports: List[str] = []
        if self._replace:
            # Imported only for a file being rewritten: libcst.codemod costs ~0.25 s to import.
            from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor

            AddImportsVisitor.add_needed_import(self.context, SHIM_MODULE)
            for bound, module, obj, asname in self._contrib_imports:
                if not self._served_a_rewrite(bound, module, obj, asname):
                    continue  # unused before we came: not ours to touch
                RemoveImportsVisitor.remove_unused_import(self.context, module, obj, asname)
                if obj is None and asname is None:
                    self._dotted_imports.append(module)
        return updated_node

    def transform_module(self, tree: cst.Module) -> cst.Module:
        """Run the rule, then the import visitors, then drop dead ``import a.contrib.b``.

        ``RemoveImportsVisitor`` keeps ``import tensorflow.contrib.training`` while the
        root name ``tensorflow`` is used anywhere; on TF 2 that import itself fails, so
        once nothing under ``tensorflow.contrib.training`` is referenced any more it is
        dropped (or becomes ``import tensorflow`` if nothing else binds ``tensorflow``).
        """
        self._dotted_imports = []
        self._served_aliases = set()
        tree = super().transform_module(tree)
        if self._dotted_imports:
            tree = tree.visit(_DropDeadDottedImports(tree, self._dotted_imports))
        if self._served_aliases:
            tree = DropDeadAliases.apply(tree, self._served_aliases)
        return tree


class _DropDeadDottedImports(cst.CSTTransformer):
    """Remove ``import a.b.c`` aliases (no ``as``) nothing under ``a.b.c`` refers to."""

    def __init__(self, module: cst.Module, candidates: List[str]) -> None:
        super().__init__()
        used: Set[str] = set()
        bindings: Dict[str, int] = {}
        for node in _walk(module):
            if isinstance(node, cst.Import):
                for alias in node.names:
                    if alias.asname is None:
                        root = alias.evaluated_name.split(".")[0]
                        bindings[root] = bindings.get(root, 0) + 1
            elif isinstance(node, cst.Attribute):
                dotted = _dotted_name(node)
                if dotted is not None:
                    used.add(dotted)
        self._dead = {
            c for c in candidates if not any(u == c or u.startswith(c + ".") for u in used)
        }
        root_used = {u.split(".")[0] for u in used}
        # a dead alias that is the only binding of a root still used becomes `import root`
        self._keep_root = {
            c for c in self._dead if c.split(".")[0] in root_used and bindings.get(c.split(".")[0], 0) <= 1
        }

    def leave_Import(
        self, original_node: cst.Import, updated_node: cst.Import
    ) -> "cst.Import | cst.RemovalSentinel":
        names = []
        for alias in updated_node.names:
            name = alias.evaluated_name if alias.asname is None else None
            if name in self._keep_root:
                names.append(alias.with_changes(name=cst.Name(name.split(".")[0])))
            elif name not in self._dead:
                names.append(alias)
        if not names:
            return cst.RemoveFromParent()
        if len(names) != len(updated_node.names):
            names[-1] = names[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated_node.with_changes(names=names)


def _walk(node: cst.CSTNode):
    """Every node below ``node`` (imports included), parents first."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if isinstance(current, cst.Import):
            continue  # its names are bindings, never uses
        stack.extend(current.children)
