"""The engine: run the registered rules over one source text (or file bytes).

This is the one entry point the CLI, the fixture tests and the benchmarks use::

    result = migrate_source(code, Options(unsafe_fixes=False), path="train.py")
    result.code          # rewritten source (identical object content when nothing changed)
    result.diagnostics   # list[Diagnostic], applied fixes flagged ``applied=True``

Never imports TensorFlow.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.metadata import MetadataWrapper

from codemods._base import DIAGNOSTICS_KEY, SHARED_CACHE_KEY, SHARED_WRAPPER_KEY
from codemods._core import (  # re-exported: the engine's public vocabulary
    Diagnostic,
    Options,
    SourceError,
    decode_source,
    enabled,
    encode_source,
)
from codemods._registry import RULES


@dataclass
class Result:
    code: str
    diagnostics: List[Diagnostic] = field(default_factory=list)
    changed: bool = False


def active_rules(options: Options):
    return [rule for rule in RULES if enabled(rule.CODE, options)]


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
