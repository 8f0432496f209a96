"""The text pre-filter (each rule's TOKENS / REQUIRES) never hides a finding or a fix.

The engine skips a rule -- and a file -- whose pre-filter says it cannot fire. These tests run
every fixture with the pre-filter on and with it forced open, and demand identical output and
diagnostics, so a gate that is too tight fails here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from codemods import api
from codemods._base import TfcCodemod
from codemods.api import Options, SourceError, migrate_source

ROOT = Path(__file__).resolve().parent.parent
CASES = sorted(
    p for p in (ROOT / "fixtures").rglob("*.py") if p.name.endswith((".before.py", ".noop.py"))
) + sorted((ROOT / "examples").glob("*.py"))


def _run(source: str, options: Options):
    try:
        result = migrate_source(source, options, path="x.py")
    except SourceError as exc:
        return ("error", exc.reason)
    return (result.code, [d.format() for d in result.diagnostics])


@pytest.mark.parametrize("path", CASES, ids=lambda p: str(p.relative_to(ROOT)))
@pytest.mark.parametrize("options", [Options(unsafe_fixes=True, add_clip_norm=5.0)], ids=["unsafe+clip"])
def test_prefilter_hides_nothing(path, options, monkeypatch):
    """Output and diagnostics are the same whether or not the pre-filter lets every rule run."""
    source = path.read_text(encoding="utf-8")
    gated = _run(source, options)
    monkeypatch.setattr(TfcCodemod, "may_apply", classmethod(lambda cls, src: True))
    for rule in api.RULES:  # rules that override may_apply are opened too
        monkeypatch.setattr(rule, "may_apply", classmethod(lambda cls, src: True))
    assert _run(source, options) == gated


def test_prefilter_rules_out_unrelated_code():
    """A file with no candidate token is not even parsed (invalid syntax passes through)."""
    source = "print 'python 2, nothing about gradients'\n"
    assert not api.may_contain_targets(source)
    assert migrate_source(source).code == source
