"""The engine's vocabulary, free of libcst and TensorFlow: findings, options, rule phases
and decoding.

The CLI imports only libcst-free modules (this one, ``_prepass``, ``_registry``) until a
file passes the pre-filter, so a run over files without any candidate (the usual
pre-commit case) never pays for importing libcst. ``codemods.api`` and ``codemods.engine.base``
re-export these names.
"""

from __future__ import annotations

import codecs
import enum
import io
import re
import tokenize
from dataclasses import dataclass
from typing import Callable, FrozenSet, Optional, Tuple


class FixSafety(str, enum.Enum):
    """Whether a site can be fixed automatically (ruff's vocabulary)."""

    SAFE = "safe"  # behaviour and comments preserved; applied by default
    UNSAFE = "unsafe"  # may change numerics or drop a comment; only with --unsafe-fixes
    NONE = "none"  # diagnostic only; code left untouched


@dataclass(frozen=True)
class Diagnostic:
    """One finding. ``line``/``col`` are 1-based, as in ``path:line:col: CODE message``;
    ``end_line``/``end_col`` (1-based, exclusive column, as ruff's ``end_location``) end the
    reported node, ``None`` where a finding has no extent (a file-level TFC900)."""

    path: str
    line: int
    col: int
    code: str
    message: str
    fix: FixSafety
    applied: bool = False
    end_line: Optional[int] = None
    end_col: Optional[int] = None
    # An applied fix's edit: ``(start line, end line (exclusive), new text)`` whole-line
    # replacements in the text as read; None where it is not known (not applied, notebooks).
    edits: Optional[Tuple[Tuple[int, int, str], ...]] = None

    def format(self) -> str:
        marker = ""
        if not self.applied and self.fix is FixSafety.SAFE:
            marker = " [*]"
        elif not self.applied and self.fix is FixSafety.UNSAFE:
            marker = " [*unsafe]"
        return f"{self.path}:{self.line}:{self.col}: {self.code}{marker} {self.message}"

    def to_json(self) -> dict:
        """The fields in order (what ``dataclasses.asdict`` gives, at a fraction of its cost),
        ``fix`` as its value."""
        return {"path": self.path, "line": self.line, "col": self.col, "code": self.code,
                "message": self.message, "fix": self.fix.value, "applied": self.applied,
                "end_line": self.end_line, "end_col": self.end_col, "edits": self.edits_json()}

    def edits_json(self) -> Optional[list]:
        """``edits`` as ruff writes a fix's edits: ``content`` replaces ``location`` to
        ``end_location`` (1-based lines, columns; whole lines here)."""
        if self.edits is None:
            return None
        return [{"location": {"line": start, "col": 1}, "end_location": {"line": end, "col": 1}, "content": text}
                for start, end, text in self.edits]


class Phase(enum.IntEnum):
    """When a rule runs. Rules run in (phase, code) order; each sees the module as the rules
    before it left it."""

    PROGRAM = 0  # whole-program migrations (TFC301): a file they rewrite is not seen by the per-site rules
    TF2_FORM = 1  # rewrite to the TF 2 form (tf.GradientTape, Keras optimizers): first pick of every site
    REPORT = 2  # advisories, and the sites the TF 2 rules recognised but could not prove
    COMPAT = 3  # the tfclip_compat form, for whatever the TF 2 rules left
    LEFT = 4  # reports on the code as the fixes left it (TFC203): runs after every fix


# A rule lives in ``codemods/rules/tfcNNN_<what_it_fixes>.py`` (``codemods.engine.registry`` finds it there).
RULE_MODULE = re.compile(r"^tfc(\d{3})_[a-z0-9_]+$")


class SourceError(Exception):
    """The source cannot be handled (syntax error, undecodable bytes, ...).

    ``reason`` is a one-line human explanation; the file must be left untouched.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Options:
    select: Optional[FrozenSet[str]] = None  # None = all rules
    ignore: FrozenSet[str] = frozenset()
    unsafe_fixes: bool = False
    add_clip_norm: Optional[float] = None
    apply_fixes: bool = True  # False = check only: report, rewrite nothing


def enabled(code: str, options: Options, opt_in: bool = False) -> bool:
    """Whether ``options`` turn the rule ``code`` on. An ``opt_in`` rule (TFC203) runs only when
    ``select`` names it (by its code or a prefix of it: ``TFC``, ``TFC2``)."""
    def matches(codes: FrozenSet[str]) -> bool:
        # "TFC" selects all, "TFC00" selects TFC001..TFC009, as in ruff.
        return any(code.startswith(prefix) for prefix in codes)

    if options.select is None and opt_in:
        return False
    if options.select is not None and not matches(options.select):
        return False
    return not matches(options.ignore)


def decode_source(data: bytes, *, path: str = "-") -> Tuple[str, str, bool]:
    """Decode file bytes as Python does (PEP 263 cookie, UTF-8 BOM).

    Returns ``(text, encoding, had_bom)``. Newlines are kept as they are (CRLF survives).
    """
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise SourceError(f"cannot detect the encoding: {exc}") from None
    had_bom = data.startswith(codecs.BOM_UTF8)
    if had_bom:
        data = data[len(codecs.BOM_UTF8):]
        encoding = "utf-8"
    if b"\x00" in data:
        raise SourceError("binary file (contains NUL bytes)")
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise SourceError(f"cannot decode as {encoding}: {exc}") from None
    return text, encoding, had_bom


def encode_source(text: str, encoding: str, had_bom: bool) -> bytes:
    data = text.encode(encoding)
    return codecs.BOM_UTF8 + data if had_bom else data


# "(line N)" in a message (a reason naming another statement: ModuleFacts.where), outside code spans.
_LINE_MENTION = re.compile(r"`[^`]*`|\(line (\d+)(, column \d+)?\)")


def map_line_mentions(message: str, convert: Callable[[int], str]) -> str:
    """``message`` with every ``(line N)`` (or ``(line N, column C)``, a parser's) outside
    backticks replaced by ``(convert(N))`` (the column kept)."""
    if "(line " not in message:
        return message

    def one(match: "re.Match[str]") -> str:
        if match.group(1) is None:
            return match.group(0)
        return f"({convert(int(match.group(1)))}{match.group(2) or ''})"

    return _LINE_MENTION.sub(one, message)
