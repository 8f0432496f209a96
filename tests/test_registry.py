"""Rules are discovered from their files, ordered by phase, checked when created, and run by an
engine that takes them as an argument (``codemods.engine.registry``, ``codemods.engine.base``).

``TestAddingARule`` is the contributing guide's walkthrough as a test: the rule file and the
fixtures CONTRIBUTING.md shows are read from it, and the new file in a package is picked up,
ordered by its phase, pre-filtered by its ``SITES``, run by the engine and the CLI, checked
against its fixtures, and documented by ``tfclip-migrate rules`` and ``tools.rule_pages``.
"""

from __future__ import annotations

import importlib
import inspect
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict

import libcst as cst
import libcst.matchers as m
import pytest

from codemods.engine import registry as _registry

from codemods import api
from codemods.engine.base import RuleDefinitionError, TfcCodemod
from codemods.engine.core import Options, Phase
from codemods.engine.prepass import calls
from codemods.cli import main

RUN_ORDER = ["TFC101", "TFC102", "TFC103", "TFC104", "TFC201", "TFC202", "TFC001", "TFC002", "TFC003", "TFC004"]


def test_discovered_rules_run_in_phase_order():
    """The package's rules are found by walking its tfcNNN_*.py files and keep today's order:
    TF 2 form, then reports, then compat; TFC900 is documented after them, not run."""
    assert [rule.CODE for rule in _registry.RULES] == RUN_ORDER
    assert [rule.CODE for rule in _registry.DOCUMENTED] == RUN_ORDER + ["TFC900"]
    assert [int(rule.PHASE) for rule in _registry.RULES] == sorted(int(rule.PHASE) for rule in _registry.RULES)


def test_static_index_is_up_to_date():
    """codemods/engine/rule_index.py is what `python -m codemods.engine.registry` generates from the rules
    (if this fails: run that command and commit the file)."""
    assert Path(_registry.index_path()).read_text(encoding="utf-8") == _registry.render_index(), (
        "codemods/engine/rule_index.py is stale: run `python -m codemods.engine.registry`")
    assert _registry.main(["--check"]) == 0
    proc = subprocess.run([sys.executable, "-m", "codemods.engine.registry", "--check"], capture_output=True, text=True,
                          cwd=Path(_registry.index_path()).parents[1])
    assert proc.returncode == 0 and not proc.stderr  # the command docs/engine.md shows


DOC = '''Test rule.

## What it does
Renames ``legacy_clip``.

## Why is this bad?
It is a test.

## Example
```python
legacy_clip(x)
```

## Use instead
```python
modern_clip(x)
```

## Fix safety
Safe.
'''


def _define(**attrs):
    body = {"CODE": "TFC950", "NAME": "demo-rule", "SUMMARY": "a demo", "PHASE": Phase.REPORT,
            "SITES": calls("legacy_clip"), "__doc__": DOC, "__module__": "test_registry"}
    body.update(attrs)
    return type("Demo", (TfcCodemod,), body)


@pytest.mark.parametrize(
    "attrs, message",
    [
        pytest.param({"__doc__": DOC.replace("## Why is this bad?", "## Why")}, "lacks the heading '## Why is this bad?'",
                     id="missing-heading"),
        pytest.param({"__doc__": DOC.replace("## Example", "## X").replace("## Fix safety", "## Example\n## Fix safety")},
                     "lacks the heading '## Use instead' (or has it out of order)", id="headings-out-of-order"),
        pytest.param({"CODE": "TFC95"}, "CODE is 'TFC95'", id="bad-code"),
        pytest.param({"NAME": ""}, "NAME is ''", id="missing-name"),
        pytest.param({"NAME": "Demo Rule"}, "kebab-case", id="bad-name"),
        pytest.param({"SUMMARY": " "}, "SUMMARY is empty", id="missing-summary"),
        pytest.param({"PHASE": None}, "PHASE is None", id="missing-phase"),
        pytest.param({"PHASE": 2}, "PHASE is 2", id="phase-not-a-phase"),
        pytest.param({"SITES": "legacy_clip"}, "SITES is 'legacy_clip'", id="sites-not-a-spec"),
    ],
)
def test_incomplete_rule_fails_when_created(attrs, message):
    """A rule class that breaks the contract raises RuleDefinitionError naming the rule and the fix."""
    with pytest.raises(RuleDefinitionError, match="rule test_registry.Demo: ") as info:
        _define(**attrs)
    assert message in str(info.value)


def test_complete_rule_is_accepted_and_described():
    """A complete rule is created; DESCRIPTION (libcst.tool's help) defaults to SUMMARY."""
    rule = _define()
    assert rule.DESCRIPTION == "a demo" and rule.may_apply("legacy_clip(1)") and not rule.may_apply("x")


def test_base_classes_are_not_checked():
    """A shared base class (no CODE of its own, not in a rule file) is not a rule."""

    class Base(TfcCodemod):
        """No headings needed."""

    assert Base.CODE == ""


# --------------------------------------------------------------------------------------
# the walkthrough: adding a rule is one file

GUIDE = Path(__file__).resolve().parents[1] / "CONTRIBUTING.md"


def guide_files() -> Dict[str, str]:
    """The files CONTRIBUTING.md's walkthrough shows (``<!-- file: PATH -->`` above a fenced block)."""
    text = GUIDE.read_text(encoding="utf-8")
    return {path: body for path, _, body in re.findall(r"<!-- file: (\S+) -->\n(`{3,})\w*\n(.*?)^\2$", text, re.S | re.M)}


# The walkthrough's rule file, exactly as CONTRIBUTING.md shows it.
RULE_FILE = guide_files()["codemods/rules/tfc105_legacy_clip.py"]

COMPAT_FILE = '''
"""TFC005: reports ``old_helper`` (a demo compat-phase rule)."""

import libcst as cst

from codemods.engine.base import TfcCodemod
from codemods.engine.core import Phase
from codemods.engine.prepass import calls


class OldHelper(TfcCodemod):
    """{doc}"""

    CODE = "TFC005"
    NAME = "old-helper"
    SUMMARY = "`old_helper` is gone"
    PHASE = Phase.COMPAT
    SITES = calls("old_helper")

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "old_helper":
            self.report(node, "`old_helper` is gone (manual edit required)")
'''


@pytest.fixture
def demo_package(tmp_path, monkeypatch):
    """A package `demo_rules` holding two rule files (compat phase first by file name)."""
    package = tmp_path / "demo_rules"
    package.mkdir()
    (package / "__init__.py").write_text("")
    doc = textwrap.indent(DOC, "    ").strip()
    (package / "tfc005_old_helper.py").write_text(COMPAT_FILE.format(doc=doc))
    (package / "tfc105_legacy_clip.py").write_text(RULE_FILE)
    (package / "_helpers.py").write_text("X = 1\n")  # not a rule file: ignored
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "demo_rules"
    for name in [k for k in sys.modules if k == "demo_rules" or k.startswith("demo_rules.")]:
        del sys.modules[name]
    importlib.invalidate_caches()


class TestAddingARule:
    SOURCE = "x = legacy_clip(1)\ny = old_helper(2)\n"

    def test_discovered_and_ordered_by_phase(self, demo_package):
        """Both files are found; the TF2_FORM rule runs before the COMPAT one whatever the file order,
        and merged with the package's rules it lands in its phase."""
        found = _registry.discover(demo_package)
        assert [r.CODE for r in found.rules] == ["TFC105", "TFC005"]
        merged = sorted(_registry.RULES + found.rules, key=lambda r: (int(r.PHASE), r.CODE))
        codes = [r.CODE for r in merged]
        assert codes.index("TFC104") < codes.index("TFC105") < codes.index("TFC201")
        assert codes[-1] == "TFC005"

    def test_prefiltered_by_its_sites(self, demo_package):
        """The pre-pass runs the new rule only where its SITES hold: a call, not a comment or a def."""
        rules = _registry.discover(demo_package).rules
        assert api.select_rules(self.SOURCE, rules=rules).codes == ("TFC105", "TFC005")
        assert api.select_rules("# legacy_clip(1)\ndef old_helper():\n    pass\n", rules=rules).codes == ()
        assert "legacy_clip" in _registry.render_index(_registry.discover(demo_package))

    def test_run_by_the_engine_and_the_cli(self, demo_package, tmp_path, capsys, monkeypatch):
        """The engine and the CLI take the rules as an argument: the fix is applied, the report stays."""
        rules = _registry.discover(demo_package).rules
        result = api.migrate_source(self.SOURCE, Options(), path="a.py", rules=rules)
        assert result.code == "x = modern_clip(1)\ny = old_helper(2)\n"
        assert [(d.code, d.applied) for d in result.diagnostics] == [("TFC105", True), ("TFC005", False)]
        monkeypatch.chdir(tmp_path)
        (tmp_path / "a.py").write_text(self.SOURCE)
        assert main(["check", "a.py", "-j1", "--isolated"], rules=rules) == 1
        out = capsys.readouterr().out
        assert out == ("a.py:1:5: TFC105 [*] `legacy_clip` -> `modern_clip`\n"
                       "a.py:2:5: TFC005 `old_helper` is gone (manual edit required)\n")

    def test_documented_by_tfclip_migrate_rules(self, demo_package, capsys):
        """`tfclip-migrate rules` lists the new rule (and TFC900); `rules TFC105` prints its docstring."""
        rules = _registry.discover(demo_package).rules
        assert main(["rules"], rules=rules) == 0
        listing = capsys.readouterr().out.splitlines()
        assert [line.split()[0] for line in listing] == ["TFC105", "TFC005", "TFC900"]
        assert main(["rules", "TFC105"], rules=rules) == 0
        doc = capsys.readouterr().out
        rule = _registry.rules_by_code(rules)["TFC105"]
        assert doc == f"TFC105 (legacy-clip)\n\n{inspect.cleandoc(rule.__doc__)}\n"
        assert doc.startswith("TFC105 (legacy-clip)\n\n## What it does") and "## Fix safety" in doc

    def test_the_guides_fixtures_pass(self, demo_package):
        """CONTRIBUTING.md's fixtures hold for its rule as tests/test_fixtures.py checks them: the
        before file becomes exactly the after file, a second run changes nothing, the look-alike
        stays byte-identical and unreported."""
        rules = _registry.discover(demo_package).rules
        files = guide_files()
        cases = {path.rsplit("/", 1)[1]: text for path, text in files.items() if path.startswith("fixtures/TFC105/")}
        assert sorted(cases) == ["call.after.py", "call.before.py", "method.noop.py"]
        result = api.migrate_source(cases["call.before.py"], Options(), path="call.before.py", rules=rules)
        assert result.code == cases["call.after.py"] and [d.code for d in result.diagnostics] == ["TFC105"]
        assert api.migrate_source(cases["call.after.py"], Options(), rules=rules).code == cases["call.after.py"]
        noop = api.migrate_source(cases["method.noop.py"], Options(), rules=rules)
        assert noop.code == cases["method.noop.py"] and noop.diagnostics == []

    def test_the_guides_docs_hold(self, demo_package, tmp_path, capsys):
        """The rule's Example becomes its Use instead (what tests/test_rule_docs.py checks for real
        rules), and `python -m tools.rule_pages` renders its page from the file's text."""
        from tools import rule_pages as _docs

        rules = _registry.discover(demo_package).rules
        rule = _registry.rules_by_code(rules)["TFC105"]
        example, use_instead = (re.search(rf"{h}\n```python\n(.*?)```", inspect.cleandoc(rule.__doc__), re.S).group(1)
                                for h in ("## Example", "## Use instead"))
        assert api.migrate_source(example, Options(), rules=rules).code == use_instead == "y = modern_clip(x)\n"
        [doc] = [d for d in _docs.read_rules(str(tmp_path / "demo_rules")) if d.code == "TFC105"]
        assert main(["rules", "TFC105"], rules=rules) == 0
        page = _docs.render_page(doc)
        assert page.startswith("<!-- GENERATED") and page.endswith(capsys.readouterr().out.partition("\n\n")[2])
        assert "**Fix:** safe (" in page and "**Phase:** TF 2 form" in page

    def test_a_rule_file_without_a_rule_is_an_error(self, demo_package, tmp_path):
        """A tfcNNN_*.py file must define its rule; the error names the module."""
        (tmp_path / "demo_rules" / "tfc106_empty.py").write_text("X = 1\n")
        with pytest.raises(RuleDefinitionError, match="demo_rules.tfc106_empty defines no rule class"):
            _registry.discover(demo_package)

    def test_code_must_match_the_file(self, demo_package, tmp_path):
        """The rule in tfc107_*.py must be TFC107 (a copied file with a stale CODE fails at import)."""
        (tmp_path / "demo_rules" / "tfc107_copy.py").write_text(RULE_FILE)
        with pytest.raises(RuleDefinitionError, match="CODE 'TFC105' does not match its file demo_rules.tfc107_copy"):
            _registry.discover(demo_package)


def test_matcher_decorated_rule_keeps_libcst_behaviour():
    """A rule using libcst's matcher decorators is run with libcst's full matcher machinery (the fast
    path, which skips it, is only for rules without decorators)."""
    class Decorated(TfcCodemod):
        __doc__ = DOC
        CODE, NAME, SUMMARY, PHASE, SITES = "TFC951", "decorated", "a demo", Phase.REPORT, calls("legacy_clip")

        @m.visit(m.Call(func=m.Name("legacy_clip")))
        def _found(self, node: cst.Call) -> None:
            self.report(node, "found by a matcher")

    assert Decorated._MATCHER_DECORATED and not _registry.RULES[0]._MATCHER_DECORATED
    result = api.migrate_source("x = 1\ny = legacy_clip(1)\n", Options(), path="a.py", rules=(Decorated,))
    assert [(d.line, d.col, d.code) for d in result.diagnostics] == [(2, 5, "TFC951")]
