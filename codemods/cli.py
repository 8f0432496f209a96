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
import json
import math
import os
import sys
from typing import IO, TYPE_CHECKING, Iterable, List, Optional, Sequence, Tuple

from codemods import _config, _discovery, _report, _runner
from codemods._config import Config, UsageError
from codemods._discovery import Target
from codemods._process import FileReport, Settings, process
from codemods._report import PROG
from codemods._report import write as _write
from codemods._report import write_bytes as _write_bytes
from codemods.tfc900_unparsable_file import UnparsableFile

if TYPE_CHECKING:  # pragma: no cover
    from codemods.api import Options

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130

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


def _rules():
    """The registered rules (read at call time, so tests can swap the registry)."""
    from codemods import api

    return tuple(api.RULES)


def _known_codes() -> List[str]:
    return [rule.CODE for rule in _rules()] + [UnparsableFile.CODE]


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
    tfc900 = UnparsableFile
    entries.append((tfc900.CODE, tfc900.NAME, tfc900.SUMMARY, inspect.cleandoc(tfc900.__doc__ or "")))
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
        return _config.load_config(args.config)
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
    return _config.load_config(_config.find_pyproject(starts))


def _options(args: argparse.Namespace, config: Config) -> Tuple["Options", bool]:
    from codemods._core import Options

    select = _config.split_codes(args.select) if args.select is not None else config.select
    ignore = _config.split_codes(args.ignore) if args.ignore is not None else config.ignore
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
    return options, _code_enabled(UnparsableFile.CODE, options)


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

    found = _discovery.discover(args.paths, config)
    had_error = False
    for path, message in found.errors:
        _write(err, f"{PROG}: error: {path}: {message}\n")
        had_error = True
    for path, reason in found.skipped:
        _write(err, f"{path}: skipped: {reason}\n")

    jobs = args.jobs if args.jobs else _default_jobs()
    progress = _runner.Progress(len(found.targets), err, enabled=not args.quiet and _isatty(err))
    findings_stream = err if diff else out
    reports: List[FileReport] = []
    progress.draw(force=True)
    for report in _runner.iter_reports(settings, found.targets, jobs):
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
        _write(err, _report.summary(args.command, diff, reports, found))
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
    target = Target(display=display, real=display, notebook=display.endswith(_discovery.NOTEBOOK_SUFFIX))
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
