"""Module aliases bound by plain assignment (``slim = tf.contrib.slim``), for the compat rules.

libcst's ``QualifiedNameProvider`` follows imports, not assignments, so after
``slim = tf.contrib.slim`` the call ``slim.learning.create_train_op(...)`` has only the local
name ``slim.learning.create_train_op``. TF-Slim's own documentation spells it that way, so a
compat rule that opts in (``ShimRewrite.FOLLOW_ALIASES``) resolves such aliases -- soundly:

* an alias is an ``Assign`` with one ``Name`` target whose value is a ``Name``/``Attribute``
  chain naming a module the rule's helpers live under (``tf.contrib``, ``tf.contrib.slim``,
  ``tf.contrib.slim.learning``), directly through imports or through another alias (chains:
  ``learning = slim.learning``);
* a use of the name resolves only when *every* binding that can reach it (libcst's
  ``Access.referents``: all assignments of the name in the scope it resolves to, wherever they
  are) is such an alias of the same module. A name also bound by an import, a parameter, a
  ``for`` target, a second assignment of something else, ``global`` rebinding... does not
  resolve, and the rule declines as before.

After the rewrite, an alias whose every use was rewritten is dropped by
:class:`DropDeadAliases` (on TF 2 ``tf.contrib.slim`` itself raises ``AttributeError``); its
comments move to the next statement. An alias that was unused before is not touched.
"""

from __future__ import annotations

from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.metadata import Assignment, MetadataWrapper, ScopeProvider

__all__ = ["DropDeadAliases", "alias_modules", "chain_root", "find_aliases", "served_key"]


def chain_root(node: cst.BaseExpression) -> Optional[Tuple[cst.Name, str]]:
    """``(root Name, ".rest.of.chain")`` for a Name/Attribute chain, else None."""
    rest: List[str] = []
    while isinstance(node, cst.Attribute):
        rest.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    return node, "".join("." + part for part in reversed(rest))


def alias_modules(targets: Sequence[str]) -> FrozenSet[str]:
    """Every contrib module a target lives under: ``tf.contrib.slim.learning.create_train_op``
    gives ``tf.contrib``, ``tf.contrib.slim``, ``tf.contrib.slim.learning``."""
    found = set()
    for target in targets:
        parts = target.split(".")
        for end in range(2, len(parts)):
            module = ".".join(parts[:end])
            if module.startswith("tf.contrib"):
                found.add(module)
    return frozenset(found)


def _alias_assigns(module: cst.Module) -> Dict[int, cst.Assign]:
    """id(target Name) -> the ``NAME = a.b.c`` statement, for every such statement."""
    found: Dict[int, cst.Assign] = {}
    stack: List[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        if (
            isinstance(node, cst.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0].target, cst.Name)
            and chain_root(node.value) is not None
        ):
            found[id(node.targets[0].target)] = node
        stack.extend(node.children)
    return found


def find_aliases(
    module: cst.Module,
    scopes: Sequence[object],
    canonical_of: Callable[[cst.BaseExpression], Set[str]],
    modules: FrozenSet[str],
) -> Tuple[Dict[int, str], Dict[int, Tuple[cst.Assign, str]]]:
    """Resolve the aliases of ``modules`` in ``module``.

    ``scopes`` are the module's libcst scopes; ``canonical_of(node)`` gives the canonical TF
    names an expression has through imports. Returns ``(uses, assigns)``: id(Name use) ->
    canonical module, and id(target Name) -> (alias statement, canonical module).
    """
    candidates = _alias_assigns(module)
    assigns: Dict[int, Tuple[cst.Assign, str]] = {}
    uses: Dict[int, Tuple[str, Tuple[cst.Assign, ...]]] = {}
    accesses = [a for scope in scopes for a in scope.accesses]  # type: ignore[attr-defined]
    changed = True
    while changed:  # a chain of n aliases settles in n rounds
        changed = False
        for target_id, assign in candidates.items():
            if target_id in assigns:
                continue
            resolved = _resolve(assign.value, uses, canonical_of)
            if resolved in modules:
                assigns[target_id] = (assign, resolved)
                changed = True
        for access in accesses:
            node = access.node
            if not isinstance(node, cst.Name) or id(node) in uses:
                continue
            found, statements = set(), []
            for referent in access.referents:
                hit = assigns.get(id(referent.node)) if isinstance(referent, Assignment) else None
                found.add(hit[1] if hit is not None else None)
                if hit is not None:
                    statements.append(hit[0])
            if len(found) == 1 and None not in found:
                uses[id(node)] = (found.pop(), tuple(statements))
                changed = True
    # An alias some reader of which did not resolve (the name has another binding there) lets
    # the module escape: it is not reported as resolved, so the rule still declines its value.
    escaped = {
        id(a.node)
        for scope in scopes
        for a in scope.assignments  # type: ignore[attr-defined]
        if id(a.node) in assigns and not all(id(r.node) in uses for r in a.references)
    }
    return uses, {k: v for k, v in assigns.items() if k not in escaped}


def _resolve(
    value: cst.BaseExpression,
    uses: Dict[int, Tuple[str, Tuple[cst.Assign, ...]]],
    canonical_of: Callable[[cst.BaseExpression], Set[str]],
) -> Optional[str]:
    root = chain_root(value)
    if root is not None and id(root[0]) in uses:
        return uses[id(root[0])][0] + root[1]
    names = canonical_of(value)
    return next(iter(names)) if len(names) == 1 else None


class DropDeadAliases(cst.CSTTransformer):
    """Remove the alias statements in ``dead`` (ids of ``Assign`` nodes of the visited tree).

    A line left empty goes; its comments (own lines and trailing) move to the next statement
    of its block, or to a ``pass`` that takes its place when it was the block's last.
    """

    def __init__(self, dead: Set[int]) -> None:
        super().__init__()
        self._dead = dead

    @staticmethod
    def apply(tree: cst.Module, served: Set[Tuple[str, str]]) -> cst.Module:
        """``tree`` without the ``served`` aliases (``(name, value code)``) nothing reads any more;
        repeated, so a chain (``slim = tf.contrib.slim``; ``learning = slim.learning``) goes too."""
        for _ in range(8):
            dead = _unused_aliases(tree, served)
            if not dead:
                break
            tree = tree.visit(DropDeadAliases(dead))
        return tree

    def _merge(
        self, original: Sequence[cst.BaseStatement], updated: Sequence[cst.BaseStatement], module: bool
    ) -> List[cst.BaseStatement]:
        out: List[cst.BaseStatement] = []
        carried: List[cst.EmptyLine] = []
        for orig, stmt in zip(original, updated):
            if isinstance(orig, cst.SimpleStatementLine) and any(id(s) in self._dead for s in orig.body):
                body = [s for s in orig.body if id(s) not in self._dead]
                if body:
                    body[-1] = body[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
                    stmt = orig.with_changes(body=body)
                else:
                    carried.extend(orig.leading_lines)
                    if orig.trailing_whitespace.comment is not None:
                        carried.append(cst.EmptyLine(comment=orig.trailing_whitespace.comment))
                    continue
            if carried:
                stmt = stmt.with_changes(leading_lines=[*carried, *stmt.leading_lines])
                carried = []
            out.append(stmt)
        if carried or (not out and not module):
            out.append(cst.SimpleStatementLine(body=[cst.Pass()], leading_lines=carried))
        return out

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        return updated_node.with_changes(body=self._merge(original_node.body, updated_node.body, False))

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        return updated_node.with_changes(body=self._merge(original_node.body, updated_node.body, True))


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def served_key(assign: cst.Assign) -> Tuple[str, str]:
    """How an alias statement is recognised after the rewrite: ``(name, code of the value)``."""
    target = assign.targets[0].target
    assert isinstance(target, cst.Name)
    return target.value, _code(assign.value)


def _unused_aliases(tree: cst.Module, served: Set[Tuple[str, str]]) -> Set[int]:
    """ids of the ``served`` alias statements of ``tree`` whose binding nothing reads."""
    assigns = _alias_assigns(tree)
    wrapper = MetadataWrapper(tree, unsafe_skip_copy=True)
    scopes = {s for s in wrapper.resolve(ScopeProvider).values() if s is not None}
    dead = set()
    for scope in scopes:
        for assignment in scope.assignments:
            assign = assigns.get(id(assignment.node)) if isinstance(assignment, Assignment) else None
            if assign is not None and served_key(assign) in served and not assignment.references:
                dead.add(id(assign))
    return dead
