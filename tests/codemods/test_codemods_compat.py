"""The compat rules TFC001-TFC004: contract, spec-vs-shim, libcst.tool, and no TensorFlow import."""

from __future__ import annotations

import inspect
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codemods.engine.base import FixSafety
from codemods.rules.compat.contrib_signatures import HELPERS, OPTIONAL, REQUIRED, SHIM_MISSING
from codemods.rules.tfnames import CONTRIB_TO_SHIM
from codemods.engine.registry import RULES
from codemods.api import Options, migrate_source
from codemods.rules.tfc001_contrib_clip_gradients_by_norm import ContribClipGradientsByNorm
from codemods.rules.tfc002_contrib_training import ContribTraining
from codemods.rules.tfc003_contrib_optimize_loss import ContribOptimizeLoss
from codemods.rules.tfc004_clip_by_average_norm import ClipByAverageNorm

ROOT = Path(__file__).resolve().parents[2]
COMPAT_RULES = (ContribClipGradientsByNorm, ContribTraining, ContribOptimizeLoss, ClipByAverageNorm)
RUFF_HEADINGS = ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety")

SEED_002 = """\
import tensorflow as tf

def build(loss, learning_rate):
    original_optimizer = tf.train.AdamOptimizer(learning_rate=learning_rate)
    optimizer = tf.contrib.estimator.clip_gradients_by_norm(original_optimizer, clip_norm=5.0)
    return optimizer.minimize(loss)
"""


def test_compat_rules_are_registered_last_in_order() -> None:
    """The compat rules come after the TF 2 rules, in code order; only the report on what the
    fixes left (TFC203, Phase.LEFT) runs after them."""
    assert RULES[-len(COMPAT_RULES) - 1:-1] == COMPAT_RULES and RULES[-1].CODE == "TFC203"
    assert [r.CODE for r in COMPAT_RULES] == ["TFC001", "TFC002", "TFC003", "TFC004"]


@pytest.mark.parametrize("rule", COMPAT_RULES, ids=lambda r: r.CODE)
def test_rule_doc_has_ruff_headings(rule) -> None:
    """Each rule's docstring is its documentation, with ruff's five headings in order."""
    doc = inspect.getdoc(rule) or ""
    positions = [doc.find(h) for h in RUFF_HEADINGS]
    assert all(p >= 0 for p in positions), positions
    assert positions == sorted(positions)
    assert rule.NAME and rule.SUMMARY and rule.sites().tokens()


def test_every_contrib_table_entry_is_claimed_by_exactly_one_rule() -> None:
    """Every removed contrib helper in CONTRIB_TO_SHIM is handled by one compat rule."""
    claimed = [name for rule in COMPAT_RULES for name in rule.TARGETS if name.startswith("tf.contrib.")]
    assert sorted(claimed) == sorted(CONTRIB_TO_SHIM)
    assert all(shim in HELPERS for shim in CONTRIB_TO_SHIM.values())


def test_check_mode_reports_without_rewriting() -> None:
    """With fixes off, the site is reported as fixable ([*]) and the code is unchanged."""
    result = migrate_source(SEED_002, Options(apply_fixes=False), path="train.py")
    assert result.code == SEED_002 and not result.changed
    [diag] = [d for d in result.diagnostics if d.code == "TFC001"]
    assert (diag.line, diag.col, diag.fix, diag.applied) == (5, 17, FixSafety.SAFE, False)
    assert diag.format().startswith("train.py:5:17: TFC001 [*] `tf.contrib.estimator.clip_gradients_by_norm`")
    assert "`tfclip_compat.clip_gradients_by_norm`" in diag.message


def test_fix_mode_marks_the_diagnostic_applied() -> None:
    """A fixed site is still reported, flagged applied, and the import is added once."""
    result = migrate_source(SEED_002 + SEED_002.split("\n", 1)[1].replace("build", "build2"))
    assert result.code.count("import tfclip_compat") == 1
    assert result.code.count("tfclip_compat.clip_gradients_by_norm(") == 2
    assert [d.applied for d in result.diagnostics if d.code == "TFC001"] == [True, True]


def test_ignore_and_select_switch_the_rule_off() -> None:
    """`ignore=TFC001` (or selecting another prefix) leaves the contrib call alone and unreported."""
    for options in (Options(ignore=frozenset({"TFC001"})), Options(select=frozenset({"TFC004"}))):
        result = migrate_source(SEED_002, options)
        assert result.code == SEED_002
        assert not [d for d in result.diagnostics if d.code.startswith("TFC00")]


def test_noqa_silences_report_and_fix() -> None:
    """`# noqa: TFC002` on the line: no diagnostic, no rewrite; another code's noqa does not."""
    src = "import tensorflow as tf\nop = tf.contrib.training.create_train_op(l, o)  # noqa: TFC002\n"
    assert migrate_source(src).code == src
    assert not migrate_source(src).diagnostics
    other = src.replace("TFC002", "TFC001")
    assert "tfclip_compat.create_train_op" in migrate_source(other).code


def test_unsafe_fix_needs_the_opt_in() -> None:
    """`name=` on clip_by_average_norm makes the fix unsafe (the output tensor's name changes):
    reported [*unsafe], applied only with unsafe_fixes."""
    src = "import tensorflow as tf\nc = tf.clip_by_average_norm(t, 0.5, name='avg')\n"
    plain = migrate_source(src)
    assert plain.code == src
    assert [(d.fix, d.applied) for d in plain.diagnostics] == [(FixSafety.UNSAFE, False)]
    assert "[*unsafe]" in plain.diagnostics[0].format()
    opted = migrate_source(src, Options(unsafe_fixes=True))
    assert "tfclip_compat.clip_by_average_norm(" in opted.code
    assert [(d.fix, d.applied) for d in opted.diagnostics] == [(FixSafety.UNSAFE, True)]


def test_declined_site_says_manual_edit_required() -> None:
    """A site with **kwargs gets a no-fix diagnostic naming the reason and the replacement."""
    src = "import tensorflow as tf\nop = tf.contrib.training.create_train_op(l, o, **kw)\n"
    result = migrate_source(src, Options(unsafe_fixes=True))
    assert result.code == src
    [diag] = result.diagnostics
    assert diag.fix is FixSafety.NONE
    assert "`**` arguments" in diag.message
    assert "`tfclip_compat.create_train_op`" in diag.message
    assert diag.message.endswith("(manual edit required)")


def test_python2_style_contrib_file_is_a_source_error() -> None:
    """A py2 file that names contrib cannot be parsed: SourceError, never a half rewrite."""
    from codemods.api import SourceError

    with pytest.raises(SourceError, match="cannot parse"):
        migrate_source("import tensorflow as tf\nprint 'clip', tf.contrib.training.create_train_op\n")


def test_clip_by_average_norm_under_every_spelling() -> None:
    """TFC004 matches tf., tf.compat.v1. and from-imports, and removes the dead from-import."""
    src = (
        "import tensorflow as tf\n"
        "from tensorflow.compat.v1 import clip_by_average_norm\n"
        "a = tf.clip_by_average_norm(x, 1.0)\n"
        "b = tf.compat.v1.clip_by_average_norm(x, 1.0)\n"
        "c = clip_by_average_norm(x, 1.0)\n"
    )
    out = migrate_source(src).code
    assert out.count("tfclip_compat.clip_by_average_norm(x, 1.0)") == 3
    assert "from tensorflow.compat.v1 import" not in out


# -- the signature table against the real shim -----------------------------------------


def _shim():
    return pytest.importorskip("tfclip_compat")


def test_shim_missing_is_exactly_what_the_shim_lacks() -> None:
    """SHIM_MISSING lists precisely the helpers tfclip_compat does not export."""
    shim = _shim()
    wanted = {spec.shim_name for spec in HELPERS.values()}
    assert set(SHIM_MISSING) == wanted - set(shim.__all__)


@pytest.mark.parametrize("name", sorted(HELPERS), ids=str)
def test_shim_accepts_every_tf115_call(name: str) -> None:
    """The shim has every TF 1.15 parameter (same order, same required-ness), so a call TF 1.15
    accepted binds to the shim the same way; extra shim parameters are keyword-only or optional."""
    spec = HELPERS[name]
    if spec.shim_name in SHIM_MISSING:
        pytest.skip(f"tfclip_compat has no {spec.shim_name} (declined by the rules)")
    sig = inspect.signature(getattr(_shim(), spec.shim_name))
    params = list(sig.parameters.values())
    positional = [p for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    for index, (pname, default) in enumerate(spec.params):
        if pname in spec.unsupported_params:
            assert pname not in sig.parameters
            continue
        assert positional[index].name == pname, (index, pname, sig)
        assert (positional[index].default is inspect.Parameter.empty) == (default is REQUIRED)
    for extra in params[len(spec.params):]:
        assert extra.kind is extra.KEYWORD_ONLY or extra.default is not inspect.Parameter.empty
    assert OPTIONAL is not REQUIRED


# -- python -m libcst.tool codemod ------------------------------------------------------


def test_rule_runs_under_libcst_tool(tmp_path: Path) -> None:
    """`python -m libcst.tool codemod tfc001_...ContribClipGradientsByNorm FILE` rewrites the
    seed fixture exactly as the engine does (the repo's .libcst.codemod.yaml is used)."""
    if shutil.which("cat") is None:
        pytest.skip("the identity formatter `cat` is POSIX-only")
    target = tmp_path / "train.py"
    shutil.copy(ROOT / "fixtures" / "TFC001" / "seed_002.before.py", target)
    proc = subprocess.run(
        [
            sys.executable, "-m", "libcst.tool", "codemod", "--hide-progress",
            "tfc001_contrib_clip_gradients_by_norm.ContribClipGradientsByNorm", str(target),
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "TFC001" in proc.stderr  # the diagnostic surfaces as a libcst warning
    assert target.read_text() == (ROOT / "fixtures" / "TFC001" / "seed_002.after.py").read_text()


# -- never import TensorFlow ------------------------------------------------------------

_NO_TF = """
import importlib, json, sys
import codemods.api
from codemods.engine.registry import RULES
for rule in RULES:
    importlib.import_module(rule.__module__)
from codemods.api import migrate_source
migrate_source(open(sys.argv[1]).read())
print(json.dumps(sorted(m for m in sys.modules if m == "tensorflow" or m.startswith("tensorflow."))))
"""


def test_codemods_never_import_tensorflow() -> None:
    """Importing codemods.api and every rule module, and running them, loads no TensorFlow module."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", _NO_TF, str(ROOT / "fixtures" / "TFC002" / "create_train_op_keywords.before.py")],
        cwd=ROOT, capture_output=True, text=True, timeout=120, env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


# -- the bundled example (README: `tfclip-migrate fix --diff examples/legacy_clipping.py`) --


def test_bundled_example_becomes_an_eager_program() -> None:
    """The example gets the whole-program migration (TFC301): its contrib wrapper becomes
    tfclip_compat's around the same Adam, its global-norm clipping runs on TF 1's gradients in a
    tf.function step (no tape: it would sum some gradients in another order), the clip_by_value on
    inputs is kept; the result compiles and is stable
    under a second run (and no per-site rule fires on it)."""
    source = (ROOT / "examples" / "legacy_clipping.py").read_text()
    compile(source, "legacy_clipping.py", "exec")
    result = migrate_source(source, path="examples/legacy_clipping.py")
    applied = {d.code for d in result.diagnostics if d.applied}
    assert applied == {"TFC301"}, [d.format() for d in result.diagnostics]
    assert ("tfclip_compat.clip_gradients_by_norm(tf.compat.v1.train.AdamOptimizer(learning_rate=1e-2), "
            "clip_norm=5.0)") in result.code
    assert "zip(*list(zip(tf.compat.v1.gradients(encoder_loss, trainable), trainable)))" in result.code
    assert "GradientTape" not in result.code
    assert "gradients, _ = tf.clip_by_global_norm(gradients, 5.0)" in result.code
    assert "x_clipped = tf.clip_by_value(x, -1, 1, name=None)" in result.code
    assert "= tf.contrib." not in result.code  # (the docstring still names it)
    compile(result.code, "legacy_clipping.py", "exec")
    second = migrate_source(result.code)
    assert second.code == result.code and second.diagnostics == []


# -- TFC004's safety claim, checked on the real functions --------------------------------


def test_clip_by_average_norm_shim_is_bitwise_tf_on_finite_float32() -> None:
    """tfclip_compat.clip_by_average_norm returns exactly tf.compat.v1's values on finite float32
    (clipping active and inactive, several shapes), so the TFC004 fix is safe for values."""
    import numpy as np

    tf = pytest.importorskip("tensorflow")
    shim = _shim()
    rng = np.random.RandomState(0)
    for shape in [(7,), (3, 5), (2, 3, 4)]:
        for scale in (1e-3, 1.0, 50.0):
            t = (rng.randn(*shape) * scale).astype(np.float32)
            for clip in (0.01, 0.5, 10.0):
                expected = tf.compat.v1.clip_by_average_norm(t, clip).numpy()
                got = shim.clip_by_average_norm(t, clip).numpy()
                assert got.dtype == np.float32
                np.testing.assert_array_equal(got, expected)


def test_clip_by_average_norm_output_name_still_differs() -> None:
    """The reason `name=` makes TFC004 unsafe is real: in a graph the shim's output tensor is not
    `<name>:0`. If this fails, the shim now names it like TF: drop the unsafe_params entry."""
    tf = pytest.importorskip("tensorflow")
    shim = _shim()
    with tf.Graph().as_default():
        t = tf.constant([[3.0, 4.0]])
        assert tf.compat.v1.clip_by_average_norm(t, 0.5, name="avg").name == "avg:0"
        assert shim.clip_by_average_norm(t, 0.5, name="avg2").name != "avg2:0"
    assert "name" in HELPERS["clip_by_average_norm"].unsafe_params
