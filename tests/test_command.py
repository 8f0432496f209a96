"""The rules' codemod base without ``libcst.codemod`` (``codemods.engine.command``): it behaves as
libcst's ``VisitorBasedCodemodCommand`` -- same output, warnings, import bookkeeping, passes,
matcher decorators and helpers -- and a ``check`` of a training script never imports
``libcst.matchers`` (about 0.25 s, twice ``import libcst``)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import libcst as cst
import libcst.matchers as m
import pytest
from libcst.codemod import CodemodContext, VisitorBasedCodemodCommand
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
from libcst.matchers import MatcherDecoratableTransformer

from codemods.engine import command as _command

from codemods.engine import registry as _registry

from codemods import api
from codemods.rules.analysis import all_identifiers, has_comment
from codemods.engine.base import TfcCodemod
from codemods.engine.command import Command, RuleContext
from codemods.engine.core import Options, Phase
from codemods.engine.prepass import calls

ROOT = Path(__file__).resolve().parents[1]

DOC = """A test rule.

## What it does
Finds ``legacy_clip``.

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
None.
"""


# -- no libcst.matchers on the check path ------------------------------------------------

_IMPORTS_AFTER = """
import json, sys
from codemods.cli import main
def loaded():
    return sorted(n for n in ("libcst", "libcst.matchers", "libcst.codemod") if n in sys.modules)
rc_check = main(["check", "--no-cache", "--jobs", "1", sys.argv[1]])
after_check = loaded()
rc_fix = main(["fix", "--no-cache", "--jobs", "1", sys.argv[1]])
print(json.dumps([rc_check, after_check, rc_fix, loaded()]))
"""


def test_check_of_a_training_script_never_imports_the_matchers(tmp_path: Path) -> None:
    """`tfclip-migrate check` of the latency benchmark's training script reports its findings
    with libcst loaded but neither `libcst.matchers` nor `libcst.codemod`; `fix` of the same
    file (which rewrites it) is what loads `libcst.codemod` for the import visitors."""
    target = tmp_path / "train.py"
    target.write_bytes((ROOT / "benchmarks" / "data" / "legacy_train.py.txt").read_bytes())
    proc = subprocess.run([sys.executable, "-c", _IMPORTS_AFTER, str(target)], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rc_check, after_check, rc_fix, after_fix = json.loads(proc.stdout.strip().splitlines()[-1])
    assert (rc_check, after_check) == (1, ["libcst"])
    assert "libcst.codemod" in after_fix and "tfclip_compat" in target.read_text()


# -- the context and the import visitors' keys --------------------------------------------


def test_rule_context_has_codemod_contexts_fields() -> None:
    """RuleContext has libcst's CodemodContext fields, in order, with the same defaults, and
    the same `module` (the wrapper's module, None outside a transform)."""
    ours = [(f.name, f.default, f.default_factory) for f in dataclasses.fields(RuleContext)]
    theirs = [(f.name, f.default, f.default_factory) for f in dataclasses.fields(CodemodContext)]
    assert ours == theirs
    assert RuleContext().module is None
    module = cst.parse_module("x = 1\n")
    assert RuleContext(wrapper=cst.MetadataWrapper(module, unsafe_skip_copy=True)).module is module


def test_import_visitor_keys_are_libcsts() -> None:
    """The scratch keys Command checks before importing the visitors are the visitors' own."""
    assert _command.ADD_IMPORTS_KEY == AddImportsVisitor.CONTEXT_KEY
    assert _command.REMOVE_IMPORTS_KEY == RemoveImportsVisitor.CONTEXT_KEY


# -- same behaviour as VisitorBasedCodemodCommand -------------------------------------------


class _Rename:
    """The body of a command: renames `old` to `new` (and warns), swaps the imports."""

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        if updated_node.value == "old":
            self.warn(f"renamed at {self.module.code_for_node(original_node)}")
            self.add_needed_import("newmod", "new")
            self.remove_unused_import("oldmod", "old")
            return updated_node.with_changes(value="new")
        return updated_node


class _Count:
    """A multi-pass body: every pass adds 1 to integer literals below 3."""

    def should_allow_multiple_passes(self) -> bool:
        return True

    def leave_Integer(self, original_node: cst.Integer, updated_node: cst.Integer) -> cst.Integer:
        value = int(updated_node.value)
        return updated_node.with_changes(value=str(value + 1)) if value < 3 else updated_node


def _run(base: type, body: type, code: str):
    command = type("Cmd", (body, base), {})
    context = CodemodContext() if base is VisitorBasedCodemodCommand else RuleContext()
    tree = command(context).transform_module(cst.parse_module(code))
    return tree.code, context.warnings


@pytest.mark.parametrize("body, code", [
    pytest.param(_Rename, "from oldmod import old\nimport os\nold(1)\nprint(old)\n", id="imports-and-warnings"),
    pytest.param(_Count, "x = 0\ny = [1, 5]\n", id="multiple-passes"),
])
def test_command_behaves_as_libcsts(body: type, code: str) -> None:
    """Command gives the code and warnings VisitorBasedCodemodCommand gives (imports added and
    removed after the transform, passes until the tree stops changing)."""
    ours = _run(Command, body, code)
    assert ours == _run(VisitorBasedCodemodCommand, body, code)
    assert ours[0] != code


def test_matcher_helpers_behave_as_libcsts() -> None:
    """matches / findall / extract / extractall / replace give libcst's answers."""
    tree = cst.parse_module("f(1)\ng(2)\nf(3)\n")
    call_f = m.Call(func=m.Name("f"), args=[m.Arg(value=m.SaveMatchedNode(m.Integer(), "n"))])

    def answers(command):  # type: ignore[no-untyped-def]
        first = tree.body[0].body[0].value
        return (command.matches(first, call_f), len(command.findall(tree, call_f)),
                command.extract(first, call_f)["n"].value, [d["n"].value for d in command.extractall(tree, call_f)],
                command.replace(tree, m.Integer(), lambda node, _: node.with_changes(value="0")).code)

    ours = answers(Command(RuleContext()))
    assert ours == answers(VisitorBasedCodemodCommand(CodemodContext()))
    assert ours == (True, 2, "1", ["1", "3"], "f(0)\ng(0)\nf(0)\n")


# -- matcher decorators: libcst's full machinery -------------------------------------------


class _FoundInFunctions:
    """A mixin (not a TfcCodemod) whose methods carry matcher decorators."""

    @m.call_if_inside(m.FunctionDef())
    def visit_Call(self, node: cst.Call) -> None:
        if m.matches(node.func, m.Name("legacy_clip")):
            self.report(node, "inside a function")

    @m.visit(m.Name("legacy_clip"))
    def _named(self, node: cst.Name) -> None:
        self.report(node, "a name", code="TFC952")


def test_decorated_mixin_gets_the_matcher_machinery() -> None:
    """A rule whose decorated methods come from a mixin is a MatcherDecoratableTransformer, and
    `@m.call_if_inside` / `@m.visit` work as in libcst; the package's rules are plain
    transformers (no matcher bookkeeping per node)."""
    rule = type("Decorated", (_FoundInFunctions, TfcCodemod), {
        "__doc__": DOC, "__module__": __name__, "CODE": "TFC951", "NAME": "decorated", "SUMMARY": "a demo",
        "PHASE": Phase.REPORT, "SITES": calls("legacy_clip")})
    assert issubclass(rule, MatcherDecoratableTransformer) and rule._MATCHER_DECORATED
    assert not any(issubclass(r, MatcherDecoratableTransformer) or r._MATCHER_DECORATED for r in _registry.RULES)
    code = "legacy_clip(1)\ndef f():\n    return legacy_clip(2)\n"
    result = api.migrate_source(code, Options(), path="a.py", rules=(rule,))
    assert [(d.line, d.col, d.code) for d in result.diagnostics] == [(1, 1, "TFC952"), (3, 12, "TFC951"),
                                                                       (3, 12, "TFC952")]


# -- python -m libcst.tool list ------------------------------------------------------------


def test_libcst_tool_lists_the_rules() -> None:
    """`python -m libcst.tool list` (which keeps CodemodCommand subclasses) lists every rule."""
    proc = subprocess.run([sys.executable, "-m", "libcst.tool", "list"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    for rule in _registry.RULES:
        assert f"{rule.__module__.split('.', 1)[1]}.{rule.__name__} - {rule.SUMMARY}" in proc.stdout


# -- faster equivalents of matchers and visitors ---------------------------------------------


def test_has_comment_agrees_with_the_matchers() -> None:
    """has_comment(node) is `bool(m.findall(node, m.Comment()))` for every node of a module
    with comments in statements, expressions, brackets and blank lines."""
    code = textwrap.dedent("""\
        # leading
        import os  # trailing
        x = f(  # in brackets
            1,
            # own line
            2,
        )

        def g():
            # body
            return [a for a in b]  # t
        y = (1 +
             2)
    """)
    nodes = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            nodes.append(node)
            return True

    cst.parse_module(code).visit(Collect())
    answers = [has_comment(node) for node in nodes]
    assert answers == [bool(m.findall(node, m.Comment())) for node in nodes]
    assert any(answers) and not all(answers)


def test_all_identifiers_is_every_name_a_visitor_sees() -> None:
    """all_identifiers (a walk over the nodes' fields) gives the values of the Name nodes a
    libcst visitor visits, on every fixture file CPython and libcst parse."""
    class Names(cst.CSTVisitor):
        def __init__(self) -> None:
            super().__init__()
            self.names: set = set()

        def visit_Name(self, node: cst.Name) -> None:
            self.names.add(node.value)

    checked = 0
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        try:
            module = cst.parse_module(path.read_text(encoding="utf-8"))
        except (cst.ParserSyntaxError, UnicodeDecodeError):
            continue
        visitor = Names()
        module.visit(visitor)
        assert all_identifiers(module) == visitor.names, path
        checked += 1
    assert checked > 100
