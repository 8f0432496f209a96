"""Per-file processing: read one file and run the engine on it (a ``.py`` module, or a
notebook's code cells as one program). Runs in worker processes (``codemods.cli.runner``)
and never writes: the result (new bytes, a diff, findings) goes back to the main
process, which alone writes files (``codemods.cli.writes``), so a signal or a dying worker
can never leave a half-done write behind.

The pre-pass (``codemods.engine.prepass``: a text stage, then CPython's ``ast``) decides which
rules a file needs from the static rule index, without the rules; libcst is imported only
for a file some rule may fire on, so a run over files without candidates never loads it.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, List, Optional, Tuple

from codemods.cli import writes as _writes
from codemods.cli.discovery import Target
from codemods.cli.results import FileReport, Finding
from codemods.rules.tfc900_unparsable_file import UnparsableFile

if TYPE_CHECKING:  # pragma: no cover
    from codemods.cli.cache import Cache
    from codemods.engine.core import Diagnostic, Options

UNPARSABLE_CODE = UnparsableFile.CODE
_POSITION = re.compile(r"\(line (\d+), column (\d+)\)")
_BYTE_POSITION = re.compile(r"in position (\d+)")

# The default --max-file-size: 1 MiB of Python. Measured (README of docs/cli.md): a dense
# 1 MB TF1 script costs about a minute of CPU and 1.1 GB; TensorFlow's largest .py is 0.68 MB.
DEFAULT_MAX_SIZE = 1 << 20


@dataclass(frozen=True)
class Settings:
    """What a worker needs to process one file (picklable)."""

    options: "Options"
    diff: bool = False  # compute a unified diff of the rewrite
    report_unparsable: bool = True  # TFC900 selected
    max_size: int = DEFAULT_MAX_SIZE  # bytes of Python a file may have to be parsed; 0 = any
    rules: Optional[Tuple[type, ...]] = None  # the rule classes to run; None = the package's
    cache: Optional["Cache"] = None  # the result cache (codemods.cli.cache); None = --no-cache
    edits: bool = False  # `check`: compute each fixable finding's edit (JSON, SARIF)


def _may_contain_targets(text: str, settings: Settings) -> bool:
    """The text stage of the pre-pass (from the static rule index: no rule, no libcst)."""
    from codemods.engine.registry import prefilter_specs

    return any(spec.on_text(text) for _, spec in prefilter_specs(settings.options, settings.rules))


# The last names of the removed clipping APIs (codemods.rules.tfnames.CONTRIB_TO_SHIM, which imports
# libcst: spelled out here so that this module does not; tests/codemods/test_cli_partial_notebooks.py
# checks the two agree).
REMOVED_CLIPPING_NAMES = ("adaptive_clipping_fn", "add_gradients_summaries", "clip_gradient_norms",
                          "clip_gradient_norms_fn", "clip_gradients_by_norm", "create_train_op",
                          "multiply_gradients", "optimize_loss")
# a removed clipping API's call, spelled through `contrib`
_REMOVED_CALL = re.compile(r"\b(contrib(?:\.\w+)*\.(?:" + "|".join(REMOVED_CLIPPING_NAMES)
                           + r")|clip_by_average_norm)\s*\(")


def _removed_calls_note(source: str) -> str:
    """``; it calls `...`, removed in TF 2: ...`` when a cell that does not parse spells a call of a
    removed clipping API (so `check` never passes it in silence)."""
    match = _REMOVED_CALL.search(source)
    if match is None:
        return ""
    return (f"; it calls `{match.group(1)}`, removed in TF 2: once the cell parses, `tfclip-migrate fix` "
            f"replaces it with its `tfclip_compat` twin")


def _unparsable(
    settings: Settings, display: str, reason: str, cell: Optional[int] = None, position: Optional[Tuple[int, int]] = None
) -> Optional[Finding]:
    if not settings.report_unparsable:
        return None
    from codemods.engine.core import Diagnostic, FixSafety

    line, col = position or (1, 1)
    match = _POSITION.search(reason)
    if match and position is None:
        line, col = int(match.group(1)), max(int(match.group(2)), 1)
    where = "cell left untouched" if cell is not None else "file left untouched"
    message = f"{reason} ({where})"
    return Finding(Diagnostic(display, line, col, UNPARSABLE_CODE, message, FixSafety.NONE), cell)


def _skip(settings: Settings, report: FileReport, reason: str, position: Optional[Tuple[int, int]] = None) -> None:
    report.status = "skipped"
    report.reason = reason
    report.findings = []
    finding = _unparsable(settings, report.display, reason, position=position)
    if finding is not None:
        report.findings.append(finding)


def _decode_position(data: bytes, reason: str) -> Optional[Tuple[int, int]]:
    """Line and column of the byte a decoding error names (``... in position 17``)."""
    match = _BYTE_POSITION.search(reason)
    if not match:
        return None
    offset = int(match.group(1))
    if data.startswith(b"\xef\xbb\xbf"):
        offset += 3
    before = data[:offset]
    return before.count(b"\n") + 1, offset - (before.rfind(b"\n") + 1) + 1


def _too_large(settings: Settings, size: int) -> Optional[str]:
    if settings.max_size and size > settings.max_size:
        return (
            f"too large to analyse: {_size_text(size)} of Python is over the {_size_text(settings.max_size)} "
            "limit (raise it with --max-file-size or `max-file-size` in [tool.tfclip-migrate])"
        )
    return None


# A notebook's bytes may be this many times --max-file-size (outputs, images, metadata)
# before it is refused unread; its code cells then count against the limit itself.
NOTEBOOK_SIZE_FACTOR = 16


def _notebook_too_large(settings: Settings, size: int) -> Optional[str]:
    limit = settings.max_size * NOTEBOOK_SIZE_FACTOR
    if settings.max_size and size > limit:
        return (
            f"too large to analyse: a {_size_text(size)} notebook is over the {_size_text(limit)} limit for "
            f"notebooks ({NOTEBOOK_SIZE_FACTOR} x --max-file-size; raise it with --max-file-size or "
            "`max-file-size` in [tool.tfclip-migrate])"
        )
    return None


def _size_text(size: int) -> str:
    for unit, factor in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor:
            return f"{size / factor:.1f} {unit}"
    return f"{size} bytes"


def _process_python(settings: Settings, display: str, data: bytes, report: FileReport) -> Optional[bytes]:
    from codemods.engine.core import SourceError, decode_source

    if b"\x00" in data:  # before decoding: a clearer reason than a failed encoding guess
        _skip(settings, report, "binary file (contains NUL bytes)")
        return None
    try:
        text, encoding, _ = decode_source(data, path=display)
    except SourceError as exc:
        _skip(settings, report, exc.reason, _decode_position(data, exc.reason))
        return None
    report.encoding = encoding
    if not _may_contain_targets(text, settings):
        return None
    too_large = _too_large(settings, len(data))
    if too_large:
        _skip(settings, report, too_large)
        return None
    if _from_cache(settings, data, False, report):
        return None
    from codemods.api import migrate_bytes, select_rules

    report.parsed = True
    try:
        selection = select_rules(text, settings.options, settings.rules)
        if not selection.codes:
            return None  # CPython's tree has no site any rule looks for: libcst is not needed
        new, result = migrate_bytes(data, settings.options, path=display, rules=settings.rules, selection=selection)
    except SourceError as exc:
        _skip(settings, report, exc.reason)
        return None
    report.findings = [Finding(d) for d in result.diagnostics]
    if settings.edits and not settings.options.apply_fixes:
        report.findings = _check_edits(settings, data, display, selection, report.findings)
    return new if result.changed else None


def _check_edits(settings: Settings, data: bytes, display: str, selection: Any, findings: List[Finding]) -> List[Finding]:
    """``check`` findings with the edit of each fix `fix` would apply (with the same options):
    the engine's run in fix mode, its applied findings matched by code and position. Costs one
    more analysis of a file with a fixable finding."""
    from codemods.engine.core import FixSafety
    from codemods.api import SourceError, migrate_bytes

    allowed = {FixSafety.SAFE, FixSafety.UNSAFE} if settings.options.unsafe_fixes else {FixSafety.SAFE}
    if not any(f.diagnostic.fix in allowed for f in findings):
        return findings
    try:
        _, fixed = migrate_bytes(data, dataclasses.replace(settings.options, apply_fixes=True), path=display,
                                 rules=settings.rules, selection=selection)
    except SourceError:
        return findings
    edits = {(d.code, d.line, d.col): d.edits for d in fixed.diagnostics if d.applied}
    return [Finding(dataclasses.replace(f.diagnostic, edits=edits.get((f.code, f.diagnostic.line, f.diagnostic.col))),
                    f.cell) if f.diagnostic.fix in allowed else f for f in findings]


def _process_notebook(settings: Settings, display: str, data: bytes, report: FileReport) -> Optional[bytes]:
    """The notebook's code cells analysed as one program, each cell written back in place."""
    import ast

    from codemods.notebooks import cells as _notebooks

    if _from_cache(settings, data, True, report):
        return None
    too_large = _notebook_too_large(settings, len(data))  # on the bytes, before any parsing
    if too_large:
        _skip(settings, report, too_large)
        return None
    try:
        nb = _notebooks.load_notebook(data)
    except _notebooks.NotebookError as exc:
        _skip(settings, report, exc.reason)
        return None
    if _notebooks.notebook_language(nb) != "python":
        return None
    options = settings.options
    cells = list(nb.code_cells())
    code = "\n".join(source for _, source in cells)
    if not _may_contain_targets(code, settings):
        return None
    too_large = _too_large(settings, len(code.encode("utf-8", "surrogatepass")))  # before any cell is parsed
    if too_large:
        _skip(settings, report, too_large)
        return None
    del code
    from codemods.engine.core import FixSafety

    report.parsed = True
    notes: List[str] = []  # why `fix` cannot apply the fixes (notebook-level TFC900 notes)
    masked: List[Tuple[int, "_notebooks.MaskedCell"]] = []
    bad: List[Any] = []  # the cells that do not parse (codemods.notebooks.partial.BadCell)
    for number, source in cells:
        cell = _notebooks.mask_ipython(source, number)
        if cell is None:
            continue  # a %%bash-style cell: not Python
        try:
            ast.parse(cell.source)
        except SyntaxError as exc:
            where = (exc.lineno or 1) + cell.line_offset, exc.offset or 1
            reason = f"cannot parse: {exc.msg}" + _removed_calls_note(cell.source)
            _add(report, _unparsable(settings, display, reason, number, where))
        except (ValueError, RecursionError, MemoryError):
            _add(report, _unparsable(settings, display, "cannot parse: too deeply nested or too large", number))
        else:
            masked.append((number, cell))
            continue
        from codemods.notebooks.partial import scan_bad_cell

        bad.append(scan_bad_cell(number, cell))  # left out of the program, left byte-identical
    if not masked:
        return None
    if any(_notebooks.has_boundary_tag(cell.source) for _, cell in masked):
        notes.append("the code contains tfclip-migrate's cell-boundary marker text")
    program = _notebooks.build_program(masked)
    too_large = _too_large(settings, len(program.source.encode("utf-8")))
    if too_large:
        _skip(settings, report, too_large)
        return None
    from codemods.engine.core import SourceError
    from codemods.api import migrate_source

    def run(apply: bool, unsafe: bool = options.unsafe_fixes) -> Any:
        return migrate_source(program.source, dataclasses.replace(options, apply_fixes=apply, unsafe_fixes=unsafe),
                              path=display, rules=settings.rules)

    try:
        result = run(options.apply_fixes and not notes and not bad)
    except SourceError as exc:
        match = _POSITION.search(exc.reason)
        cell_number, line = program.locate(int(match.group(1)) if match else 1)
        col = int(match.group(2)) if match else 1
        from codemods.engine.core import map_line_mentions

        reason = map_line_mentions(exc.reason, program.mention)  # a program line is a line of no cell
        report.status, report.reason = "skipped", reason
        _add(report, _unparsable(settings, display, reason, cell_number, (line, col)))
        return None
    if bad and not notes:  # a partial program: only the drop-in fixes, each gated
        from codemods.notebooks.partial import process_partial

        return process_partial(settings, report, nb, program, bad, result, lambda res: _write_back(nb, program, res))
    # `check` and `fix` agree: a fix is advertised only if `fix` would write it, so `check`
    # tries the write (without writing) whenever it would advertise one.
    new: Optional[bytes] = None
    if not notes and options.apply_fixes:
        new, refusal = _write_back(nb, program, result)
        if refusal is not None:
            notes.append(refusal)
            result = run(False)
    elif not notes and _fixable(result.diagnostics, options.unsafe_fixes):
        refusal = _write_back(nb, program, run(True))[1]
        if refusal is not None:
            notes.append(refusal)
    # Unsafe fixes left unapplied are advertised for `--unsafe-fixes`: check that it could write them.
    unsafe_refusal = None
    if not notes and not options.unsafe_fixes and _fixable(result.diagnostics, True, only_unsafe=True):
        unsafe_refusal = _write_back(nb, program, run(True, unsafe=True))[1]
    for note in notes:
        _add(report, _unparsable(settings, display, f"fixes not applied: {note}"))
    if unsafe_refusal is not None:
        _add(report, _unparsable(settings, display, f"unsafe fixes cannot be applied: {unsafe_refusal}"))
    for diag in result.diagnostics:
        cell_number, diag = program.locate_diagnostic(diag)
        if not diag.applied and (notes and diag.fix is not FixSafety.NONE
                                 or unsafe_refusal is not None and diag.fix is FixSafety.UNSAFE):
            # `fix` cannot apply it here; without TFC900 selected, the finding itself says why
            why = notes[0] if notes and diag.fix is not FixSafety.NONE else unsafe_refusal
            message = diag.message if settings.report_unparsable else f"{diag.message} (not applied: {why})"
            diag = dataclasses.replace(diag, fix=FixSafety.NONE, message=message)
        report.findings.append(Finding(diag, cell_number))
    report.findings.sort(key=lambda f: (f.cell or 0, f.diagnostic.line, f.diagnostic.col, f.code))
    return new


def _fixable(diagnostics: List["Diagnostic"], unsafe: bool, only_unsafe: bool = False) -> bool:
    """Whether some finding would be fixed by a `fix` run (with ``--unsafe-fixes``: ``unsafe``)."""
    from codemods.engine.core import FixSafety

    allowed = {FixSafety.UNSAFE} if only_unsafe else ({FixSafety.SAFE, FixSafety.UNSAFE} if unsafe else {FixSafety.SAFE})
    return any(not d.applied and d.fix in allowed for d in diagnostics)


def _write_back(nb: Any, program: Any, result: Any) -> Tuple[Optional[bytes], Optional[str]]:
    """The notebook's new bytes for an engine ``result`` with fixes applied, or why the
    result cannot be written back (then nothing is written and no fix is advertised)."""
    from codemods.notebooks import cells as _notebooks

    if not result.changed:
        return None, None
    try:
        sources = program.split(result.code)
    except _notebooks.CellBoundaryError as exc:
        return None, exc.reason
    if not sources:
        return None, None
    try:
        return nb.write_back(sources), None
    except _notebooks.NotebookError as exc:
        return None, f"cannot write the cells back in the notebook's JSON layout: {exc.reason}"


def _from_cache(settings: Settings, data: bytes, notebook: bool, report: FileReport) -> bool:
    """Fill ``report`` from the cache entry for these bytes, if there is one; else remember
    the key, so :func:`process` stores the result (``codemods.cli.cache``)."""
    if settings.cache is None:
        return False
    from codemods.cli import cache as _cache

    key = report.cache_key or settings.cache.key(data, notebook)
    report.cache_key = key
    entry = settings.cache.get(key)
    if entry is None:
        report.cache_miss = True
        return False
    report.status = entry["status"]
    report.reason = entry["reason"]
    report.parsed = entry["parsed"]
    report.encoding = entry["encoding"]
    report.findings = _cache.decode_findings(entry["findings"], report.display)
    return True


def _to_cache(settings: Settings, report: FileReport) -> None:
    """Store an outcome that writes nothing (unchanged, or skipped as TFC900)."""
    if settings.cache is None or report.cache_key is None:
        return
    if report.status not in ("unchanged", "skipped") or report.new is not None:
        return
    report.cacheable = True  # the runner may keep it in the tree index (codemods.cli.cache.Tree)
    if not report.cache_miss:
        return
    from codemods.cli import cache as _cache

    settings.cache.put(report.cache_key, {
        "status": report.status, "reason": report.reason, "parsed": report.parsed, "encoding": report.encoding,
        "findings": _cache.encode_findings(report.findings),
    })


def _add(report: FileReport, finding: Optional[Finding]) -> None:
    if finding is not None:
        report.findings.append(finding)


def process(settings: Settings, target: Target, data: Optional[bytes] = None,
            snapshot: Optional[_writes.Snapshot] = None, key: Optional[str] = None) -> FileReport:
    """Read and migrate one file (``data``: its bytes, for stdin, or as the runner read them
    with their ``snapshot`` and cache ``key``); never raises ``Exception``, never writes."""
    report = FileReport(display=target.display, snapshot=snapshot, cache_key=key)
    try:
        if data is None:
            try:
                data, report.snapshot = _writes.read_file(target.real, target.dev, target.ino)
            except OSError as exc:
                _skip(settings, report, f"cannot read: {_writes.describe_os_error(exc)}")
                return report
        if settings.cache is not None and report.cache_key is None:
            report.cache_key = settings.cache.key(data, target.notebook)
        handler = _process_notebook if target.notebook else _process_python
        new = handler(settings, target.display, data, report)
        if new is not None and new != data:
            report.status = "changed"
            report.new = new
            report.digest = _writes.digest(data)
            if settings.diff:
                from codemods.cli.report import unified_diff_bytes

                report.diff = unified_diff_bytes(data, new, target.display)
        _to_cache(settings, report)
    except RecursionError:  # a rule recursed too deep on this file: leave it alone, go on
        _skip(settings, report, "too deeply nested for the rules (RecursionError)")
        report.new = report.diff = None
    except Exception as exc:  # a rule crashed: report it, leave the file alone, go on
        report.status = "error"
        report.reason = f"internal error, file left untouched: {describe_internal_error(exc)}"
        report.findings = []
        report.new = report.diff = None
    return report


def describe_internal_error(exc: BaseException, limit: int = 200) -> str:
    """One line for a bug report: the exception's type, the first line of its text (cut to
    ``limit`` characters: a ``KeyError`` on a syntax node prints the whole node) and the innermost
    frame of our own code (its path from the repository root, and the line)."""
    import os
    import traceback

    import codemods

    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if len(text) > limit:
        text = text[:limit] + "..."
    root = os.path.dirname(os.path.dirname(os.path.abspath(codemods.__file__)))
    where = ""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        path = os.path.abspath(frame.filename)
        if path.startswith(os.path.join(root, "codemods") + os.sep):
            where = f" (at {os.path.relpath(path, root).replace(os.sep, '/')}:{frame.lineno})"
            break
    return f"{type(exc).__name__}: {text}{where}" if text else f"{type(exc).__name__}{where}"


def crashed(settings: Settings, target: Target, how: str) -> FileReport:
    """The report for a file whose worker process died (e.g. a native parser crash)."""
    report = FileReport(display=target.display)
    _skip(settings, report, f"the parser crashed on this file: {how}")
    report.parsed = True
    return report
