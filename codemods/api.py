"""The engine: run the registered rules over one source text (or file bytes).

This is the one entry point the CLI, the fixture tests and the benchmarks use::

    result = migrate_source(code, Options(unsafe_fixes=False), path="train.py")
    result.code          # rewritten source (identical object content when nothing changed)
    result.diagnostics   # list[Diagnostic], applied fixes flagged ``applied=True``

Never imports TensorFlow.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from typing import List, Tuple

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.metadata import MetadataWrapper

from codemods._base import DIAGNOSTICS_KEY, SHARED_CACHE_KEY, SHARED_WRAPPER_KEY
from codemods._core import (  # re-exported: the engine's public vocabulary
    Diagnostic,
    FixSafety,
    Options,
    SourceError,
    decode_source,
    enabled,
    encode_source,
)
from codemods._registry import RULES
from codemods._splice import SpliceConflict, line_mapper, splice
from codemods.tfc900_unparsable_file import UnparsableFile


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


def _python3_tree(source: str) -> ast.Module:
    """CPython's own parse of ``source``, or :class:`SourceError`.

    libcst accepts some Python 2 (``except E, e:``) and crashes on some inputs CPython
    rejects cleanly (1,500 nested brackets segfault its native parser; CPython's tokenizer
    stops at 200). So nothing CPython cannot parse reaches libcst: such a file is TFC900.
    """
    try:
        return ast.parse(source)
    except SyntaxError as exc:
        where = f" (line {exc.lineno}, column {exc.offset or 1})" if exc.lineno else ""
        raise SourceError(f"cannot parse: {exc.msg}{where}") from None
    except (RecursionError, MemoryError):
        raise SourceError("cannot parse: too deeply nested or too large for the parser") from None
    except ValueError as exc:  # e.g. source code string cannot contain null bytes
        raise SourceError(f"cannot parse: {exc}") from None


def _identifier_text(tree: ast.Module) -> str:
    """Every identifier of the module (names, attributes, imports, keywords), one per line."""
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
    # CPython must accept the file (see _python3_tree). Then a second, still cheap, stage:
    # the tokens must be identifiers of the code, not words in docstrings or comments
    # (TensorFlow's own sources say "minimize" in thousands of them).
    identifiers = _identifier_text(_python3_tree(source))
    rules = [rule for rule in rules if rule.may_apply(identifiers)]
    if not rules:
        return Result(code=source)
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        raise SourceError(f"cannot parse: {exc.message} (line {exc.raw_line}, column {exc.raw_column})") from None
    except (RecursionError, ValueError) as exc:
        raise SourceError(f"cannot parse: {exc}") from None
    roundtrip = module.code  # libcst's rendering of the unchanged file (not always == source)
    # (diagnostics, index of the version the rule saw) -- positions are in that version
    found: List[Tuple[List[Diagnostic], int]] = []
    versions = [roundtrip]
    # One wrapper (no defensive copy: nodes are immutable) serves every rule until one of
    # them rewrites the module; metadata (scopes, qualified names) is then resolved once.
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    cache: dict = {}
    for rule in rules:
        if not rule.may_apply(versions[-1]):
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
        found.append((list(context.scratch.get(DIAGNOSTICS_KEY, [])), len(versions) - 1))
        new_code = new_module.code
        if new_code != versions[-1]:  # libcst returns a new tree even when nothing changed
            module = new_module
            versions.append(new_code)
    diagnostics = _original_positions(found, versions)
    diagnostics.sort(key=lambda d: (d.line, d.col, d.code))
    code = versions[-1]
    if code == roundtrip:  # no rule changed anything: the original text, byte for byte
        return Result(code=source, diagnostics=diagnostics, changed=False)
    if roundtrip != source:
        try:
            spliced = splice(source, roundtrip, code)
        except SpliceConflict as conflict:
            return _refused(source, options, path, conflict.line)
        # The round-trip defects are layout only (whitespace, form feeds, CRs): the spliced
        # text must be the very program the rules wrote, or nothing is written.
        if not _same_program(spliced, code):
            return _refused(source, options, path, 1)
        code = spliced
    return Result(code=code, diagnostics=diagnostics, changed=code != source)


def _same_program(a: str, b: str) -> bool:
    try:
        return ast.dump(ast.parse(a)) == ast.dump(ast.parse(b))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def _original_positions(found: List[Tuple[List[Diagnostic], int]], versions: List[str]) -> List[Diagnostic]:
    """Diagnostics with positions in the text as read: a rule that ran after another one
    rewrote the module reported positions in the rewritten code (e.g. shifted by an added
    import); map them back through each rewrite."""
    mappers: dict = {}
    out: List[Diagnostic] = []
    for diagnostics, seen in found:
        for diag in diagnostics:
            line, col = diag.line, diag.col
            for index in range(seen, 0, -1):
                if index not in mappers:
                    mappers[index] = line_mapper(versions[index - 1], versions[index])
                line, col = mappers[index](line, col)
            out.append(diag if (line, col) == (diag.line, diag.col) else replace(diag, line=line, col=col))
    return out


def _refused(source: str, options: Options, path: str, line: int) -> Result:
    """The fixes touch a line libcst cannot reproduce byte for byte: change nothing, report
    the findings (check mode) and why (TFC900, so the file is not silently left behind)."""
    result = migrate_source(source, replace(options, apply_fixes=False), path=path)
    if enabled(UnparsableFile.CODE, options):
        result.diagnostics.append(
            Diagnostic(
                path,
                line,
                1,
                UnparsableFile.CODE,
                "fixes not applied: libcst cannot reproduce this line byte for byte (e.g. a space "
                "before `:`, a form feed, a lone CR) and a fix touches it; file left unchanged",
                FixSafety.NONE,
            )
        )
        result.diagnostics.sort(key=lambda d: (d.line, d.col, d.code))
    return result


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
