"""Notebooks with code cells that do not parse (exercise blanks such as ``bucketized_latitude = ``):
the other cells are analysed as one program, and only the *drop-in* fixes are applied to it.

A drop-in fix is one of the compat rules (``Phase.COMPAT``: TFC001-TFC004). It replaces the
callee of a removed ``tf.contrib...`` / ``tf.clip_by_average_norm`` call by its
``tfclip_compat`` twin, adds ``import tfclip_compat`` and drops a contrib import or module alias
that nothing reads any more; the arguments are untouched. Every other fix (the TF 2 tape form of
TFC101-TFC103, TFC104's Keras swap; any rule of an earlier phase) is proven over *every*
statement of the program, so from a partial program it is reported, never applied
(:data:`WHOLE_PROGRAM_NOTE`).

Why a drop-in fix is sound although some cells are unknown (:func:`gate` checks each premise
over the tokens of every cell that does not parse, and withholds the fixes when one fails):

1. The rule proved, over the cells that parse, that the callee names the removed helper: its
   root name (``tf``, a ``slim``/``est`` alias, a ``from ... import`` name) is bound to the TF
   module (or the helper), and each alias statement it follows (``est = tf.contrib.estimator``)
   reads a name bound so too. A cell that does not parse can only change that by *binding* one
   of those names -- ``tf = ...``, ``import x as tf``, ``for tf in``, ``def tf``, ``global tf``,
   ``del tf``, ``(tf := ...)``, ``lambda tf:`` -- and every such form spells the name as a NAME
   token that is *not* directly followed by ``.``. So a bad cell whose tokens contain such a
   name withholds the fix. An access ``tf.x`` (the name followed by ``.``) binds nothing; it
   could still *mutate* the path the call goes through (``tf.contrib.estimator = mod``), so an
   access that follows the callee's own path (``tf.contrib...``) must end in a call of the
   helper itself or turn to another, non-dunder attribute (``tf.contrib.layers``); anything
   else withholds the fix.
2. The shim call reads ``tfclip_compat`` and its function: the same check applies to the name
   ``tfclip_compat`` with the path ``.<shim name>``.
3. Names can be rebound without being spelled: ``exec``, ``eval``, ``globals``, ``locals``,
   ``vars``, ``setattr``, ``delattr``, ``__dict__``, ``__builtins__``/``builtins``,
   ``sys.modules``, ``get_ipython``, a star import, or an IPython line magic such as ``%run``.
   Any of these tokens in a bad cell withholds the fixes (:data:`DYNAMIC_NAMES`; only a few
   magics that cannot bind a name are let through, :data:`HARMLESS_MAGICS`).
4. The fixes may remove a binding (a contrib import or alias whose last reader was rewritten).
   A bad cell that spells the removed name at all (even ``name.attr``) would lose it, so that
   withholds the fixes too.
5. A cell that :mod:`tokenize` cannot split into tokens (an unterminated string or bracket, an
   inconsistent dedent) cannot be checked: no fix in that notebook.

Bad cells themselves stay byte-identical; a contrib call *inside* one is not rewritten.
The fixes of one notebook are applied together or not at all (an import removal is shared by
all the sites that used it), so one withheld fix withholds every other one, each message naming
the cell and the name that stopped it.

Imports neither libcst nor TensorFlow (the engine is reached through the callables passed in).
"""

from __future__ import annotations

import ast
import dataclasses
import io
import re
import tokenize
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from codemods.engine.core import FixSafety, Phase

if TYPE_CHECKING:  # pragma: no cover
    from codemods.engine.core import Diagnostic
    from codemods.notebooks.cells import MaskedCell

__all__ = ["BadCell", "DYNAMIC_NAMES", "HARMLESS_MAGICS", "apply_dropins", "dropin_rules", "gate", "process_partial", "scan_bad_cell"]

# Tokens through which a cell can bind a name without spelling it.
DYNAMIC_NAMES = frozenset({
    "__builtins__", "__dict__", "builtins", "delattr", "eval", "exec", "get_ipython", "globals", "locals",
    "modules", "setattr", "vars",
})
# IPython line magics that cannot bind a Python name (any other one in a bad cell withholds the fixes).
HARMLESS_MAGICS = frozenset({"conda", "matplotlib", "pip", "tensorflow_version"})
_MAGIC_NAME = re.compile(r"^[ \t]*(?:[A-Za-z_][\w, \t]*=[ \t]*)?%+([A-Za-z_]\w*)")
_SHIM = re.compile(r"use `tfclip_compat\.([A-Za-z_]\w*)`")
_SKIP = frozenset({tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT})

Chain = Tuple[str, Tuple[str, ...]]  # a name and the attribute path the fix reads through it


@dataclass(frozen=True)
class BadCell:
    """A code cell that does not parse, as far as :func:`gate` needs it."""

    number: int
    tokens: Optional[Tuple[tokenize.TokenInfo, ...]]  # None: the cell cannot be tokenized
    dynamic: Optional[str] = None  # a token through which the cell may bind any name


def scan_bad_cell(number: int, masked: "MaskedCell") -> BadCell:
    """Tokenize a bad cell (IPython lines masked) and note any dynamic-binding token."""
    for original in masked.originals.values():
        magic = _MAGIC_NAME.match(original)
        if magic and magic.group(1) not in HARMLESS_MAGICS:
            return BadCell(number, _tokens(masked.source), f"the IPython magic `%{magic.group(1)}`")
    tokens = _tokens(masked.source)
    dynamic = None
    for i, tok in enumerate(tokens or ()):
        if tok.type == tokenize.NAME and tok.string in DYNAMIC_NAMES:
            dynamic = f"`{tok.string}`"
        elif tok.string == "*" and i and tokens[i - 1].string == "import":  # type: ignore[index]
            dynamic = "`import *`"
        if dynamic:
            break
    return BadCell(number, tokens, dynamic)


def _tokens(source: str) -> Optional[Tuple[tokenize.TokenInfo, ...]]:
    try:
        tokens = tuple(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return tuple(tok for tok in tokens if tok.type not in _SKIP)


def _unsafe_use(tokens: Sequence[tokenize.TokenInfo], chain: Chain) -> bool:
    """Whether ``tokens`` could bind ``chain``'s name or mutate its path (premises 1-2)."""
    name, path = chain
    n = len(tokens)
    for i, tok in enumerate(tokens):
        if tok.type != tokenize.NAME or tok.string != name:
            continue
        if i and tokens[i - 1].string == ".":
            continue  # `x.tf`: an attribute called `tf`, not the name
        if i + 1 >= n or tokens[i + 1].string != ".":
            # not followed by `.`: may bind it -- except a call of the helper itself
            if not (not path and i + 1 < n and tokens[i + 1].string == "("):
                return True
            continue
        j, matched = i, 0
        while j + 2 < n and tokens[j + 1].string == "." and tokens[j + 2].type == tokenize.NAME:
            attr = tokens[j + 2].string
            if matched < len(path) and attr == path[matched]:
                matched += 1
                j += 2
                continue
            if attr.startswith("__"):
                return True  # `tf.__dict__[...]`, `tf.contrib.__setattr__`
            break  # turns to another attribute: `tf.compat`, `tf.contrib.layers`
        else:
            # the chain ended on the callee's path: only `helper(...)` itself is a plain read
            if j + 1 < n and tokens[j + 1].string == ".":
                continue  # `tf.` then something that is not a name: binds nothing
            if matched == len(path) and j + 1 < n and tokens[j + 1].string == "(":
                continue
            return True
    return False


def _chain(node: ast.AST) -> Optional[Chain]:
    path: List[str] = []
    while isinstance(node, ast.Attribute):
        path.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return node.id, tuple(reversed(path))


def _site_chains(tree: ast.Module, lines: List[str], line: int, col: int) -> Optional[List[Chain]]:
    """The names (with their paths) a drop-in fix at ``line:col`` (1-based, characters) reads:
    the callee's root and, through each alias statement ``a = b.c``, the names it reads."""
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    offset = len(text[: col - 1].encode("utf-8"))
    best: Optional[ast.AST] = None
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) == line and getattr(node, "col_offset", None) == offset:
            if isinstance(node, ast.Call):
                best = node.func
                break
            if isinstance(node, (ast.Attribute, ast.Name)) and (best is None or _depth(node) > _depth(best)):
                best = node
    found = _chain(best) if best is not None else None
    if found is None:
        return None
    chains, pending = [found], [found]
    while pending:
        name, path = pending.pop()
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and node.targets[0].id == name:
                value = _chain(node.value)
                if value is not None:
                    followed = (value[0], value[1] + path)
                    if followed not in chains:
                        chains.append(followed)
                        pending.append(followed)
    return chains


def _depth(node: ast.AST) -> int:
    depth = 0
    while isinstance(node, ast.Attribute):
        depth, node = depth + 1, node.value
    return depth


def _bindings(tree: ast.Module) -> Counter:
    """How many times each name is bound (imports, assignments, ``del``, ``def``/``class``)."""
    counts: Counter = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            counts.update(a.asname or a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            counts.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            counts[node.id] += 1
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            counts[node.name] += 1
    return counts


def _mentions(tokens: Sequence[tokenize.TokenInfo], name: str) -> bool:
    return any(tok.type == tokenize.NAME and tok.string == name
               and not (i and tokens[i - 1].string == ".") for i, tok in enumerate(tokens))


def gate(source: str, new_source: str, bad: Sequence[BadCell], applied: Iterable["Diagnostic"]) -> Dict[Any, str]:
    """Why the applied drop-in fixes (``applied``: their findings, positions in ``source``) may not
    be written, given the cells that do not parse; empty when they may. Keys: a finding's
    ``(line, col, code)``, or None for a reason that concerns every fix (premises 3-5 of the
    module docstring)."""
    reasons: Dict[Any, str] = {}
    for cell in bad:
        if cell.tokens is None:
            reasons[None] = f"cell {cell.number} does not parse and cannot even be tokenized, so what it binds is unknown"
            return reasons
        if cell.dynamic is not None:
            reasons[None] = f"cell {cell.number} (which does not parse) uses {cell.dynamic}, which can rebind any name"
            return reasons
    try:
        tree, new_tree = ast.parse(source), ast.parse(new_source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        reasons[None] = "the program cannot be checked against the cells that do not parse"
        return reasons
    lines = source.splitlines()
    for diag in applied:
        chains = _site_chains(tree, lines, diag.line, diag.col)
        if chains is None:
            reasons[(diag.line, diag.col, diag.code)] = "the callee's names could not be checked against the cells that do not parse"
            continue
        shim = _SHIM.search(diag.message)
        chains.append(("tfclip_compat", (shim.group(1),) if shim else ()))
        for cell in bad:
            hit = next((name for name, path in chains if _unsafe_use(cell.tokens or (), (name, path))), None)
            if hit is not None:
                reasons[(diag.line, diag.col, diag.code)] = (
                    f"cell {cell.number} (which does not parse) could rebind `{hit}`, which this fix reads")
                break
    before, after = _bindings(tree), _bindings(new_tree)
    for name in sorted(before):
        if after[name] < before[name]:
            cell = next((c for c in bad if _mentions(c.tokens or (), name)), None)
            if cell is not None:
                reasons[None] = (f"the fixes remove a binding of `{name}`, which cell {cell.number} "
                                 "(which does not parse) uses")
    return reasons


def dropin_rules(rules: Sequence[type]) -> Tuple[type, ...]:
    """The rules whose fixes are drop-ins (the compat phase)."""
    return tuple(rule for rule in rules if getattr(rule, "PHASE", None) is Phase.COMPAT)


def _cells_text(bad: Sequence[BadCell]) -> Tuple[str, str]:
    numbers = [str(c.number) for c in bad]
    if len(numbers) == 1:
        return f"cell {numbers[0]}", "it parses"
    return "cells " + ", ".join(numbers[:-1]) + " and " + numbers[-1], "they parse"


WHOLE_PROGRAM_NOTE = (
    "; not applied: {cells} of this notebook {do} not parse, so only the drop-in `tfclip_compat` fixes "
    "(TFC001-TFC004) are applied and no rewrite that depends on the whole program (such as the TF 2 form) "
    "is attempted; `fix` applies it once {parse}"
)


def apply_dropins(
    checked: Any,
    bad: Sequence[BadCell],
    rules: Sequence[type],
    options: Any,
    run: Callable[[Sequence[type], bool], Any],
    write_back: Callable[[Any], Tuple[Optional[bytes], Optional[str]]],
) -> Tuple[Optional[bytes], List["Diagnostic"]]:
    """The notebook's new bytes (``fix``; None for ``check`` or when nothing may be written) and
    its findings (program positions), given ``checked``: every rule run without fixes over the
    cells that parse. ``run(rules, unsafe)`` runs ``rules`` with fixes on; ``write_back(result)``
    is the notebook's bytes for it, or why they cannot be written."""
    from codemods.engine.core import SourceError
    from codemods.rules.tfc900_unparsable_file import UnparsableFile

    UNPARSABLE_CODE = UnparsableFile.CODE
    cells, parse = _cells_text(bad)
    note = WHOLE_PROGRAM_NOTE.format(cells=cells, do="does" if len(bad) == 1 else "do", parse=parse)
    dropins = dropin_rules(rules)
    codes = {rule.CODE for rule in dropins}
    found: List["Diagnostic"] = []
    for diag in checked.diagnostics:
        if diag.code in codes:
            continue
        if diag.fix is not FixSafety.NONE:
            diag = dataclasses.replace(diag, fix=FixSafety.NONE, message=diag.message + note)
        found.append(diag)
    if not dropins:
        return None, found

    def attempt(unsafe: bool) -> Tuple[Any, Optional[bytes], Dict[Any, str]]:
        try:
            result = run(dropins, unsafe)
        except SourceError as exc:
            return checked, None, {None: exc.reason}
        applied = [d for d in result.diagnostics if d.applied and d.code in codes]
        if not applied or not result.changed:
            return result, None, {}
        reasons = gate(checked.code, result.code, bad, applied)
        if reasons:
            return result, None, reasons
        new, refusal = write_back(result)
        return result, new, ({None: refusal} if refusal is not None else {})

    result, new, reasons = attempt(options.unsafe_fixes)
    unsafe_reasons: Dict[Any, str] = {}
    if not options.unsafe_fixes and any(d.fix is FixSafety.UNSAFE and d.code in codes for d in result.diagnostics):
        unsafe_reasons = attempt(True)[2]
    for diag in result.diagnostics:
        if diag.code not in codes:
            if diag.code == UNPARSABLE_CODE and diag not in found:
                found.append(diag)  # "libcst cannot reproduce this line byte for byte"
            continue
        why = reasons or (unsafe_reasons if diag.fix is FixSafety.UNSAFE and not diag.applied else {})
        if why and diag.fix is not FixSafety.NONE:
            key = (diag.line, diag.col, diag.code)
            reason = why.get(key) or why.get(None) or (
                "the drop-in fixes of a notebook with cells that do not parse are applied all or none, and "
                "another one is withheld: " + next(iter(why.values())))
            diag = dataclasses.replace(diag, fix=FixSafety.NONE, applied=False,
                                       message=f"{diag.message}; fix withheld: {reason} (manual edit required, "
                                               "or make the cell parse)")
        elif not options.apply_fixes:
            diag = dataclasses.replace(diag, applied=False)  # `check`: advertised, since `fix` writes it
        found.append(diag)
    found.sort(key=lambda d: (d.line, d.col, d.code))
    return (new if options.apply_fixes and not reasons else None), found


def process_partial(settings: Any, report: Any, nb: Any, program: Any, bad: Sequence[BadCell], checked: Any,
                    write_back: Callable[[Any], Tuple[Optional[bytes], Optional[str]]]) -> Optional[bytes]:
    """``codemods.cli.process`` for a notebook with cells that do not parse: adds the findings of the
    other cells (as cell + line) to ``report`` and returns the new bytes, if ``fix`` writes any."""
    from codemods.cli.process import Finding
    from codemods.api import default_rules, migrate_source

    options = settings.options

    def run(rules: Sequence[type], unsafe: bool) -> Any:
        return migrate_source(program.source, dataclasses.replace(options, apply_fixes=True, unsafe_fixes=unsafe),
                              path=report.display, rules=rules)

    rules = settings.rules if settings.rules is not None else default_rules()
    new, diagnostics = apply_dropins(checked, bad, rules, options, run, write_back)
    for diag in diagnostics:
        cell, line = program.locate(diag.line)
        report.findings.append(Finding(dataclasses.replace(diag, line=line), cell))
    report.findings.sort(key=lambda f: (f.cell or 0, f.diagnostic.line, f.diagnostic.col, f.code))
    return new
