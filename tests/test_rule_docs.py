"""The rules' documentation cannot lie: each docstring has the ruff headings, its "Example" is a
complete program the engine turns into exactly its "Use instead" (or reports, for the rules
without a fix), and both train identically when executed (the Example as TF1 ran it)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, Tuple

import pytest

from codemods.engine.core import FixSafety
from codemods.engine.registry import RULES
from codemods.api import migrate_source

HEADINGS = ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety")
# Rules whose Example is not trained: TFC201's needs a multi-device distribution strategy.
NOT_EXECUTED = {"TFC201"}


def sections(rule) -> Tuple[str, str]:
    """The first python block under "## Example" and under "## Use instead", dedented."""
    doc = rule.__doc__ or ""
    def block(heading: str) -> str:
        part = doc.split(heading, 1)[1]
        match = re.search(r"```python\n(.*?)\n\s*```", part, re.S)
        assert match, f"{rule.CODE}: no python block under {heading!r}"
        return textwrap.dedent(match.group(1)) + "\n"
    return block("## Example"), block("## Use instead")


def has_fix(rule) -> bool:
    return rule.CODE not in ("TFC201", "TFC202")


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.CODE)
def test_doc_has_the_headings(rule) -> None:
    """Every rule documents What it does / Why is this bad? / Example / Use instead / Fix safety."""
    doc = rule.__doc__ or ""
    positions = [doc.find(h) for h in HEADINGS]
    assert all(p >= 0 for p in positions) and positions == sorted(positions), (rule.CODE, positions)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.CODE)
def test_example_becomes_use_instead(rule) -> None:
    """The engine turns the Example into exactly the Use instead, applying this rule's fix; a rule
    without a fix reports the Example and leaves it alone, and is silent on the Use instead."""
    example, use_instead = sections(rule)
    result = migrate_source(example)
    mine = [d for d in result.diagnostics if d.code == rule.CODE]
    assert mine, f"{rule.CODE} does not report its own Example: {[d.format() for d in result.diagnostics]}"
    if has_fix(rule):
        assert any(d.applied for d in mine), [d.format() for d in mine]
        assert result.code == use_instead
    else:
        assert result.code == example and all(d.fix is FixSafety.NONE for d in mine)
        assert not [d for d in migrate_source(use_instead).diagnostics if d.code == rule.CODE]


@pytest.fixture(scope="module")
def trained() -> Dict[str, dict]:
    cases = []
    for rule in RULES:
        if rule.CODE in NOT_EXECUTED:
            continue
        example, use_instead = sections(rule)
        kind = "eager" if "enable_eager_execution" in example else "graph"
        cases.append({"code": rule.CODE, "kind": kind, "example": example, "use_instead": use_instead})
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    worker = Path(__file__).with_name("_rule_docs_worker.py")
    proc = subprocess.run([sys.executable, str(worker)], input=json.dumps(cases), capture_output=True, text=True,
                          env=env, cwd=Path(__file__).resolve().parent.parent, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.split("@@RESULTS@@", 1)[1])


@pytest.mark.parametrize("rule", [r for r in RULES if r.CODE not in NOT_EXECUTED], ids=lambda r: r.CODE)
def test_example_and_use_instead_train_identically(trained: Dict[str, dict], rule) -> None:
    """Executed: the Example as TF1 ran it and the Use instead on TF 2 train to the same losses and
    variables (rtol 1e-5)."""
    result = trained[rule.CODE]
    assert result["same"], result["detail"]
