"""The text pre-filter (each rule's TOKENS / REQUIRES) never hides a finding or a fix.

The engine skips a rule -- and a file -- whose pre-filter says it cannot fire. These tests run
every fixture with the pre-filter on and with it forced open, and demand identical output and
diagnostics, so a gate that is too tight fails here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from codemods import _core, api
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


def _samples():
    texts = [p.read_text(encoding="utf-8") for p in CASES]
    tokens = {t for tok, req in _core.PREFILTER.values() for t in tok + tuple(x for g in req for x in g)}
    texts += [f"x.{t}" for t in sorted(tokens)]
    # every pair of tokens, so each rule's (token, required) combinations are exercised
    texts += [f"{a}\n{b}" for a in sorted(tokens) for b in sorted(tokens)]
    return texts


def test_static_table_agrees_with_the_rules():
    """codemods._core.PREFILTER (used by the CLI before any rule is imported) says exactly
    what each registered rule's own may_apply says, on fixtures and on token combinations."""
    assert sorted(_core.PREFILTER) == sorted(rule.CODE for rule in api.RULES)
    for text in _samples():
        for rule in api.RULES:
            tokens, requires = _core.PREFILTER[rule.CODE]
            assert rule.may_apply(text) == _core.text_may_apply(tokens, requires, text), (rule.CODE, text[:80])


def test_cli_run_without_candidates_never_imports_libcst(tmp_path):
    """`tfclip-migrate check` on files with no candidate token decides from the table alone."""
    import subprocess
    import sys

    plain = tmp_path / "plain.py"
    plain.write_text("import numpy as np\nprint(np.clip(np.ones(3), 0, 1))\n", encoding="utf-8")
    code = (
        "import sys\nfrom codemods.cli import main\n"
        f"rc = main(['check', '--jobs', '1', {str(plain)!r}])\n"
        "print(rc, sorted(m for m in sys.modules if m.split('.')[0] in ('libcst', 'tensorflow')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "0 []", out.stdout + out.stderr
