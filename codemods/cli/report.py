"""What the CLI prints: per-file lines, findings, diffs, the summary, the JSON document.

:class:`Reporter` owns stdout and stderr for a run. A write to a closed stdout (``| head``)
is an error like any other: it is named on stderr once, later stdout output is dropped,
the run goes on (files are still written and reported on stderr), and the exit code is 2.

Text format: findings ``path:line:col: CODE message`` on stdout (stderr with ``--diff``
and in stdin ``fix`` mode), ``Rewriting path`` / errors / the summary on stderr.
JSON format (``--format json``): one document on stdout (stderr in stdin ``fix`` mode,
where stdout carries the code), always -- usage and configuration errors included; its
schema is in docs/cli.md (``SCHEMA`` below is its version).

Memory stays flat in the number of files: each file's report is printed (text) and folded
into a :class:`Tally` as it arrives, and nothing else of it is kept; in JSON mode its
entries are serialised at once into a :class:`~codemods.cli.spool.Spool` (on disk beyond 256 KB) from which
the document is streamed at the end in writes of 64 KB, byte for byte what
``json.dumps(document, indent=2)`` gives.

Imports neither libcst nor TensorFlow. Longer than ~400 lines because it is all of the run's
output in one place: per-file lines, diffs, the summary, and the streamed JSON document.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from typing import IO, TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from codemods.cli.quoting import escape_text, finding_text, json_entry, json_text, path_text
from codemods.cli.spool import WRITE_SIZE, Spool

if TYPE_CHECKING:  # pragma: no cover
    from codemods.cli.discovery import Discovery, Target
    from codemods.cli.formats import Outputs
    from codemods.cli.results import FileReport

PROG = "tfclip-migrate"
SCHEMA = 2  # 2: ``interrupted`` is a boolean, ``signal`` names the signal; ``summary.config``


def _fileno(stream: IO[str]) -> Optional[int]:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):  # StringIO, pytest's capture, a closed stream
        return None


def write_bytes(stream: IO[str], data: bytes) -> None:
    """Write ``data`` as bytes (code in its own encoding, a diff) and flush.

    On a real file descriptor the bytes go out with ``os.write`` in a loop: Python's
    buffered writer can swallow the EPIPE of a large write cut short by a closed pipe
    (``| head -1``), which would hide lost output; a raw write always raises it.
    """
    fd = _fileno(stream)
    if fd is None:
        buffer = getattr(stream, "buffer", None)
        if buffer is None:
            stream.write(data.decode("utf-8", errors="surrogateescape"))
            return
        stream.flush()
        buffer.write(data)
        buffer.flush()
        return
    stream.flush()
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def write(stream: IO[str], text: str) -> None:
    """Write ``text`` (characters the stream cannot encode are backslash-escaped) and flush."""
    if _fileno(stream) is None and getattr(stream, "buffer", None) is None:
        stream.write(text)
        return
    encoding = getattr(stream, "encoding", None) or "utf-8"
    write_bytes(stream, text.encode(encoding, "backslashreplace"))


# --------------------------------------------------------------------------------------
# diffs


def _split_lines(data: bytes) -> List[bytes]:
    # Only "\n" ends a line for patch(1) (a lone CR or form feed does not).
    return re.findall(rb"[^\n]*\n|[^\n]+", data)


def unified_diff_bytes(old: bytes, new: bytes, path: str) -> bytes:
    """A unified diff of two versions of a file's *bytes*, applicable with ``patch -p0``:
    lines are in the file's own encoding (latin-1 stays latin-1), CRLF and a BOM are
    kept, a missing final newline is marked."""
    import difflib

    from codemods.cli.quoting import diff_name

    name = diff_name(path)  # quoted as git quotes it (a tab after a name with a space)
    out = []
    for line in difflib.diff_bytes(difflib.unified_diff, _split_lines(old), _split_lines(new), name, name):
        if not line.endswith(b"\n"):
            line += b"\n\\ No newline at end of file\n"
        out.append(line)
    return b"".join(out)


def unified_diff(old: str, new: str, path: str) -> str:
    """:func:`unified_diff_bytes` for text (UTF-8)."""
    return unified_diff_bytes(old.encode("utf-8"), new.encode("utf-8"), path).decode("utf-8")


# --------------------------------------------------------------------------------------
# the run's output


def _plural(n: int, word: str) -> str:
    if n == 1:
        return f"{n} {word}"
    return f"{n} {word}es" if word.endswith(("x", "s", "ch", "sh")) else f"{n} {word}s"


def file_status(report: "FileReport", mode: str) -> str:
    """The JSON status of a processed file: ``rewritten``, ``would-rewrite``,
    ``unchanged``, ``skipped`` or ``failed``."""
    if report.status == "changed":
        return "rewritten" if report.written else "would-rewrite"
    return {"error": "failed"}.get(report.status, report.status)


class Tally:
    """The run's numbers, folded in report by report (no report is kept)."""

    def __init__(self) -> None:
        self.statuses: Counter = Counter()  # file_status -> count
        self.reports = 0
        self.parsed = 0
        self.by_code: Dict[str, Dict[str, int]] = {}
        self.safe_left = 0
        self.unsafe_left = 0
        self.unapplied = 0  # findings not fixed (exit code 1)
        self.changed = 0  # reports with new content (written or not)

    def add(self, report: "FileReport", mode: str) -> None:
        from codemods.engine.core import FixSafety

        self.reports += 1
        self.parsed += bool(report.parsed)
        self.statuses[file_status(report, mode)] += 1
        self.changed += report.status == "changed"
        for finding in report.findings:
            diag = finding.diagnostic
            entry = self.by_code.setdefault(diag.code, {"found": 0, "fixed": 0})
            entry["found"] += 1
            if diag.applied:
                entry["fixed"] += 1
                continue
            self.unapplied += 1
            if diag.fix is FixSafety.SAFE:
                self.safe_left += 1
            elif diag.fix is FixSafety.UNSAFE:
                self.unsafe_left += 1


class Reporter:
    """Everything a ``check`` / ``fix`` run prints, in text or JSON."""

    def __init__(
        self,
        out: IO[str],
        err: IO[str],
        *,
        command: Optional[str],
        json_format: bool,
        mode: str = "check",  # check | write | diff | stdin
        quiet: bool = False,
    ) -> None:
        self.out = out
        self.err = err
        self.command = command
        self.json = json_format
        self.mode = mode
        self.quiet = quiet
        self.stdout_error: Optional[str] = None
        self.errors: List[Tuple[Optional[str], str]] = []
        self.warnings: List[str] = []
        self.skipped: List[Tuple[str, str]] = []  # paths passed over before processing
        self.tally = Tally()
        self.files = Spool()  # JSON entries (filled in JSON mode only)
        self.findings = Spool()
        self.extra: Optional["Outputs"] = None  # the other formats and reports (codemods.cli.formats)
        self.finished = False  # finish() ran: the summary / document is out (never a second one)
        self.document_failed = False  # the JSON document could not be written whole: none was (exit 2)
        self.config_path: Optional[str] = None  # the pyproject.toml the run used (named in the summary)

    # -- streams -----------------------------------------------------------------------

    @property
    def main_stream(self) -> IO[str]:
        """Where findings / the JSON document go."""
        if self.mode == "stdin" and self.command == "fix":
            return self.err
        if self.mode == "diff" and not self.json:
            return self.err
        return self.out

    def emit(self, stream: IO[str], text: Optional[str] = None, data: Optional[bytes] = None) -> None:
        """Write ``text`` (or ``data``) to ``stream``; a broken stdout is reported once and later
        output to it dropped (the run goes on)."""
        if stream is self.out and self.stdout_error is not None:
            return
        try:
            if data is not None:
                write_bytes(stream, data)
            else:
                write(stream, text or "")
        except (BrokenPipeError, OSError, ValueError) as exc:
            if stream is not self.out:
                return  # stderr is gone: nothing left to tell anyone
            self.stdout_error = _stream_reason(exc)
            self.error("<stdout>", f"cannot write: {self.stdout_error}; later output dropped, the run went on")
            _silence_stdout(stream)

    def stdout_bytes(self, data: bytes) -> None:
        self.emit(self.out, data=data)

    # -- events ------------------------------------------------------------------------

    def error(self, path: Optional[str], message: str) -> None:
        """Something that makes the exit code 2 (always also on stderr)."""
        self.errors.append((path, message))
        where = f"{path_text(path)}: " if path else ""
        self.emit(self.err, f"{PROG}: error: {where}{escape_text(message)}\n")

    def warning(self, message: str) -> None:
        self.warnings.append(message)
        self.emit(self.err, f"{PROG}: warning: {escape_text(message)}\n")

    def skip(self, path: str, reason: str) -> None:
        """A path passed over before processing (walk: special file, unlistable dir)."""
        self.skipped.append((path, reason))
        if self.json:
            self.files.add({"path": path, "status": "skipped", "reason": reason})
        else:
            self.emit(self.err, f"{path_text(path)}: skipped: {escape_text(reason)}\n")

    def file(self, report: "FileReport") -> None:
        """One processed file: its status line, findings and diff (then it is forgotten:
        only its numbers stay, in :attr:`tally`)."""
        self.tally.add(report, self.mode)
        if self.json:
            entry: Dict[str, Any] = {"path": report.display, "status": file_status(report, self.mode),
                                     "reason": report.reason}
            if self.mode == "diff":
                entry["diff"] = report.diff.decode(report.encoding, "replace") if report.diff else None
            self.files.add(entry)
        if report.status == "error":
            self.error(report.display, report.reason)
        elif report.written and self.mode == "write" and not self.quiet:
            self.emit(self.err, f"Rewriting {path_text(report.display)}\n")
        if self.json:
            for finding in report.findings:
                self.findings.add(finding.to_json())
            if self.extra is not None:
                self.extra.file(self, report)  # the report file
            return
        if self.mode == "diff" and report.diff:
            self.stdout_bytes(report.diff)
        if self.extra is not None and self.extra.file(self, report):
            return
        lines = "".join(finding_text(f) + "\n" for f in report.findings if not f.diagnostic.applied)
        if lines:
            self.emit(self.main_stream, lines)

    def not_processed(self, targets: Sequence["Target"]) -> None:
        if not self.json:
            return
        for target in targets:
            self.files.add({"path": target.display, "status": "not-processed", "reason": "the run was interrupted"})

    def finish(
        self,
        found: Optional["Discovery"],
        exit_code: int,
        interrupted: Optional[str] = None,
        not_processed: int = 0,
        summary: bool = True,
    ) -> None:
        """The summary (stderr) or the JSON document."""
        self.finished = True
        numbers = _numbers(self.tally, found, self.skipped, self.config_path)
        if self.extra is not None and summary and not self.extra.write_report(self, numbers) and exit_code in (0, 1):
            exit_code = 2
        if self.extra is not None:
            self.extra.finish(self, exit_code, numbers if summary else None, summary)
            if self.extra.document:
                return  # the numbers are in the document; stderr stays for errors
        if self.json:
            self._emit_document(exit_code, interrupted, numbers if summary and self.command in ("check", "fix") else None)
        if self.document_failed:
            return  # one error line said it all
        if not summary or self.quiet or self.command not in ("check", "fix") or self.mode == "stdin":
            return
        text = _summary_text(self.command, self.mode, numbers, interrupted, not_processed)
        if self.json:
            return  # the numbers are in the document; stderr stays for errors
        self.emit(self.err, text)


    _FINDINGS, _FILES = "\x00findings\x00", "\x00files\x00"

    def _emit_document(self, exit_code: int, interrupted: Optional[str], numbers: Optional[Dict[str, Any]]) -> None:
        """The JSON document, streamed: the spooled lists go out chunk by chunk."""
        import json

        failed = self.findings.ready() or self.files.ready()
        if failed is not None:  # a truncated document would be worse than none
            self.document_failed = True
            self.findings.close()
            self.files.close()
            self.json = False  # the error below is one line on stderr
            self.error(None, f"cannot write the JSON document: its temporary file failed: {failed}; no JSON written")
            return
        document = {
            "tool": PROG,
            "schema": SCHEMA,
            "command": self.command,
            "mode": self.mode,
            "exit_code": exit_code,
            "interrupted": interrupted is not None,
            "signal": interrupted,
            "findings": self._FINDINGS,
            "files": self._FILES,
            "errors": [json_entry({"path": path, "message": json_text(message)}) for path, message in self.errors],
            "warnings": [json_text(w) for w in self.warnings],
            "summary": numbers,
        }
        text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
        head, rest = text.split(json.dumps(self._FINDINGS), 1)
        middle, tail = rest.split(json.dumps(self._FILES), 1)
        pieces = [head, *self.findings.chunks(), middle, *self.files.chunks(), tail]
        stream = self.main_stream
        buffered: List[str] = []
        size = 0
        for piece in pieces:  # in writes of about WRITE_SIZE characters
            buffered.append(piece)
            size += len(piece)
            if size >= WRITE_SIZE:
                self.emit(stream, "".join(buffered))
                buffered, size = [], 0
        self.emit(stream, "".join(buffered))
        self.findings.close()
        self.files.close()


def _stream_reason(exc: BaseException) -> str:
    if isinstance(exc, BrokenPipeError):
        return "broken pipe (the reader went away)"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc)


def _silence_stdout(stream: IO[str]) -> None:
    """Point fd 1 at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        fd = stream.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _numbers(tally: Tally, found: Optional["Discovery"], skipped, config: Optional[str] = None) -> Dict[str, Any]:
    counts, by_code, parsed = tally.statuses, tally.by_code, tally.parsed
    unreadable = len(found.unreadable) if found is not None and hasattr(found, "unreadable") else 0
    return {
        "scanned": tally.reports + len(skipped),
        "rewritten": counts["rewritten"],
        "would_rewrite": counts["would-rewrite"],
        "unchanged": counts["unchanged"],
        "skipped": counts["skipped"] + len(skipped),
        "failed": counts["failed"],
        "parsed": parsed,
        "ruled_out_by_prefilter": tally.reports - parsed,
        "excluded": found.excluded if found else 0,
        "symlinks_not_followed": found.symlinks_not_followed if found else 0,
        "findings_by_code": {code: by_code[code] for code in sorted(by_code)},
        "unreadable": unreadable,
        "config": json_text(config) if config else None,
        "safe_fixes_available": tally.safe_left,
        "unsafe_fixes_available": tally.unsafe_left,
    }


def _unread_and_config_lines(n: Dict[str, Any]) -> List[str]:
    """The summary's lines on the paths that could not be read and the config used."""
    lines = []
    if n.get("unreadable"):
        lines.append(f"{_plural(n['unreadable'], 'path')} could not be read (named above): not checked")
    if n.get("config"):
        lines.append(f"config: {path_text(n['config'])}")
    return lines


def _summary_text(command: str, mode: str, n: Dict[str, Any], interrupted: Optional[str], not_processed: int) -> str:
    changed = n["rewritten"] + n["would_rewrite"] if command == "fix" else 0
    changed_word = "would be rewritten" if mode == "diff" else "rewritten"
    parts = [f"{changed} {changed_word}", f"{n['unchanged']} unchanged", f"{n['skipped']} skipped"]
    if n["failed"]:
        parts.append(f"{n['failed']} failed")
    line = f"{PROG} {command}: {_plural(n['scanned'], 'file')} scanned: {', '.join(parts)}"
    extras = [f"{n['parsed']} parsed, {n['ruled_out_by_prefilter']} ruled out by the text pre-filter"]
    if n["excluded"]:
        extras.append(f"{n['excluded']} excluded by config")
    if n["symlinks_not_followed"]:
        extras.append(f"{_plural(n['symlinks_not_followed'], 'symlink')} not followed")
    lines = []
    if interrupted:
        lines.append(f"{PROG}: interrupted by {interrupted}: stopped; {_plural(not_processed, 'file')} not processed")
    lines.append(f"{line} ({'; '.join(extras)})")
    lines.extend(_unread_and_config_lines(n))
    items = []
    for code, counts in n["findings_by_code"].items():
        item = f"{code} x{counts['found']}"
        if counts["fixed"]:
            item += f" ({counts['fixed']} fixed)" if mode == "write" else f" ({counts['fixed']} fixable)"
        items.append(item)
    lines.append("findings: " + (", ".join(items) if items else "none"))
    if n["safe_fixes_available"]:
        lines.append(f"{_plural(n['safe_fixes_available'], 'safe fix')} available: run `{PROG} fix`")
    if n["unsafe_fixes_available"]:
        lines.append(
            f"{_plural(n['unsafe_fixes_available'], 'unsafe fix')} available: add --unsafe-fixes (review the result)"
        )
    return "".join(f"{line}\n" for line in lines)
