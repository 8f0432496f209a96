"""What every tfclip codemod shares: diagnostics, fix safety, ``# noqa``, options, and the
contract a rule class is checked against when it is created.

Each rule is a :class:`TfcCodemod` (a libcst codemod command, ``codemods.engine.command``) in a file
``codemods/rules/tfcNNN_<what_it_fixes>.py``; the registry finds it there (``codemods.engine.registry``).
A rule *reports* every site it recognises, through :meth:`TfcCodemod.report`, and
rewrites it only when :meth:`TfcCodemod.may_fix` says so (fixes enabled, safe or
``--unsafe-fixes``, no ``# noqa``). Diagnostics are collected in ``context.scratch`` so
the engine (and the CLI) can read positions; under ``python -m libcst.tool codemod`` they
also become libcst warnings.

A rule class declares ``CODE``, ``NAME``, ``SUMMARY``, ``PHASE`` and ``SITES`` (what the
pre-pass looks for, ``codemods.engine.prepass``), and its docstring is its documentation with
ruff's headings. :func:`check_rule` enforces all of that when the class is created, so a
rule that breaks the contract fails at import with a message saying what to add.
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, ClassVar, Iterator, List, Optional

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from codemods.engine.command import Command
from codemods.engine.core import RULE_MODULE, Diagnostic, FixSafety, Phase
from codemods.engine.prepass import Spec, from_tokens

__all__ = ["Diagnostic", "FixSafety", "Phase", "RuleDefinitionError", "TfcCodemod", "check_rule", "noqa_codes"]

DIAGNOSTICS_KEY = "tfclip.diagnostics"
# The engine (codemods.api) puts one MetadataWrapper here for all rules that see the same
# module, so scope / qualified-name analysis is resolved once per file, not once per rule.
SHARED_WRAPPER_KEY = "tfclip.shared_wrapper"
# ...and one dict for analyses several rules share (valid while the module is unchanged).
SHARED_CACHE_KEY = "tfclip.shared_cache"
# ...and the rule set the engine runs (all of it, whatever --select says): the TF 2 planner
# asks every site rule of that set, so a site is claimed by the same rule under any selection.
ENGINE_RULES_KEY = "tfclip.rules"
# ...and ``(module, its code)`` for the module the rule is given, so a rule needs no codegen
# of the whole module to read its text (see :meth:`TfcCodemod.module_code`).
SOURCE_KEY = "tfclip.source"

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*))?", re.I)

# The rule documentation headings (ruff's), in this order.
DOC_HEADINGS = ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety")
_CODE = re.compile(r"^TFC\d{3}$")
_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


def noqa_codes(line: str) -> Optional[frozenset]:
    """Codes silenced by a ``# noqa`` comment on ``line``: None if no noqa, empty set = all."""
    match = _NOQA.search(line)
    if match is None:
        return None
    codes = match.group("codes")
    if not codes:
        return frozenset()
    return frozenset(c.strip().upper() for c in codes.split(","))


class RuleDefinitionError(TypeError):
    """A rule class does not follow the rule contract (raised when the class is created)."""


def _is_rule_module(module: str) -> Optional[str]:
    """The ``NNN`` of a ``tfcNNN_<name>`` module, else None."""
    match = RULE_MODULE.match(module.rsplit(".", 1)[-1])
    return match.group(1) if match else None


def check_rule(cls: type, *, codemod: bool = True) -> None:
    """Raise :class:`RuleDefinitionError` unless ``cls`` is a complete rule: ``CODE``
    (``TFC`` + 3 digits, matching its file's number), ``NAME`` (kebab-case), ``SUMMARY``,
    a docstring with ruff's headings in order, and for a codemod a ``PHASE`` and ``SITES``."""
    where = f"{cls.__module__}.{cls.__qualname__}"

    def fail(problem: str, remedy: str) -> None:
        raise RuleDefinitionError(f"rule {where}: {problem}; {remedy} (see codemods/engine/base.py, check_rule)")

    code = getattr(cls, "CODE", "")
    if not isinstance(code, str) or not _CODE.match(code):
        fail(f"CODE is {code!r}", "set CODE = \"TFCnnn\" (TFC + three digits, never reused)")
    number = _is_rule_module(cls.__module__)
    if number is not None and code != f"TFC{number}":
        fail(f"CODE {code!r} does not match its file {cls.__module__}", f"name the file tfc{code[3:]}_<what>.py")
    name = getattr(cls, "NAME", "")
    if not isinstance(name, str) or not _NAME.match(name):
        fail(f"NAME is {name!r}", "set NAME to a kebab-case name, e.g. \"contrib-optimize-loss\"")
    summary = getattr(cls, "SUMMARY", "")
    if not isinstance(summary, str) or not summary.strip():
        fail("SUMMARY is empty", "set SUMMARY to the one-line description `tfclip-migrate rules` lists")
    doc = inspect.cleandoc(cls.__doc__ or "")
    at = 0
    for heading in DOC_HEADINGS:
        found = re.search(rf"^{re.escape(heading)}\s*$", doc[at:], re.M)
        if found is None:
            fail(f"its docstring lacks the heading {heading!r} (or has it out of order)",
                 "write the docstring as the rule's documentation with ruff's headings: "
                 + " / ".join(h[3:] for h in DOC_HEADINGS))
        at += found.end()
    if not codemod:
        return
    if not isinstance(getattr(cls, "PHASE", None), Phase):
        fail(f"PHASE is {getattr(cls, 'PHASE', None)!r}",
             "set PHASE to a codemods.engine.core.Phase (TF2_FORM, REPORT or COMPAT): it orders the rules")
    sites = cls.sites()  # type: ignore[attr-defined]
    if not isinstance(sites, Spec):
        fail(f"SITES is {sites!r}", "set SITES to a codemods.engine.prepass spec, e.g. method_calls(\"minimize\")")
    description = getattr(cls, "DESCRIPTION", "")
    if not isinstance(description, str) or not description.strip():
        fail("DESCRIPTION is empty", "leave DESCRIPTION out (it defaults to SUMMARY) or set it")


class TfcCodemod(Command):
    """Base class of every rule. Subclasses set ``CODE``, ``NAME``, ``SUMMARY``, ``PHASE``
    and ``SITES``; the class docstring is the rule's documentation (ruff's headings: What
    it does / Why is this bad? / Example / Use instead / Fix safety). Checked when the
    class is created (:func:`check_rule`) for every class that sets its own ``CODE`` or
    lives in a ``tfcNNN_*`` module; base classes shared by rules set neither."""

    CODE: ClassVar[str] = ""
    NAME: ClassVar[str] = ""
    SUMMARY: ClassVar[str] = ""
    PHASE: ClassVar[Optional[Phase]] = None
    # What the pre-pass looks for (codemods.engine.prepass): a necessary condition for this rule to
    # report or rewrite anything. A file for which it does not hold never reaches the rule.
    SITES: ClassVar[Optional[Spec]] = None
    # An opt-in rule runs only when ``--select`` names it (its code or a prefix of it).
    OPT_IN: ClassVar[bool] = False
    # Legacy text pre-filter, used only when SITES is not set: one of TOKENS must occur, and
    # one of each group of REQUIRES (neither set: the rule runs on every file).
    TOKENS: ClassVar[tuple] = ()
    REQUIRES: ClassVar[tuple] = ()
    # Positions are resolved lazily (see :meth:`position`): files without findings skip them.
    METADATA_DEPENDENCIES = ()

    DESCRIPTION: str = "tfclip-compat rule"

    def __init_subclass__(cls, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init_subclass__(**kwargs)
        if "CODE" in cls.__dict__ or _is_rule_module(cls.__module__) is not None:
            if "DESCRIPTION" not in cls.__dict__ and isinstance(getattr(cls, "SUMMARY", None), str):
                cls.DESCRIPTION = cls.SUMMARY  # what `python -m libcst.tool codemod` shows
            check_rule(cls)

    @classmethod
    def sites(cls) -> Spec:
        """The pre-pass spec: ``SITES``, or the legacy ``TOKENS``/``REQUIRES`` as text."""
        if cls.SITES is not None:
            return cls.SITES
        return from_tokens(tuple(cls.TOKENS), tuple(tuple(g) for g in cls.REQUIRES))

    def __init__(
        self,
        context: Any,
        unsafe_fixes: bool = False,
        add_clip_norm: Optional[float] = None,
        apply_fixes: bool = True,
    ) -> None:
        super().__init__(context)  # a codemods.engine.command.RuleContext or libcst's CodemodContext
        self.unsafe_fixes = unsafe_fixes
        self.add_clip_norm = add_clip_norm
        self.apply_fixes = apply_fixes
        self._lines_for: Optional[int] = None
        self._lines: List[str] = []

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument("--unsafe-fixes", action="store_true", dest="unsafe_fixes")
        arg_parser.add_argument("--add-clip-norm", type=float, default=None, dest="add_clip_norm")

    @contextmanager
    def _handle_metadata_reference(self, module: cst.Module) -> Iterator[cst.Module]:
        # Reuse the engine's wrapper when it wraps this very module (nothing rewrote it
        # since): its resolved metadata is cached. Otherwise libcst's default (a fresh copy).
        shared = self.context.scratch.get(SHARED_WRAPPER_KEY)
        if not isinstance(shared, MetadataWrapper) or shared.module is not module:
            with super()._handle_metadata_reference(module) as tree:
                yield tree
            return
        old = self.context.wrapper
        with self.resolve(shared):
            self.context = replace(self.context, wrapper=shared)
            try:
                yield shared.module
            finally:
                self.context = replace(self.context, wrapper=old)

    def position(self, node: cst.CSTNode):
        """The node's ``CodeRange``. Resolved on first use only, and cached on the wrapper,
        so a file without findings never pays for the position pass."""
        if PositionProvider in self.metadata:
            return self.get_metadata(PositionProvider, node)
        wrapper = self.context.wrapper
        if wrapper is None:
            raise RuntimeError("position() is only available while the rule transforms a module")
        return wrapper.resolve(PositionProvider)[node]

    def locatable(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` is part of the module being transformed (has a position to report at);
        a node a rule built itself has none."""
        if PositionProvider in self.metadata:
            return node in self.metadata[PositionProvider]
        wrapper = self.context.wrapper
        return wrapper is not None and node in wrapper.resolve(PositionProvider)

    @classmethod
    def may_apply(cls, source: str) -> bool:
        """The text stage of the pre-pass: False means this rule cannot fire on ``source``."""
        return cls.sites().on_text(source)

    # -- helpers for rules -------------------------------------------------------------

    def shared_cache(self) -> dict:
        """A dict shared by the rules that see this same module in one engine run (analyses
        computed once, e.g. the gradient-site planner); a private one outside the engine."""
        cache = self.context.scratch.get(SHARED_CACHE_KEY)
        if not isinstance(cache, dict):
            cache = self.context.scratch[SHARED_CACHE_KEY] = {}
        return cache

    def module_code(self, module: cst.Module) -> str:
        """``module.code``, without regenerating it when ``module`` is the tree the engine
        gave this rule (the engine knows its text)."""
        known = self.context.scratch.get(SOURCE_KEY)
        if isinstance(known, tuple) and known[0] is module:
            return known[1]
        return module.code

    def _source_lines(self) -> List[str]:
        module = self.context.module
        if module is None:
            return []
        if self._lines_for != id(module):
            self._lines = self.module_code(module).splitlines()
            self._lines_for = id(module)
        return self._lines

    def suppressed(self, node: cst.CSTNode, code: Optional[str] = None) -> bool:
        """True when a ``# noqa`` (bare, or naming ``code``) is on the node's first or last line."""
        code = (code or self.CODE).upper()
        pos = self.position(node)
        lines = self._source_lines()
        for lineno in {pos.start.line, pos.end.line}:
            if 1 <= lineno <= len(lines):
                codes = noqa_codes(lines[lineno - 1])
                if codes is not None and (not codes or code in codes):
                    return True
        return False

    def may_fix(self, node: cst.CSTNode, safety: FixSafety, code: Optional[str] = None) -> bool:
        """Whether to rewrite ``node`` now: fixes on, allowed safety, not suppressed."""
        if not self.apply_fixes or safety is FixSafety.NONE:
            return False
        if safety is FixSafety.UNSAFE and not self.unsafe_fixes:
            return False
        return not self.suppressed(node, code)

    def report(
        self,
        node: cst.CSTNode,
        message: str,
        *,
        fix: FixSafety = FixSafety.NONE,
        applied: bool = False,
        code: Optional[str] = None,
    ) -> None:
        """Record a finding at ``node`` (skipped when a ``# noqa`` silences it)."""
        code = code or self.CODE
        if self.suppressed(node, code):
            return
        pos = self.position(node)
        diag = Diagnostic(
            path=self.context.filename or "-",
            line=pos.start.line,
            col=pos.start.column + 1,
            code=code,
            message=message,
            fix=fix,
            applied=applied,
            end_line=pos.end.line,
            end_col=pos.end.column + 1,
        )
        self.context.scratch.setdefault(DIAGNOSTICS_KEY, []).append(diag)
        self.warn(diag.format())


def _register_with_libcst() -> None:
    """Make :class:`TfcCodemod` a virtual libcst ``CodemodCommand`` (``issubclass`` holds, so
    ``python -m libcst.tool list`` lists the rules). Done only when ``libcst.codemod`` is
    already imported (``libcst.tool`` imports it before the rules): importing it here would
    cost what ``codemods.engine.command`` saves. Not ``VisitorBasedCodemodCommand``: that would
    make every rule a virtual ``MatcherDecoratableTransformer``, which only matcher-decorated
    rules are (``codemods.engine.command``)."""
    codemod = sys.modules.get("libcst.codemod")
    if codemod is not None and hasattr(codemod, "CodemodCommand"):
        codemod.CodemodCommand.register(TfcCodemod)


_register_with_libcst()
