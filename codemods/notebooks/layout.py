"""Writing a notebook back by splicing: the new ``source`` of each changed code cell replaces
only that value's JSON text in the file as read; every other byte stays as it was.

Notebooks are saved by many writers (Jupyter: ``indent=1``; Colab: irregular indentation, a
tab here and there, ``<``/``>``/``&`` escaped as ``\\u003c``...; hand-edited files; mixed CRLF
and LF), so re-serialising the whole document cannot promise to keep the file's layout. This
module instead

1. scans the JSON text for the span of every cell's ``source`` value (and, for a list of
   lines, the span of each string and the whitespace between them), with the C string
   scanner of :mod:`json` and ``raw_decode`` to step over every other value;
2. re-encodes the changed cell's lines in the notebook's own style: a list of lines stays a
   list (split as Jupyter splits: after each ``"\\n"``), a string stays a string; lines that
   did not change keep their original JSON text; new lines are escaped the way this cell
   (else the file) escapes (raw non-ASCII or ``\\uXXXX``; HTML-safe ``\\u003c``/``\\u003e``/
   ``\\u0026`` or not); between items goes the separator the item had in the original array
   (so each line keeps its own line ending), new items get the array's most common one;
3. lets the caller verify that the new text decodes to the old document with only those
   sources replaced (:meth:`codemods.notebooks.cells.Notebook.write_back`).

Imports neither libcst nor TensorFlow.
"""

from __future__ import annotations

import difflib
import json
import re
from collections import Counter
from dataclasses import dataclass
from json.decoder import scanstring
from typing import Any, Callable, Dict, List, Optional, Tuple

__all__ = ["LayoutError", "SourceSpan", "jupyter_lines", "scan_sources", "splice_sources"]

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_JUPYTER_LINES = re.compile(r"[^\n]*\n|[^\n]+")
# A \uXXXX escape (not an escaped backslash followed by "u").
_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u([0-9a-fA-F]{4})")
_HTML_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"}


class LayoutError(Exception):
    """The notebook's JSON text cannot be spliced; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class SourceSpan:
    """Where one cell's ``source`` value lies in the JSON text (``text[start:end]``)."""

    start: int
    end: int
    items: Optional[List[Tuple[int, int]]]  # spans of the strings of a list source; None: a string
    key_ws: str  # the whitespace before the "source" key (after "{" or ",")
    brace_indent: Optional[str]  # the whitespace before the cell's "{" on its line; None: not at a line start


def jupyter_lines(source: str) -> List[str]:
    """``source`` as the list of lines Jupyter stores (each ends after its ``"\\n"``)."""
    return _JUPYTER_LINES.findall(source)


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text

    def error(self, pos: int, what: str) -> LayoutError:
        line = self.text.count("\n", 0, pos) + 1
        return LayoutError(f"cannot locate the cells in the JSON text: {what} at line {line}")

    def ws(self, pos: int) -> int:
        match = _WS.match(self.text, pos)
        return match.end() if match else pos

    def expect(self, pos: int, char: str) -> int:
        if not self.text.startswith(char, pos):
            raise self.error(pos, f"expected {char!r}")
        return pos + 1

    def skip(self, pos: int) -> int:
        """The end of the JSON value at ``pos``."""
        try:
            return _DECODER.raw_decode(self.text, pos)[1]
        except json.JSONDecodeError as exc:
            raise self.error(pos, exc.msg) from None

    def string(self, pos: int) -> Tuple[str, int]:
        if not self.text.startswith('"', pos):
            raise self.error(pos, "expected a string")
        try:
            return scanstring(self.text, pos + 1)
        except (ValueError, json.JSONDecodeError) as exc:
            raise self.error(pos, str(exc)) from None

    def members(self, pos: int, handle: Callable[[str, int, str], int]) -> int:
        """Walk the object at ``pos``: ``handle(key, value_pos, key_ws)`` returns the value's end."""
        after = pos = self.expect(pos, "{")
        pos = self.ws(pos)
        if self.text.startswith("}", pos):
            return pos + 1
        while True:
            key_ws = self.text[after:pos]
            key, pos = self.string(pos)
            pos = self.ws(self.expect(self.ws(pos), ":"))
            pos = self.ws(handle(key, pos, key_ws))
            if self.text.startswith(",", pos):
                after = pos + 1
                pos = self.ws(after)
                continue
            return self.expect(pos, "}")

    def elements(self, pos: int, handle: Callable[[int], int]) -> int:
        """Walk the array at ``pos``: ``handle(value_pos)`` returns the value's end."""
        pos = self.ws(self.expect(pos, "["))
        if self.text.startswith("]", pos):
            return pos + 1
        while True:
            pos = self.ws(handle(pos))
            if self.text.startswith(",", pos):
                pos = self.ws(pos + 1)
                continue
            return self.expect(pos, "]")


def scan_sources(text: str) -> List[Optional[SourceSpan]]:
    """The ``source`` span of every cell of the notebook ``text`` (None for a cell that is not
    an object or has no string / list-of-strings source). Where a key occurs twice, the last
    one counts, as in :func:`json.loads`."""
    scanner = _Scanner(text)
    cells: Optional[List[Optional[SourceSpan]]] = None

    def source_value(pos: int, key_ws: str, brace_indent: Optional[str]) -> Tuple[int, Optional[SourceSpan]]:
        if text.startswith('"', pos):
            end = scanner.string(pos)[1]
            return end, SourceSpan(pos, end, None, key_ws, brace_indent)
        if not text.startswith("[", pos):
            return scanner.skip(pos), None
        items: List[Tuple[int, int]] = []
        strings = True

        def item(at: int) -> int:
            nonlocal strings
            if not text.startswith('"', at):
                strings = False
                return scanner.skip(at)
            end = scanner.string(at)[1]
            items.append((at, end))
            return end

        end = scanner.elements(pos, item)
        return end, (SourceSpan(pos, end, items, key_ws, brace_indent) if strings else None)

    def cell(pos: int, found: List[Optional[SourceSpan]]) -> int:
        if not text.startswith("{", pos):
            found.append(None)
            return scanner.skip(pos)
        line_start = text.rfind("\n", 0, pos) + 1
        prefix = text[line_start:pos]
        brace_indent = prefix if not prefix.strip(" \t\r") else None
        span: List[Optional[SourceSpan]] = [None]

        def member(key: str, at: int, key_ws: str) -> int:
            if key != "source":
                return scanner.skip(at)
            end, span[0] = source_value(at, key_ws, brace_indent)
            return end

        end = scanner.members(pos, member)
        found.append(span[0])
        return end

    def top(key: str, pos: int, key_ws: str) -> int:
        nonlocal cells
        if key != "cells" or not text.startswith("[", pos):
            if key == "cells":
                cells = None
            return scanner.skip(pos)
        found: List[Optional[SourceSpan]] = []
        end = scanner.elements(pos, lambda at: cell(at, found))
        cells = found
        return end

    end = scanner.members(scanner.ws(0), top)
    if scanner.ws(end) != len(text):
        raise scanner.error(scanner.ws(end), "text after the JSON document")
    if cells is None:
        raise LayoutError("cannot locate the cells in the JSON text: no top-level 'cells' list")
    return cells


@dataclass
class _Style:
    ensure_ascii: Optional[bool] = None  # None: the text does not tell
    html_safe: Optional[bool] = None

    def fill(self, other: "_Style") -> "_Style":
        return _Style(
            self.ensure_ascii if self.ensure_ascii is not None else other.ensure_ascii,
            self.html_safe if self.html_safe is not None else other.html_safe,
        )


def _style(text: str) -> _Style:
    """How JSON text escapes: raw non-ASCII or ``\\uXXXX`` escapes; ``<>&`` raw or escaped."""
    style = _Style()
    escaped = {int(code, 16) for code in _ESCAPE.findall(text)}
    if not text.isascii():
        style.ensure_ascii = False
    elif any(code >= 0x80 for code in escaped):
        style.ensure_ascii = True
    if any(char in text for char in _HTML_ESCAPES):
        style.html_safe = False  # outside strings JSON has none of these, so this is in a string
    elif escaped & {0x3C, 0x3E, 0x26}:
        style.html_safe = True
    return style


def _encode(value: str, style: _Style) -> str:
    token = json.dumps(value, ensure_ascii=bool(style.ensure_ascii))
    if style.html_safe:
        for char, escape in _HTML_ESCAPES.items():
            token = token.replace(char, escape)
        if not style.ensure_ascii:
            token = token.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return token


def _layout_of(text: str, span: SourceSpan) -> Tuple[Optional[str], List[str], Optional[str]]:
    """``(whitespace after "[", separators between items, whitespace before "]")`` of a list
    source; the whitespace is None for an empty list."""
    items = span.items or []
    if not items:
        return None, [], None
    seps = [text[items[i][1] : items[i + 1][0]] for i in range(len(items) - 1)]
    return text[span.start + 1 : items[0][0]], seps, text[items[-1][1] : span.end - 1]


def _template(text: str, span: SourceSpan, spans: List[Optional[SourceSpan]]) -> Tuple[str, str, str]:
    """Opening whitespace, separator and closing whitespace for a list that has too few items
    to show its own: another cell's at the same indentation, else derived from the
    whitespace around the ``"source"`` key (as ``json.dumps(indent=N)`` lays it out)."""
    for other in spans:
        if other is None or other.items is None or len(other.items) < 2:
            continue
        if other.key_ws == span.key_ws and other.brace_indent == span.brace_indent:
            opening, seps, closing = _layout_of(text, other)
            assert opening is not None and closing is not None
            return opening, Counter(seps).most_common(1)[0][0], closing
    key_ws = span.key_ws
    if "\n" not in key_ws:
        return "", "," + key_ws, ""
    newline_at = key_ws.rfind("\n")
    ending = "\r\n" if key_ws[newline_at - 1 : newline_at] == "\r" else "\n"
    indent = key_ws[newline_at + 1 :]
    outer = span.brace_indent
    step = indent[len(outer) :] if outer is not None and indent.startswith(outer) and len(indent) > len(outer) else " "
    opening = ending + indent + step
    return opening, "," + opening, ending + indent


def _render_list(text: str, span: SourceSpan, lines: List[str], style: _Style, spans: List[Optional[SourceSpan]]) -> str:
    if not lines:
        return "[]"
    items = span.items or []
    old_tokens = [text[start:end] for start, end in items]
    old_values = [scanstring(token, 1)[0] for token in old_tokens]
    opening, seps, closing = _layout_of(text, span)
    if seps:
        default_sep = Counter(seps).most_common(1)[0][0]
    elif opening is not None and "\n" in opening:
        default_sep = "," + opening
    else:
        default_sep = _template(text, span, spans)[1]
    if opening is None or closing is None:
        opening, _, closing = _template(text, span, spans)
    # Each new line is either an old line kept as it was (its JSON text reused) or takes the
    # place of an old line ("slot": it inherits the separator that followed that line).
    reused: List[Optional[int]] = [None] * len(lines)
    slot: List[Optional[int]] = [None] * len(lines)
    matcher = difflib.SequenceMatcher(None, old_values, lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for k in range(min(i2 - i1, j2 - j1)):
            slot[j1 + k] = i1 + k
            if tag == "equal":
                reused[j1 + k] = i1 + k
    out = ["[", opening]
    for j, line in enumerate(lines):
        old = reused[j]
        out.append(old_tokens[old] if old is not None else _encode(line, style))
        if j + 1 < len(lines):
            place = slot[j]
            out.append(seps[place] if place is not None and place < len(seps) else default_sep)
    out += [closing, "]"]
    return "".join(out)


def splice_sources(text: str, cells: List[Any], new_sources: Dict[int, str]) -> str:
    """``text`` with the ``source`` of each cell ``number`` (1-based) in ``new_sources``
    replaced, in that cell's own form (list of lines or string) and the file's own style.
    ``cells`` is the decoded ``cells`` list (for each cell's form). Bytes outside the
    replaced values are kept. Raises :class:`LayoutError` when a source cannot be located."""
    spans = scan_sources(text)
    if len(spans) != len(cells):
        raise LayoutError("cannot locate the cells in the JSON text: the scan does not match the decoded notebook")
    file_style = _style(text).fill(_Style(False, False))
    edits: List[Tuple[int, int, str]] = []
    for number in sorted(new_sources):
        span = spans[number - 1]
        if span is None:
            raise LayoutError(f"cannot locate the source of cell {number} in the JSON text")
        style = _style(text[span.start : span.end]).fill(file_style)
        source = new_sources[number]
        if span.items is None:
            edits.append((span.start, span.end, _encode(source, style)))
        else:
            edits.append((span.start, span.end, _render_list(text, span, jupyter_lines(source), style, spans)))
    out: List[str] = []
    last = 0
    for start, end, token in edits:
        out += [text[last:start], token]
        last = end
    out.append(text[last:])
    return "".join(out)
