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
from codemods.api import Options, migrate_source

HEADINGS = ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety")
def _executable(rule) -> bool:
    """Whether the Example can be trained here: one whose program builds a ``tf.distribute``
    strategy needs several devices, which the worker does not set up (derived from the rule's
    own Example, never a hand-kept list); one that opens its own ``tf.Session`` is a whole session
    script, trained before and after by ``tests/proofs/test_eager_migration.py``; an opt-in rule
    (TFC203) reports what the fixes left, and its Use instead sketches a manual rewrite."""
    example = sections(rule)[0]
    return "tf.distribute." not in example and "Session(" not in example and not rule.OPT_IN


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
    """Whether the rule's *Fix safety* section names a fix (what its generated page says)."""
    from tools.rule_pages import read_rules

    [doc] = [d for d in read_rules() if d.code == rule.CODE]
    return doc.fix != "no fix"


def options(rule) -> Options:
    """Default options, with an opt-in rule (TFC203) selected along with every other rule."""
    return Options(select=frozenset({"TFC"})) if rule.OPT_IN else Options()

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
    result = migrate_source(example, options(rule))
    mine = [d for d in result.diagnostics if d.code == rule.CODE]
    assert mine, f"{rule.CODE} does not report its own Example: {[d.format() for d in result.diagnostics]}"
    if has_fix(rule):
        assert any(d.applied for d in mine), [d.format() for d in mine]
        assert result.code == use_instead
    else:
        assert result.code == example and all(d.fix is FixSafety.NONE for d in mine)
        assert not [d for d in migrate_source(use_instead, options(rule)).diagnostics if d.code == rule.CODE]


@pytest.fixture(scope="module")
def trained() -> Dict[str, dict]:
    cases = []
    for rule in RULES:
        if not _executable(rule):
            continue
        example, use_instead = sections(rule)
        kind = "eager" if "enable_eager_execution" in example else "graph"
        cases.append({"code": rule.CODE, "kind": kind, "example": example, "use_instead": use_instead})
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    worker = Path(__file__).resolve().parents[1] / "_rule_docs_worker.py"
    proc = subprocess.run([sys.executable, str(worker)], input=json.dumps(cases), capture_output=True, text=True,
                          env=env, cwd=Path(__file__).resolve().parents[2], timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.split("@@RESULTS@@", 1)[1])


@pytest.mark.parametrize("rule", [r for r in RULES if _executable(r)], ids=lambda r: r.CODE)
def test_example_and_use_instead_train_identically(trained: Dict[str, dict], rule) -> None:
    """Executed: the Example as TF1 ran it and the Use instead on TF 2 train to the same losses and
    variables (rtol 1e-5)."""
    result = trained[rule.CODE]
    assert result["same"], result["detail"]
