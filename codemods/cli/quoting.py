"""How paths and reasons are shown: a name can hold any byte but ``/`` and NUL, and must
never forge an output line nor reach the terminal as an escape sequence.

* Text output (:func:`path_text`, :func:`escape_text`): a path holding a control character
  (C0, DEL, C1), a byte that is not UTF-8 (kept by Python as a lone surrogate) or, then,
  a ``"`` or ``\\`` is shown quoted the way git quotes it (``core.quotePath``):
  ``"a\\nb.py"``, ``"\\033[31m.py"``, ``"caf\\351.py"`` (C escapes, other bytes as 3-digit
  octal). Any other path is shown as is. A reason or message keeps its text, its control
  characters escaped the same way (without quotes).
* JSON (:func:`json_path`): a string that is valid UTF-8 -- a non-UTF-8 byte is written as
  ``\\xHH`` -- and :func:`path_bytes` gives the raw bytes (hex) for an exact round trip.
* Diff headers (:func:`diff_name`): git's quoting again, and, as git does, a tab after a
  name holding a space, so that both ``patch`` and ``git apply`` read the whole name.

Imports neither libcst nor TensorFlow.
"""

from __future__ import annotations

import os
import re
from typing import Any, Dict, Optional

# C0 controls, DEL, C1 controls and lone surrogates (the bytes surrogateescape kept).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\udc80-\udcff]")
_C_ESCAPES = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f", "\r": "\\r"}


def _escape_char(char: str) -> str:
    if char in _C_ESCAPES:
        return _C_ESCAPES[char]
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a raw byte
        return "\\%03o" % (code - 0xDC00)
    return "".join("\\%03o" % byte for byte in char.encode("utf-8"))


def _escape(text: str, quoted: bool) -> str:
    if quoted:
        text = text.replace("\\", "\\\\").replace('"', '\\"')
    return _UNSAFE.sub(lambda m: _escape_char(m.group()), text)


def needs_quoting(path: str) -> bool:
    return _UNSAFE.search(path) is not None


def path_text(path: Optional[str]) -> str:
    """``path`` as text output shows it (quoted as git does when it holds unsafe characters)."""
    if path is None:
        return ""
    if not needs_quoting(path):
        return path
    return '"' + _escape(path, True) + '"'


def escape_text(text: str) -> str:
    """``text`` (a reason, a message) with its control characters escaped."""
    if _UNSAFE.search(text) is None:
        return text
    return _escape(text, False)


def json_path(path: str) -> str:
    """``path`` as valid UTF-8 for JSON (each non-UTF-8 byte as ``\\xHH``)."""
    if not any(0xDC80 <= ord(c) <= 0xDCFF for c in path):
        return path
    return "".join("\\x%02x" % (ord(c) - 0xDC00) if 0xDC80 <= ord(c) <= 0xDCFF else c for c in path)


def path_bytes(path: str) -> Optional[str]:
    """The raw bytes of a path that is not valid UTF-8, as hex (None for a UTF-8 path)."""
    if not any(0xDC80 <= ord(c) <= 0xDCFF for c in path):
        return None
    return os.fsencode(path).hex()


def json_entry(entry: Dict[str, Any]) -> Dict[str, Any]:
    """A JSON entry whose ``path`` is valid UTF-8, with ``path_bytes`` when it was not."""
    path = entry.get("path")
    if isinstance(path, str):
        raw = path_bytes(path)
        if raw is not None:
            entry = dict(entry, path=json_path(path))
            entry["path_bytes"] = raw
    return entry


def json_text(text: str) -> str:
    """Any other string of the JSON document made valid UTF-8 (lone surrogates as ``\\xHH``)."""
    return json_path(text)


def diff_name(path: str) -> bytes:
    """The name in a ``---``/``+++`` line: quoted as git quotes it when it holds unsafe
    characters, and followed by a tab when it holds a space (git's rule, so that ``patch``
    takes the whole name)."""
    if needs_quoting(path) or '"' in path or "\\" in path:
        # git quotes a name holding `"` or `\` too; patch reads the C escapes back.
        return ('"' + _escape(path, True) + '"').encode("utf-8", "surrogateescape")
    name = os.fsencode(path)
    return name + b"\t" if b" " in name else name


def finding_text(finding: Any) -> str:
    """A finding's ``path:line:col: CODE message`` line (``codemods.cli.process.Finding``), its
    path quoted and its message escaped (:func:`path_text`, :func:`escape_text`)."""
    import dataclasses

    diag = finding.diagnostic
    if needs_quoting(diag.path) or _UNSAFE.search(diag.message):
        diag = dataclasses.replace(diag, path=path_text(diag.path), message=escape_text(diag.message))
        finding = dataclasses.replace(finding, diagnostic=diag)
    return finding.format()
