"""The project's own examples under its own `check` (issue 24): the shim-using examples are clean
as they are; the legacy TF1 script (examples/legacy_clipping.py, TF1 on purpose) is clean once
`fix` has migrated it. Codemod side: never imports TensorFlow."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from codemods.rules.tape.shim_optimizers import SHIM_OPTIMIZER_FACTORIES
from codemods.cli import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
LEGACY = "legacy_clipping.py"  # TF1 code on purpose: the input of the README's first command


@pytest.fixture
def examples(tmp_path, monkeypatch):
    """A copy of examples/ (cwd: its parent), with a private cache."""
    monkeypatch.setenv("TFCLIP_MIGRATE_CACHE_DIR", str(tmp_path / ".cache"))
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "examples"


def test_examples_other_than_the_legacy_script_are_clean(examples, capsys):
    """`check` on every example but the legacy TF1 script exits 0 with no finding (the shim's
    own `tfc.wrap_optimizer` is not reported as an unknown optimizer)."""
    paths = sorted(str(p.relative_to(examples.parent)) for p in examples.glob("*.py") if p.name != LEGACY)
    assert len(paths) >= 3
    rc = main(["check", "--isolated", "-j1", *paths])
    out = capsys.readouterr().out
    assert (rc, out) == (0, "")


def test_examples_are_clean_after_fix(examples, capsys):
    """`fix examples/` rewrites only the legacy script; `check examples/` then exits 0, and a
    second `fix` changes nothing."""
    before = {p.name: p.read_bytes() for p in examples.glob("*.py")}
    assert main(["fix", "--isolated", "-j1", "examples"]) == 1
    capsys.readouterr()
    changed = sorted(name for name, data in before.items() if (examples / name).read_bytes() != data)
    assert changed == [LEGACY]
    rc = main(["check", "--isolated", "-j1", "examples"])
    out, err = capsys.readouterr()
    assert (rc, out) == (0, "") and "findings: none" in err
    assert main(["fix", "--isolated", "-j1", "examples"]) == 0


def test_shim_factories_are_public_shim_names():
    """Every name the rules treat as a tfclip_compat optimizer factory is in tfclip_compat.__all__."""
    tree = ast.parse((REPO / "tfclip_compat" / "__init__.py").read_text())
    exported = next(ast.literal_eval(node.value) for node in ast.walk(tree) if isinstance(node, ast.Assign)
                    and any(getattr(t, "id", "") == "__all__" for t in node.targets))
    assert {name.split(".", 1)[1] for name in SHIM_OPTIMIZER_FACTORIES} <= set(exported)


SHIM_SITES = '''import tensorflow as tf
import tfclip_compat as tfc

x = tf.placeholder(tf.float32, [None, 3])
w = tf.get_variable("w", [3, 1])
loss = tf.reduce_sum(tf.square(tf.matmul(x, w)))
opt = tfc.wrap_optimizer(tf.train.AdamOptimizer(0.1), tfc.ClipByGlobalNorm(1.0))
train_op = opt.minimize(loss)
grads = opt.compute_gradients(loss)
apply_op = opt.apply_gradients(grads)
tf1 = tf.train.AdamOptimizer(0.1)
tf1_op = tf1.minimize(loss)
'''


@pytest.mark.parametrize("apply_fixes", [False, True], ids=["check", "fix"])
def test_shim_optimizer_is_no_training_site(apply_fixes):
    """`minimize`, `compute_gradients` and `apply_gradients` on `tfc.wrap_optimizer(...)` are neither
    rewritten nor reported; the `tf.train` optimizer beside them still is (TFC103)."""
    from codemods.api import Options, migrate_source

    result = migrate_source(SHIM_SITES, Options(apply_fixes=apply_fixes), path="s.py")
    assert [(d.code, d.line) for d in result.diagnostics] == [("TFC103", 12)]
    lines = result.code.splitlines()
    assert lines[7:10] == SHIM_SITES.splitlines()[7:10] or lines[8:11] == SHIM_SITES.splitlines()[7:10]
