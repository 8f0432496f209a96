"""What every tfclip codemod shares: diagnostics, fix safety, ``# noqa`` and options.

Each rule is a :class:`TfcCodemod` (a libcst ``VisitorBasedCodemodCommand``). A rule
*reports* every site it recognises, through :meth:`TfcCodemod.report`, and rewrites it
only when :meth:`TfcCodemod.may_fix` says so (fixes enabled, safe or ``--unsafe-fixes``,
no ``# noqa``). Diagnostics are collected in ``context.scratch`` so the engine (and the
CLI) can read positions; under ``python -m libcst.tool codemod`` they also become
libcst warnings.
"""

from __future__ import annotations

import argparse
import re
from contextlib import contextmanager
from dataclasses import replace
from typing import ClassVar, Iterator, List, Optional

import libcst as cst
from libcst.codemod import CodemodContext, VisitorBasedCodemodCommand
from libcst.metadata import MetadataWrapper, PositionProvider

from codemods._core import Diagnostic, FixSafety

__all__ = ["Diagnostic", "FixSafety", "TfcCodemod", "noqa_codes"]

DIAGNOSTICS_KEY = "tfclip.diagnostics"
# The engine (codemods.api) puts one MetadataWrapper here for all rules that see the same
# module, so scope / qualified-name analysis is resolved once per file, not once per rule.
SHARED_WRAPPER_KEY = "tfclip.shared_wrapper"
# ...and one dict for analyses several rules share (valid while the module is unchanged).
SHARED_CACHE_KEY = "tfclip.shared_cache"

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*))?", re.I)


def noqa_codes(line: str) -> Optional[frozenset]:
    """Codes silenced by a ``# noqa`` comment on ``line``: None if no noqa, empty set = all."""
    match = _NOQA.search(line)
    if match is None:
        return None
    codes = match.group("codes")
    if not codes:
        return frozenset()
    return frozenset(c.strip().upper() for c in codes.split(","))


class TfcCodemod(VisitorBasedCodemodCommand):
    """Base class of every rule. Subclasses set ``CODE``, ``NAME`` and ``SUMMARY``;
    the class docstring is the rule's documentation (ruff's headings: What it does /
    Why is this bad? / Example / Use instead / Fix safety)."""

    CODE: ClassVar[str] = ""
    NAME: ClassVar[str] = ""
    SUMMARY: ClassVar[str] = ""
    # Cheap text pre-filter: the rule can only fire if one of these substrings occurs...
    TOKENS: ClassVar[tuple] = ()
    # ...and, for each group here, one of the group's substrings too (every name a rule
    # matches must be spelled somewhere in the file, in an import or an attribute).
    REQUIRES: ClassVar[tuple] = ()
    # Positions are resolved lazily (see :meth:`position`): files without findings skip them.
    METADATA_DEPENDENCIES = ()

    DESCRIPTION: str = "tfclip-compat rule"

    def __init__(
        self,
        context: CodemodContext,
        unsafe_fixes: bool = False,
        add_clip_norm: Optional[float] = None,
        apply_fixes: bool = True,
    ) -> None:
        super().__init__(context)
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

    @classmethod
    def may_apply(cls, source: str) -> bool:
        """The text pre-filter: False means this rule cannot fire on ``source``."""
        return any(token in source for token in cls.TOKENS) and all(
            any(token in source for token in group) for group in cls.REQUIRES
        )

    # -- helpers for rules -------------------------------------------------------------

    def shared_cache(self) -> dict:
        """A dict shared by the rules that see this same module in one engine run (analyses
        computed once, e.g. the gradient-site planner); a private one outside the engine."""
        cache = self.context.scratch.get(SHARED_CACHE_KEY)
        if not isinstance(cache, dict):
            cache = self.context.scratch[SHARED_CACHE_KEY] = {}
        return cache

    def _source_lines(self) -> List[str]:
        module = self.context.module
        if module is None:
            return []
        if self._lines_for != id(module):
            self._lines = module.code.splitlines()
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
        )
        self.context.scratch.setdefault(DIAGNOSTICS_KEY, []).append(diag)
        self.warn(diag.format())
