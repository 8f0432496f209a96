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
entries are serialised at once into a :class:`Spool` (on disk beyond 256 KB) from which
the document is streamed at the end in writes of 64 KB, byte for byte what
``json.dumps(document, indent=2)`` gives.

Imports neither libcst nor TensorFlow. Longer than ~400 lines because it is all of the run's
output in one place: per-file lines, diffs, the summary, and the streamed JSON document.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from typing import IO, TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence, Tuple

if TYPE_CHECKING:  # pragma: no cover
    from codemods.cli.discovery import Discovery, Target
    from codemods.cli.process import FileReport

PROG = "tfclip-migrate"
SCHEMA = 1
_WRITE_SIZE = 64 << 10  # characters per write of the JSON document (and per read of a spool file)


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


_SCALARS = {type(None): lambda v: "null", bool: lambda v: "true" if v else "false", int: int.__repr__}


def _entry_json(entry: Dict[str, Any]) -> str:
    """``json.dumps(entry, indent=2, ensure_ascii=False)`` indented for its place in the
    document; a flat entry (string, int, bool and None values: every file and finding) is
    written directly, byte for byte what ``json.dumps`` writes, at a fraction of its cost."""
    import json

    string = json.encoder.encode_basestring  # what json.dumps uses with ensure_ascii=False
    parts = []
    for key, value in entry.items():
        kind = type(value)
        if type(key) is not str or (kind is not str and kind not in _SCALARS):
            return json.dumps(entry, indent=2, ensure_ascii=False).replace("\n", "\n    ")
        parts.append(f"      {string(key)}: {string(value) if kind is str else _SCALARS[kind](value)}")
    if not parts:
        return "{}"
    return "{\n" + ",\n".join(parts) + "\n    }"


class Spool:
    """The entries of one JSON list, serialised as they come (indented for their place in
    the document) and kept in a temporary file once they pass ``max_size`` characters."""

    def __init__(self, max_size: int = 256 << 10) -> None:
        self.max_size = max_size
        self.count = 0
        self._parts: List[str] = []
        self._size = 0
        self._file: Optional[IO[str]] = None

    def add(self, entry: Dict[str, Any]) -> None:
        text = _entry_json(entry)
        text = ("" if not self.count else ",\n") + "    " + text
        self.count += 1
        if self._file is not None:
            self._file.write(text)
            return
        self._parts.append(text)
        self._size += len(text)
        if self._size > self.max_size:
            import tempfile

            self._file = tempfile.TemporaryFile("w+", encoding="utf-8", newline="")
            self._file.write("".join(self._parts))
            self._parts = []

    def chunks(self) -> Iterator[str]:
        """The list's text (``[]``, or ``[`` + entries + ``]`` as ``json.dumps`` nests it)."""
        if not self.count:
            yield "[]"
            return
        yield "[\n"
        if self._file is None:
            yield from self._parts
        else:
            self._file.seek(0)
            while True:
                chunk = self._file.read(_WRITE_SIZE)
                if not chunk:
                    break
                yield chunk
        yield "\n  ]"

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


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
        if self.json:
            self.files.add({"path": path, "status": "skipped", "reason": reason})
        else:
            self._emit(self.err, f"{path}: skipped: {reason}\n")

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
            self._emit(self.err, f"Rewriting {report.display}\n")
        if self.json:
            for finding in report.findings:
                self.findings.add(finding.to_json())
            return
        if self.mode == "diff" and report.diff:
            self.stdout_bytes(report.diff)
        lines = "".join(f.format() + "\n" for f in report.findings if not f.diagnostic.applied)
        if lines:
            self._emit(self.main_stream, lines)

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
        numbers = _numbers(self.tally, found, self.skipped)
        if self.json:
            self._emit_document(exit_code, interrupted, numbers if summary and self.command in ("check", "fix") else None)
        if not summary or self.quiet or self.command not in ("check", "fix") or self.mode == "stdin":
            return
        text = _summary_text(self.command, self.mode, numbers, interrupted, not_processed)
        if self.json:
            return  # the numbers are in the document; stderr stays for errors
        self._emit(self.err, text)


    _FINDINGS, _FILES = "\x00findings\x00", "\x00files\x00"

    def _emit_document(self, exit_code: int, interrupted: Optional[str], numbers: Optional[Dict[str, Any]]) -> None:
        """The JSON document, streamed: the spooled lists go out chunk by chunk."""
        import json

        document = {
            "tool": PROG,
            "schema": SCHEMA,
            "command": self.command,
            "mode": self.mode,
            "exit_code": exit_code,
            "interrupted": interrupted,
            "findings": self._FINDINGS,
            "files": self._FILES,
            "errors": [{"path": path, "message": message} for path, message in self.errors],
            "warnings": list(self.warnings),
            "summary": numbers,
        }
        text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
        head, rest = text.split(json.dumps(self._FINDINGS), 1)
        middle, tail = rest.split(json.dumps(self._FILES), 1)
        pieces = [head, *self.findings.chunks(), middle, *self.files.chunks(), tail]
        stream = self.main_stream
        buffered: List[str] = []
        size = 0
        for piece in pieces:  # in writes of about _WRITE_SIZE characters
            buffered.append(piece)
            size += len(piece)
            if size >= _WRITE_SIZE:
                self._emit(stream, "".join(buffered))
                buffered, size = [], 0
        self._emit(stream, "".join(buffered))
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


def _numbers(tally: Tally, found: Optional["Discovery"], skipped) -> Dict[str, Any]:
    counts, by_code, parsed = tally.statuses, tally.by_code, tally.parsed
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
        "safe_fixes_available": tally.safe_left,
        "unsafe_fixes_available": tally.unsafe_left,
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
