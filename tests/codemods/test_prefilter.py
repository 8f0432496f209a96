"""The pre-pass (``codemods.engine.prepass``: each rule's ``SITES``, on the text then on CPython's
tree) never hides a finding or a fix, and spares libcst every file it rules out.

The engine skips a rule -- and a file -- whose ``SITES`` cannot hold. These tests run every
fixture and example with the pre-pass and without it (``prefilter=False``: every enabled
rule runs on every file) and demand identical code and diagnostics, so a spec that is too
tight fails here. ``benchmarks/run.py --only equivalence`` does the same on the corpus.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from codemods.engine import registry as _registry

from codemods import api
from codemods.engine.prepass import (
    ModuleIndex,
    all_of,
    any_of,
    calls,
    dynamic_access,
    keywords,
    method_calls,
    names,
    star_import,
)
from codemods.api import Options, SourceError, migrate_source

ROOT = Path(__file__).resolve().parents[2]
CASES = sorted(
    p for p in (ROOT / "fixtures").rglob("*.py") if p.name.endswith((".before.py", ".noop.py"))
) + sorted((ROOT / "examples").glob("*.py"))
OPTIONS = [pytest.param(Options(unsafe_fixes=True, add_clip_norm=5.0), id="fix-unsafe+clip")]


def _run(source: str, options: Options, prefilter: bool):
    try:
        result = migrate_source(source, options, path="x.py", prefilter=prefilter)
    except SourceError as exc:
        return ("error", exc.reason)
    return (result.code, [d.format() for d in result.diagnostics])


@pytest.mark.parametrize("path", CASES, ids=lambda p: str(p.relative_to(ROOT)))
@pytest.mark.parametrize("options", OPTIONS)
def test_prepass_hides_nothing(path, options):
    """Output and diagnostics are the same with the pre-pass and with every rule run on the file."""
    source = path.read_text(encoding="utf-8")
    assert _run(source, options, prefilter=True) == _run(source, options, prefilter=False)


def test_prefilter_rules_out_unrelated_code():
    """A file with no candidate token is not even parsed (invalid syntax passes through)."""
    source = "print 'python 2, nothing about gradients'\n"
    assert not api.may_contain_targets(source)
    assert migrate_source(source).code == source


def _index(code: str) -> ModuleIndex:
    return ModuleIndex.of(ast.parse(code))


@pytest.mark.parametrize(
    "spec, code, text_stage, ast_stage",
    [
        pytest.param(method_calls("minimize"), "opt.minimize(loss)\n", True, True, id="method-call"),
        pytest.param(method_calls("minimize"), "def minimize(x):\n    pass\n", True, False, id="def-is-no-call"),
        pytest.param(method_calls("minimize"), "# opt.minimize(loss)\nx = 'minimize'\n", True, False,
                     id="comment-and-string"),
        pytest.param(calls("gradients"), "opt.apply_gradients(g)\n", True, False, id="apply_gradients-is-not-gradients"),
        pytest.param(calls("gradients"), "from tensorflow import gradients as g\ng(l, v)\n", True, True,
                     id="call-through-import-alias"),
        pytest.param(calls("gradients"), "import tensorflow.gradients as g\ng(l, v)\n", True, True,
                     id="call-through-module-alias"),
        pytest.param(names("apply_gradients"), "f = opt.apply_gradients\n", True, True, id="name-as-attribute"),
        pytest.param(keywords("clipnorm"), "Adam(clipnorm=1.0)\n", True, True, id="keyword"),
        pytest.param(keywords("clipnorm"), "clipnorm = 1.0\n", True, False, id="assignment-is-no-keyword"),
        pytest.param(dynamic_access("contrib"), "getattr(tf.contrib.training, name)\n", True, True,
                     id="getattr-on-contrib-chain"),
        pytest.param(dynamic_access("contrib"), "from tensorflow.contrib import training as ct\ngetattr(ct, n)\n",
                     True, True, id="getattr-on-imported-contrib-module"),
        pytest.param(dynamic_access("contrib"), "import tensorflow.contrib as c\ngetattr(self, name)\n", True, False,
                     id="getattr-on-something-else"),
        pytest.param(star_import("contrib"), "from tensorflow.contrib.training import *\n", True, True,
                     id="star-import"),
        pytest.param(all_of(names("a"), names("b")), "a = 1\n", False, False, id="all-of"),
        pytest.param(any_of(names("a"), names("b")), "b = 1\n", True, True, id="any-of"),
    ],
)
def test_spec_semantics(spec, code, text_stage, ast_stage):
    """Each kind of evidence holds on the text and on CPython's tree exactly where documented."""
    assert spec.on_text(code) is text_stage
    assert spec.on_index(_index(code)) is ast_stage
    if ast_stage:
        assert text_stage  # the text stage is implied by the ast stage


def test_static_index_agrees_with_the_rules():
    """The derived index (used by the CLI before any rule is imported) has every rule, in run
    order, with the very SITES the rule classes declare."""
    index = _registry.static_index()
    assert index is not None
    rules = _registry.RULES
    assert [(e.code, e.name, e.phase, e.sites) for e in index.entries] == \
        [(r.CODE, r.NAME, r.PHASE, r.sites()) for r in rules]


def _imports_after(code: str, tmp_path: Path) -> str:
    script = (
        "import sys\nfrom codemods.cli import main\n"
        f"rc = main(['check', '--jobs', '1', {str(tmp_path)!r}])\n"
        "print(rc, sorted({m.split('.')[0] for m in sys.modules if m.split('.')[0] in ('libcst', 'tensorflow')}))\n"
    )
    (tmp_path / "a.py").write_text(code, encoding="utf-8")
    # the rule index as the first run after installing (or editing a rule) leaves it; that first
    # run imports the rules once (tests/codemods/test_registry.py::test_index_is_derived_once...)
    assert _registry.save_index()
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT)
    return out.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize(
    "code",
    [
        pytest.param("import numpy as np\nprint(np.clip(np.ones(3), 0, 1))\n", id="no-candidate-token"),
        pytest.param('"""Call opt.minimize(loss) and opt.apply_gradients(g)."""\n\ndef minimize(f):\n'
                     "    return f  # tf.contrib.layers.optimize_loss\n", id="tokens-but-no-site"),
    ],
)
def test_cli_never_imports_libcst_for_a_file_without_sites(code, tmp_path):
    """`tfclip-migrate check` decides such a file from the static index and CPython's tree alone."""
    assert _imports_after(code, tmp_path) == "0 []"


def test_cli_imports_libcst_for_a_site(tmp_path):
    """The counter-check: a real site is analysed by the rules (libcst loaded, a finding)."""
    assert _imports_after("import tensorflow as tf\nopt = tf.train.AdamOptimizer(0.1)\nop = opt.minimize(loss)\n",
                          tmp_path) == "1 ['libcst']"


def test_index_reads_every_node():
    """The index's walk reaches every node ``ast.walk`` does: its identifiers and keywords are
    those of all nodes, on every fixture (a node it skipped would hide its names)."""
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except SyntaxError:
            continue
        expected, keywords = set(), set()
        for node in ast.walk(tree):
            for field in ("id", "attr", "name", "asname", "module", "arg", "names", "rest", "kwd_attrs"):
                value = getattr(node, field, None)
                for item in value if isinstance(value, list) else [value]:
                    if isinstance(item, str):
                        expected.update(part for part in item.split(".") if part)
            if isinstance(node, ast.keyword) and node.arg:
                keywords.add(node.arg)
        index = ModuleIndex.of(tree)
        assert index.identifiers == expected, path
        assert index.keywords == keywords, path
