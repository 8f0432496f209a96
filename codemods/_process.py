"""Per-file processing: read one file, run the engine on it (a ``.py`` module or a notebook's
code cells), and write the result back. Runs in worker processes (``codemods._runner``).

The engine (and with it libcst) is imported only for a file that passes the text
pre-filter, so a run over files without any candidate token never loads libcst.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from codemods import _notebooks, _report, _writes
from codemods._discovery import Target
from codemods.tfc900_unparsable_file import UnparsableFile

if TYPE_CHECKING:  # pragma: no cover
    from codemods._core import Diagnostic, Options

UNPARSABLE_CODE = UnparsableFile.CODE
_POSITION = re.compile(r"\(line (\d+), column (\d+)\)")


def _may_contain_targets(text: str, options: "Options") -> bool:
    """The text pre-filter. Until the rules are loaded (the first file that passes loads them)
    it is read from the libcst-free table in ``codemods._core``, so a run over files without
    any candidate token never imports libcst; tests/test_prefilter.py keeps the two equal."""
    if "codemods._registry" not in sys.modules:
        from codemods._core import may_contain_targets_static

        return may_contain_targets_static(text, options)
    from codemods.api import may_contain_targets

    return may_contain_targets(text, options)


@dataclass(frozen=True)
class Settings:
    """What a worker needs to process one file (picklable)."""

    options: "Options"
    write: bool  # write rewritten files in place
    diff: bool  # compute a unified diff of the rewrite
    keep_output: bool  # return the resulting bytes (stdin mode)
    report_unparsable: bool  # TFC900 selected


@dataclass(frozen=True)
class Finding:
    """A diagnostic plus, for notebooks, the 1-based cell it is in."""

    diagnostic: "Diagnostic"
    cell: Optional[int] = None

    @property
    def code(self) -> str:
        return self.diagnostic.code

    def format(self) -> str:
        """``path:line:col: CODE message`` (``path:cell N:line:col: ...`` in notebooks)."""
        diag = self.diagnostic
        if self.cell is not None:
            diag = dataclasses.replace(diag, path=f"{diag.path}:cell {self.cell}")
        return diag.format()

    def to_json(self) -> Dict[str, Any]:
        data = self.diagnostic.to_json()
        data["cell"] = self.cell
        return data


@dataclass
class FileReport:
    """The outcome for one file."""

    display: str
    status: str = "unchanged"  # unchanged | changed | skipped | error
    reason: str = ""
    parsed: bool = False  # False: the text pre-filter ruled the file out
    findings: List[Finding] = field(default_factory=list)
    diff: Optional[str] = None
    output: Optional[bytes] = None


def _unparsable(settings: Settings, display: str, reason: str, cell: Optional[int] = None) -> Optional[Finding]:
    if not settings.report_unparsable:
        return None
    from codemods._core import Diagnostic, FixSafety

    line, col = 1, 1
    match = _POSITION.search(reason)
    if match:
        line, col = int(match.group(1)), int(match.group(2)) + 1
    where = "cell left untouched" if cell is not None else "file left untouched"
    message = f"{reason} ({where})"
    return Finding(Diagnostic(display, line, col, UNPARSABLE_CODE, message, FixSafety.NONE), cell)


def _skip(settings: Settings, report: FileReport, reason: str) -> FileReport:
    report.status = "skipped"
    report.reason = reason
    report.findings = []
    finding = _unparsable(settings, report.display, reason)
    if finding is not None:
        report.findings.append(finding)
    return report


def _process_python(settings: Settings, display: str, data: bytes, report: FileReport) -> Optional[bytes]:
    from codemods._core import SourceError, decode_source

    if b"\x00" in data:  # before decoding: a clearer reason than a failed encoding guess
        _skip(settings, report, "binary file (contains NUL bytes)")
        return None
    try:
        text, _, _ = decode_source(data, path=display)
    except SourceError as exc:
        _skip(settings, report, exc.reason)
        return None
    if not _may_contain_targets(text, settings.options):
        return None
    from codemods.api import migrate_bytes

    report.parsed = True
    try:
        new, result = migrate_bytes(data, settings.options, path=display)
    except SourceError as exc:
        _skip(settings, report, exc.reason)
        return None
    report.findings = [Finding(d) for d in result.diagnostics]
    return new if result.changed else None


def _process_notebook(settings: Settings, display: str, data: bytes, report: FileReport) -> Optional[bytes]:
    from codemods._core import SourceError

    try:
        nb = _notebooks.load_notebook(data)
    except _notebooks.NotebookError as exc:
        _skip(settings, report, exc.reason)
        return None
    if _notebooks.notebook_language(nb) != "python":
        return None
    options = settings.options
    cells = [(n, src) for n, src in nb.code_cells() if _may_contain_targets(src, options)]
    if not cells:
        return None
    report.parsed = True
    if options.apply_fixes and nb.layout is None:
        # We could not find json.dumps arguments reproducing the file: writing it would
        # change more than the cells, so report only.
        options = dataclasses.replace(options, apply_fixes=False)
        note = _unparsable(settings, display, "cannot reproduce the notebook's JSON layout; fixes not applied")
        if note is not None:
            report.findings.append(note)
    from codemods.api import migrate_source

    check_only = dataclasses.replace(options, apply_fixes=False)
    changed = False
    for number, source in cells:
        masked = _notebooks.mask_ipython(source)
        if masked is None:
            continue  # a %%bash-style cell: not Python
        try:
            result = migrate_source(masked.source, options, path=display)
        except SourceError as exc:
            finding = _unparsable(settings, display, exc.reason, cell=number)
            if finding is not None:
                if masked.line_offset:
                    diag = finding.diagnostic
                    finding = Finding(dataclasses.replace(diag, line=diag.line + masked.line_offset), number)
                report.findings.append(finding)
            continue
        diagnostics = result.diagnostics
        if result.changed:
            new_source = masked.unmask(result.code)
            if new_source is None:
                diagnostics = migrate_source(masked.source, check_only, path=display).diagnostics
                finding = _unparsable(
                    settings, display, "the rewrite would move IPython magic lines; fixes not applied", cell=number
                )
                if finding is not None:
                    report.findings.append(finding)
            else:
                nb.set_source(number, new_source)
                changed = True
        if masked.line_offset:
            diagnostics = [dataclasses.replace(d, line=d.line + masked.line_offset) for d in diagnostics]
        report.findings.extend(Finding(d, number) for d in diagnostics)
    return nb.dump() if changed else None


def process(settings: Settings, target: Target, data: Optional[bytes] = None) -> FileReport:
    """Read, migrate and (per ``settings``) write one file; never raises."""
    report = FileReport(display=target.display)
    try:
        if data is None:
            try:
                data = _writes.read_bytes(target.real)
            except OSError as exc:
                return _skip(settings, report, f"cannot read: {exc.strerror or exc}")
        handler = _process_notebook if target.notebook else _process_python
        new = handler(settings, target.display, data, report)
        if new is not None and new != data:
            report.status = "changed"
            if settings.diff:
                report.diff = _report.file_diff(data, new, target.display, target.notebook)
            elif settings.write:
                try:
                    _writes.atomic_write(target.real, new)
                except OSError as exc:
                    report.status = "error"
                    report.reason = f"cannot write (file left untouched): {exc.strerror or exc}"
        if settings.keep_output:
            report.output = new if new is not None else data
    except Exception as exc:  # a rule crashed: report it, leave the file alone, go on
        report.status = "error"
        report.reason = f"internal error, file left untouched: {type(exc).__name__}: {exc}"
        report.findings = []
        report.diff = None
        if settings.keep_output:
            report.output = data
    return report


