"""Cutting a rewritten notebook program into its cells again, for a whole-program rewrite
(TFC301) that moves code from cell to cell.

A notebook's code cells run one after another in one namespace, so *any* cut of a program into
the same number of pieces, in order, between top-level statements, runs the same program: each
piece parses on its own and the pieces run in the program's order. The cut only decides where a
reader finds the code. :func:`recut` keeps every cell-boundary marker the rewrite left in place
(at column 0, between top-level statements, in order) and puts each lost one after the last
statement that came from an earlier cell, so new code lands in the cell whose code it replaces.
A cell left with no code gets a comment saying where its code went.

Imports neither libcst nor TensorFlow.
"""

from __future__ import annotations

import ast
import re
from typing import Dict, List, Optional, Tuple

from codemods.engine.splice import split_lines
from codemods.notebooks.cells import BOUNDARY_TAG

_MARKER = re.compile("# " + re.escape(BOUNDARY_TAG) + r" (\d+)")


def _marker_number(line: str) -> Optional[int]:
    match = _MARKER.fullmatch(line.rstrip("\r\n"))
    return int(match.group(1)) if match else None


def statement_spans(lines: List[str]) -> List[Tuple[int, int]]:
    """``(first, last)`` 0-based line indices of each top-level statement (decorators included),
    the first moved up over the comment lines directly above it."""
    tree = ast.parse("".join(lines))
    spans = []
    for stmt in tree.body:
        first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])]) - 1
        while first > 0 and lines[first - 1].lstrip().startswith("#") and (not spans or first - 1 > spans[-1][1]):
            first -= 1
        spans.append((first, (stmt.end_lineno or stmt.lineno) - 1))
    return spans


def cell_texts(program: str) -> List[str]:
    """A notebook program's cells: the texts between its cell-boundary markers."""
    return re.split("^" + _MARKER.pattern + r"\r?\n", program, flags=re.M)[::2]


def _longest_in_order(found: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
    """The longest subsequence of ``(position, order)`` pairs (in position order) whose orders rise."""
    best: List[List[Tuple[int, int]]] = []
    for k, (position, order) in enumerate(found):
        chain = max((best[j] for j in range(k) if found[j][1] < order), key=len, default=[])
        best.append(chain + [(position, order)])
    return max(best, key=len, default=[])


def recut(old: str, new: str, note: str) -> str:
    """``new`` (a rewrite of the notebook program ``old``) with one cell-boundary marker per
    boundary of ``old``, in order, each at column 0 between top-level statements. ``note`` is the
    comment line written into a cell left with no code. Raises ``SyntaxError`` when ``new`` does
    not parse."""
    old_lines = split_lines(old)
    numbers: List[int] = []  # the markers of `old`, in order (the cells after the first)
    old_code: List[str] = []  # `old` without its markers
    old_cell: List[int] = []  # the cell (0 = first) of each line of old_code
    for line in old_lines:
        number = _marker_number(line)
        if number is not None:
            numbers.append(number)
            continue
        old_code.append(line)
        old_cell.append(len(numbers))
    order = {number: k for k, number in enumerate(numbers)}
    if not numbers:
        return new

    # the rewrite's markers: kept where they still sit between top-level statements, in order
    new_lines = split_lines(new)
    code: List[str] = []
    candidates: List[Tuple[int, int]] = []  # (position in code, order) of markers at column 0
    for line in new_lines:
        number = _marker_number(line)
        if number is not None and number in order:
            candidates.append((len(code), order[number]))
        elif _MARKER.fullmatch(line.strip()) is None:  # an indented marker (moved into a block) goes
            code.append(line)
    if code and not code[-1].endswith(("\n", "\r")):
        code[-1] += "\n"
    spans = statement_spans(code)
    inside = set()
    for first, last in spans:
        inside.update(range(first + 1, last + 1))  # a cut there would split the statement
    kept = dict((k, position) for position, k in _longest_in_order([c for c in candidates if c[0] not in inside]))

    # where each statement of the rewrite came from: the cell of its first line that is in `old`
    # once (a line in several places says nothing; an IPython line's placeholder is unique)
    where: Dict[str, Optional[int]] = {}
    for line, cell in zip(old_code, old_cell):
        key = line.rstrip()
        where[key] = None if key in where else cell
    origin: List[Optional[int]] = []
    for first, last in spans:
        cells = [where[key] for key in (code[j].rstrip() for j in range(first, last + 1))
                 if key.strip() and where.get(key) is not None]
        origin.append(cells[0] if cells else None)

    # A lost marker goes after the last statement (before the next kept marker) from an earlier
    # cell. Of several lost in a row, the first takes the new code that follows (the model lands in
    # the first cell whose code it replaces): the others go before the next statement from `old`.
    positions: List[int] = []
    starts = [first for first, _ in spans] + [len(code)]
    for k in range(len(numbers)):
        if k in kept:
            positions.append(kept[k])
            continue
        low = positions[-1] if positions else 0
        high = next((kept[j] for j in range(k + 1, len(numbers)) if j in kept), len(code))
        cut = low
        for s, (first, last) in enumerate(spans):
            if low <= first and last < high and origin[s] is not None and origin[s] <= k:
                cut = max(cut, min(starts[s + 1], high))
        if k and k - 1 not in kept and cut == low:
            cut = next((first for s, (first, last) in enumerate(spans)
                        if low <= first and last < high and origin[s] is not None), high)
        positions.append(cut)

    # the cells, each without blank lines at its edges where its code changed
    pieces: List[List[str]] = []
    bounds = [0] + positions + [len(code)]
    old_pieces = [[line for line, cell in zip(old_code, old_cell) if cell == k] for k in range(len(numbers) + 1)]
    for k in range(len(numbers) + 1):
        piece = code[bounds[k]:bounds[k + 1]]
        if [line for line in piece if line.strip()] != [line for line in old_pieces[k] if line.strip()]:
            while piece and not piece[0].strip():
                piece.pop(0)
            while piece and not piece[-1].strip():
                piece.pop()
            if not piece:
                piece = [note + "\n"]
        elif "".join(piece).strip() == "".join(old_pieces[k]).strip():
            piece = list(old_pieces[k])  # the cell's code is unchanged: its bytes too
        pieces.append(piece)
    out: List[str] = list(pieces[0])
    for number, piece in zip(numbers, pieces[1:]):
        if out and not out[-1].endswith(("\n", "\r")):
            out[-1] += "\n"
        out.append(f"# tfclip-migrate:cell-boundary {number}\n")
        out.extend(piece)
    text = "".join(out)
    if new.endswith(("\n", "\r")) or not text.endswith("\n"):
        return text
    return text[:-1]
