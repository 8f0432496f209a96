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
    return [rule for rule in (default_rules() if rules is None else rules)
            if enabled(rule.CODE, options, getattr(rule, "OPT_IN", False))]


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

    Check mode (``apply_fixes=False``) lists the fixes a fix run would apply: one fix can open
    another (TFC103's tape leaves the optimizer only ``apply_gradients`` uses, which TFC104 then
    swaps for a Keras class), so it runs the fixes and reports what they did, unapplied; where
    ``fix`` would refuse them (TFC900), it reports what the original text shows.
    """
    parsed: list = []  # libcst's tree of ``source``, parsed once for both runs (trees are immutable)
    checked = _migrate(source, options, path, rules, prefilter, selection, parsed=parsed)
    if options.apply_fixes or not _may_cascade(checked.diagnostics, options, rules):  # type: ignore[union-attr]
        return checked  # type: ignore[return-value]
    fixed = _migrate(source, replace(options, apply_fixes=True), path, rules, prefilter, selection, refusal=False,
                     parsed=parsed)
    if fixed is None:  # `fix` would refuse its fixes here (TFC900): list what the text shows
        return checked  # type: ignore[return-value]
    diagnostics = [replace(d, applied=False) if d.applied else d for d in fixed.diagnostics]
    return Result(code=source, diagnostics=diagnostics, changed=False)


def _may_cascade(diagnostics: List[Diagnostic], options: Options, rules: Optional[Sequence[type]]) -> bool:
    """Whether a fix ``check`` advertises may change what a rule after it sees: a TF 2 form or
    report rule followed by any enabled rule, or a compat fix followed by a rule of a later phase
    (TFC203). The compat rules replace removed ``tf.contrib`` calls by the shim's, each its own
    calls, so among themselves the original text shows what ``fix`` applies."""
    allowed = (FixSafety.SAFE, FixSafety.UNSAFE) if options.unsafe_fixes else (FixSafety.SAFE,)
    fixing = {d.code for d in diagnostics if d.fix in allowed}
    if not fixing:
        return False
    run = active_rules(options, rules)
    if fixing - {rule.CODE for rule in run}:
        return True  # a fix reported under another rule's code (a group of tapes): assume it may
    for at, rule in enumerate(run):
        later = run[at + 1:]
        if rule.CODE in fixing and (rule.PHASE != Phase.COMPAT and later or any(r.PHASE > rule.PHASE for r in later)):
            return True
    return False


def _migrate(source: str, options: Options, path: str, rules: Optional[Sequence[type]], prefilter: bool,
             selection: Optional[Selection], refusal: bool = True, parsed: Optional[list] = None) -> Optional[Result]:
    """:func:`migrate_source` for these very options; ``refusal=False``: None where the fixes
    would be refused (instead of the check-mode findings and TFC900)."""
    rule_set = tuple(default_rules() if rules is None else rules)
    run = [rule for rule in rule_set if enabled(rule.CODE, options, getattr(rule, "OPT_IN", False))]
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
    return _run_rules(source, options, path, rule_set, run, prefilter, refusal, parsed)


def _run_rules(source: str, options: Options, path: str, rule_set: Tuple[type, ...], run: List[type],
               prefilter: bool, refusal: bool = True, parsed: Optional[list] = None) -> Optional[Result]:
    import libcst as cst
    from libcst.metadata import MetadataWrapper

    from codemods.engine.base import DIAGNOSTICS_KEY, ENGINE_RULES_KEY, SHARED_CACHE_KEY, SHARED_WRAPPER_KEY, SOURCE_KEY
    from codemods.engine.command import RuleContext
    from codemods.engine.fastcst.visit import fast_visits
    from codemods.engine.fastcst.metadata import needs_parents, prefill
    from codemods.engine.splice import SpliceConflict, splice

    try:
        module = parsed[0] if parsed else cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        raise SourceError(f"cannot parse: {exc.message} (line {exc.raw_line}, column {exc.raw_column})") from None
    except (RecursionError, ValueError) as exc:
        raise SourceError(f"cannot parse: {exc}") from None
    if parsed is not None and not parsed:
        parsed.append(module)
    if options.apply_fixes:
        try:
            module.config_for_parsing  # what libcst parses an added import with
        except ValueError:  # e.g. an indentation that starts with a form feed: no fix can add an import
            return _refused(source, options, path, 1, rule_set, prefilter) if refusal else None
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
    # The text as read, for the report rules that run after a rewrite (below); held only while
    # one is still to run in a `fix`.
    reports_left = sum(rule.PHASE == Phase.REPORT for rule in run) if options.apply_fixes else 0
    first: Optional[Tuple[Any, Any, dict]] = (module, wrapper, cache) if reports_left else None

    def apply(rule: type, module: Any, wrapper: Any, cache: dict, code: str, apply_fixes: bool) -> Tuple[Any, list]:
        context = RuleContext(
            filename=path,
            scratch={SHARED_WRAPPER_KEY: wrapper, SHARED_CACHE_KEY: cache, ENGINE_RULES_KEY: rule_set,
                     SOURCE_KEY: (module, code)},  # code == module.code
        )
        command = rule(
            context,
            unsafe_fixes=options.unsafe_fixes,
            add_clip_norm=options.add_clip_norm,
            apply_fixes=apply_fixes,
        )
        with fast_visits():  # read-only traversals skip libcst's rebuilding (same callbacks)
            new_module = command.transform_module(module)
        return new_module, list(context.scratch.get(DIAGNOSTICS_KEY, []))

    for rule in run:
        if rule.PHASE == Phase.REPORT:
            reports_left -= 1
        if prefilter and not rule.may_apply(versions[-1]):
            continue
        if wrapper.module is not module:
            wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
            prefill(wrapper, parents)
            cache = {}
        new_module, diagnostics = apply(rule, module, wrapper, cache, versions[-1], options.apply_fixes)
        if (first is not None and rule.PHASE == Phase.REPORT and len(versions) > 1
                and (not prefilter or rule.may_apply(versions[0]))):
            # A report rule ran on code other rules rewrote: its reasons may name the tool's own
            # inserted lines (`tf.GradientTape()` (line 11)). Each finding it makes at a site of
            # the user's code is reported as the same rule reports it on the text as read (what
            # `check` says); see _as_read.
            diagnostics = _as_read(diagnostics, apply(rule, *first, versions[0], False)[1], versions)
            found.append((diagnostics, 0))
        else:
            found.append((diagnostics, len(versions) - 1))
        if not reports_left:
            first = None
        if new_module is module:
            continue  # the rule returned the tree it was given: nothing changed
        new_code = new_module.code
        if new_code != versions[-1]:  # libcst returns a new tree even when nothing changed
            module = new_module
            versions.append(new_code)
            found[-1] = (_with_edits(found[-1][0], versions, len(versions) - 1), found[-1][1])
    diagnostics = _original_positions(found, versions)
    diagnostics.sort(key=lambda d: (d.line, d.col, d.code))
    code = versions[-1]
    if code == roundtrip:  # no rule changed anything: the original text, byte for byte
        return Result(code=source, diagnostics=diagnostics, changed=False)
    if roundtrip != source:
        try:
            spliced = splice(source, roundtrip, code)
        except SpliceConflict as conflict:
            return _refused(source, options, path, conflict.line, rule_set, prefilter) if refusal else None
        # The round-trip defects are layout only (whitespace, form feeds, CRs): the spliced
        # text must be the very program the rules wrote, or nothing is written.
        if not _same_program(spliced, code):
            return _refused(source, options, path, 1, rule_set, prefilter) if refusal else None
        code = spliced
    return Result(code=code, diagnostics=diagnostics, changed=code != source)


def _same_program(a: str, b: str) -> bool:
    import ast

    try:
        return ast.dump(ast.parse(a)) == ast.dump(ast.parse(b))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


class _Mapper:
    """Positions in ``versions[seen]`` -> positions in ``versions[0]`` (the text as read),
    through each rewrite (``codemods.engine.splice.line_mapper``)."""

    def __init__(self, versions: List[str]) -> None:
        self.versions = versions
        self.mappers: dict = {}
        self.lines: dict = {}

    def _lines(self, index: int) -> List[str]:
        if index not in self.lines:
            from codemods.engine.splice import split_lines

            self.lines[index] = split_lines(self.versions[index])
        return self.lines[index]

    def map(self, seen: int, line: int, col: int) -> Tuple[int, int, bool]:
        """``(line, col, exact)``: ``exact`` is False when the position lies in code a rule
        wrote (then it is the first line of the code that rewrite replaced)."""
        from codemods.engine.splice import line_mapper

        exact = True
        for index in range(seen, 0, -1):
            if index not in self.mappers:
                self.mappers[index] = line_mapper(self.versions[index - 1], self.versions[index])
            new_line = line
            line, col = self.mappers[index](line, col)
            new, old = self._lines(index), self._lines(index - 1)
            if not (0 < new_line <= len(new) and 0 < line <= len(old) and new[new_line - 1] == old[line - 1]):
                exact = False
        return line, col, exact


def _with_edits(diagnostics: List[Diagnostic], versions: List[str], made: int) -> List[Diagnostic]:
    """``diagnostics`` (of the rule that rewrote ``versions[made - 1]`` into ``versions[made]``)
    with the edit of each applied fix: the changed line ranges of that rewrite, in the text
    as read (``(start line, end line exclusive, new text)``, whole lines). A change goes to the
    first applied finding at or below it (a tape rewrite moves the loss statements above the
    site); a change above them all (an added import) is shared by every one. Where a change
    touches lines an earlier rule wrote, the text as read has no such range: no edit (None)."""
    import difflib

    from codemods.engine.splice import split_lines

    applied = sorted((d for d in diagnostics if d.applied), key=lambda d: (d.line, d.col))
    if not applied:
        return diagnostics
    old, new = split_lines(versions[made - 1]), split_lines(versions[made])
    mapper = _Mapper(versions)
    shared: list = []
    owned: dict = {id(d): [] for d in applied}
    exact = True
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        start, end = i1 + 1, i2 + 1
        if made > 1:
            mapped_start, _, ok_start = mapper.map(made - 1, start, 1) if start <= len(old) else (start, 1, True)
            mapped_end, _, ok_end = mapper.map(made - 1, end, 1) if end <= len(old) else (len(split_lines(versions[0])) + 1, 1, True)
            exact = exact and ok_start and ok_end and (i1 == i2 or start <= len(old))
            start, end = mapped_start, mapped_end
        edit = (start, end, "".join(new[j1:j2]))
        owner = next((d for d in applied if d.line >= i1 + 1), None)
        if owner is None:
            owner = applied[-1]
        if owner is applied[0] and i1 + 1 < applied[0].line and i2 < applied[0].line and not any(
                i1 + 1 >= d.line for d in applied):
            shared.append(edit)  # above every site: an import (or what all of them need)
        else:
            owned[id(owner)].append(edit)
    out = []
    for diag in diagnostics:
        if diag.applied:
            edits = tuple(sorted(shared + owned[id(diag)])) if exact else None
            diag = replace(diag, edits=edits)
        out.append(diag)
    return out


def _original_positions(found: List[Tuple[List[Diagnostic], int]], versions: List[str]) -> List[Diagnostic]:
    """Diagnostics with positions in the text as read: a rule that ran after another one
    rewrote the module reported positions in the rewritten code (e.g. shifted by an added
    import); map them back through each rewrite -- the start, the end (dropped when it
    lies in code a rule wrote) and every ``(line N)`` the message names."""
    from codemods.engine.core import map_line_mentions

    mapper = _Mapper(versions)
    out: List[Diagnostic] = []
    for diagnostics, seen in found:
        for diag in diagnostics:
            if not seen:
                out.append(diag)
                continue
            line, col, _ = mapper.map(seen, diag.line, diag.col)
            end_line, end_col = diag.end_line, diag.end_col
            if end_line is not None and end_col is not None:
                end_line, end_col, exact = mapper.map(seen, end_line, end_col)
                if not exact or (end_line, end_col) < (line, col):
                    end_line = end_col = None
            message = map_line_mentions(diag.message, lambda n: f"line {mapper.map(seen, n, 1)[0]}")
            out.append(replace(diag, line=line, col=col, end_line=end_line, end_col=end_col, message=message))
    return out


def _as_read(rewritten: List[Diagnostic], as_read: List[Diagnostic], versions: List[str]) -> List[Diagnostic]:
    """The findings of a report rule that ran on ``versions[-1]``, each replaced by the finding
    the same rule makes at the same place of the text as read (``as_read``, positions in
    ``versions[0]``): what `check` reports, naming only the user's code. A finding with no such
    twin (its site changed meaning through a rewrite) is kept, mapped back."""
    mapper = _Mapper(versions)
    twins = {(d.code, d.line, d.col): d for d in as_read}
    out: List[Diagnostic] = []
    for diag in rewritten:
        line, col, exact = mapper.map(len(versions) - 1, diag.line, diag.col)
        twin = twins.get((diag.code, line, col)) if exact else None
        if twin is not None:
            out.append(twin)
        else:
            out.extend(_original_positions([([diag], len(versions) - 1)], versions))
    return out


def _refused(source: str, options: Options, path: str, line: int, rules: Tuple[type, ...], prefilter: bool) -> Result:
    """The fixes touch a line libcst cannot reproduce byte for byte: change nothing, report
    the findings (check mode) and why (TFC900, so the file is not silently left behind)."""
    result = _migrate(source, replace(options, apply_fixes=False), path, rules, prefilter, None)
    assert result is not None  # check mode refuses nothing
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
