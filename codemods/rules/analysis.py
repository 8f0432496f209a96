"""Static facts the TF 2 form rules (TFC101-TFC103, TFC201, TFC202) rely on.

Nothing here rewrites code: these helpers answer questions about a parsed module
("which names does this statement read?", "how does this module spell TensorFlow?",
"is this module graph-mode TF1 code?") so that the planner in ``codemods._gradsites``
can decide whether a rewrite is provably equivalent. Every answer errs on the side of
"not provable": an over-approximated read set only makes a rewrite decline.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Iterable, List, Optional, Sequence, Set

import libcst as cst

BUILTIN_NAMES = frozenset(dir(builtins))

# Non-TensorFlow modules whose functions never build TF ops that read variables.
DATA_MODULES = ("numpy", "math", "random", "os", "sys", "pandas", "scipy", "functools", "itertools")

# Canonical TF call prefixes whose results never carry a gradient path from a variable
# computed before the tape: inputs, constants, variable/model *objects* (reading them inside
# the tape is recorded), optimizers, step counters.
TAPE_SAFE_SOURCES = (
    "tf.placeholder",
    "tf.placeholder_with_default",
    "tf.constant",
    "tf.convert_to_tensor",
    "tf.zeros",
    "tf.ones",
    "tf.fill",
    "tf.range",
    "tf.random",
    "tf.random_normal",
    "tf.random_uniform",
    "tf.truncated_normal",
    "tf.data.",
    "tf.Variable",
    "tf.get_variable",
    "tf.keras.",
    "tf.layers.",
    "tf.train.get_or_create_global_step",
    "tf.train.get_global_step",
    "tf.train.create_global_step",
    "tf.initializers",
    "tf.glorot_uniform_initializer",
    "tf.random_normal_initializer",
    "tf.zeros_initializer",
    "tf.ones_initializer",
    "tf.constant_initializer",
    "tf.truncated_normal_initializer",
    "tf.float",
    "tf.int",
    "tf.bool",
    "tf.string",
    "tf.GraphKeys",
    "tf.nn.rnn_cell.",
    "tf.contrib.rnn.",
)


class _NameCollector(cst.CSTVisitor):
    """Every identifier *used* in a subtree (attribute names, keywords and
    parameter names excluded; assignment targets included: an over-approximation)."""

    def __init__(self) -> None:
        self.names: Set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_Param(self, node: cst.Param) -> bool:
        if node.default is not None:
            node.default.visit(self)
        if node.annotation is not None:
            node.annotation.visit(self)
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        for deco in node.decorators:
            deco.visit(self)
        node.params.visit(self)
        node.body.visit(self)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        for deco in node.decorators:
            deco.visit(self)
        for base in node.bases:
            base.visit(self)
        node.body.visit(self)
        return False

    def visit_ImportAlias(self, node: cst.ImportAlias) -> bool:
        return False


def names_read(node: cst.CSTNode) -> Set[str]:
    """Identifiers a node reads (over-approximated: targets count as reads)."""
    collector = _NameCollector()
    node.visit(collector)
    return collector.names


def _target_names(target: cst.BaseExpression, out: Set[str]) -> None:
    if isinstance(target, cst.Name):
        out.add(target.value)
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            _target_names(element.value, out)
    elif isinstance(target, cst.StarredElement):
        _target_names(target.value, out)
    elif isinstance(target, (cst.Attribute, cst.Subscript)):
        # `d["k"] = v` / `obj.x = v` mutate `d` / `obj`: treat it as binding the base name.
        base: cst.BaseExpression = target
        while isinstance(base, (cst.Attribute, cst.Subscript)):
            base = base.value
        _target_names(base, out)


class _BindingCollector(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: Set[str] = set()

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        _target_names(node.target, self.names)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        _target_names(node.target, self.names)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        _target_names(node.target, self.names)

    def visit_For(self, node: cst.For) -> None:
        _target_names(node.target, self.names)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        pass  # comprehension targets are local to the comprehension in Python 3

    def visit_AsName(self, node: cst.AsName) -> None:
        _target_names(node.name, self.names)  # type: ignore[arg-type]

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        _target_names(node.target, self.names)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is not None:
            _target_names(node.asname.name, self.names)  # type: ignore[arg-type]
        else:
            name = node.name
            while isinstance(name, cst.Attribute):
                name = name.value  # type: ignore[assignment]
            if isinstance(name, cst.Name):
                self.names.add(name.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.names.add(node.name.value)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.names.add(node.name.value)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


def names_bound(node: cst.CSTNode) -> Set[str]:
    """Names a statement binds in its own scope (nested def/class bodies excluded)."""
    collector = _BindingCollector()
    node.visit(collector)
    return collector.names


class _TapeUnsafe(cst.CSTVisitor):
    """Finds statements that behave differently (or are illegal) inside a ``with`` block.

    ``return``/``break``/``continue``/``global`` inside ``with tf.GradientTape()`` behave as outside
    (they leave the block; the tape is discarded), so they may move in. A ``yield`` or ``await``
    would suspend with the tape still recording the caller's ops; ``from __future__`` must stay
    first in the module.
    """

    def __init__(self) -> None:
        self.reason: Optional[str] = None

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Yield(self, node: cst.Yield) -> None:
        self.reason = self.reason or "`yield`"

    def visit_Await(self, node: cst.Await) -> None:
        self.reason = self.reason or "`await`"

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.module, cst.Name) and node.module.value == "__future__":
            self.reason = self.reason or "`from __future__ import`"


def tape_unsafe_reason(stmt: cst.CSTNode) -> Optional[str]:
    """Why ``stmt`` cannot be moved inside ``with tf.GradientTape() as tape:`` (None = it can)."""
    visitor = _TapeUnsafe()
    stmt.visit(visitor)
    return visitor.reason


def all_identifiers(module: cst.Module) -> Set[str]:
    """Every identifier spelled anywhere in the module (attributes included): the value of
    every ``Name`` node, read from the module's parent map (``codemods.engine.fastcst.metadata.parent_map``
    walks the nodes' fields instead of running a visitor, which rebuilds every node it passes)."""
    from codemods.engine.fastcst.metadata import parent_map

    return {node.value for node in parent_map(module) if isinstance(node, cst.Name)}


def fresh_name(base: str, taken: Set[str]) -> str:
    """``base`` if unused in the module, else ``base_1``, ``base_2``...; reserves it."""
    name = base
    index = 1
    while name in taken:
        name = f"{base}_{index}"
        index += 1
    taken.add(name)
    return name


@dataclass(frozen=True)
class TfSpelling:
    """How a module spells TensorFlow: ``v2`` is the alias of ``import tensorflow [as X]``,
    ``v1`` the alias of ``import tensorflow.compat.v1 as X`` (None when absent)."""

    v2: Optional[str]
    v1: Optional[str]

    @property
    def needs_import(self) -> bool:
        return self.v2 is None and self.v1 is None

    def v1_name(self, dotted: str) -> str:
        """Spell a ``tf.compat.v1`` symbol (``train.AdamOptimizer``, ``trainable_variables``)."""
        if self.v1 is not None:
            return f"{self.v1}.{dotted}"
        return f"{self.v2 or 'tf'}.compat.v1.{dotted}"

    def v2_name(self, dotted: str) -> str:
        """Spell a symbol present in both namespaces (``GradientTape``, ``clip_by_global_norm``)."""
        if self.v2 is not None:
            return f"{self.v2}.{dotted}"
        if self.v1 is not None:
            return f"{self.v1}.{dotted}"
        return f"tf.{dotted}"


def dotted_name(node: cst.BaseExpression) -> Optional[str]:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


def tf_spelling(module: cst.Module) -> TfSpelling:
    """Find the module-level TensorFlow import aliases (first one of each kind wins)."""
    v2: Optional[str] = None
    v1: Optional[str] = None
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    full = dotted_name(alias.name)
                    local = (
                        alias.asname.name.value  # type: ignore[union-attr]
                        if alias.asname is not None and isinstance(alias.asname.name, cst.Name)
                        else None
                    )
                    if full == "tensorflow" and v2 is None:
                        v2 = local or "tensorflow"
                    elif full == "tensorflow.compat.v1" and local and v1 is None:
                        v1 = local
            elif isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                mod = dotted_name(small.module) if small.module is not None else None
                for alias in small.names:
                    local = (
                        alias.asname.name.value  # type: ignore[union-attr]
                        if alias.asname is not None and isinstance(alias.asname.name, cst.Name)
                        else dotted_name(alias.name)
                    )
                    if mod == "tensorflow.compat" and dotted_name(alias.name) == "v1" and v1 is None:
                        v1 = local
    return TfSpelling(v2=v2, v1=v1)


def is_literal(node: cst.BaseExpression) -> bool:
    """Numbers, strings, True/False/None, and unary minus / tuples / lists of those."""
    if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)):
        return True
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return True
    if isinstance(node, cst.UnaryOperation):
        return is_literal(node.expression)
    if isinstance(node, (cst.Tuple, cst.List)):
        return all(is_literal(e.value) for e in node.elements)
    return False


def call_args(call: cst.Call) -> tuple:
    """``(positional values, {keyword: value})``; None when ``*args``/``**kwargs`` appear."""
    positional: List[cst.BaseExpression] = []
    keywords = {}
    for arg in call.args:
        if arg.star:
            return None, None
        if arg.keyword is None:
            positional.append(arg.value)
        else:
            keywords[arg.keyword.value] = arg.value
    return positional, keywords


class _CommentFinder(cst.CSTVisitor):
    """Stops descending once a ``Comment`` node is seen (``found``)."""

    def __init__(self) -> None:
        super().__init__()
        self.found = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.found or isinstance(node, cst.Comment):
            self.found = True
            return False
        return True


def has_comment(node: cst.CSTNode) -> bool:
    """Whether any comment occurs inside ``node`` (``node`` included): what
    ``libcst.matchers.findall(node, m.Comment())`` finds, without importing the matchers."""
    if not isinstance(node, cst.CSTNode):
        return False
    finder = _CommentFinder()
    node.visit(finder)
    return finder.found


def statements_of(block: Sequence[cst.BaseStatement]) -> Iterable[cst.BaseSmallStatement]:
    """Small statements of the simple statement lines of a block."""
    for stmt in block:
        if isinstance(stmt, cst.SimpleStatementLine):
            yield from stmt.body
