"""``tfclip-migrate``: check, fix and list the tfclip-compat migration rules.

::

    tfclip-migrate check PATH...        # findings as path:line:col: CODE message
    tfclip-migrate fix PATH... [--diff] # rewrite in place (or print a unified diff)
    tfclip-migrate fix -                # stdin -> stdout
    tfclip-migrate rules [CODE]         # list the rules / print one rule's documentation

This module is the command line only: arguments, configuration, exit codes. The work is
done by ``_discovery`` (which files), ``_runner`` / ``_pool`` / ``_process`` (processing,
signals), ``_writes`` (safe writes), ``_notebooks`` and ``_report`` (output). The full
reference is docs/cli.md.

Exit codes follow ruff and pyupgrade: 0 nothing to report, 1 findings (``check``) or a
file rewritten / findings remaining (``fix``), 2 usage error or any named input that could
not be processed or written; 130 / 143 / 129 after SIGINT / SIGTERM / SIGHUP. Never
imports TensorFlow; libcst is imported only once a file needs parsing.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import IO, TYPE_CHECKING, Iterable, Optional, Sequence, Tuple

from codemods.cli import config as _config

from codemods.cli import discovery as _discovery

from codemods.cli import formats as _formats
from codemods.cli import signals as _signals
from codemods.cli.config import Config, UsageError
from codemods.cli.report import PROG, Reporter
from codemods.cli.report import write as _write
from codemods.rules.tfc900_unparsable_file import UnparsableFile

if TYPE_CHECKING:  # pragma: no cover
    from codemods.cli.process import Settings
    from codemods.api import Options

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130

# --------------------------------------------------------------------------------------
# argument parsing


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error raises :class:`UsageError` (so ``--format json`` can
    report it as JSON) instead of printing and exiting."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(message, self.format_usage())


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Find and migrate TensorFlow 1 gradient-clipping code (tfclip-compat).",
        epilog="Exit codes: 0 nothing to report, 1 findings or files rewritten, 2 usage error or an input "
        "that could not be processed or written, 130/143/129 interrupted by SIGINT/SIGTERM/SIGHUP.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="{check,fix,rules}", parser_class=_Parser)

    common = _Parser(add_help=False)
    common.add_argument("paths", nargs="+", metavar="PATH", help="files or directories; `-` reads stdin")
    common.add_argument("--select", action="append", default=None, metavar="CODES",
                        help="comma-separated rule codes or prefixes to enable (default: all)")
    common.add_argument("--ignore", action="append", default=None, metavar="CODES",
                        help="comma-separated rule codes or prefixes to disable")
    common.add_argument("--add-clip-norm", type=_positive_float, default=None, metavar="X",
                        help="clip norm to add where a rule can add clipping")
    common.add_argument("--jobs", "-j", type=_jobs, default=None, metavar="N",
                        help="worker processes, >= 1 (default: number of CPUs; 1 = in-process)")
    common.add_argument("--output-format", "--format", dest="format", choices=_formats.FORMATS, default="text",
                        help="text lines; one JSON, SARIF 2.1.0 or JUnit XML document on stdout; or GitHub "
                        "workflow annotations (see docs/cli.md)")
    common.add_argument("--statistics", action="store_true",
                        help="print the number of findings per rule instead of the findings (text format)")
    common.add_argument("--exit-zero", action="store_true",
                        help="exit 0 even when findings remain or files were rewritten (errors still exit 2)")
    common.add_argument("--show-fixes", action="store_true",
                        help="list on stderr, per file, the findings fixed (fix) or fixable (check)")
    common.add_argument("--extend-exclude", action="append", default=None, metavar="GLOBS",
                        help="comma-separated globs to exclude on top of the config's `exclude` and "
                        "`extend-exclude`; repeatable")
    common.add_argument("--report-file", default=None, metavar="PATH",
                        help="write a Markdown migration report: per file what was rewritten, what was left "
                        "and why, the reasons ranked by count")
    common.add_argument("--max-file-size", type=_size, default=None, metavar="SIZE",
                        help="largest Python source analysed, e.g. 4M or 512K; 0 = no limit (default: 1M)")
    common.add_argument("--config", metavar="PYPROJECT", default=None,
                        help="read [tool.tfclip-migrate] from this file instead of the nearest pyproject.toml")
    common.add_argument("--isolated", action="store_true", help="ignore every pyproject.toml")
    common.add_argument("--stdin-filename", default=None, metavar="NAME",
                        help="name used for `-` in messages (a .ipynb name reads a notebook)")
    common.add_argument("--quiet", "-q", action="store_true", help="no summary, progress or `Rewriting` lines")
    common.add_argument("--no-cache", action="store_true",
                        help="neither read nor write the result cache (default: $TFCLIP_MIGRATE_CACHE_DIR, "
                        "else ~/.cache/tfclip-migrate)")

    check = sub.add_parser("check", parents=[common], help="report findings; never writes",
                           description="Report findings as path:line:col: CODE message; never writes.")
    check.add_argument("--unsafe-fixes", action="store_true",
                       help="report as `fix --unsafe-fixes` would: unsafe fixes count as available fixes "
                       "(--statistics, --show-fixes) and a notebook's are tried for write-back like safe ones; "
                       "check never writes")
    check.add_argument("--diff", action="store_true", help=argparse.SUPPRESS)  # a usage error with a hint
    fix = sub.add_parser("fix", parents=[common], help="apply fixes in place",
                         description="Apply fixes in place (safe ones; --unsafe-fixes for all).")
    fix.add_argument("--unsafe-fixes", action="store_true",
                     help="also apply fixes that may change numerics or drop comments")
    fix.add_argument("--diff", action="store_true",
                     help="print a unified diff of the fixes and write nothing (with --format json: in the document)")
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
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1 (omit --jobs for the number of CPUs), got {value}")
    return value


def _size(text: str) -> int:
    try:
        return _config.parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _default_jobs() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def _wants_json(argv: Sequence[str]) -> bool:
    """``--format json`` / ``--output-format json`` anywhere in ``argv`` (read before parsing,
    for usage errors)."""
    for i, arg in enumerate(argv):
        for flag in ("--format", "--output-format"):
            if arg == f"{flag}=json" or (arg == flag and i + 1 < len(argv) and argv[i + 1] == "json"):
                return True
    return False


# --------------------------------------------------------------------------------------
# rules and options


def _documented(rules: Optional[Sequence[type]]) -> Tuple[type, ...]:
    """The rules ``rules`` lists (``main(rules=...)``; default: the package's), then TFC900."""
    if rules is None:
        from codemods.engine import registry as _registry

        return tuple(_registry.DOCUMENTED)
    return tuple(rules) + (UnparsableFile,)


def _check_codes(codes: Iterable[str], flag: str, rules: Optional[Sequence[type]]) -> None:
    codes = list(codes)
    if not codes:
        return
    from codemods.engine import registry as _registry

    known = _registry.known_codes(rules)  # from the static index: no libcst
    for code in codes:
        if not any(k.startswith(code) for k in known):
            raise UsageError(
                f"{flag}: unknown rule code or prefix {code!r} (known: {', '.join(known)}; see `{PROG} rules`)"
            )


def _summary_of(rule) -> str:
    return rule.SUMMARY or (rule.__doc__ or "").strip().split("\n", 1)[0]


def _cmd_rules(args: argparse.Namespace, out: IO[str]) -> int:
    import inspect
    import json

    entries = [(r.CODE, r.NAME, _summary_of(r), inspect.cleandoc(r.__doc__ or "")) for r in _documented(args.rules)]
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


def _options(args: argparse.Namespace, config: Config) -> "Options":
    from codemods.engine.core import Options

    if args.select is not None:
        select: Optional[Tuple[str, ...]] = _config.split_codes(args.select)
        if not select:
            raise UsageError(
                "--select: empty rule selection: no rule would run (omit --select for all rules, or "
                "use --ignore to turn rules off)"
            )
    else:
        select = config.select
    ignore = _config.split_codes(args.ignore) if args.ignore is not None else config.ignore
    if select is not None:
        _check_codes(select, "--select" if args.select is not None else f"{config.path}: select", args.rules)
    _check_codes(ignore, "--ignore" if args.ignore is not None else f"{config.path}: ignore", args.rules)
    return Options(
        select=frozenset(select) if select is not None else None,
        ignore=frozenset(ignore),
        unsafe_fixes=args.unsafe_fixes,
        add_clip_norm=args.add_clip_norm,
        apply_fixes=args.command == "fix",
    )


def _settings(args: argparse.Namespace, config: Config, diff: bool, stdin: bool = False) -> "Settings":
    from codemods.cli import cache as _cache
    from codemods.engine.core import enabled
    from codemods.cli.process import DEFAULT_MAX_SIZE, Settings

    options = _options(args, config)
    if args.max_file_size is not None:
        max_size = args.max_file_size
    elif config.max_file_size is not None:
        max_size = config.max_file_size
    else:
        max_size = DEFAULT_MAX_SIZE
    report_unparsable = enabled(UnparsableFile.CODE, options)
    edits = args.command == "check" and args.format in ("json", "sarif")  # each fix's edit, as `fix` would write it
    cache = None
    # The cache key covers the package's own sources: rules passed by a caller are not cached.
    # `fix` never consults it: a cached result must never stand in for a write (or a diff).
    if not args.no_cache and args.rules is None and not stdin and args.command != "fix":
        cache = _cache.Cache(_cache.default_dir(), _cache.settings_text(
            options, diff=diff, report_unparsable=report_unparsable, max_size=max_size, edits=edits))
    return Settings(
        options=options,
        diff=diff,
        report_unparsable=report_unparsable,
        max_size=max_size,
        rules=None if args.rules is None else tuple(args.rules),
        cache=cache,
        edits=edits,
    )


# --------------------------------------------------------------------------------------
# check / fix


def _mode(args: argparse.Namespace) -> str:
    if "-" in args.paths:
        return "stdin"
    if args.command == "fix":
        return "diff" if args.diff else "write"
    return "check"


def _cmd_migrate(args: argparse.Namespace, reporter: Reporter, err: IO[str]) -> int:
    from codemods.cli import runner as _runner

    if "-" in args.paths and len(args.paths) > 1:
        raise UsageError("`-` (stdin) cannot be combined with other paths")
    config = _config.resolve(args.paths, isolated=args.isolated, explicit=args.config,
                             stdin_filename=args.stdin_filename)
    if args.extend_exclude:
        config = _config.with_extend_exclude(config, _config.split_globs(args.extend_exclude))
    for warning in config.warnings:
        reporter.warning(warning)
    reporter.config_path = config.path
    settings = _settings(args, config, diff=reporter.mode == "diff", stdin=reporter.mode == "stdin")
    settings = _usable_cache(settings, reporter)
    if reporter.mode == "stdin":
        return _run_stdin(args, settings, reporter)

    found = _discovery.discover(args.paths, config)
    for path, message in found.errors + found.unreadable:
        reporter.error(path, message)
    for path, reason in found.skipped:
        reporter.skip(path, reason)
    progress = _runner.Progress(len(found.targets), err, enabled=not args.quiet and _isatty(err))
    tree = None
    if settings.cache is not None:
        from codemods.cli import cache as _cache

        if _cache.uses_tree(args.paths, len(found.targets)):
            tree = settings.cache.tree(args.paths)
    result = _runner.run(
        settings,
        found.targets,
        jobs=args.jobs if args.jobs is not None else _default_jobs(),
        write=reporter.mode == "write",
        on_report=reporter.file,
        progress=progress,
        tree=tree,
    )
    reporter.not_processed(result.not_processed)
    interrupted = result.interrupted
    code = interrupted.exit_code if interrupted else _exit_code(args, reporter)
    _signals.stop_raising()  # a signal now cannot cut the summary / document short
    reporter.finish(
        found,
        code,
        interrupted=interrupted.name if interrupted else None,
        not_processed=len(result.not_processed),
    )
    if reporter.document_failed:
        return EXIT_ERROR
    return code if interrupted else _exit_code(args, reporter)


def _usable_cache(settings: "Settings", reporter: Reporter) -> "Settings":
    """``settings`` without the cache when its directory must not be trusted (a warning says why)."""
    if settings.cache is None:
        return settings
    from codemods.cli import cache as _cache

    reason = _cache.unusable(settings.cache.directory)
    if reason is None:
        return settings
    import dataclasses

    reporter.warning(f"{reason}: running without the cache")
    return dataclasses.replace(settings, cache=None)


def _isatty(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _run_stdin(args: argparse.Namespace, settings: "Settings", reporter: Reporter) -> int:
    from codemods.cli.discovery import NOTEBOOK_SUFFIX, Target
    from codemods.cli.process import process

    display = args.stdin_filename or "-"
    stdin = sys.stdin
    try:
        if stdin is None:  # `fix - <&-`: Python found no fd 0
            raise OSError(0, "stdin is closed")
        data = stdin.buffer.read() if hasattr(stdin, "buffer") else stdin.read().encode("utf-8")
    except (OSError, ValueError) as exc:
        reporter.error("-", f"cannot read stdin: {getattr(exc, 'strerror', None) or exc}")
        _signals.stop_raising()
        reporter.finish(None, EXIT_ERROR, summary=False)
        return EXIT_ERROR
    target = Target(display=display, real=display, notebook=display.endswith(NOTEBOOK_SUFFIX))
    report = process(settings, target, data=data)
    if args.command == "fix":  # stdout: the code, fixed or as it came (never lost)
        reporter.stdout_bytes(report.new if report.status == "changed" and report.new is not None else data)
    reporter.file(report)
    code = _exit_code(args, reporter)
    _signals.stop_raising()
    reporter.finish(None, code)
    return EXIT_ERROR if reporter.document_failed else _exit_code(args, reporter)


def _exit_code(args: argparse.Namespace, reporter: Reporter) -> int:
    if reporter.errors:
        return EXIT_ERROR
    if getattr(args, "exit_zero", False):
        return EXIT_OK
    if reporter.tally.unapplied:
        return EXIT_FINDINGS
    if args.command == "fix" and not getattr(args, "exit_zero_even_if_changed", False):
        if reporter.tally.changed:
            return EXIT_FINDINGS
    return EXIT_OK


# --------------------------------------------------------------------------------------
# main


def main(argv: Optional[Sequence[str]] = None, *, rules: Optional[Sequence[type]] = None,
         own_process: bool = False) -> int:
    """Run ``tfclip-migrate`` with ``argv`` (default ``sys.argv[1:]``); return the exit code.

    ``rules``: the rule classes to run and list instead of the package's (tests, embedders).
    ``own_process``: the process exits right after (:func:`codemods.cli.console`): the signal
    handlers stay installed, recording only, instead of being restored.
    """
    out, err = sys.stdout, sys.stderr
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _build_parser()
    reporter = Reporter(out, err, command=None, json_format=_wants_json(argv))
    with _signals.handling(restore=not own_process):  # from start-up on: a signal always ends in a summary / a document
        try:
            code = _main(argv, parser, reporter, out, err, rules)
        except _signals.Interrupted as exc:  # a signal in an error path, before the output was complete
            code = exc.exit_code if reporter.finished else _interrupted(reporter, exc)
        _signals.stop_raising()  # the output is complete: a late signal changes nothing now
        if own_process:
            _signals.block_until_exit()
        return code


def _interrupted(reporter: Reporter, interrupted: "_signals.Interrupted") -> int:
    """The end of a run a signal stopped before it processed any file."""
    _signals.stop_raising()
    reporter.error(None, f"interrupted by {interrupted.name} before any file was written")
    reporter.finish(None, interrupted.exit_code, interrupted=interrupted.name, summary=False)
    return EXIT_ERROR if reporter.document_failed else interrupted.exit_code


def _main(argv: Sequence[str], parser: argparse.ArgumentParser, reporter: Reporter, out: IO[str], err: IO[str],
          rules: Optional[Sequence[type]]) -> int:
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help / --version printed by argparse
            return exc.code if isinstance(exc.code, int) else EXIT_ERROR
        args.rules = rules
        from codemods.engine import registry as _registry

        _registry.INDEX_ON_DISK = not getattr(args, "no_cache", False)  # --no-cache: no cache file of any kind
        if args.version:
            return _version(out)
        if args.command is None:
            raise UsageError("a command is required: check, fix or rules", parser.format_usage())
        reporter.command = args.command
        if args.command == "rules":
            return _cmd_rules(args, out)
        reporter.json = args.format == "json"
        reporter.mode = _mode(args)
        reporter.quiet = args.quiet
        reporter.extra = _outputs(args, reporter)
        return _cmd_migrate(args, reporter, err)
    except (KeyboardInterrupt, _signals.Interrupted) as exc:  # before the run (the run handles its own)
        interrupted = exc if isinstance(exc, _signals.Interrupted) else _signals.Interrupted(2)
        if reporter.finished:  # the summary / document is out: nothing more to say
            return interrupted.exit_code
        return _interrupted(reporter, interrupted)
    except UsageError as exc:
        usage = exc.args[1] if len(exc.args) > 1 else ""
        if usage and not reporter.json:
            _write(err, usage)
        reporter.error(None, str(exc.args[0]))
        _signals.stop_raising()
        reporter.finish(None, EXIT_ERROR, summary=False)
        return EXIT_ERROR
    except Exception as exc:  # a bug: exit 2 with one clear line (and valid JSON)
        from codemods.cli.process import describe_internal_error

        reporter.error(None, f"internal error: {describe_internal_error(exc)} (rerun with --jobs 1 to narrow it down)")
        if not reporter.finished:
            _signals.stop_raising()
            reporter.finish(None, EXIT_ERROR, summary=False)
        return EXIT_ERROR


def _outputs(args: argparse.Namespace, reporter: Reporter) -> Optional[_formats.Outputs]:
    """The formats and reports beyond text and JSON (``codemods.cli.formats``), checked."""
    if args.command == "check" and args.diff:
        raise UsageError("`check` never writes and prints no diff: use `fix --diff` to see the fixes as a diff "
                         "(it writes nothing)")
    if args.statistics and args.format != "text":
        raise UsageError(f"--statistics prints a text table; with --output-format {args.format} the counts are "
                         "in the document (JSON: summary.findings_by_code)")
    if args.format in ("github", "sarif", "junit") and reporter.mode in ("diff", "stdin"):
        what = "--diff" if reporter.mode == "diff" else "`-` (stdin)"
        raise UsageError(f"--output-format {args.format} cannot be combined with {what}: use text or json")
    color = args.format == "text" and _formats.color_enabled(reporter.main_stream)
    if args.format in ("text", "json") and not (color or args.statistics or args.show_fixes or args.report_file):
        return None
    return _formats.Outputs(args.format, color=color, statistics=args.statistics, show_fixes=args.show_fixes,
                            report_file=args.report_file, unsafe_fixes=args.unsafe_fixes, rules=args.rules)


def _version(out: IO[str]) -> int:
    from importlib.metadata import PackageNotFoundError, version

    try:
        _write(out, f"{PROG} {version('tfclip-compat')}\n")
    except PackageNotFoundError:
        _write(out, f"{PROG} (not installed)\n")
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(own_process=True))
