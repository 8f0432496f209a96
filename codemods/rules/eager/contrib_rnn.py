"""``from tensorflow.contrib import rnn``: the module alias read as the path it stands for.

TF 1.15's ``tf.contrib.rnn`` re-exports TF 1's core cells and static RNNs (``tfnames.CONTRIB_RNN``).
The tutorials bind it as a module (``from tensorflow.contrib import rnn``, then
``rnn.BasicLSTMCell(...)``, ``rnn.static_rnn(...)``). :func:`contrib_rnn_as_tf` gives the program
model the module it can read: the import statement gone and each ``rnn.<name>`` spelled
``tf.contrib.rnn.<name>`` (which ``Reader.path`` reads as the core path), so that everything the
model decides about TensorFlow names -- "reads TensorFlow", the tables, the renaming -- sees
those calls as the TensorFlow calls they are. Nothing is rewritten when the alias may be anything
else: it must be bound by that import alone, at module level, and read only as the root of an
attribute (``rnn.X``); otherwise the import stays, the model declines it, and ``why`` names the use.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from codemods.rules.eager.syntax import dotted

_MODULE = ["tensorflow", "contrib"]


def _rnn_import(stmt: cst.BaseStatement) -> Optional[str]:
    """The name ``stmt`` binds when it is exactly ``from tensorflow.contrib import rnn [as name]``."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    small = stmt.body[0]
    if (not isinstance(small, cst.ImportFrom) or small.relative or small.module is None
            or dotted(small.module) != _MODULE or isinstance(small.names, cst.ImportStar) or len(small.names) != 1):
        return None
    alias = small.names[0]
    if not isinstance(alias.name, cst.Name) or alias.name.value != "rnn":
        return None
    if alias.asname is None:
        return "rnn"
    return alias.asname.name.value if isinstance(alias.asname.name, cst.Name) else None


def _tensorflow_alias(module: cst.Module) -> Optional[str]:
    """The one name ``import tensorflow as <name>`` (or ``import tensorflow``) binds at module level."""
    found: Set[str] = set()
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Import):
                    for alias in small.names:
                        if dotted(alias.name) == ["tensorflow"]:
                            name = alias.asname.name if alias.asname is not None else alias.name
                            if isinstance(name, cst.Name):
                                found.add(name.value)
    return found.pop() if len(found) == 1 else None


class _Uses(cst.CSTVisitor):
    """Every ``Name`` node spelling the alias, and which of them are the root of an attribute."""

    def __init__(self, alias: str) -> None:
        self.alias = alias
        self.roots: Set[int] = set()
        self.other: List[cst.Name] = []

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        root: cst.BaseExpression = node
        while isinstance(root, cst.Attribute):
            root = root.value
        if isinstance(root, cst.Name) and root.value == self.alias:
            self.roots.add(id(root))
        node.value.visit(self)  # the attribute's own name is not a use
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)  # a keyword is not a use
        return False

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.alias and id(node) not in self.roots:
            self.other.append(node)


class _Respell(cst.CSTTransformer):
    """``alias.X`` -> ``tf.contrib.rnn.X``; every rebuilt node remembered with its original."""

    def __init__(self, alias: str, tf: str, origin: Dict[int, cst.CSTNode]) -> None:
        self.alias, self.tf, self.origin = alias, tf, origin

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        if isinstance(updated.value, cst.Name) and updated.value.value == self.alias:
            updated = updated.with_changes(value=cst.parse_expression(f"{self.tf}.contrib.rnn"))
        return updated

    def on_leave(self, original_node: cst.CSTNode, updated_node):  # type: ignore[override]
        result = super().on_leave(original_node, updated_node)
        if result is not original_node and isinstance(result, cst.CSTNode):
            self.origin[id(result)] = original_node
        return result


def contrib_rnn_as_tf(module: cst.Module) -> Tuple[cst.Module, Dict[int, cst.CSTNode], Dict[int, str]]:
    """``module`` with ``from tensorflow.contrib import rnn`` read as ``tf.contrib.rnn`` (see the
    module docstring); ``{id(new node): original node}`` to report on; and, when the alias cannot
    be read so, ``{id(import statement): the reason}``. The module itself when nothing changes."""
    origin: Dict[int, cst.CSTNode] = {}
    why: Dict[int, str] = {}
    imports = [(stmt, _rnn_import(stmt)) for stmt in module.body]
    imports = [(stmt, alias) for stmt, alias in imports if alias is not None]
    if not imports:
        return module, origin, why
    tf = _tensorflow_alias(module)
    for stmt, alias in imports:
        if tf is None:
            why[id(stmt)] = ("`from tensorflow.contrib import rnn` without one `import tensorflow as tf` (the rule "
                             "reads `rnn.<name>` as `tf.contrib.rnn.<name>`)")
            return module, origin, why
        if len(imports) > 1:
            why[id(stmt)] = "`tensorflow.contrib.rnn` is imported more than once"
            return module, origin, why
        uses = _Uses(alias)
        for other in module.body:
            if other is not stmt:
                other.visit(uses)
        if uses.other or alias == tf:
            why[id(stmt)] = (f"`{alias}` (from `tensorflow.contrib`) is bound or used other than as `{alias}.<name>`: "
                             "only `from tensorflow.contrib import rnn` read as `tf.contrib.rnn` is followed")
            return module, origin, why
    stmt, alias = imports[0]
    transformer = _Respell(alias, tf, origin)  # type: ignore[arg-type]
    body = [other.visit(transformer) for other in module.body if other is not stmt]
    new = module.with_changes(body=body)
    return new, origin, why
