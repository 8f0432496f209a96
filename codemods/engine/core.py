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
from typing import FrozenSet, Optional, Tuple


class FixSafety(str, enum.Enum):
    """Whether a site can be fixed automatically (ruff's vocabulary)."""

    SAFE = "safe"  # behaviour and comments preserved; applied by default
    UNSAFE = "unsafe"  # may change numerics or drop a comment; only with --unsafe-fixes
    NONE = "none"  # diagnostic only; code left untouched


@dataclass(frozen=True)
class Diagnostic:
    """One finding. ``line``/``col`` are 1-based, as in ``path:line:col: CODE message``."""

    path: str
    line: int
    col: int
    code: str
    message: str
    fix: FixSafety
    applied: bool = False

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
                "message": self.message, "fix": self.fix.value, "applied": self.applied}


class Phase(enum.IntEnum):
    """When a rule runs. Rules run in (phase, code) order; each sees the module as the rules
    before it left it."""

    TF2_FORM = 1  # rewrite to the TF 2 form (tf.GradientTape, Keras optimizers): first pick of every site
    REPORT = 2  # advisories, and the sites the TF 2 rules recognised but could not prove
    COMPAT = 3  # the tfclip_compat form, for whatever the TF 2 rules left


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


def enabled(code: str, options: Options) -> bool:
    def matches(codes: FrozenSet[str]) -> bool:
        # "TFC" selects all, "TFC00" selects TFC001..TFC009, as in ruff.
        return any(code.startswith(prefix) for prefix in codes)

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
