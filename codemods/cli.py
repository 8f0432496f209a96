"""``tfclip-migrate``: check, fix and list the tfclip-compat migration rules.

::

    tfclip-migrate check PATH...        # findings as path:line:col: CODE message
    tfclip-migrate fix PATH... [--diff] # rewrite in place (or print a unified diff)
    tfclip-migrate fix -                # stdin -> stdout
    tfclip-migrate rules [CODE]         # list the rules / print one rule's documentation

stdout carries findings (or the fixed code / the diff), stderr carries ``Rewriting path``,
progress and the summary. Exit codes follow ruff and pyupgrade: 0 nothing to report,
1 findings (``check``) or a file rewritten / findings remaining (``fix``), 2 usage or
internal error. Never imports TensorFlow; libcst is imported only once there is work.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from codemods import _files
from codemods._files import Config, Target, UsageError

if TYPE_CHECKING:  # pragma: no cover
    from codemods._base import Diagnostic
    from codemods.api import Options

PROG = "tfclip-migrate"
UNPARSABLE_CODE = "TFC900"
UNPARSABLE_NAME = "unparsable-file"
UNPARSABLE_SUMMARY = "A file or notebook cell could not be read, decoded or parsed; it was left untouched."
UNPARSABLE_DOC = """\
## What it does
Reports a file (or a notebook code cell) that tfclip-migrate could not read, decode or
parse: Python 2 syntax, binary content, an invalid encoding, invalid notebook JSON, a
file the process may not read. The file is left byte-identical and the run goes on.

## Why is this bad?
Legacy clipping code in such a file can be neither checked nor migrated.

## Example
```python
print "step", step   # Python 2
optimizer = tf.contrib.estimator.clip_gradients_by_norm(opt, clip_norm=5.0)
```

## Use instead
Port the file to Python 3 (e.g. with `pyupgrade`/`2to3`), then run tfclip-migrate again.
Files without any candidate token (no name a rule looks for) are never parsed, so a
syntax error there is never reported; binary and undecodable files always are. Silence
with `--ignore TFC900` or `ignore = ["TFC900"]` in `[tool.tfclip-migrate]`.

## Fix safety
No fix: the file is never modified.
"""

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130

_POSITION = re.compile(r"\(line (\d+), column (\d+)\)")


# --------------------------------------------------------------------------------------
# per-file processing (runs in worker processes)


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


def _split_lines(text: str) -> List[str]:
    # Only "\n" ends a line for patch(1); str.splitlines would also split on \x0c etc.
    parts = re.split(r"(?<=\n)", text)
    return parts[:-1] if parts and parts[-1] == "" else parts


def unified_diff(old: str, new: str, path: str) -> str:
    """A unified diff applicable with ``patch -p0`` (marks a missing final newline)."""
    import difflib

    out = []
    for line in difflib.unified_diff(_split_lines(old), _split_lines(new), fromfile=path, tofile=path):
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
    return "".join(out)


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
        nb = _files.load_notebook(data)
    except _files.NotebookError as exc:
        _skip(settings, report, exc.reason)
        return None
    if _files.notebook_language(nb) != "python":
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
        masked = _files.mask_ipython(source)
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


def _decode_for_diff(data: bytes, notebook: bool) -> str:
    if not notebook:
        from codemods._core import SourceError, decode_source

        try:
            return decode_source(data)[0]
        except SourceError:
            pass
    return data.decode("utf-8", errors="replace")


def process(settings: Settings, target: Target, data: Optional[bytes] = None) -> FileReport:
    """Read, migrate and (per ``settings``) write one file; never raises."""
    report = FileReport(display=target.display)
    try:
        if data is None:
            try:
                data = _files.read_bytes(target.real)
            except OSError as exc:
                return _skip(settings, report, f"cannot read: {exc.strerror or exc}")
        handler = _process_notebook if target.notebook else _process_python
        new = handler(settings, target.display, data, report)
        if new is not None and new != data:
            report.status = "changed"
            if settings.diff:
                report.diff = unified_diff(
                    _decode_for_diff(data, target.notebook), _decode_for_diff(new, target.notebook), target.display
                )
            elif settings.write:
                try:
                    _files.atomic_write(target.real, new)
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


def _iter_reports(settings: Settings, targets: Sequence[Target], jobs: int) -> Iterator[FileReport]:
    """Reports in the order of ``targets``, from ``jobs`` worker processes."""
    if jobs <= 1 or len(targets) < 2:
        for target in targets:
            yield process(settings, target)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    # fork: workers inherit the loaded engine (and the rule registry) instead of
    # re-importing it; elsewhere the platform default.
    context = multiprocessing.get_context("fork") if sys.platform.startswith("linux") else None
    workers = min(jobs, len(targets))
    chunksize = max(1, min(32, len(targets) // (workers * 4)))
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        yield from pool.map(partial(process, settings), targets, chunksize=chunksize)


# --------------------------------------------------------------------------------------
# output helpers


def _write(stream: IO[str], text: str) -> None:
    try:
        stream.write(text)
    except UnicodeEncodeError:  # a path or message the terminal cannot show
        encoding = getattr(stream, "encoding", None) or "utf-8"
        stream.write(text.encode(encoding, "backslashreplace").decode(encoding))


def _write_bytes(stream: IO[str], data: bytes) -> None:
    buffer = getattr(stream, "buffer", None)
    if buffer is None:
        stream.write(data.decode("utf-8", errors="surrogateescape"))
        return
    stream.flush()
    buffer.write(data)
    buffer.flush()


class _Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    def __init__(self, total: int, stream: IO[str], enabled: bool) -> None:
        self.total = total
        self.stream = stream
        self.enabled = enabled and total > 1
        self.done = 0
        self._last = 0.0

    def clear(self) -> None:
        if self.enabled:
            self.stream.write("\r\x1b[K")

    def draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < 0.1 and self.done < self.total:
            return
        self._last = now
        width = 30
        filled = width * self.done // self.total
        self.stream.write(f"\r{PROG} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}")
        self.stream.flush()

    def step(self) -> None:
        self.done += 1
        self.draw()


# --------------------------------------------------------------------------------------
# argument parsing


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Find and migrate TensorFlow 1 gradient-clipping code (tfclip-compat).",
        epilog="Exit codes: 0 nothing to report, 1 findings or files rewritten, 2 usage or internal error.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="{check,fix,rules}")

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("paths", nargs="+", metavar="PATH", help="files or directories; `-` reads stdin")
    common.add_argument("--select", action="append", default=None, metavar="CODES",
                        help="comma-separated rule codes or prefixes to enable (default: all)")
    common.add_argument("--ignore", action="append", default=None, metavar="CODES",
                        help="comma-separated rule codes or prefixes to disable")
    common.add_argument("--unsafe-fixes", action="store_true", help="also apply fixes that may change numerics or drop comments")
    common.add_argument("--add-clip-norm", type=_positive_float, default=None, metavar="X",
                        help="clip norm to add where a rule can add clipping")
    common.add_argument("--jobs", "-j", type=_jobs, default=None, metavar="N",
                        help="worker processes (default: number of CPUs; 1 = in-process)")
    common.add_argument("--format", choices=("text", "json"), default="text", help="findings format on stdout")
    common.add_argument("--config", metavar="PYPROJECT", default=None,
                        help="read [tool.tfclip-migrate] from this file instead of the nearest pyproject.toml")
    common.add_argument("--isolated", action="store_true", help="ignore every pyproject.toml")
    common.add_argument("--stdin-filename", default=None, metavar="NAME",
                        help="name used for `-` in messages (a .ipynb name reads a notebook)")
    common.add_argument("--quiet", "-q", action="store_true", help="no summary, progress or `Rewriting` lines")

    sub.add_parser("check", parents=[common], help="report findings; never writes",
                   description="Report findings as path:line:col: CODE message; never writes.")
    fix = sub.add_parser("fix", parents=[common], help="apply fixes in place",
                         description="Apply fixes in place (safe ones; --unsafe-fixes for all).")
    fix.add_argument("--diff", action="store_true", help="print a unified diff of the fixes; write nothing")
    fix.add_argument("--exit-zero-even-if-changed", action="store_true",
                     help="exit 0 when files were rewritten (remaining findings still exit 1)")
    rules = sub.add_parser("rules", help="list the rules, or print one rule's documentation")
    rules.add_argument("code", nargs="?", default=None, metavar="CODE")
    rules.add_argument("--format", choices=("text", "json"), default="text")
    return parser


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0 (0 = number of CPUs), got {value}")
    return value


def _default_jobs() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


# --------------------------------------------------------------------------------------
# commands


def _may_contain_targets(text: str, options: "Options") -> bool:
    """The text pre-filter. Until the rules are loaded (the first file that passes loads them)
    it is read from the libcst-free table in ``codemods._core``, so a run over files without
    any candidate token never imports libcst; tests/test_prefilter.py keeps the two equal."""
    if "codemods._registry" not in sys.modules:
        from codemods._core import may_contain_targets_static

        return may_contain_targets_static(text, options)
    from codemods.api import may_contain_targets

    return may_contain_targets(text, options)


def _rules():
    """The registered rules (read at call time, so tests can swap the registry)."""
    from codemods import api

    return tuple(api.RULES)


def _known_codes() -> List[str]:
    return [rule.CODE for rule in _rules()] + [UNPARSABLE_CODE]


def _check_codes(codes: Iterable[str], flag: str) -> None:
    codes = list(codes)
    if not codes:
        return
    known = _known_codes()
    for code in codes:
        if not any(k.startswith(code) for k in known):
            raise UsageError(
                f"{flag}: unknown rule code or prefix {code!r} (known: {', '.join(known)}; see `{PROG} rules`)"
            )


def _summary_of(rule) -> str:
    return rule.SUMMARY or (rule.__doc__ or "").strip().split("\n", 1)[0]


def _cmd_rules(args: argparse.Namespace, out: IO[str]) -> int:
    import inspect

    entries = [(r.CODE, r.NAME, _summary_of(r), inspect.cleandoc(r.__doc__ or "")) for r in _rules()]
    entries.append((UNPARSABLE_CODE, UNPARSABLE_NAME, UNPARSABLE_SUMMARY, UNPARSABLE_DOC.rstrip()))
    if args.code is not None:
        wanted = args.code.strip().upper()
        for code, name, summary, doc in entries:
            if code == wanted:
                if args.format == "json":
                    _write(out, json.dumps({"code": code, "name": name, "summary": summary, "doc": doc}, indent=2) + "\n")
                else:
                    _write(out, f"{code} ({name})\n\n{doc or summary}\n")
                return EXIT_OK
        raise UsageError(f"unknown rule {args.code!r} (known: {', '.join(e[0] for e in entries)})")
    if args.format == "json":
        rows = [{"code": c, "name": n, "summary": s} for c, n, s, _ in entries]
        _write(out, json.dumps(rows, indent=2) + "\n")
        return EXIT_OK
    width = max(len(n) for _, n, _, _ in entries)
    for code, name, summary, _ in entries:
        _write(out, f"{code}  {name:<{width}}  {summary}\n")
    return EXIT_OK


def _resolve_config(args: argparse.Namespace, paths: Sequence[str]) -> Config:
    if args.isolated:
        return Config()
    if args.config is not None:
        if not os.path.isfile(args.config):
            raise UsageError(f"--config: {args.config}: no such file")
        return _files.load_config(args.config)
    starts: List[str] = []
    existing = [os.path.abspath(p) for p in paths if p != "-" and os.path.lexists(p)]
    if existing:
        try:
            common = os.path.commonpath(existing)
        except ValueError:
            common = existing[0]
        starts.append(common if os.path.isdir(common) else os.path.dirname(common))
    if args.stdin_filename:
        starts.append(os.path.dirname(os.path.abspath(args.stdin_filename)))
    starts.append(os.getcwd())
    return _files.load_config(_files.find_pyproject(starts))


def _options(args: argparse.Namespace, config: Config) -> Tuple["Options", bool]:
    from codemods._core import Options

    select = _files.split_codes(args.select) if args.select is not None else config.select
    ignore = _files.split_codes(args.ignore) if args.ignore is not None else config.ignore
    if select is not None:
        _check_codes(select, "--select" if args.select is not None else f"{config.path}: select")
    _check_codes(ignore, "--ignore" if args.ignore is not None else f"{config.path}: ignore")
    options = Options(
        select=frozenset(select) if select is not None else None,
        ignore=frozenset(ignore),
        unsafe_fixes=args.unsafe_fixes,
        add_clip_norm=args.add_clip_norm,
        apply_fixes=args.command == "fix",
    )
    return options, _code_enabled(UNPARSABLE_CODE, options)


def _code_enabled(code: str, options: "Options") -> bool:
    # Same prefix semantics as the engine ("TFC" selects all, "TFC00" TFC001..TFC009).
    if options.select is not None and not any(code.startswith(p) for p in options.select):
        return False
    return not any(code.startswith(p) for p in options.ignore)


def _cmd_migrate(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    fix = args.command == "fix"
    diff = fix and args.diff
    if args.format == "json" and diff:
        raise UsageError("--diff and --format json both write to stdout; use one of them")
    stdin_mode = "-" in args.paths
    if stdin_mode and len(args.paths) > 1:
        raise UsageError("`-` (stdin) cannot be combined with other paths")
    config = _resolve_config(args, args.paths)
    options, report_unparsable = _options(args, config)
    settings = Settings(
        options=options,
        write=fix and not diff and not stdin_mode,
        diff=diff,
        keep_output=stdin_mode,
        report_unparsable=report_unparsable,
    )

    if stdin_mode:
        return _run_stdin(args, settings, out, err)

    found = _files.discover(args.paths, config)
    had_error = False
    for path, message in found.errors:
        _write(err, f"{PROG}: error: {path}: {message}\n")
        had_error = True
    for path, reason in found.skipped:
        _write(err, f"{path}: skipped: {reason}\n")

    jobs = args.jobs if args.jobs else _default_jobs()
    progress = _Progress(len(found.targets), err, enabled=not args.quiet and _isatty(err))
    findings_stream = err if diff else out
    reports: List[FileReport] = []
    progress.draw(force=True)
    for report in _iter_reports(settings, found.targets, jobs):
        reports.append(report)
        progress.clear()
        if report.status == "error":
            had_error = True
            _write(err, f"{PROG}: error: {report.display}: {report.reason}\n")
        if report.status == "changed":
            if diff:
                _write(out, report.diff or "")
            elif fix and not args.quiet:
                _write(err, f"Rewriting {report.display}\n")
        if args.format == "text":
            for finding in report.findings:
                if not finding.diagnostic.applied:
                    _write(findings_stream, finding.format() + "\n")
        progress.step()
    progress.clear()
    if args.format == "json":
        rows = [finding.to_json() for report in reports for finding in report.findings]
        _write(out, json.dumps(rows, indent=2) + "\n")
    if not args.quiet:
        _write(err, _summary(args, reports, found))
    return _exit_code(args, reports, had_error)


def _isatty(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _run_stdin(args: argparse.Namespace, settings: Settings, out: IO[str], err: IO[str]) -> int:
    display = args.stdin_filename or "-"
    stdin = sys.stdin
    data = stdin.buffer.read() if hasattr(stdin, "buffer") else stdin.read().encode("utf-8")
    target = Target(display=display, real=display, notebook=display.endswith(_files.NOTEBOOK_SUFFIX))
    report = process(settings, target, data=data)
    fix = args.command == "fix"
    if report.status == "error":
        _write(err, f"{PROG}: error: {display}: {report.reason}\n")
    if fix and settings.diff:
        _write(out, report.diff or "")
    elif fix:
        _write_bytes(out, report.output if report.output is not None else data)
    findings_stream = err if fix else out
    if args.format == "json":
        _write(findings_stream, json.dumps([f.to_json() for f in report.findings], indent=2) + "\n")
    else:
        for finding in report.findings:
            if not finding.diagnostic.applied:
                _write(findings_stream, finding.format() + "\n")
    return _exit_code(args, [report], report.status == "error")


def _exit_code(args: argparse.Namespace, reports: Sequence[FileReport], had_error: bool) -> int:
    if had_error:
        return EXIT_ERROR
    remaining = any(not f.diagnostic.applied for r in reports for f in r.findings)
    if remaining:
        return EXIT_FINDINGS
    if args.command == "fix" and not args.exit_zero_even_if_changed:
        if any(r.status == "changed" for r in reports):
            return EXIT_FINDINGS
    return EXIT_OK


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _summary(args: argparse.Namespace, reports: Sequence[FileReport], found: _files.Discovery) -> str:
    """The final stderr summary: files, findings by code, fixes available."""
    from codemods._core import FixSafety

    fix = args.command == "fix"
    diff = fix and args.diff
    counts = Counter(r.status for r in reports)
    skipped = counts["skipped"] + len(found.skipped)
    scanned = len(reports) + len(found.skipped)
    parsed = sum(r.parsed for r in reports)
    changed_word = "would be rewritten" if diff else "rewritten"
    changed = counts["changed"] if fix else 0
    parts = [f"{changed} {changed_word}", f"{counts['unchanged']} unchanged", f"{skipped} skipped"]
    if counts["error"]:
        parts.append(f"{counts['error']} failed")
    line = f"{PROG} {args.command}: {_plural(scanned, 'file')} scanned: {', '.join(parts)}"
    extras = [f"{parsed} parsed, {len(reports) - parsed} ruled out by the text pre-filter"]
    if found.excluded:
        extras.append(f"{found.excluded} excluded by config")
    if found.symlinks_not_followed:
        extras.append(f"{_plural(found.symlinks_not_followed, 'symlink')} not followed")
    lines = [f"{line} ({'; '.join(extras)})"]

    by_code: Counter = Counter()
    fixed: Counter = Counter()
    safe_left = unsafe_left = 0
    for report in reports:
        for finding in report.findings:
            diag = finding.diagnostic
            by_code[diag.code] += 1
            if diag.applied:
                fixed[diag.code] += 1
            elif diag.fix is FixSafety.SAFE:
                safe_left += 1
            elif diag.fix is FixSafety.UNSAFE:
                unsafe_left += 1
    if by_code:
        items = []
        for code in sorted(by_code):
            item = f"{code} x{by_code[code]}"
            if fixed[code]:
                item += f" ({fixed[code]} fixed)" if not diff else f" ({fixed[code]} fixable)"
            items.append(item)
        lines.append("findings: " + ", ".join(items))
    else:
        lines.append("findings: none")
    if safe_left:
        lines.append(f"{_plural(safe_left, 'safe fix')} available: run `{PROG} fix`")
    if unsafe_left:
        lines.append(f"{_plural(unsafe_left, 'unsafe fix')} available: add --unsafe-fixes (review the result)")
    return "".join(f"{line}\n" for line in lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run ``tfclip-migrate`` with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    out, err = sys.stdout, sys.stderr
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    if args.version:
        from importlib.metadata import PackageNotFoundError, version

        try:
            _write(out, f"{PROG} {version('tfclip-compat')}\n")
        except PackageNotFoundError:
            _write(out, f"{PROG} (not installed)\n")
        return EXIT_OK
    if args.command is None:
        parser.print_usage(err)
        _write(err, f"{PROG}: error: a command is required: check, fix or rules\n")
        return EXIT_ERROR
    try:
        if args.command == "rules":
            return _cmd_rules(args, out)
        return _cmd_migrate(args, out, err)
    except UsageError as exc:
        _write(err, f"{PROG}: error: {exc}\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        _write(err, f"\n{PROG}: interrupted; files already rewritten were written atomically\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `tfclip-migrate check . | head`
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
        except OSError:
            pass
        return EXIT_FINDINGS
    except Exception as exc:  # a bug or a dead worker process: exit 2 with one clear line
        _write(err, f"{PROG}: internal error: {type(exc).__name__}: {exc} (rerun with --jobs 1 to narrow it down)\n")
        return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
