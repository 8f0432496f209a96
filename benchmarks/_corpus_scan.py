"""An independent training-site scanner for ``benchmarks/corpus.py`` (CPython ``ast`` only).

It decides, without the project's codemods, where a file trains a TensorFlow 1 model, so the
corpus report can say whether ``tfclip-migrate`` rewrote, reported or silently missed each site.
It never imports ``codemods`` (or libcst, or TensorFlow): a bug shared with the tool would
otherwise hide the tool's misses.

A *site* is one of:

* a call ``X.minimize(...)``, ``X.compute_gradients(...)`` or ``X.apply_gradients(...)`` in a file
  that imports TensorFlow, unless ``X`` resolves to a non-TensorFlow import
  (``scipy.optimize.minimize``);
* a call of ``tf.gradients`` (any spelling) whose result reaches the gradient argument of an
  ``apply_gradients`` site (a gradient penalty or a saliency map is not a training site);
* a call of, or a reference to, a removed clipping API, resolved through the file's imports and
  module aliases (``slim = tf.contrib.slim``): ``clip_gradients_by_norm``, ``create_train_op``,
  ``clip_gradient_norms(_fn)``, ``optimize_loss``, ``adaptive_clipping_fn``,
  ``add_gradients_summaries``, ``multiply_gradients`` under ``tensorflow.contrib``, and
  ``tf.clip_by_average_norm`` (compat.v1 only in TF 2).

Sites linked by data flow in one scope (``compute_gradients -> clip -> apply_gradients``,
``tf.gradients -> apply_gradients``, ``clip_gradients_by_norm(opt) -> .minimize``) form one
*unit*: the report gives a unit the best status any of its sites got. Each site also carries
*tags* describing its context (loop, ``with`` blocks, receiver and loss shapes...), which the
report groups to rank the shapes the tool misses.

Notebooks are analysed as one program (code cells joined, IPython lines masked); positions are
given as (cell, line in cell), cells counted from 1 over all cells as the CLI does.

About 800 lines, one file on purpose: it is the measuring instrument's specification (what counts
as a site, how sites link), and the visitor, the linker and the notebook joiner share the site
records; read it top to bottom.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Set, Tuple

METHODS = ("minimize", "compute_gradients", "apply_gradients")
CONTRIB_APIS = frozenset({
    "clip_gradients_by_norm", "create_train_op", "clip_gradient_norms", "clip_gradient_norms_fn",
    "optimize_loss", "adaptive_clipping_fn", "add_gradients_summaries", "multiply_gradients",
})
AVERAGE_NORM = "clip_by_average_norm"
# Producers whose result, once it reaches a consumer's gradient / receiver argument, links the two.
_PRODUCERS = frozenset({"compute_gradients", "tf.gradients", "tape.gradient"}) | CONTRIB_APIS
_KERAS_OPTIMIZERS = ("tensorflow.keras.optimizers.", "tensorflow.optimizers.", "keras.optimizers.",
                     "tensorflow.python.keras.optimizers.")
_NON_TF_ROOTS = ("scipy", "numpy", "torch", "sklearn", "jax", "cvxpy", "autograd", "mxnet", "chainer")
_WITH_TAGS = ("name_scope", "variable_scope", "control_dependencies", "device", "Session", "GradientTape",
              "tower", "scope", "arg_scope", "Graph", "as_default")
_TEXT_TOKENS = re.compile(
    r"\.(minimize|compute_gradients|apply_gradients)\s*\(|\b(" + "|".join(sorted(CONTRIB_APIS | {AVERAGE_NORM}))
    + r")\b"
)


@dataclass
class Site:
    """One training site (see the module docstring)."""

    kind: str  # minimize | compute_gradients | apply_gradients | tf.gradients | a contrib API name
    line: int  # 1-based, in the file or (notebooks) in the cell
    col: int  # 1-based
    first: int  # statement span, same numbering as ``line`` (a finding inside it covers the site)
    last: int
    cell: Optional[int] = None
    api: str = ""  # resolved qualified name (contrib) or the receiver's source text (methods)
    removed_api: bool = False  # contrib clipping API or tf.clip_by_average_norm
    contrib: bool = False
    reference: bool = False  # a removed API passed as a value, not called
    unit: int = 0
    scope: Tuple[int, int, int, int] = (0, 0, 0, 0)  # (cell, first line, cell, last line) of the enclosing def
    tags: Tuple[str, ...] = ()
    snippet: str = ""
    counted: bool = True  # False: not a TF1 training site (see ``why_not``)
    why_not: str = ""  # "not-training" (tf.gradients for a penalty), "tf2-form" (tape / Keras optimizer), "helper"


@dataclass
class ScanResult:
    """What the scanner found in one file."""

    parsed: bool  # CPython ast parsed the file (every code cell, for a notebook)
    python2: bool = False  # did not parse, and looks like Python 2
    error: str = ""
    imports_tf: bool = False
    notebook: bool = False
    cells_unparsed: int = 0  # notebook code cells ast could not parse (Python 2, shell...)
    token_hint: bool = False  # the raw text mentions a training-site token (for unparsable files)
    sites: List[Site] = field(default_factory=list)
    # TF 1 graph-mode markers in the code (not in comments or strings): a session (`tf.Session`,
    # `InteractiveSession`, `MonitoredTrainingSession`, `K.get_session()`, any `...Session`) and a
    # placeholder (`placeholder`, `placeholder_with_default`, `sparse_placeholder`). A file with
    # neither runs eagerly as far as this scanner can tell (issue 22's "ends up eager").
    session: bool = False
    placeholder: bool = False

    @property
    def counted_sites(self) -> List[Site]:
        return [s for s in self.sites if s.counted]


# --------------------------------------------------------------------------------------------
# notebooks


_MAGIC = re.compile(r"^\s*[%!]|^\s*[\w.]+\s*=\s*[%!]|^\s*\??[\w.]+\?\??\s*$")
_PYTHON_CELL_MAGICS = ("time", "timeit", "capture", "prun", "debug")


def notebook_cells(data: bytes) -> List[Tuple[int, str]]:
    """(1-based cell number over all cells, source) of every code cell; [] if not a notebook."""
    try:
        nb = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError):
        return []
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):  # nbformat 3 keeps cells under worksheets
        sheets = nb.get("worksheets") if isinstance(nb, dict) else None
        cells = [c for ws in sheets or [] for c in ws.get("cells", [])] if isinstance(sheets, list) else []
    out = []
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        src = cell.get("source", cell.get("input", ""))
        src = "".join(src) if isinstance(src, list) else str(src)
        out.append((number, src))
    return out


def mask_ipython(source: str) -> Optional[str]:
    """The cell with IPython-only lines replaced by ``pass`` (same line count); None for ``%%bash``-style cells."""
    lines = source.split("\n")
    if lines and lines[0].lstrip().startswith("%%"):
        words = lines[0].strip()[2:].split()
        if not words or words[0] not in _PYTHON_CELL_MAGICS:
            return None
        lines[0] = "pass"
    out = []
    continued = False  # a masked `!cmd \` line continues on the next line
    for line in lines:
        if continued or _MAGIC.search(line):
            indent = "" if continued else line[: len(line) - len(line.lstrip())]
            out.append(indent + "pass" if not continued else "")
            continued = line.rstrip().endswith("\\")
        else:
            out.append(line)
    return "\n".join(out)


# --------------------------------------------------------------------------------------------
# parsing and Python 2 detection


def _looks_like_python2(source: str, error: SyntaxError) -> bool:
    message = str(error.msg or "")
    if "Missing parentheses in call to" in message:
        return True
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from lib2to3 import pygram, pytree  # noqa: F401 - Python <= 3.12
            from lib2to3.pgen2 import driver
    except ImportError:  # Python 3.13+: a text heuristic
        return bool(re.search(r"^\s*print\s+[^(=\s]|^\s*exec\s+\"|except\s+\w+\s*,\s*\w+\s*:|\bur\"", source, re.M))
    try:
        drv = driver.Driver(pygram.python_grammar, convert=pytree.convert)
        drv.parse_string(source if source.endswith("\n") else source + "\n")
        return True
    except Exception:
        return False


def parse_python(source: str) -> Tuple[Optional[ast.Module], Optional[SyntaxError]]:
    try:
        return ast.parse(source), None
    except SyntaxError as exc:
        return None, exc
    except (ValueError, RecursionError, MemoryError) as exc:
        return None, SyntaxError(str(exc))


def decode(data: bytes) -> Optional[str]:
    """The text of a Python file (PEP 263 cookie honoured, BOM dropped); None if it cannot be decoded."""
    import io
    import tokenize

    if b"\x00" in data:
        return None
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding).lstrip("\ufeff")
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return None


# --------------------------------------------------------------------------------------------
# the scanner


def _normalise(qual: str) -> str:
    for prefix in ("tensorflow.compat.v1.", "tensorflow.compat.v2."):
        if qual.startswith(prefix):
            return "tensorflow." + qual[len(prefix):]
    if qual in ("tensorflow.compat.v1", "tensorflow.compat.v2"):
        return "tensorflow"
    return qual


def _dotted(node: ast.AST) -> Optional[str]:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


class _Aliases:
    """File-wide map from a local name to the module path it stands for (imports and ``x = tf.contrib.y``)."""

    def __init__(self, tree: ast.Module) -> None:
        self.names: Dict[str, str] = {}
        self.imports_tf = False
        self.via_star = False
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "tensorflow":
                        self.imports_tf = True
                    if alias.asname:
                        self.names[alias.asname] = _normalise(alias.name)
                    else:
                        root = alias.name.split(".")[0]
                        self.names.setdefault(root, root)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                if node.module.split(".")[0] == "tensorflow":
                    self.imports_tf = True
                for alias in node.names:
                    if alias.name != "*":
                        self.names[alias.asname or alias.name] = _normalise(f"{node.module}.{alias.name}")
        # ``from helpers import *`` that brings ``tf`` in (tkipf/gcn's models.py): trust the name
        if "tf" not in self.names and any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)
                                          for n in ast.walk(tree)):
            if any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "tf"
                   for n in ast.walk(tree)):
                self.names["tf"] = "tensorflow"
                self.imports_tf = True
                self.via_star = True
        # module aliases by assignment, e.g. ``slim = tf.contrib.slim`` (two passes: chains)
        for _ in range(2):
            for node in ast.walk(tree):
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    qual = self.resolve(node.value)
                    if qual and qual.startswith("tensorflow.") and "." in qual:
                        self.names.setdefault(node.targets[0].id, qual)

    def resolve(self, node: ast.AST) -> Optional[str]:
        dotted = _dotted(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        base = self.names.get(head)
        if base is None:
            return None
        return _normalise(base + ("." + rest if rest else ""))


def _removed_api(qual: Optional[str]) -> Tuple[bool, bool]:
    """(is a removed clipping API, is under tensorflow.contrib) for a resolved name."""
    if not qual or not qual.startswith("tensorflow."):
        return False, False
    last = qual.rsplit(".", 1)[-1]
    if last in CONTRIB_APIS and ".contrib." in qual:
        return True, True
    if last == AVERAGE_NORM and ".contrib." not in qual:
        return True, False
    return False, False


def _targets(node: ast.AST) -> Set[str]:
    """Names bound by an assignment target (tuples flattened; ``self.x`` kept dotted)."""
    out: Set[str] = set()
    if isinstance(node, (ast.Tuple, ast.List)):
        for elt in node.elts:
            out |= _targets(elt)
    elif isinstance(node, ast.Starred):
        out |= _targets(node.value)
    elif isinstance(node, ast.Name):
        out.add(node.id)
    elif isinstance(node, ast.Attribute):
        dotted = _dotted(node)
        if dotted:
            out.add(dotted)
    elif isinstance(node, ast.Subscript):
        out |= _targets(node.value)
    return out


def _reads(node: Optional[ast.AST]) -> Set[str]:
    """Names and dotted attribute chains an expression reads."""
    out: Set[str] = set()
    if node is None:
        return out
    for sub in ast.walk(node):
        if isinstance(getattr(sub, "ctx", None), (ast.Store, ast.Del)):
            continue
        if isinstance(sub, ast.Name):
            out.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            dotted = _dotted(sub)
            if dotted:
                out.add(dotted)
    return out


def _binds(stmt: ast.stmt) -> Set[str]:
    if isinstance(stmt, ast.Assign):
        out: Set[str] = set()
        for target in stmt.targets:
            out |= _targets(target)
        return out
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        return _targets(stmt.target)
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return _targets(stmt.target)
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):  # grads.append(...), gvs.extend(...)
        func = stmt.value.func
        if isinstance(func, ast.Attribute) and func.attr in ("append", "extend", "insert", "update"):
            return _targets(func.value)
    return set()


def _stmt_reads(stmt: ast.stmt) -> Set[str]:
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return _reads(stmt.iter)
    if isinstance(stmt, (ast.If, ast.While)):
        return _reads(stmt.test)
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        out: Set[str] = set()
        for item in stmt.items:
            out |= _reads(item.context_expr)
        return out
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return set()
    return _reads(stmt)


class _Scanner(ast.NodeVisitor):
    def __init__(self, source: str, tree: ast.Module, aliases: _Aliases, notebook: bool) -> None:
        self.lines = source.split("\n")
        self.tree = tree
        self.aliases = aliases
        self.notebook = notebook
        self.sites: List[Site] = []
        self.nodes: List[ast.Call] = []  # the call (or reference) node of each site
        self.stmts: List[ast.stmt] = []  # its enclosing statement
        self.scopes: List[ast.AST] = []  # its enclosing function (or the module)
        self._stack: List[ast.AST] = []
        self._func_calls: Set[int] = set()  # ids of Attribute/Name nodes that are a Call's func
        self._bindings: Dict[int, Dict[str, List[ast.AST]]] = {}  # scope -> name -> assigned values
        self.tapes: Set[str] = set()  # names bound to a tf.GradientTape
        for node in ast.walk(tree):
            if isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if isinstance(item.optional_vars, ast.Name) and self._is_tape(item.context_expr):
                        self.tapes.add(item.optional_vars.id)
            elif isinstance(node, ast.Assign) and self._is_tape(node.value):
                for target in node.targets:
                    self.tapes |= {t for t in _targets(target) if "." not in t}

    def _is_tape(self, expr: ast.AST) -> bool:
        return isinstance(expr, ast.Call) and (self.aliases.resolve(expr.func) or "").endswith("GradientTape")

    def _bound(self, scope: ast.AST, name: str) -> List[ast.AST]:
        table = self._bindings.get(id(scope))
        if table is None:
            table = defaultdict(list)
            for stmt in _scope_statements(scope):
                if isinstance(stmt, ast.Assign):
                    for target in stmt.targets:
                        for bound in _targets(target):
                            table[bound].append(stmt.value)
            self._bindings[id(scope)] = table
        return table.get(name, [])

    def _origin(self, recv: ast.AST, scope: ast.AST) -> str:
        """Where an optimizer receiver comes from (a tag for the shape tables)."""
        values: List[ast.AST] = []
        if isinstance(recv, ast.Call):
            values = [recv]
        else:
            dotted = _dotted(recv)
            if dotted is None:
                return "origin:other"
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = scope.args
                params = {a.arg for a in args.args + args.kwonlyargs + getattr(args, "posonlyargs", [])}
                if dotted in params:
                    return "origin:param"
                values = self._bound(scope, dotted)
            if not values:
                values = self._bound(self.tree, dotted)
            if not values and dotted.startswith("self."):
                for node in ast.walk(self.tree):
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        values.extend(self._bound(node, dotted))
        if not values:
            return "origin:unknown"
        kinds = set()
        for value in values:
            qual = self.aliases.resolve(value.func) if isinstance(value, ast.Call) else None
            if qual and qual.startswith(_KERAS_OPTIMIZERS):
                kinds.add("keras-optimizer")
            elif qual and qual.startswith("tensorflow.") and qual.endswith("Optimizer"):
                kinds.add("tf1-optimizer")
            elif qual and _removed_api(qual)[0]:
                kinds.add("contrib-wrapper")
            elif isinstance(value, ast.Call):
                kinds.add("other-call")
            else:
                kinds.add("other")
        return "origin:" + "+".join(sorted(kinds))

    # -- walking with context ------------------------------------------------------------
    def generic_visit(self, node: ast.AST) -> None:
        self._stack.append(node)
        if isinstance(node, ast.Call):
            self._func_calls.add(id(node.func))
            self._check_call(node)
        elif isinstance(node, (ast.Attribute, ast.Name)) and isinstance(getattr(node, "ctx", None), ast.Load):
            self._check_reference(node)
        super().generic_visit(node)
        self._stack.pop()

    def _enclosing(self) -> Tuple[ast.stmt, ast.AST]:
        stmt: Optional[ast.stmt] = None
        scope: ast.AST = self.tree
        for node in reversed(self._stack):
            if stmt is None and isinstance(node, ast.stmt):
                stmt = node
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not stmt:
                scope = node
                break
        assert stmt is not None
        return stmt, scope

    def _tags(self, call: Optional[ast.Call], stmt: ast.stmt, scope: ast.AST) -> Tuple[str, ...]:
        tags = []
        funcs = [n for n in self._stack if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        classes = [n for n in self._stack if isinstance(n, ast.ClassDef)]
        tags.append("scope:" + ("method" if funcs and classes else "function" if funcs else "module"))
        if funcs and funcs[-1].name in METHODS:
            tags.append("in-def:" + funcs[-1].name)
        if classes and any(_dotted(b) and _dotted(b).split(".")[-1].endswith("Optimizer") for b in classes[-1].bases):
            tags.append("in-optimizer-subclass")
        below = self._stack[self._stack.index(scope) + 1:] if scope in self._stack else self._stack
        if any(isinstance(n, (ast.For, ast.While, ast.AsyncFor)) for n in below):
            tags.append("in-loop")
        if any(isinstance(n, ast.Lambda) for n in self._stack):
            tags.append("in-lambda")
        if any(isinstance(n, (ast.If, ast.IfExp)) for n in self._stack):
            tags.append("in-if")
        for node in self._stack:
            if isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    expr = item.context_expr
                    callee = expr.func if isinstance(expr, ast.Call) else expr
                    name = (_dotted(callee) or "").split(".")[-1]
                    if name in _WITH_TAGS:
                        tags.append("with:" + name)
        if self.notebook:
            tags.append("notebook")
        if call is not None and isinstance(call.func, ast.Attribute):
            recv = call.func.value
            if isinstance(recv, ast.Call):
                tags.append("receiver:call")
            elif isinstance(recv, ast.Name):
                tags.append("receiver:name")
            elif _dotted(recv) and _dotted(recv).startswith("self."):
                tags.append("receiver:self-attr")
            else:
                tags.append("receiver:other")
            tags.append(self._origin(recv, scope))
            kw = {k.arg for k in call.keywords if k.arg}
            for name in ("var_list", "global_step", "grad_loss", "gate_gradients", "colocate_gradients_with_ops",
                         "aggregation_method"):
                if name in kw:
                    tags.append("kw:" + name)
            if call.args:
                first = call.args[0]
                tags.append("arg0:" + type(first).__name__.lower())
        if not (isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return))):
            tags.append("stmt:" + type(stmt).__name__.lower())
        if isinstance(stmt, ast.Return):
            tags.append("stmt:return")
        return tuple(dict.fromkeys(tags))

    def _add(self, kind: str, node: ast.AST, call: Optional[ast.Call], **kw) -> None:
        stmt, scope = self._enclosing()
        first, last = stmt.lineno, getattr(stmt, "end_lineno", stmt.lineno) or stmt.lineno
        if isinstance(stmt, (ast.With, ast.For, ast.While, ast.If, ast.FunctionDef, ast.ClassDef)):
            last = first  # a site in a compound statement's header: the header's first line only
        snippet = self.lines[node.lineno - 1].strip() if 0 < node.lineno <= len(self.lines) else ""
        if isinstance(scope, ast.Module):
            span = (0, 1, 0, len(self.lines))
        else:
            span = (0, scope.lineno, 0, getattr(scope, "end_lineno", scope.lineno) or scope.lineno)
        site = Site(kind=kind, line=node.lineno, col=node.col_offset + 1, first=first, last=last, scope=span,
                    tags=self._tags(call, stmt, scope), snippet=snippet[:160], **kw)
        self.sites.append(site)
        self.nodes.append(node)
        self.stmts.append(stmt)
        self.scopes.append(scope)

    def _check_call(self, call: ast.Call) -> None:
        qual = self.aliases.resolve(call.func)
        removed, contrib = _removed_api(qual)
        if removed:
            self._add(qual.rsplit(".", 1)[-1], call, call, api=qual, removed_api=True, contrib=contrib)
            return
        if qual == "tensorflow.gradients":
            self._add("tf.gradients", call, call, api=qual)
            return
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "gradient" and isinstance(func.value, ast.Name) \
                and func.value.id in self.tapes:
            self._add("tape.gradient", call, call, api=func.value.id, counted=False, why_not="tf2-form")
            return
        if isinstance(func, ast.Attribute) and func.attr in METHODS and self.aliases.imports_tf:
            recv_qual = self.aliases.resolve(func.value)
            if recv_qual and recv_qual.split(".")[0] in _NON_TF_ROOTS:
                return  # scipy.optimize.minimize and friends
            if func.attr == "minimize" and recv_qual and not recv_qual.startswith("tensorflow"):
                return  # optimize.minimize from a non-TensorFlow module
            recv = ast.get_source_segment("\n".join(self.lines), func.value) or _dotted(func.value) or "?"
            self._add(func.attr, call, call, api=recv[:80])
            if "origin:keras-optimizer" in self.sites[-1].tags:  # a TF 2 optimizer: nothing to migrate
                self.sites[-1].counted = False
                self.sites[-1].why_not = "tf2-form"

    def _check_reference(self, node: ast.AST) -> None:
        if id(node) in self._func_calls:
            return
        parent = self._stack[-1] if self._stack else None
        if isinstance(parent, ast.Attribute):  # only the whole chain
            return
        if isinstance(node, ast.Name) and isinstance(parent, (ast.Import, ast.ImportFrom)):
            return
        qual = self.aliases.resolve(node)
        removed, contrib = _removed_api(qual)
        if removed:
            self._add(qual.rsplit(".", 1)[-1], node, None, api=qual, removed_api=True, contrib=contrib,
                      reference=True)

    # -- data flow between sites -------------------------------------------------------------
    def link(self) -> None:
        """Union sites into units: a producer's result reaching a consumer's gradient / receiver argument."""
        n = len(self.sites)
        parent = list(range(n))

        def find(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        def union(i: int, j: int) -> None:
            parent[find(i)] = find(j)

        spans = [(getattr(nd, "lineno", 0), getattr(nd, "col_offset", 0), getattr(nd, "end_lineno", 0),
                  getattr(nd, "end_col_offset", 0)) for nd in self.nodes]
        for i in range(n):  # a producer nested in another site's call
            if self.sites[i].kind in _PRODUCERS:
                for j in range(n):
                    if i != j and _inside(spans[i], spans[j]):
                        union(i, j)
        if not any(s.kind in _PRODUCERS for s in self.sites):
            self._number_units(find)
            return
        scopes = [self.tree] + [nd for nd in ast.walk(self.tree) if isinstance(nd, (ast.FunctionDef, ast.AsyncFunctionDef))]
        flow = [(scope, [(st, _stmt_reads(st), _binds(st)) for st in _scope_statements(scope)]) for scope in scopes]
        consumer_reads: List[Set[str]] = []
        for j, other in enumerate(self.sites):
            call = self.nodes[j]
            reads: Set[str] = set()
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and other.kind in METHODS:
                reads = _reads(call.func.value)
                if other.kind == "apply_gradients":
                    for arg in list(call.args[:1]) + [k.value for k in call.keywords if k.arg == "grads_and_vars"]:
                        reads |= _reads(arg)
            elif isinstance(call, ast.Call) and other.removed_api:
                reads = _reads(call)
            consumer_reads.append(reads)
        for i, site in enumerate(self.sites):
            if site.kind not in _PRODUCERS:
                continue
            local: Dict[int, Set[str]] = {id(self.scopes[i]): set()}
            glob: Set[str] = set()

            def taint(scope: ast.AST, names: Set[str], stmt: ast.stmt) -> bool:
                grew = False
                bucket = local.setdefault(id(scope), set())
                for name in names:
                    target = glob if name.startswith("self.") else bucket
                    if name not in target:
                        target.add(name)
                        grew = True
                if isinstance(stmt, ast.Return) and isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    for name in (scope.name, "self." + scope.name):
                        if name not in glob:
                            glob.add(name)
                            grew = True
                return grew

            taint(self.scopes[i], _binds(self.stmts[i]), self.stmts[i])
            for _ in range(8):  # flow through clipping, zip, lists, returns, self attributes
                grew = False
                for scope, stmts in flow:
                    bucket = local.get(id(scope), set())
                    for stmt, reads, binds in stmts:
                        if reads & bucket or reads & glob:
                            grew = taint(scope, binds, stmt) or grew
                            bucket = local.get(id(scope), set())
                if not grew:
                    break
            for j in range(n):
                if j != i and consumer_reads[j] & (local.get(id(self.scopes[j]), set()) | glob):
                    union(i, j)
        self._number_units(find)

    def _fed(self, call: ast.AST) -> bool:
        """The gradient argument of an apply_gradients call comes from ``tf.placeholder`` calls."""
        if not isinstance(call, ast.Call) or not call.args and not call.keywords:
            return False
        args = list(call.args[:1]) + [k.value for k in call.keywords if k.arg == "grads_and_vars"]
        if not hasattr(self, "_binders"):
            self._binders: Dict[str, List[ast.stmt]] = defaultdict(list)
            for node in ast.walk(self.tree):
                if isinstance(node, ast.stmt):
                    for name in _binds(node):
                        self._binders[name].append(node)
        names = set().union(*(_reads(a) for a in args))
        seen: Set[str] = set()
        for _ in range(3):
            nxt: Set[str] = set()
            for name in names - seen:
                seen.add(name)
                for stmt in self._binders.get(name, []):
                    for sub in ast.walk(stmt):
                        if isinstance(sub, ast.Call) and self.aliases.resolve(sub.func) == "tensorflow.placeholder":
                            return True
                    nxt |= _stmt_reads(stmt) if not isinstance(stmt, (ast.For, ast.AsyncFor)) else _reads(stmt.iter)
            names = nxt
        return False

    def _number_units(self, find) -> None:
        roots: Dict[int, int] = {}
        for i, site in enumerate(self.sites):
            site.unit = roots.setdefault(find(i), len(roots) + 1)
        # a tf.gradients is a training site only when its unit reaches apply_gradients
        applying = {s.unit for s in self.sites if s.kind == "apply_gradients"}
        for site in self.sites:
            if site.kind == "tf.gradients" and site.unit not in applying:
                site.counted = False
                site.why_not = "not-training"
        # apply_gradients of gradients fed through placeholders (gradient buffers filled by sess.run) with no
        # gradient computation in the unit: nothing for a tape to record, TF1 and TF 2 spell it the same
        producers = {s.unit for s in self.sites if s.kind in _PRODUCERS}
        for i, site in enumerate(self.sites):
            if site.kind == "apply_gradients" and site.unit not in producers and self._fed(self.nodes[i]):
                site.counted = False
                site.why_not = "fed-gradients"
        # apply_gradients fed only by a tf.GradientTape is TF 2 code already
        tape_units = {s.unit for s in self.sites if s.kind == "tape.gradient"}
        tf1_units = {s.unit for s in self.sites if s.kind in ("compute_gradients", "tf.gradients")}
        for site in self.sites:
            if site.kind == "apply_gradients" and site.unit in tape_units - tf1_units:
                site.counted = False
                site.why_not = "tf2-form"


def _inside(a: Tuple[int, int, int, int], b: Tuple[int, int, int, int]) -> bool:
    return (a[0], a[1]) >= (b[0], b[1]) and (a[2], a[3]) <= (b[2], b[3]) and a != b


def _scope_statements(scope: ast.AST) -> Iterator[ast.stmt]:
    """Every statement of a function (or module) body, nested blocks included, nested defs excluded."""
    todo = list(getattr(scope, "body", []))
    while todo:
        stmt = todo.pop(0)
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if isinstance(scope, ast.Module) and isinstance(stmt, ast.ClassDef):
                continue
            continue
        for name in ("body", "orelse", "finalbody", "handlers"):
            for child in getattr(stmt, name, []) or []:
                if isinstance(child, ast.ExceptHandler):
                    todo.extend(child.body)
                elif isinstance(child, ast.stmt):
                    todo.append(child)


_PLACEHOLDERS = frozenset({"placeholder", "placeholder_with_default", "sparse_placeholder"})
_SESSION_GETTERS = frozenset({"get_session", "get_default_session"})


def graph_markers(tree: ast.AST) -> Tuple[bool, bool]:
    """(uses a TF 1 session, uses a placeholder): any name or attribute spelled so, read or called."""
    session = placeholder = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            name = node.attr
        elif isinstance(node, ast.Name):
            name = node.id
        elif isinstance(node, ast.alias):  # `from tensorflow.compat.v1 import Session, placeholder`
            name = node.name.rsplit(".", 1)[-1]
        else:
            continue
        session = session or name.endswith("Session") or name in _SESSION_GETTERS
        placeholder = placeholder or name in _PLACEHOLDERS
        if session and placeholder:
            break
    return session, placeholder


def scan_tree(source: str, tree: ast.Module, notebook: bool = False) -> Tuple[bool, List[Site]]:
    """(imports TensorFlow, sites) of a parsed module."""
    aliases = _Aliases(tree)
    scanner = _Scanner(source, tree, aliases, notebook)
    scanner.visit(tree)
    scanner.link()
    return aliases.imports_tf, scanner.sites


def scan_source(source: str) -> ScanResult:
    """Scan one Python source text."""
    tree, error = parse_python(source)
    hint = bool(_TEXT_TOKENS.search(source))
    if tree is None:
        assert error is not None
        return ScanResult(parsed=False, python2=_looks_like_python2(source, error), token_hint=hint,
                          error=f"{error.msg} (line {error.lineno})")
    imports_tf, sites = scan_tree(source, tree)
    session, placeholder = graph_markers(tree)
    return ScanResult(parsed=True, imports_tf=imports_tf, token_hint=hint, sites=sites, session=session,
                      placeholder=placeholder)


def scan_notebook(data: bytes) -> ScanResult:
    """Scan a notebook's code cells as one program (per cell when the whole does not parse)."""
    cells = notebook_cells(data)
    pieces: List[Tuple[int, str]] = []
    unparsed = 0
    py2 = False
    for number, src in cells:
        masked = mask_ipython(src)
        if masked is None:
            continue
        tree, error = parse_python(masked)
        if tree is None:
            unparsed += 1
            py2 = py2 or (error is not None and _looks_like_python2(masked, error))
            continue
        pieces.append((number, masked))
    hint = bool(_TEXT_TOKENS.search("\n".join(src for _, src in cells)))
    # join the parsable cells; map each joined line back to (cell, line in cell)
    joined: List[str] = []
    where: List[Tuple[int, int]] = []
    for number, src in pieces:
        for k, line in enumerate(src.split("\n"), 1):
            joined.append(line)
            where.append((number, k))
    text = "\n".join(joined)
    tree, _ = parse_python(text)
    result = ScanResult(parsed=unparsed == 0, python2=py2, notebook=True, cells_unparsed=unparsed,
                        token_hint=hint, error="" if unparsed == 0 else f"{unparsed} code cell(s) do not parse")
    if tree is None:  # cells are fine alone but not together (an unclosed block across cells)
        trees = [(number, src, parse_python(src)[0]) for number, src in pieces]
    else:
        trees = [(None, text, tree)]
    unit_base = 0
    for number, src, sub in trees:
        if sub is None:
            continue
        imports_tf, sites = scan_tree(src, sub, notebook=True)
        result.imports_tf = result.imports_tf or imports_tf
        session, placeholder = graph_markers(sub)
        result.session, result.placeholder = result.session or session, result.placeholder or placeholder
        for site in sites:
            if number is None:
                cell, line = where[site.line - 1]
                first_cell, first = where[site.first - 1]
                last_cell, last = where[min(site.last, len(where)) - 1]
                site.cell, site.line = cell, line
                site.first = first if first_cell == cell else 1
                site.last = last if last_cell == cell else 10**6
                c0, l0 = where[max(site.scope[1], 1) - 1]
                c1, l1 = where[min(max(site.scope[3], 1), len(where)) - 1]
                site.scope = (c0, l0, c1, l1)
            else:
                site.cell = number
                site.scope = (number, site.scope[1], number, site.scope[3])
            site.unit += unit_base
        unit_base = max([s.unit for s in sites] + [unit_base])
        result.sites.extend(sites)
    if not result.imports_tf:  # methods are sites only in TensorFlow programs
        result.sites = [s for s in result.sites if s.removed_api or s.kind == "tf.gradients"]
    return result


def scan_file(path: str, data: bytes) -> ScanResult:
    """Scan a ``.py`` file or an ``.ipynb`` notebook from its bytes."""
    if path.endswith(".ipynb"):
        return scan_notebook(data)
    text = decode(data)
    if text is None:
        return ScanResult(parsed=False, error="cannot decode")
    return scan_source(text)
