"""Jupyter notebooks: reading ``.ipynb`` files, writing changed cells back in the file's own
JSON layout (spliced: :mod:`codemods.notebooks.layout`), and masking IPython-only lines (magics, shell escapes, help) so code cells parse as Python.

Imports neither libcst nor TensorFlow.
"""

from __future__ import annotations

import ast
import codecs
import json
import re
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Tuple


class NotebookError(Exception):
    """The notebook cannot be handled; ``reason`` says why (the file is left untouched)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Notebook:
    """A parsed ``.ipynb``: the decoded document and the JSON text it was read from."""

    data: Dict[str, Any]
    had_bom: bool
    text: str  # the JSON text as read (BOM removed, line endings kept)

    def code_cells(self) -> Iterator[Tuple[int, str]]:
        """``(cell_number, source)`` of every code cell; numbers are 1-based over all cells."""
        for number, cell in enumerate(self.data["cells"], start=1):
            if isinstance(cell, dict) and cell.get("cell_type") == "code":
                source = cell.get("source", "")
                if isinstance(source, list):
                    if not all(isinstance(part, str) for part in source):
                        continue
                    source = "".join(source)
                if isinstance(source, str):
                    yield number, source

    def write_back(self, sources: Dict[int, str]) -> bytes:
        """The notebook's bytes with the source of each cell ``number`` in ``sources`` replaced.

        Only those cells' ``source`` values change in the file as read
        (:mod:`codemods.notebooks.layout`); every other byte -- outputs, metadata, the
        indentation however irregular, escaping, line endings, BOM -- is kept. The result is
        verified: it must decode to this document, keys in the same order, with exactly
        those sources replaced (a list of lines stays a list, split after each ``"\\n"``
        as Jupyter does). Raises :class:`NotebookError` naming why otherwise."""
        from codemods.notebooks.layout import LayoutError, jupyter_lines, splice_sources

        cells = self.data["cells"]
        try:
            text = splice_sources(self.text, cells, sources)
        except LayoutError as exc:
            raise NotebookError(exc.reason) from None
        expected = dict(self.data)
        expected["cells"] = list(cells)
        for number, source in sources.items():
            cell = cells[number - 1]
            expected["cells"][number - 1] = dict(cell, source=jupyter_lines(source) if isinstance(cell["source"], list) else source)
        try:
            same = json.dumps(json.loads(text)) == json.dumps(expected)
        except ValueError:
            same = False
        if not same:
            raise NotebookError("the cells written back in the notebook's own JSON layout do not decode to the intended notebook")
        data = text.encode("utf-8")
        return codecs.BOM_UTF8 + data if self.had_bom else data


def load_notebook(raw: bytes) -> Notebook:
    """Parse notebook bytes; raises :class:`NotebookError` with a reason if impossible."""
    if not raw.strip():
        raise NotebookError("empty file is not a Jupyter notebook")
    had_bom = raw.startswith(codecs.BOM_UTF8)
    try:
        text = raw[len(codecs.BOM_UTF8):].decode("utf-8") if had_bom else raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotebookError(f"notebook is not valid UTF-8: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"invalid notebook JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        if isinstance(data, dict) and "worksheets" in data:
            raise NotebookError("nbformat 3 notebook (no top-level 'cells'); upgrade it with `jupyter nbconvert --to notebook`")
        raise NotebookError("not a Jupyter notebook (no top-level 'cells' list)")
    return Notebook(data=data, had_bom=had_bom, text=text)


def notebook_language(nb: Notebook) -> str:
    """The kernel language, ``python`` when the notebook does not say."""
    meta = nb.data.get("metadata") or {}
    info = meta.get("language_info") or {}
    kernel = meta.get("kernelspec") or {}
    language = info.get("name") or kernel.get("language") or "python"
    return str(language).lower()


# IPython syntax that is not Python: line magics, shell escapes, help.
_MAGIC_LINE = re.compile(r"^[ \t]*(?:[%!?]|[^#\n]*\?\??[ \t]*$)")
# ... and an assignment from one: `files = !ls`, `t = %timeit -o f()`.
_MAGIC_ASSIGN = re.compile(r"^([ \t]*)((?:[A-Za-z_]\w*[ \t]*,[ \t]*)*[A-Za-z_]\w*)[ \t]*=[ \t]*[!%]")
# Cell magics whose body is Python.
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
# IPython lines that leave the Python program alone: they read and bind no Python name and run
# no Python code (so a rewrite may move Python code past them): `%matplotlib`, `%config`, `%pip`,
# help (`tf.nn?`), and shell escapes with no `$name` / `{expr}` expansion. Their placeholders say
# so (``INERT_SUFFIX``).
_INERT_LINE = re.compile(r"^[ \t]*(?:%(?:matplotlib|config|pip)\b[^${]*|![^${]*|[^#\n%!]*\?\??[ \t]*)$")
INERT_SUFFIX = ":inert"
_PLACEHOLDER_TAG = "tfclip-migrate:ipython-line"
BOUNDARY_TAG = "tfclip-migrate:cell-boundary"
_BOUNDARY = "# " + BOUNDARY_TAG + " {number}"


@dataclass
class MaskedCell:
    """A code cell with its IPython-only lines replaced by placeholders (``pass``, or
    ``name = None`` for an assignment from a magic), each tagged with a key unique in
    the notebook.

    A Python-bodied cell magic (``%%time``) is held apart in ``header`` so a rewrite
    cannot insert code above it; ``line_offset`` maps positions back to the cell.
    """

    source: str
    originals: Dict[str, str]  # placeholder line -> original line
    header: str = ""
    line_offset: int = 0

    def unmask(self, new_source: str) -> Optional[str]:
        """Put the original lines back; None when a rewrite moved or changed a
        placeholder (then the cell must be left as it was)."""
        lines = new_source.split("\n")
        restored = 0
        for i, line in enumerate(lines):
            original = self.originals.get(line)
            if original is not None:
                lines[i] = original
                restored += 1
        if restored != len(self.originals):
            return None
        return self.header + "\n".join(lines)


def mask_ipython(source: str, cell: int = 0) -> Optional[MaskedCell]:
    """Mask IPython-only lines so the cell parses as Python, or None when the cell is
    not Python at all (a ``%%bash``-style cell magic). ``cell`` makes the placeholders
    of different cells distinct."""
    header = ""
    if source.lstrip(" \t").startswith("%%"):
        first, newline, rest = source.partition("\n")
        words = first.strip()[2:].split(None, 1)
        if not words or words[0] not in _PYTHON_CELL_MAGICS:
            return None
        header, source = first + newline, rest
    lines = source.split("\n")
    originals: Dict[str, str] = {}
    for i, line in enumerate(lines):
        if _PLACEHOLDER_TAG in line:
            continue
        tag = f"  # {_PLACEHOLDER_TAG}:{cell}.{len(originals)}"
        assign = _MAGIC_ASSIGN.match(line)
        if assign:
            inert = _INERT_LINE.match(line[assign.end() - 1:]) is not None
            placeholder = f"{assign.group(1)}{assign.group(2)} = None{tag}{INERT_SUFFIX if inert else ''}"
        elif _MAGIC_LINE.match(line):
            inert = _INERT_LINE.match(line) is not None
            placeholder = line[: len(line) - len(line.lstrip())] + "pass" + tag + (INERT_SUFFIX if inert else "")
        else:
            continue
        originals[placeholder] = line
        lines[i] = placeholder
    return MaskedCell(source="\n".join(lines), originals=originals, header=header, line_offset=1 if header else 0)


# --------------------------------------------------------------------------------------
# the code cells as one program


class CellBoundaryError(Exception):
    """A rewrite cannot be written back cell by cell; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class CellPart:
    """One code cell's place in the :class:`Program`."""

    number: int  # 1-based over all cells of the notebook
    masked: MaskedCell
    start: int = 0  # 1-based program line of the cell's first line
    lines: int = 0  # program lines the cell occupies (boundary marker excluded)
    newline_added: bool = False  # the cell did not end with a newline; the program adds one


@dataclass
class Program:
    """The notebook's Python code cells joined into one module, in order.

    Consecutive cells are separated by a marker comment at column 0
    (``# tfclip-migrate:cell-boundary N``). After a rewrite the markers must still be
    there, once each, in order and at column 0, or the rewrite crossed a cell boundary
    and cannot be written back cell by cell (:meth:`split` refuses).
    """

    source: str
    parts: List[CellPart]

    def locate(self, line: int) -> Tuple[int, int]:
        """Program line -> ``(cell number, line in the cell)``, both 1-based."""
        for part in reversed(self.parts):
            if line >= part.start:
                within = min(line - part.start, max(part.lines - 1, 0)) + 1
                return part.number, within + part.masked.line_offset
        first = self.parts[0]
        return first.number, 1 + first.masked.line_offset

    def mention(self, line: int) -> str:
        """Program line -> ``cell C, line M`` (for messages)."""
        return "cell {}, line {}".format(*self.locate(line))

    def locate_diagnostic(self, diag: Any) -> Tuple[int, Any]:
        """``(cell number, diag)`` with ``diag``'s positions in that cell: its line, its end
        (dropped when it lies in another cell) and every ``(line N)`` its message names,
        which becomes ``(cell C, line M)``: a program line is a line of no cell."""
        import dataclasses

        from codemods.engine.core import map_line_mentions

        cell, line = self.locate(diag.line)
        end_line, end_col = diag.end_line, diag.end_col
        if end_line is not None:
            end_cell, end_line = self.locate(end_line)
            if end_cell != cell:
                end_line = end_col = None

        message = map_line_mentions(diag.message, self.mention)
        return cell, dataclasses.replace(diag, line=line, end_line=end_line, end_col=end_col, message=message, edits=None)

    def split(self, new_source: str) -> Dict[int, str]:
        """The new source of every cell, from a rewritten program (IPython lines put back).
        Raises :class:`CellBoundaryError` when that is impossible."""
        from codemods.engine.splice import split_lines

        lines = split_lines(new_source)
        found = [(i, line.rstrip("\r\n")) for i, line in enumerate(lines) if BOUNDARY_TAG in line]
        expected = [_BOUNDARY.format(number=part.number) for part in self.parts[1:]]
        for k, marker in enumerate(expected):
            here = found[k][1] if k < len(found) else None
            if here != marker:
                before, after = self.parts[k].number, self.parts[k + 1].number
                how = "indents code across" if here is not None and here.strip() == marker else "moves code across"
                raise CellBoundaryError(f"the rewrite {how} the boundary between cells {before} and {after}")
        if len(found) != len(expected):
            raise CellBoundaryError("the rewrite duplicates a cell boundary")
        cuts = [-1] + [i for i, _ in found] + [len(lines)]
        out: Dict[int, str] = {}
        for k, part in enumerate(self.parts):
            text = "".join(lines[cuts[k] + 1 : cuts[k + 1]])
            if part.newline_added and text.endswith("\n"):
                text = text[:-1]
            if text == part.masked.source:
                continue
            if part.masked.header.lstrip(" \t").startswith("%%timeit"):
                # the body runs many times: code moved in or out would run a different number of times
                raise CellBoundaryError(f"cell {part.number} runs under %%timeit (its code runs many times): "
                                        "a rewrite there is left to you")
            try:
                ast.parse(text)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                raise CellBoundaryError(f"cell {part.number} would not run on its own after the rewrite") from None
            restored = part.masked.unmask(text)
            if restored is None:
                raise CellBoundaryError(f"the rewrite would move IPython lines of cell {part.number}")
            out[part.number] = restored
        return out


def build_program(cells: List[Tuple[int, MaskedCell]]) -> Program:
    """Join masked cells ``(number, masked)`` into one :class:`Program`."""
    from codemods.engine.splice import split_lines

    chunks: List[str] = []
    parts: List[CellPart] = []
    line = 1
    for index, (number, masked) in enumerate(cells):
        if index:
            chunks.append(_BOUNDARY.format(number=number) + "\n")
            line += 1
        text = masked.source
        part = CellPart(number=number, masked=masked, start=line)
        if not text.endswith(("\n", "\r")):
            text += "\n"
            part.newline_added = True
        part.lines = len(split_lines(text))
        line += part.lines
        chunks.append(text)
        parts.append(part)
    return Program(source="".join(chunks), parts=parts)


def ipython_placeholder(comment: str) -> Optional[bool]:
    """For a statement's trailing comment: whether it marks an inert IPython line (True), another
    IPython line (False), or is no placeholder at all (None)."""
    if _PLACEHOLDER_TAG not in comment:
        return None
    return comment.rstrip().endswith(INERT_SUFFIX)


def has_boundary_tag(source: str) -> bool:
    """Whether user code already contains the boundary marker's tag (then no program
    can be split reliably)."""
    return BOUNDARY_TAG in source
