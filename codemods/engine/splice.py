"""Line-level text surgery for the engine: keep every byte no rule changed, and report
positions in the file as it was read.

libcst reproduces almost every module exactly (``parse_module(s).code == s``), but not
all: ``except (A, B) :`` loses the space before the colon, a form feed before a statement
is dropped, a final lone CR is dropped (see tests/test_cli_bytes.py for the list). When
the round trip is inexact, :func:`splice` applies the rules' edits (round trip ->
rewritten) to the original text instead, line by line; where an edit touches a line the
round trip itself changed, it gives up (:class:`SpliceConflict`) and the engine leaves
the file alone.

:func:`line_mapper` maps a line of a rewritten text back to the text it came from, so a
finding a later rule reports on rewritten code points at the original file.

Lines end at ``\\r\\n``, ``\\r`` or ``\\n``, as libcst counts them. Imports neither libcst
nor TensorFlow.
"""

from __future__ import annotations

import difflib
import re
from typing import Callable, List, Sequence, Tuple

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")

# (base_start, base_end, replacement lines, start line of the replacement in its own text)
Hunk = Tuple[int, int, List[str], int]


class SpliceConflict(Exception):
    """An edit touches a line that libcst cannot reproduce; ``line`` is 1-based, original."""

    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


def split_lines(text: str) -> List[str]:
    """``text`` cut after each line ending (kept); ``"".join`` gives ``text`` back."""
    return _LINE.findall(text)


def _hunks(base: Sequence[str], other: Sequence[str]) -> List[Hunk]:
    matcher = difflib.SequenceMatcher(None, base, other, autojunk=False)
    return [
        (i1, i2, list(other[j1:j2]), j1)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def _overlap(a: Hunk, b: Hunk) -> bool:
    a1, a2 = a[0], a[1]
    b1, b2 = b[0], b[1]
    if a1 == a2 or b1 == b2:  # an insertion conflicts with anything touching its point
        return a1 <= b2 and b1 <= a2
    return a1 < b2 and b1 < a2


def splice(original: str, roundtrip: str, rewritten: str) -> str:
    """``original`` with the edits that turn ``roundtrip`` into ``rewritten``.

    ``roundtrip`` is libcst's rendering of ``original`` before any rule ran. Raises
    :class:`SpliceConflict` when an edit overlaps a line the round trip changed.
    """
    base = split_lines(roundtrip)
    defects = _hunks(base, split_lines(original))
    edits = _hunks(base, split_lines(rewritten))
    for defect in defects:
        for edit in edits:
            if _overlap(defect, edit):
                raise SpliceConflict(defect[3] + 1)
    out: List[str] = []
    position = 0
    for start, end, lines, _ in sorted(defects + edits, key=lambda hunk: (hunk[0], hunk[1])):
        out.extend(base[position:start])
        out.extend(lines)
        position = end
    out.extend(base[position:])
    return "".join(out)


def line_mapper(old: str, new: str) -> Callable[[int, int], Tuple[int, int]]:
    """A function ``(line, col) in new -> (line, col) in old`` (1-based).

    Lines ``new`` kept from ``old`` map exactly; a line inside rewritten code maps to the
    first line of the code it replaced, at that line's first non-blank column.
    """
    old_lines = split_lines(old)
    new_lines = split_lines(new)
    opcodes = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False).get_opcodes()

    def first_column(index: int) -> int:
        if 0 <= index < len(old_lines):
            text = old_lines[index]
            return len(text) - len(text.lstrip(" \t")) + 1
        return 1

    def mapper(line: int, col: int) -> Tuple[int, int]:
        index = line - 1
        for tag, i1, i2, j1, j2 in opcodes:
            if j1 <= index < j2 or (j1 == j2 == index):
                if tag == "equal":
                    return i1 + (index - j1) + 1, col
                target = min(i1, max(len(old_lines) - 1, 0))
                return target + 1, first_column(target)
        return max(len(old_lines), 1), col  # past the end: keep it on the last line

    return mapper
