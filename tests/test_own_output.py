"""`fix` never leaves a finding that needs a manual edit which `check` did not report before.

Issue 10 item 4: a pre-commit hook that fails forever on the tool's own output is unusable.
For every rewrite fixture (``fixtures/<CODE>/<case>.before.py``), the findings on the engine's
output that need a manual edit (no fix) must each be one ``check`` already reported on the
input, with the same code and the same reason once names and numbers are normalised out (a
decline may quote the tape the fix inserted where it quoted the call the fix replaced).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import List, Set, Tuple

import pytest

from _fixtures_lib import Case, discover, parse_options
from codemods.api import migrate_source
from codemods.engine.core import FixSafety

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
REWRITES = [case for case in discover(FIXTURES) if case.expected is not None]


def _normalised(message: str) -> str:
    message = re.sub(r"`[^`]*`", "`…`", message)
    return re.sub(r"\d+", "N", message)


def _manual(text: str, case: Case, options) -> Set[Tuple[str, str]]:
    result = migrate_source(text, dataclasses.replace(options, apply_fixes=False), path=str(case.source))
    return {(d.code, _normalised(d.message)) for d in result.diagnostics if d.fix is FixSafety.NONE}


@pytest.mark.parametrize("case", REWRITES, ids=[case.id for case in REWRITES])
def test_fix_output_has_no_new_manual_findings(case: Case) -> None:
    """Every manual-edit finding on the rewritten file was already reported on the original."""
    text = case.source.read_text(encoding="utf-8")
    options = parse_options(text, str(case.source))
    fixed = migrate_source(text, options, path=str(case.source)).code
    before = _manual(text, case, options)
    after = _manual(fixed, case, options)
    new: List[Tuple[str, str]] = sorted(after - before)
    assert not new, f"{case.id}: findings on fix's own output that check did not report before: {new}"
