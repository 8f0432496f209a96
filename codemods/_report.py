"""What the CLI prints: per-file lines, findings, diffs, the summary, the JSON document.

:class:`Reporter` owns stdout and stderr for a run. A write to a closed stdout (``| head``)
is an error like any other: it is named on stderr once, later stdout output is dropped,
the run goes on (files are still written and reported on stderr), and the exit code is 2.

Text format: findings ``path:line:col: CODE message`` on stdout (stderr with ``--diff``
and in stdin ``fix`` mode), ``Rewriting path`` / errors / the summary on stderr.
JSON format (``--format json``): one document on stdout (stderr in stdin ``fix`` mode,
where stdout carries the code), always -- usage and configuration errors included; its
schema is in docs/cli.md (``SCHEMA`` below is its version).

Imports neither libcst nor TensorFlow.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from typing import IO, TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

if TYPE_CHECKING:  # pragma: no cover
    from codemods._discovery import Discovery, Target
    from codemods._process import FileReport

PROG = "tfclip-migrate"
SCHEMA = 1


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

    name = os.fsencode(path)
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
        self.files: List[Dict[str, Any]] = []
        self.findings: List[Dict[str, Any]] = []

    # -- streams -----------------------------------------------------------------------

    @property
    def main_stream(self) -> IO[str]:
        """Where findings / the JSON document go."""
        if self.mode == "stdin" and self.command == "fix":
            return self.err
        if self.mode == "diff" and not self.json:
            return self.err
        return self.out

    def _emit(self, stream: IO[str], text: Optional[str] = None, data: Optional[bytes] = None) -> None:
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
        self._emit(self.out, data=data)

    # -- events ------------------------------------------------------------------------

    def error(self, path: Optional[str], message: str) -> None:
        """Something that makes the exit code 2 (always also on stderr)."""
        self.errors.append((path, message))
        where = f"{path}: " if path else ""
        self._emit(self.err, f"{PROG}: error: {where}{message}\n")

    def warning(self, message: str) -> None:
        self.warnings.append(message)
        self._emit(self.err, f"{PROG}: warning: {message}\n")

    def skip(self, path: str, reason: str) -> None:
        """A path passed over before processing (walk: special file, unlistable dir)."""
        self.skipped.append((path, reason))
        self.files.append({"path": path, "status": "skipped", "reason": reason})
        if not self.json:
            self._emit(self.err, f"{path}: skipped: {reason}\n")

    def file(self, report: "FileReport") -> None:
        """One processed file: its status line, findings and diff."""
        entry: Dict[str, Any] = {"path": report.display, "status": file_status(report, self.mode), "reason": report.reason}
        if self.mode == "diff":
            entry["diff"] = report.diff.decode(report.encoding, "replace") if report.diff else None
        self.files.append(entry)
        if report.status == "error":
            self.error(report.display, report.reason)
        elif report.written and self.mode == "write" and not self.quiet:
            self._emit(self.err, f"Rewriting {report.display}\n")
        if self.json:
            self.findings.extend(finding.to_json() for finding in report.findings)
            return
        if self.mode == "diff" and report.diff:
            self.stdout_bytes(report.diff)
        lines = "".join(f.format() + "\n" for f in report.findings if not f.diagnostic.applied)
        if lines:
            self._emit(self.main_stream, lines)

    def not_processed(self, targets: Sequence["Target"]) -> None:
        for target in targets:
            self.files.append({"path": target.display, "status": "not-processed", "reason": "the run was interrupted"})

    def finish(
        self,
        reports: Sequence["FileReport"],
        found: Optional["Discovery"],
        exit_code: int,
        interrupted: Optional[str] = None,
        not_processed: int = 0,
        summary: bool = True,
    ) -> None:
        """The summary (stderr) or the JSON document."""
        numbers = _numbers(reports, found, self.skipped, self.mode)
        if self.json:
            import json

            document = {
                "tool": PROG,
                "schema": SCHEMA,
                "command": self.command,
                "mode": self.mode,
                "exit_code": exit_code,
                "interrupted": interrupted,
                "findings": self.findings,
                "files": self.files,
                "errors": [{"path": path, "message": message} for path, message in self.errors],
                "warnings": list(self.warnings),
                "summary": numbers if summary and self.command in ("check", "fix") else None,
            }
            self._emit(self.main_stream, json.dumps(document, indent=2, ensure_ascii=False) + "\n")
        if not summary or self.quiet or self.command not in ("check", "fix") or self.mode == "stdin":
            return
        text = _summary_text(self.command, self.mode, numbers, interrupted, not_processed)
        if self.json:
            return  # the numbers are in the document; stderr stays for errors
        self._emit(self.err, text)


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


def _numbers(reports: Sequence["FileReport"], found: Optional["Discovery"], skipped, mode: str) -> Dict[str, Any]:
    from codemods._core import FixSafety

    counts = Counter(file_status(report, mode) for report in reports)
    by_code: Dict[str, Dict[str, int]] = {}
    safe_left = unsafe_left = 0
    for report in reports:
        for finding in report.findings:
            diag = finding.diagnostic
            entry = by_code.setdefault(diag.code, {"found": 0, "fixed": 0})
            entry["found"] += 1
            if diag.applied:
                entry["fixed"] += 1
            elif diag.fix is FixSafety.SAFE:
                safe_left += 1
            elif diag.fix is FixSafety.UNSAFE:
                unsafe_left += 1
    parsed = sum(report.parsed for report in reports)
    return {
        "scanned": len(reports) + len(skipped),
        "rewritten": counts["rewritten"],
        "would_rewrite": counts["would-rewrite"],
        "unchanged": counts["unchanged"],
        "skipped": counts["skipped"] + len(skipped),
        "failed": counts["failed"],
        "parsed": parsed,
        "ruled_out_by_prefilter": len(reports) - parsed,
        "excluded": found.excluded if found else 0,
        "symlinks_not_followed": found.symlinks_not_followed if found else 0,
        "findings_by_code": {code: by_code[code] for code in sorted(by_code)},
        "safe_fixes_available": safe_left,
        "unsafe_fixes_available": unsafe_left,
    }


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
