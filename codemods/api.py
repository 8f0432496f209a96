"""The engine: run the rules over one source text (or file bytes).

This is the one entry point the CLI, the fixture tests and the benchmarks use::

    result = migrate_source(code, Options(unsafe_fixes=False), path="train.py")
    result.code          # rewritten source (identical object content when nothing changed)
    result.diagnostics   # list[Diagnostic], applied fixes flagged ``applied=True``

``rules`` defaults to the package's rules (``codemods.engine.registry``: every
``tfcNNN_*.py`` module, ordered by phase); pass any sequence of rule classes instead.

Per file, cheapest first (``codemods.engine.prepass``): the text stage drops the rules whose
``SITES`` cannot hold on the text; CPython parses the file (a file it rejects is a
``SourceError``, TFC900); the ast stage drops the rules whose ``SITES`` do not hold on
the tree. Only then is libcst imported and the file parsed by it, and only the remaining
rules run, in order. ``prefilter=False`` runs every enabled rule (the reference the
pre-pass is tested against).

Never imports TensorFlow; imports libcst only for a file that needs a rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple

from codemods.engine import registry as _registry
from codemods.engine.core import (  # re-exported: the engine's public vocabulary
    Diagnostic,
    FixSafety,
    Options,
    Phase,
    SourceError,
    decode_source,
    enabled,
    encode_source,
)
from codemods.engine.prepass import ModuleIndex, parse_python
from codemods.rules.tfc900_unparsable_file import UnparsableFile

if TYPE_CHECKING:  # pragma: no cover
    import ast

__all__ = [
    "Diagnostic",
    "FixSafety",
    "Options",
    "Phase",
    "Result",
    "Selection",
    "SourceError",
    "active_rules",
    "decode_source",
    "default_rules",
    "encode_source",
    "may_contain_targets",
    "migrate_bytes",
    "migrate_source",
    "select_rules",
]


@dataclass
class Result:
    code: str
    diagnostics: List[Diagnostic] = field(default_factory=list)
    changed: bool = False


@dataclass(frozen=True)
class Selection:
    """What the pre-pass decided for one text: CPython's tree and the codes of the rules
    that may fire (in run order)."""

    tree: "ast.Module"
    codes: Tuple[str, ...]


def default_rules() -> Tuple[type, ...]:
    """The package's rules in run order (discovered once; imports libcst)."""
    return _registry.default_rules()


def __getattr__(name: str) -> Any:  # ``api.RULES``: the default rules, discovered on first use
    if name == "RULES":
        return default_rules()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def active_rules(options: Options, rules: Optional[Sequence[type]] = None) -> List[type]:
    """The rules ``options`` enables, in run order."""
    return [rule for rule in (default_rules() if rules is None else rules) if enabled(rule.CODE, options)]


def may_contain_targets(source: str, options: Options = Options(), rules: Optional[Sequence[type]] = None) -> bool:
    """The text stage of the pre-pass: False means no enabled rule can fire on ``source``
    (decided without importing the rules when ``rules`` is None)."""
    return any(spec.on_text(source) for _, spec in _registry.prefilter_specs(options, rules))


def select_rules(source: str, options: Options = Options(), rules: Optional[Sequence[type]] = None) -> Selection:
    """The pre-pass (text stage, CPython parse, ast stage) without libcst; raises
    :class:`SourceError` when CPython cannot parse a text that passed the text stage."""
    specs = [(code, spec) for code, spec in _registry.prefilter_specs(options, rules) if spec.on_text(source)]
    if not specs:
        return Selection(None, ())  # type: ignore[arg-type]
    tree = parse_python(source)
    index = ModuleIndex.of(tree)
    return Selection(tree, tuple(code for code, spec in specs if spec.on_index(index)))


def migrate_source(
    source: str,
    options: Options = Options(),
    *,
    path: str = "-",
    rules: Optional[Sequence[type]] = None,
    prefilter: bool = True,
    selection: Optional[Selection] = None,
) -> Result:
    """Run the enabled ``rules`` (default: the package's) in order over ``source``.

    Raises :class:`SourceError` if the text cannot be parsed. ``selection`` is the result
    of :func:`select_rules` for this very text and these options, when the caller has it.
    """
    rule_set = tuple(default_rules() if rules is None else rules)
    run = [rule for rule in rule_set if enabled(rule.CODE, options)]
    if prefilter:
        if selection is None:
            selection = select_rules(source, options, rule_set)
        wanted = set(selection.codes)
        run = [rule for rule in run if rule.CODE in wanted]
        if not run:
            return Result(code=source)
    else:
        parse_python(source)  # CPython must accept the file (see parse_python)
        if not run:
            return Result(code=source)
    return _run_rules(source, options, path, rule_set, run, prefilter)


def _run_rules(source: str, options: Options, path: str, rule_set: Tuple[type, ...], run: List[type],
               prefilter: bool) -> Result:
    import libcst as cst
    from libcst.metadata import MetadataWrapper

    from codemods.engine.base import DIAGNOSTICS_KEY, ENGINE_RULES_KEY, SHARED_CACHE_KEY, SHARED_WRAPPER_KEY, SOURCE_KEY
    from codemods.engine.command import RuleContext
    from codemods.engine.fastcst.visit import fast_visits
    from codemods.engine.fastcst.metadata import needs_parents, prefill
    from codemods.engine.splice import SpliceConflict, splice

    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        raise SourceError(f"cannot parse: {exc.message} (line {exc.raw_line}, column {exc.raw_column})") from None
    except (RecursionError, ValueError) as exc:
        raise SourceError(f"cannot parse: {exc}") from None
    if options.apply_fixes:
        try:
            module.config_for_parsing  # what libcst parses an added import with
        except ValueError:  # e.g. an indentation that starts with a form feed: no fix can add an import
            return _refused(source, options, path, 1, rule_set, prefilter)
    roundtrip = module.code  # libcst's rendering of the unchanged file (not always == source)
    # (diagnostics, index of the version the rule saw) -- positions are in that version
    found: List[Tuple[List[Diagnostic], int]] = []
    versions = [roundtrip]
    parents = needs_parents(run)
    # One wrapper (no defensive copy: nodes are immutable) serves every rule until one of
    # them rewrites the module; metadata (scopes, qualified names) is then resolved once.
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    prefill(wrapper, parents)
    cache: dict = {}
    for rule in run:
        if prefilter and not rule.may_apply(versions[-1]):
            continue
        if wrapper.module is not module:
            wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
            prefill(wrapper, parents)
            cache = {}
        context = RuleContext(
            filename=path,
            scratch={SHARED_WRAPPER_KEY: wrapper, SHARED_CACHE_KEY: cache, ENGINE_RULES_KEY: rule_set,
                     SOURCE_KEY: (module, versions[-1])},  # versions[-1] == module.code
        )
        command = rule(
            context,
            unsafe_fixes=options.unsafe_fixes,
            add_clip_norm=options.add_clip_norm,
            apply_fixes=options.apply_fixes,
        )
        with fast_visits():  # read-only traversals skip libcst's rebuilding (same callbacks)
            new_module = command.transform_module(module)
        found.append((list(context.scratch.get(DIAGNOSTICS_KEY, [])), len(versions) - 1))
        if new_module is module:
            continue  # the rule returned the tree it was given: nothing changed
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
            return _refused(source, options, path, conflict.line, rule_set, prefilter)
        # The round-trip defects are layout only (whitespace, form feeds, CRs): the spliced
        # text must be the very program the rules wrote, or nothing is written.
        if not _same_program(spliced, code):
            return _refused(source, options, path, 1, rule_set, prefilter)
        code = spliced
    return Result(code=code, diagnostics=diagnostics, changed=code != source)


def _same_program(a: str, b: str) -> bool:
    import ast

    try:
        return ast.dump(ast.parse(a)) == ast.dump(ast.parse(b))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def _original_positions(found: List[Tuple[List[Diagnostic], int]], versions: List[str]) -> List[Diagnostic]:
    """Diagnostics with positions in the text as read: a rule that ran after another one
    rewrote the module reported positions in the rewritten code (e.g. shifted by an added
    import); map them back through each rewrite."""
    from codemods.engine.splice import line_mapper

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


def _refused(source: str, options: Options, path: str, line: int, rules: Tuple[type, ...], prefilter: bool) -> Result:
    """The fixes touch a line libcst cannot reproduce byte for byte: change nothing, report
    the findings (check mode) and why (TFC900, so the file is not silently left behind)."""
    result = migrate_source(source, replace(options, apply_fixes=False), path=path, rules=rules, prefilter=prefilter)
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


def migrate_bytes(
    data: bytes,
    options: Options = Options(),
    *,
    path: str = "-",
    rules: Optional[Sequence[type]] = None,
    prefilter: bool = True,
    selection: Optional[Selection] = None,
) -> Tuple[bytes, Result]:
    """:func:`migrate_source` on file bytes; encoding, BOM and newlines are preserved.

    When nothing changed the *original* bytes are returned (byte-identical).
    """
    text, encoding, had_bom = decode_source(data, path=path)
    result = migrate_source(text, options, path=path, rules=rules, prefilter=prefilter, selection=selection)
    if not result.changed:
        return data, result
    try:
        return encode_source(result.code, encoding, had_bom), result
    except UnicodeEncodeError as exc:
        raise SourceError(f"rewritten code cannot be encoded as {encoding}: {exc}") from None
