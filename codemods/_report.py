"""What the CLI prints: findings, diffs, the stderr summary, and safe stream writes.

Imports neither libcst nor TensorFlow.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import IO, TYPE_CHECKING, List, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from codemods._discovery import Discovery
    from codemods._process import FileReport

PROG = "tfclip-migrate"


def write(stream: IO[str], text: str) -> None:
    try:
        stream.write(text)
    except UnicodeEncodeError:  # a path or message the terminal cannot show
        encoding = getattr(stream, "encoding", None) or "utf-8"
        stream.write(text.encode(encoding, "backslashreplace").decode(encoding))


def write_bytes(stream: IO[str], data: bytes) -> None:
    buffer = getattr(stream, "buffer", None)
    if buffer is None:
        stream.write(data.decode("utf-8", errors="surrogateescape"))
        return
    stream.flush()
    buffer.write(data)
    buffer.flush()


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


def _decode_for_diff(data: bytes, notebook: bool) -> str:
    if not notebook:
        from codemods._core import SourceError, decode_source

        try:
            return decode_source(data)[0]
        except SourceError:
            pass
    return data.decode("utf-8", errors="replace")


def file_diff(old: bytes, new: bytes, path: str, notebook: bool) -> str:
    """The unified diff between two versions of a file's bytes."""
    return unified_diff(_decode_for_diff(old, notebook), _decode_for_diff(new, notebook), path)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def summary(command: str, diff: bool, reports: Sequence["FileReport"], found: "Discovery") -> str:
    """The final stderr summary: files, findings by code, fixes available."""
    from codemods._core import FixSafety

    fix = command == "fix"
    counts = Counter(r.status for r in reports)
    skipped = counts["skipped"] + len(found.skipped)
    scanned = len(reports) + len(found.skipped)
    parsed = sum(r.parsed for r in reports)
    changed_word = "would be rewritten" if diff else "rewritten"
    changed = counts["changed"] if fix else 0
    parts = [f"{changed} {changed_word}", f"{counts['unchanged']} unchanged", f"{skipped} skipped"]
    if counts["error"]:
        parts.append(f"{counts['error']} failed")
    line = f"{PROG} {command}: {_plural(scanned, 'file')} scanned: {', '.join(parts)}"
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


