"""Output formats for CI systems and editors, and the run's extra reports.

``--output-format`` (ruff's name; ``--format`` is kept) picks how findings are printed:

* ``text`` (default) and ``json``: :mod:`codemods.cli.report`;
* ``github``: one GitHub Actions workflow command per finding
  (``::error file=...,line=...,col=...,endLine=...,endColumn=...,title=CODE::message``), so a
  workflow shows each finding as an annotation on the pull request;
* ``sarif``: one SARIF 2.1.0 log (code scanning, editors' SARIF viewers);
* ``junit``: one JUnit XML document (test-report viewers): a test suite per file with
  findings, a failed test case per finding.

Also here: colour for text findings (:func:`color_enabled`), ``--statistics``, ``--show-fixes``
and the migration report (``--report-file``). Every finding is shown where the text format
shows it: a fix `fix` applied is no finding any more and appears in no format.

Notebooks: a finding's place is ``cell N, line M`` (the line within the cell). GitHub and SARIF
consumers place findings on lines of the file, which for a notebook are lines of its JSON, not
of a cell; so a notebook finding is a file-level annotation / result whose message starts with
``cell N, line M, col C:``, and SARIF keeps the cell position in the result's ``properties``.

Memory stays flat in the number of files, as in :mod:`codemods.cli.report`: each file's entries
are serialised as they come (spooled to disk past 256 KB), only counts are kept.

Imports neither libcst nor TensorFlow (rule documentation for SARIF is loaded at the end).
Longer than ~400 lines because it is every output beyond text and JSON: three formats and three
reports, each a few small functions (split it by format if one grows).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from typing import IO, TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from codemods.cli.spool import Spool, TextSpool

if TYPE_CHECKING:  # pragma: no cover
    from codemods.cli.results import FileReport, Finding

FORMATS = ("text", "json", "github", "sarif", "junit")
DOCUMENT_FORMATS = ("json", "sarif", "junit")  # one document on stdout
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"


# --------------------------------------------------------------------------------------
# colour


def color_enabled(stream: IO[str], environ: Optional[Dict[str, str]] = None) -> bool:
    """Colour on ``stream``: never when ``NO_COLOR`` is set and not empty (no-color.org: the
    user's standing wish wins), always when ``FORCE_COLOR`` is set and not empty, else only
    on a terminal that is not ``TERM=dumb``."""
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    try:
        tty = bool(stream.isatty())
    except (AttributeError, ValueError):
        tty = False
    return tty and env.get("TERM") != "dumb"


_BOLD, _RED, _CYAN, _RESET = "\x1b[1m", "\x1b[31m", "\x1b[36m", "\x1b[0m"


def colored(finding: "Finding") -> str:
    """``finding.format()`` with ruff's colours: the path bold, the code bold red, the fix
    marker cyan (the text, colours removed, is the same)."""
    from codemods.engine.core import FixSafety

    diag = finding.diagnostic
    where = diag.path if finding.cell is None else f"{diag.path}:cell {finding.cell}"
    marker = ""
    if not diag.applied and diag.fix is FixSafety.SAFE:
        marker = f" {_CYAN}[*]{_RESET}"
    elif not diag.applied and diag.fix is FixSafety.UNSAFE:
        marker = f" {_CYAN}[*unsafe]{_RESET}"
    return (f"{_BOLD}{where}{_RESET}:{diag.line}:{diag.col}: {_BOLD}{_RED}{diag.code}{_RESET}{marker} "
            f"{diag.message}")


# --------------------------------------------------------------------------------------
# helpers


def shown(report: "FileReport") -> List["Finding"]:
    """The findings every format shows: those no fix removed."""
    return [f for f in report.findings if not f.diagnostic.applied]


def where_in_cell(finding: "Finding") -> str:
    """``cell N, line M, col C`` (notebooks) or ``line M, col C``."""
    diag = finding.diagnostic
    place = f"line {diag.line}, col {diag.col}"
    return place if finding.cell is None else f"cell {finding.cell}, {place}"


def rule_names(rules: Optional[Sequence[type]] = None) -> Dict[str, str]:
    """Code -> rule name (from the static index when it is fresh: no libcst)."""
    from codemods.rules.tfc900_unparsable_file import UnparsableFile

    names = {UnparsableFile.CODE: UnparsableFile.NAME}
    if rules is not None:
        names.update({rule.CODE: rule.NAME for rule in rules})
        return names
    from codemods.engine import registry as _registry

    index = _registry.static_index()
    if index is not None:
        names.update({entry.code: entry.name for entry in index.entries})
    else:
        names.update({rule.CODE: rule.NAME for rule in _registry.default_rules()})
    return names


# --------------------------------------------------------------------------------------
# GitHub workflow commands


def _gh_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_property(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


def github_line(finding: "Finding") -> str:
    """One workflow command: ``::error file=P,line=L,col=C,endLine=..,endColumn=..,title=CODE::msg``
    (escaped as the runner expects). A notebook finding names no line: it is a file-level
    annotation whose message starts with the cell position."""
    diag = finding.diagnostic
    props = [f"file={_gh_property(diag.path)}"]
    message = diag.message
    if finding.cell is None:
        props += [f"line={diag.line}", f"col={diag.col}"]
        if diag.end_line is not None and diag.end_col is not None:
            props += [f"endLine={diag.end_line}", f"endColumn={diag.end_col}"]
    else:
        message = f"{where_in_cell(finding)}: {message}"
    props.append(f"title={_gh_property(diag.code)}")
    return f"::error {','.join(props)}::{_gh_data(f'{diag.code} {message}')}\n"


# --------------------------------------------------------------------------------------
# SARIF 2.1.0


def _uri(path: str) -> str:
    """A ``uri-reference``: a relative path as a relative reference, an absolute one as a
    ``file://`` URI (percent-encoded)."""
    from urllib.parse import quote

    if os.path.isabs(path):
        return "file://" + quote(path.replace(os.sep, "/"))
    return quote(path.replace(os.sep, "/"))


def sarif_result(finding: "Finding") -> Dict[str, Any]:
    """One SARIF ``result`` (§3.27) for a finding."""
    diag = finding.diagnostic
    location: Dict[str, Any] = {"artifactLocation": {"uri": _uri(diag.path)}}
    properties: Dict[str, Any] = {"fix": diag.fix.value}
    message = diag.message
    if finding.cell is None:
        region: Dict[str, Any] = {"startLine": diag.line, "startColumn": diag.col}
        if diag.end_line is not None and diag.end_col is not None:
            region.update(endLine=diag.end_line, endColumn=diag.end_col)
        location["region"] = region
    else:
        message = f"{where_in_cell(finding)}: {message}"
        properties.update(cell=finding.cell, line=diag.line, column=diag.col)
        if diag.end_line is not None:
            properties.update(endLine=diag.end_line, endColumn=diag.end_col)
    result: Dict[str, Any] = {
        "ruleId": diag.code,
        "level": "error",
        "message": {"text": message},
        "locations": [{"physicalLocation": location}],
        "properties": properties,
    }
    if diag.edits:  # the edit `fix` would write (§3.55): whole lines replaced
        result["fixes"] = [{
            "description": {"text": f"{diag.fix.value} fix: run `tfclip-migrate fix`"
                                    + (" --unsafe-fixes" if diag.fix.value == "unsafe" else "")},
            "artifactChanges": [{"artifactLocation": {"uri": _uri(diag.path)}, "replacements": [
                {"deletedRegion": {"startLine": start, "startColumn": 1, "endLine": end, "endColumn": 1},
                 "insertedContent": {"text": text}} for start, end, text in diag.edits]}],
        }]
    return result


def sarif_rules(codes: Sequence[str], rules: Optional[Sequence[type]]) -> List[Dict[str, Any]]:
    """``reportingDescriptor`` objects (§3.49) for the rules ``codes`` name, with their docs."""
    import inspect

    if rules is None:
        from codemods.engine import registry as _registry

        documented = list(_registry.DOCUMENTED)
    else:
        from codemods.rules.tfc900_unparsable_file import UnparsableFile

        documented = list(rules) + [UnparsableFile]
    out = []
    for rule in sorted(documented, key=lambda r: r.CODE):
        if rule.CODE not in codes:
            continue
        summary = rule.SUMMARY or (rule.__doc__ or "").strip().split("\n", 1)[0]
        doc = inspect.cleandoc(rule.__doc__ or "") or summary
        out.append({
            "id": rule.CODE,
            "name": rule.NAME,
            "shortDescription": {"text": summary},
            "fullDescription": {"text": doc},
            "help": {"text": doc, "markdown": doc},
            "defaultConfiguration": {"level": "error"},
        })
    return out


def sarif_document_chunks(results: "Any", codes: Sequence[str], rules: Optional[Sequence[type]], *,
                          exit_code: int, errors: Sequence[Tuple[Optional[str], str]], version: str) -> Iterator[str]:
    """The SARIF log's text: ``results`` is a :class:`codemods.cli.spool.Spool` of result objects."""
    import json

    notifications = [{"level": "error", "message": {"text": f"{path}: {message}" if path else message}}
                     for path, message in errors]
    run = {
        "tool": {"driver": {"name": "tfclip-migrate", "version": version, "rules": sarif_rules(codes, rules)}},
        "invocations": [{"executionSuccessful": exit_code in (0, 1), "exitCode": exit_code,
                         "toolExecutionNotifications": notifications}],
        "results": "\x00results\x00",
    }
    document = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    head, tail = text.split(json.dumps("\x00results\x00"), 1)
    yield head
    yield from results.chunks()
    yield tail


# --------------------------------------------------------------------------------------
# JUnit XML


def _xml(text: str) -> str:
    from xml.sax.saxutils import quoteattr

    # XML 1.0 has no way to write most control characters: drop them.
    return quoteattr(re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", "", text))


def junit_suite(report: "FileReport", findings: Sequence["Finding"]) -> str:
    """A ``<testsuite>`` for one file: a failed test case per finding."""
    from xml.sax.saxutils import escape

    path = report.display
    cases = []
    for finding in findings:
        diag = finding.diagnostic
        place = where_in_cell(finding)
        cases.append(
            f'    <testcase name={_xml(f"tfclip-migrate.{diag.code}")} classname={_xml(path)} '
            f'line="{diag.line}" column="{diag.col}">\n'
            f'      <failure message={_xml(diag.message)}>{escape(place + ": " + diag.message)}</failure>\n'
            f"    </testcase>\n")
    return (f'  <testsuite name={_xml(path)} tests="{len(findings)}" failures="{len(findings)}" errors="0" '
            f'skipped="0">\n' + "".join(cases) + "  </testsuite>\n")


def junit_document_chunks(suites: TextSpool, tests: int, failures: int) -> Iterator[str]:
    yield '<?xml version="1.0" encoding="UTF-8"?>\n'
    yield f'<testsuites name="tfclip-migrate" tests="{max(tests, 1)}" failures="{failures}" errors="0">\n'
    if suites.empty:
        yield ('  <testsuite name="tfclip-migrate" tests="1" failures="0" errors="0" skipped="0">\n'
               '    <testcase name="No findings" classname="tfclip-migrate"/>\n  </testsuite>\n')
    else:
        yield from suites.chunks()
    yield "</testsuites>\n"


# --------------------------------------------------------------------------------------
# --statistics and --show-fixes


def statistics_text(counts: Dict[str, Dict[str, int]], names: Dict[str, str]) -> str:
    """ruff's ``--statistics`` table: count, code, ``[*]`` when a fix is available, rule name;
    most frequent first. ``counts``: code -> {"count", "fixable"}."""
    if not counts:
        return ""
    rows = sorted(counts.items(), key=lambda item: (-item[1]["count"], item[0]))
    width = max(len(str(c["count"])) for _, c in rows)
    code_width = max(len(code) for code, _ in rows)
    return "".join(
        f"{c['count']:>{width}}\t{code:<{code_width}}\t{'[*]' if c['fixable'] else '[ ]'} {names.get(code, '')}".rstrip()
        + "\n" for code, c in rows)


def show_fixes_text(fixed: Sequence[Tuple[str, Counter]], names: Dict[str, str], *, applied: bool) -> str:
    """ruff's ``--show-fixes`` list: per file, how many findings of each code were fixed
    (``fix``) or would be (``check``, ``fix --diff``)."""
    total = sum(sum(c.values()) for _, c in fixed)
    if not total:
        return ("No findings fixed.\n" if applied else "No fixes available.\n")
    word = "finding" if total == 1 else "findings"
    lines = [f"Fixed {total} {word}:" if applied else f"Would fix {total} {word}:"]
    for path, counts in fixed:
        lines.append(f"- {path}:")
        for code, n in sorted(counts.items()):
            lines.append(f"    {n} \u00d7 {code} ({names.get(code, '')})")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------
# the migration report (--report-file)

# Parts of a reason that differ from site to site: code in backticks, "(line N)" / "(cell C, line M)".
_SPECIFIC = re.compile(r"`([^`]*)`|\((?:cell \d+, )?line \d+\)")
# Code in backticks that names an API, not the user's code: kept in a reason.
_API = re.compile(r"(with )?(tf|tfclip_compat|keras|tf_keras)(\.\w+)+(\(\))?")
_API_WORDS = frozenset({
    "minimize", "compute_gradients", "apply_gradients", "tape.gradient", "clip_gradients_by_norm",
    "var_list", "global_step", "grad_loss", "gate_gradients", "aggregation_method",
    "colocate_gradients_with_ops", "*args", "**kwargs", "clipnorm", "global_clipnorm", "clipvalue",
})


def _generic(match: "re.Match[str]") -> str:
    span = match.group(1)
    if span is None:
        return "(line …)"
    if span in _API_WORDS or _API.fullmatch(span):
        return match.group(0)
    return "`…`"


def reason_key(code: str, message: str) -> str:
    """The reason behind a finding, its site-specific parts -- the user's code in backticks,
    line numbers -- replaced by ``…`` (API names in backticks are kept), so that the same
    cause at 40 sites counts as one reason 40 times."""
    return f"{code}: " + re.sub(r"\s+", " ", _SPECIFIC.sub(_generic, message)).strip()


class MigrationReport:
    """``--report-file``: a Markdown report of the migration, like ``tf_upgrade_v2
    --reportfile`` but ranked: the reasons sites were left, most frequent first, then per
    file what was rewritten and what was left and why. Per-file sections are spooled as they
    come; only the counts are kept."""

    def __init__(self, path: str, command: str, mode: str) -> None:
        self.path = path
        self.command = command
        self.mode = mode
        self.sections = TextSpool()
        self.reasons: Counter = Counter()
        self.rewritten: Counter = Counter()  # code -> fixes applied (or that would be)
        self.left: Counter = Counter()  # code -> findings left
        self.files_with_findings = 0
        self.files = 0

    def add(self, report: "FileReport", fixable: Callable[["Finding"], bool]) -> None:
        """One file. ``fixable``: whether `fix` (with these options) would fix a finding that
        `check` reports."""
        self.files += 1
        if not report.findings and report.status not in ("error", "skipped"):
            return
        done = "rewritten" if self.mode == "write" else "would be rewritten by `fix`"
        fixed = [f for f in report.findings if f.diagnostic.applied or (self.mode == "check" and fixable(f))]
        left = [f for f in report.findings if f not in fixed]
        self.files_with_findings += 1
        lines = [f"### `{report.display}`", ""]
        status = {"changed": "rewritten" if report.written else "would be rewritten", "unchanged": "not changed",
                  "skipped": "not analysed", "error": "failed"}.get(report.status, report.status)
        if self.mode == "check" and report.status == "unchanged":  # `check` never writes
            status = "`fix` would rewrite it" if fixed else "no fix applies"
        lines.append(f"Status: {status}" + (f" ({report.reason})" if report.reason else ""))
        lines.append("")
        if fixed:
            lines.append(f"{done.capitalize()}:")
            lines.append("")
            for f in fixed:
                lines.append(f"- {where_in_cell(f)}: **{f.code}** {f.diagnostic.message}")
                self.rewritten[f.code] += 1
            lines.append("")
        if left:
            lines.append("Left, and why:")
            lines.append("")
            for f in left:
                marker = {"safe": " [safe fix not applied]", "unsafe": " [unsafe fix: add --unsafe-fixes]"}.get(
                    f.diagnostic.fix.value, "")
                lines.append(f"- {where_in_cell(f)}: **{f.code}**{marker} {f.diagnostic.message}")
                self.left[f.code] += 1
                self.reasons[reason_key(f.code, f.diagnostic.message)] += 1
            lines.append("")
        self.sections.add("\n".join(lines) + "\n")

    def text(self, numbers: Optional[Dict[str, Any]]) -> Iterator[str]:
        yield f"# tfclip-migrate report ({self.command}{' --diff' if self.mode == 'diff' else ''})\n\n"
        if numbers is not None:
            yield (f"{numbers['scanned']} files scanned; {numbers['rewritten']} rewritten, "
                   f"{numbers['would_rewrite']} would be rewritten, {numbers['unchanged']} unchanged, "
                   f"{numbers['skipped']} skipped, {numbers['failed']} failed; "
                   f"{self.files_with_findings} with findings.\n\n")
        done = "rewritten" if self.mode == "write" else "fixable"
        yield f"## Findings by rule\n\n| rule | {done} | left |\n|---|---|---|\n"
        for code in sorted(set(self.rewritten) | set(self.left)):
            yield f"| {code} | {self.rewritten[code]} | {self.left[code]} |\n"
        yield "\n## Why sites were left, most frequent first\n\n"
        if not self.reasons:
            yield "Nothing was left.\n"
        for reason, count in sorted(self.reasons.items(), key=lambda item: (-item[1], item[0])):
            yield f"- {count} \u00d7 {reason}\n"
        yield "\n## Files\n\n"
        if self.sections.empty:
            yield "No file has findings.\n"
        yield from self.sections.chunks()

    def write(self, numbers: Optional[Dict[str, Any]]) -> Optional[str]:
        """Write the report (a temporary file renamed into place); the reason it could not be."""
        import tempfile

        failed = self.sections.ready()
        if failed is not None:  # sections were lost: no report rather than a partial one
            self.sections.close()
            return f"its temporary file failed: {failed}"
        directory = os.path.dirname(os.path.abspath(self.path))
        try:
            fd, tmp = tempfile.mkstemp(prefix=".tfclip-report.", dir=directory)
        except OSError as exc:
            return exc.strerror or str(exc)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
                for chunk in self.text(numbers):
                    handle.write(chunk)
            os.replace(tmp, self.path)
        except OSError as exc:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            return exc.strerror or str(exc)
        finally:
            self.sections.close()
        return None


class Outputs:
    """What a run prints beyond :mod:`codemods.cli.report`'s text and JSON: the ``github``,
    ``sarif`` and ``junit`` formats, colour, ``--statistics``, ``--show-fixes`` and the
    report file. :class:`codemods.cli.report.Reporter` calls :meth:`file` for each report and
    :meth:`finish` at the end."""

    def __init__(self, fmt: str = "text", *, color: bool = False, statistics: bool = False,
                 show_fixes: bool = False, report_file: Optional[str] = None, unsafe_fixes: bool = False,
                 rules: Optional[Sequence[type]] = None) -> None:
        self.format = fmt
        self.color = color
        self.statistics = statistics
        self.show_fixes = show_fixes
        self.report_path = report_file
        self.report: Optional[MigrationReport] = None
        self.unsafe_fixes = unsafe_fixes
        self.rules = rules
        self.results = Spool()  # SARIF results
        self.suites = TextSpool()  # JUnit test suites
        self.tests = 0
        self.codes: set = set()
        self.counts: Dict[str, Dict[str, int]] = {}
        self.fixed: List[Tuple[str, Counter]] = []

    @property
    def document(self) -> bool:
        """One document on the main stream (SARIF, JUnit): no summary on stderr."""
        return self.format in ("sarif", "junit")

    def fixable(self, finding: "Finding") -> bool:
        from codemods.engine.core import FixSafety

        fix = finding.diagnostic.fix
        return fix is FixSafety.SAFE or (fix is FixSafety.UNSAFE and self.unsafe_fixes)

    def file(self, reporter: Any, report: "FileReport") -> bool:
        """Take ``report`` in; True when its findings were printed here (not as text)."""
        if self.report_path is not None:
            if self.report is None:
                self.report = MigrationReport(self.report_path, reporter.command or "", reporter.mode)
            self.report.add(report, self.fixable)
        findings = shown(report)
        if self.show_fixes:
            done = Counter(f.code for f in report.findings if f.diagnostic.applied or (
                reporter.mode == "check" and self.fixable(f)))
            if done:
                self.fixed.append((report.display, done))
        if self.statistics:
            for f in findings:
                entry = self.counts.setdefault(f.code, {"count": 0, "fixable": 0})
                entry["count"] += 1
                entry["fixable"] += self.fixable(f)
            return True
        if self.format == "github":
            text = "".join(github_line(f) for f in findings)
            if text:
                reporter.emit(reporter.main_stream, text)
            return True
        if self.format == "sarif":
            for f in findings:
                self.codes.add(f.code)
                self.results.add(sarif_result(f))
            return True
        if self.format == "junit":
            if findings:
                self.tests += len(findings)
                self.suites.add(junit_suite(report, findings))
            return True
        if self.color:
            text = "".join(colored(f) + "\n" for f in findings)
            if text:
                reporter.emit(reporter.main_stream, text)
            return True
        return False

    def write_report(self, reporter: Any, numbers: Optional[Dict[str, Any]]) -> bool:
        """Write ``--report-file`` (first: a failure is an error the documents then carry);
        False when it could not be written."""
        if self.report_path is None:
            return True
        report = self.report or MigrationReport(self.report_path, reporter.command or "", reporter.mode)
        reason = report.write(numbers)
        if reason is not None:
            reporter.error(self.report_path, f"cannot write the report: {reason}")
            return False
        return True

    @staticmethod
    def _spool_ready(reporter: Any, spool: TextSpool, name: str) -> bool:
        """True when the document's spooled part can be read back whole; else one error line,
        no document, exit 2 (a document missing results would tell CI there are none)."""
        failed = spool.ready()
        if failed is None:
            return True
        reporter.document_failed = True
        reporter.error(None, f"cannot write the {name} document: its temporary file failed: {failed}; "
                             f"no {name} written")
        return False

    def finish(self, reporter: Any, exit_code: int, numbers: Optional[Dict[str, Any]], summary: bool) -> None:
        """The statistics / fixes lists, the SARIF or JUnit document."""
        emit = lambda text: reporter.emit(reporter.main_stream, text)  # noqa: E731 - a short alias
        if self.statistics and summary:
            emit(statistics_text(self.counts, rule_names(self.rules)))
        if self.format == "sarif":
            if self._spool_ready(reporter, self.results, "SARIF"):
                write_chunks(emit, sarif_document_chunks(self.results, sorted(self.codes), self.rules,
                                                         exit_code=exit_code, errors=reporter.errors,
                                                         version=_version()))
            self.results.close()
        elif self.format == "junit":
            if self._spool_ready(reporter, self.suites, "JUnit"):
                write_chunks(emit, junit_document_chunks(self.suites, self.tests, self.tests))
            self.suites.close()
        if self.show_fixes and summary and not reporter.quiet:
            reporter.emit(reporter.err, show_fixes_text(self.fixed, rule_names(self.rules),
                                                         applied=reporter.mode == "write"))


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tfclip-compat")
    except PackageNotFoundError:
        return "0"


def write_chunks(emit: Callable[[str], None], chunks: Iterator[str], size: int = 64 << 10) -> None:
    """``emit`` the text of ``chunks`` in writes of about ``size`` characters."""
    buffered: List[str] = []
    total = 0
    for piece in chunks:
        buffered.append(piece)
        total += len(piece)
        if total >= size:
            emit("".join(buffered))
            buffered, total = [], 0
    emit("".join(buffered))
