"""What processing one file produces: its findings and its :class:`FileReport`.

Shared by the processing (:mod:`codemods.cli.process`), the cache, the report and its formats,
and the notebooks: a module of its own, so that none of them imports another to get these types.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from codemods.cli import writes as _writes

if TYPE_CHECKING:  # pragma: no cover
    from codemods.engine.core import Diagnostic


@dataclass(frozen=True)
class Finding:
    """A diagnostic plus, for notebooks, the 1-based cell it is in."""

    diagnostic: "Diagnostic"
    cell: Optional[int] = None

    @property
    def code(self) -> str:
        return self.diagnostic.code

    def format(self) -> str:
        """``path:line:col: CODE message`` (``path:cell N:line:col: ...`` in notebooks)."""
        diag = self.diagnostic
        if self.cell is not None:
            diag = dataclasses.replace(diag, path=f"{diag.path}:cell {self.cell}")
        return diag.format()

    def to_json(self) -> Dict[str, Any]:
        data = self.diagnostic.to_json()
        data["cell"] = self.cell
        return data


@dataclass
class FileReport:
    """The outcome for one file. ``status``: ``unchanged``, ``changed`` (new content
    computed), ``skipped`` (could not be analysed: TFC900) or ``error`` (not processed or
    not written: exit 2). ``written`` is set by the main process after the write."""

    display: str
    status: str = "unchanged"
    reason: str = ""
    parsed: bool = False  # False: the text pre-filter ruled the file out
    findings: List[Finding] = field(default_factory=list)
    new: Optional[bytes] = None  # the rewritten bytes (status "changed")
    diff: Optional[bytes] = None  # unified diff, in the file's own encoding
    encoding: str = "utf-8"
    snapshot: Optional[_writes.Snapshot] = None
    digest: Optional[str] = None  # of the bytes read (compare-and-swap)
    written: bool = False
    cache_key: Optional[str] = None  # the cache key of the bytes read (None: no cache)
    cache_miss: bool = False  # the entry was looked up and missing: store the result
    cacheable: bool = False  # the outcome depends only on the bytes and the settings

    def not_written(self, reason: str) -> None:
        """The new content was not written: an error, and no fix counts as applied."""
        self.status = "error"
        self.reason = reason
        self.written = False
        self.findings = [
            Finding(dataclasses.replace(f.diagnostic, applied=False), f.cell) if f.diagnostic.applied else f
            for f in self.findings
        ]
