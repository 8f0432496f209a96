"""What a run prints at its end, kept as it comes: text (:class:`TextSpool`: the report file's
sections, JUnit's test suites) and the JSON document's lists (:class:`Spool`, serialised entry by
entry: JSON's files and findings, SARIF's results), each in a temporary file past 256 KB, so memory
stays flat in the number of files. A spool whose temporary file fails says so (``ready()``) and no
document is written from it."""

from __future__ import annotations

import os
from typing import IO, Any, Dict, Iterator, List, Optional

from codemods.cli.quoting import json_entry

WRITE_SIZE = 64 << 10  # characters per write of the JSON document (and per read of a spool file)


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


class TextSpool:
    """Text pieces kept in memory, then in a temporary file past ``max_size`` characters.

    A failure of that file (a full ``TMPDIR``, a file size limit) is recorded in :attr:`failed`,
    never raised: the caller asks :meth:`ready` before it writes a document from the spool, and
    writes none when the spool lost text (a truncated document would be worse than none)."""

    def __init__(self, max_size: int = 256 << 10) -> None:
        self.max_size = max_size
        self.empty = True  # no text added yet
        self._parts: List[str] = []
        self._size = 0
        self._file: Optional[IO[str]] = None
        self.failed: Optional[str] = None  # why the spool file could not be written (no document then)

    def add(self, text: str) -> None:
        if self.failed is not None:
            return
        self.empty = self.empty and not text
        try:
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
        except OSError as exc:  # TMPDIR full, unwritable, a file size limit: no document, exit 2
            self._fail(exc)

    def _fail(self, exc: OSError) -> None:
        self.failed = f"{exc.strerror or exc} (TMPDIR={os.environ.get('TMPDIR') or '/tmp'})"
        self._parts = []
        try:
            if self._file is not None:
                self._file.close()
        except OSError:
            pass
        self._file = None

    def ready(self) -> Optional[str]:
        """Flush the spool file: None when the text can be read back whole, else why not."""
        if self._file is not None and self.failed is None:
            try:
                self._file.flush()
                os.fsync(self._file.fileno())
            except OSError as exc:
                self._fail(exc)
        return self.failed

    def chunks(self) -> Iterator[str]:
        """The text added, in pieces of about :data:`WRITE_SIZE` characters (after :meth:`ready`)."""
        if self._file is None:
            yield from self._parts
            return
        self._file.seek(0)
        while True:
            chunk = self._file.read(WRITE_SIZE)
            if not chunk:
                break
            yield chunk

    def close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError:
                pass
            self._file = None


class Spool(TextSpool):
    """The entries of one JSON list, serialised as they come (indented for their place in
    the document) and kept in a temporary file once they pass ``max_size`` characters."""

    def __init__(self, max_size: int = 256 << 10) -> None:
        super().__init__(max_size)
        self.count = 0

    def add(self, entry: Dict[str, Any]) -> None:  # type: ignore[override]
        if self.failed is not None:
            return
        text = _entry_json(json_entry(entry))
        super().add(("" if not self.count else ",\n") + "    " + text)
        self.count += 1

    def chunks(self) -> Iterator[str]:
        """The list's text (``[]``, or ``[`` + entries + ``]`` as ``json.dumps`` nests it)."""
        if not self.count:
            yield "[]"
            return
        yield "[\n"
        yield from super().chunks()
        yield "\n  ]"
