"""The engine: run the registered rules over one source text (or file bytes).

This is the one entry point the CLI, the fixture tests and the benchmarks use::

    result = migrate_source(code, Options(unsafe_fixes=False), path="train.py")
    result.code          # rewritten source (identical object content when nothing changed)
    result.diagnostics   # list[Diagnostic], applied fixes flagged ``applied=True``

Never imports TensorFlow.
"""

from __future__ import annotations

import ast
import codecs
import io
import tokenize
from dataclasses import dataclass, field
from typing import FrozenSet, List, Optional, Tuple

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.metadata import MetadataWrapper

from codemods._base import DIAGNOSTICS_KEY, SHARED_CACHE_KEY, SHARED_WRAPPER_KEY, Diagnostic
from codemods._registry import RULES


class SourceError(Exception):
    """The source cannot be handled (syntax error, undecodable bytes, ...).

    ``reason`` is a one-line human explanation; the file must be left untouched.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Options:
    select: Optional[FrozenSet[str]] = None  # None = all rules
    ignore: FrozenSet[str] = frozenset()
    unsafe_fixes: bool = False
    add_clip_norm: Optional[float] = None
    apply_fixes: bool = True  # False = check only: report, rewrite nothing


@dataclass
class Result:
    code: str
    diagnostics: List[Diagnostic] = field(default_factory=list)
    changed: bool = False


def _enabled(code: str, options: Options) -> bool:
    def matches(codes: FrozenSet[str]) -> bool:
        # "TFC" selects all, "TFC00" selects TFC001..TFC009, as in ruff.
        return any(code.startswith(prefix) for prefix in codes)

    if options.select is not None and not matches(options.select):
        return False
    return not matches(options.ignore)


def active_rules(options: Options):
    return [rule for rule in RULES if _enabled(rule.CODE, options)]


def may_contain_targets(source: str, options: Options = Options()) -> bool:
    """Cheap text pre-filter: False means no rule can fire, so parsing can be skipped."""
    return any(rule.may_apply(source) for rule in active_rules(options))


def _identifier_text(source: str) -> Optional[str]:
    """Every identifier of the module (names, attributes, imports, keywords), one per line,
    from CPython's fast ``ast``; None when ``ast`` cannot parse it (libcst may still)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.alias):
            names.add(node.name)
            if node.asname:
                names.add(node.asname)
        elif isinstance(node, ast.keyword) and node.arg:
            names.add(node.arg)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    # "name(" tokens match an identifier followed by a call in the text pre-filter; here
    # every identifier is followed by "(" so such tokens still match (an over-approximation).
    return "".join(name + "(\n" for name in names)


def migrate_source(source: str, options: Options = Options(), *, path: str = "-") -> Result:
    """Run the selected rules in registry order. Raises :class:`SourceError` if unparsable."""
    rules = [rule for rule in active_rules(options) if rule.may_apply(source)]
    if not rules:
        return Result(code=source)
    # Second, still cheap, stage: the tokens must be identifiers of the code, not words in
    # docstrings or comments (TensorFlow's own sources say "minimize" in thousands of them).
    identifiers = _identifier_text(source)
    if identifiers is not None:
        rules = [rule for rule in rules if rule.may_apply(identifiers)]
        if not rules:
            return Result(code=source)
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        raise SourceError(f"cannot parse: {exc.message} (line {exc.raw_line}, column {exc.raw_column})") from None
    except (RecursionError, ValueError) as exc:
        raise SourceError(f"cannot parse: {exc}") from None
    diagnostics: List[Diagnostic] = []
    code = source
    # One wrapper (no defensive copy: nodes are immutable) serves every rule until one of
    # them rewrites the module; metadata (scopes, qualified names) is then resolved once.
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    cache: dict = {}
    for rule in rules:
        if not rule.may_apply(code):
            continue
        if wrapper.module is not module:
            wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
            cache = {}
        context = CodemodContext(
            filename=path, scratch={SHARED_WRAPPER_KEY: wrapper, SHARED_CACHE_KEY: cache}
        )
        command = rule(
            context,
            unsafe_fixes=options.unsafe_fixes,
            add_clip_norm=options.add_clip_norm,
            apply_fixes=options.apply_fixes,
        )
        new_module = command.transform_module(module)
        diagnostics.extend(context.scratch.get(DIAGNOSTICS_KEY, []))
        new_code = new_module.code
        if new_code != code:  # libcst returns a new tree even when nothing changed
            module, code = new_module, new_code
    new_source = code
    diagnostics.sort(key=lambda d: (d.line, d.col, d.code))
    return Result(code=new_source, diagnostics=diagnostics, changed=new_source != source)


def decode_source(data: bytes, *, path: str = "-") -> Tuple[str, str, bool]:
    """Decode file bytes as Python does (PEP 263 cookie, UTF-8 BOM).

    Returns ``(text, encoding, had_bom)``. Newlines are kept as they are (CRLF survives).
    """
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise SourceError(f"cannot detect the encoding: {exc}") from None
    had_bom = data.startswith(codecs.BOM_UTF8)
    if had_bom:
        data = data[len(codecs.BOM_UTF8):]
        encoding = "utf-8"
    if b"\x00" in data:
        raise SourceError("binary file (contains NUL bytes)")
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise SourceError(f"cannot decode as {encoding}: {exc}") from None
    return text, encoding, had_bom


def encode_source(text: str, encoding: str, had_bom: bool) -> bytes:
    data = text.encode(encoding)
    return codecs.BOM_UTF8 + data if had_bom else data


def migrate_bytes(data: bytes, options: Options = Options(), *, path: str = "-") -> Tuple[bytes, Result]:
    """:func:`migrate_source` on file bytes; encoding, BOM and newlines are preserved.

    When nothing changed the *original* bytes are returned (byte-identical).
    """
    text, encoding, had_bom = decode_source(data, path=path)
    result = migrate_source(text, options, path=path)
    if not result.changed:
        return data, result
    try:
        return encode_source(result.code, encoding, had_bom), result
    except UnicodeEncodeError as exc:
        raise SourceError(f"rewritten code cannot be encoded as {encoding}: {exc}") from None
