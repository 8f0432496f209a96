"""Jupyter notebooks: reading ``.ipynb`` files, writing them back in their own JSON layout,
and masking IPython-only lines (magics, shell escapes, help) so code cells parse as Python.

Imports neither libcst nor TensorFlow.
"""

from __future__ import annotations

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
    """A parsed ``.ipynb`` with what is needed to write it back in its own layout."""

    data: Dict[str, Any]
    had_bom: bool
    crlf: bool
    layout: Optional[Dict[str, Any]]  # json.dumps kwargs reproducing the file; None = unknown
    suffix: str  # whitespace after the JSON document

    def code_cells(self) -> Iterator[Tuple[int, str]]:
        """``(cell_number, source)`` of every code cell; numbers are 1-based over all cells."""
        for number, cell in enumerate(self.data["cells"], start=1):
            if isinstance(cell, dict) and cell.get("cell_type") == "code":
                source = cell.get("source", "")
                if isinstance(source, list):
                    source = "".join(source)
                if isinstance(source, str):
                    yield number, source

    def set_source(self, number: int, source: str) -> None:
        """Replace cell ``number``'s source, keeping its list-of-lines or string form."""
        cell = self.data["cells"][number - 1]
        if isinstance(cell.get("source"), list):
            cell["source"] = source.splitlines(keepends=True)
        else:
            cell["source"] = source

    def dump(self) -> bytes:
        """Serialise in the layout detected at load time."""
        assert self.layout is not None
        text = json.dumps(self.data, **self.layout) + self.suffix
        if self.crlf:
            text = text.replace("\n", "\r\n")
        data = text.encode("utf-8")
        return codecs.BOM_UTF8 + data if self.had_bom else data


def _detect_layout(data: Any, text: str) -> Tuple[Optional[Dict[str, Any]], str]:
    """Find ``json.dumps`` arguments that reproduce ``text`` exactly (key order is kept by
    ``json.loads``). Jupyter itself writes ``indent=1, ensure_ascii=False`` + newline."""
    body = text.rstrip()
    suffix = text[len(body):]
    indents: List[Optional[int]] = []
    match = re.search(r"\n( +)\S", body)
    if match:
        indents.append(len(match.group(1)))
    indents += [1, 2, 4, None]
    for indent in dict.fromkeys(indents):
        seps = [(",", ": ")] if indent is not None else [(", ", ": "), (",", ":")]
        for separators in seps:
            for ensure_ascii in (False, True):
                kwargs: Dict[str, Any] = {
                    "indent": indent,
                    "ensure_ascii": ensure_ascii,
                    "separators": separators,
                }
                if json.dumps(data, **kwargs) == body:
                    return kwargs, suffix
    return None, suffix


def load_notebook(raw: bytes) -> Notebook:
    """Parse notebook bytes; raises :class:`NotebookError` with a reason if impossible."""
    if not raw.strip():
        raise NotebookError("empty file is not a Jupyter notebook")
    had_bom = raw.startswith(codecs.BOM_UTF8)
    try:
        text = raw[len(codecs.BOM_UTF8):].decode("utf-8") if had_bom else raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotebookError(f"notebook is not valid UTF-8: {exc}") from None
    crlf = "\r\n" in text
    if crlf:
        text = text.replace("\r\n", "\n")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"invalid notebook JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        if isinstance(data, dict) and "worksheets" in data:
            raise NotebookError("nbformat 3 notebook (no top-level 'cells'); upgrade it with `jupyter nbconvert --to notebook`")
        raise NotebookError("not a Jupyter notebook (no top-level 'cells' list)")
    layout, suffix = _detect_layout(data, text)
    return Notebook(data=data, had_bom=had_bom, crlf=crlf, layout=layout, suffix=suffix)


def notebook_language(nb: Notebook) -> str:
    """The kernel language, ``python`` when the notebook does not say."""
    meta = nb.data.get("metadata") or {}
    info = meta.get("language_info") or {}
    kernel = meta.get("kernelspec") or {}
    language = info.get("name") or kernel.get("language") or "python"
    return str(language).lower()


# IPython syntax that is not Python: line magics, shell escapes, help.
_MAGIC_LINE = re.compile(r"^[ \t]*(?:[%!?]|[^#\n]*\?\??[ \t]*$)")
# Cell magics whose body is Python.
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
_PLACEHOLDER = "pass  # tfclip-migrate:ipython-line:{n}"


@dataclass
class MaskedCell:
    """A code cell with its IPython-only lines replaced by ``pass`` placeholders.

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


def mask_ipython(source: str) -> Optional[MaskedCell]:
    """Mask IPython-only lines so the cell parses as Python, or None when the cell is
    not Python at all (a ``%%bash``-style cell magic)."""
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
        if _MAGIC_LINE.match(line) and "tfclip-migrate:ipython-line" not in line:
            indent = line[: len(line) - len(line.lstrip())]
            placeholder = indent + _PLACEHOLDER.format(n=len(originals))
            originals[placeholder] = line
            lines[i] = placeholder
    return MaskedCell(source="\n".join(lines), originals=originals, header=header, line_offset=1 if header else 0)
