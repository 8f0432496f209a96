"""Unit tests for the gates of the TF 2 form rules (TFC101-TFC104, TFC201, TFC202): each test
states one decision the planner makes and checks it on the smallest program that shows it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import List

from libcst.codemod import CodemodTest

from codemods.api import Options, migrate_source
from codemods.rules.tfc103_minimize_tape import MinimizeToTape

HEAD = """\
import tensorflow.compat.v1 as tf

x = tf.placeholder(tf.float32, [None, 3])
w = tf.get_variable("w", [3, 1])
"""


def run(body: str, **options) -> tuple:
    source = HEAD + textwrap.dedent(body)
    result = migrate_source(source, Options(**options))
    return source, result


def codes(result) -> List[str]:
    return [d.code for d in result.diagnostics]


def test_minimize_is_rewritten_with_the_loss_statements_in_the_tape() -> None:
    """The statements computing the loss (and only those) move inside the tape."""
    _, result = run("""
        h = tf.matmul(x, w)
        loss = tf.reduce_sum(h)
        opt = tf.train.AdamOptimizer(0.1)
        train_op = opt.minimize(loss)
    """)
    assert "with tf.GradientTape() as tape:\n    h = tf.matmul(x, w)\n    loss = tf.reduce_sum(h)\nopt =" in result.code
    assert "train_op = opt.apply_gradients(zip(gradients, variables))" in result.code
    assert codes(result) == ["TFC103"]


def test_loss_from_a_tensor_computed_in_another_scope_is_declined() -> None:
    """A loss reading a module-level tensor computed from variables cannot be taped in a function."""
    source, result = run("""
        features = tf.matmul(x, w)

        def train():
            loss = tf.reduce_sum(features)
            return tf.train.AdamOptimizer(0.1).minimize(loss)
    """)
    assert result.code == source
    assert codes(result) == ["TFC202"] and "`features`" in result.diagnostics[0].message


def test_two_losses_sharing_statements_share_one_with_of_two_tapes() -> None:
    """GAN-style: two minimize calls whose loss statements overlap get one ``with`` holding a tape
    per loss around the shared statements (each tape records every op)."""
    _, result = run("""
        v = tf.get_variable("v", [3, 1])
        h = tf.matmul(x, w)
        d_loss = tf.reduce_sum(h)
        g_loss = -tf.reduce_sum(h * v)
        d_op = tf.train.AdamOptimizer(0.1).minimize(d_loss, var_list=[w])
        g_op = tf.train.AdamOptimizer(0.1).minimize(g_loss, var_list=[v])
    """)
    assert "with tf.GradientTape() as tape, tf.GradientTape() as tape_1:\n    h = tf.matmul(x, w)\n" in result.code
    assert "gradients = tape.gradient(d_loss, [w])" not in result.code  # var_list is bound to a name first
    assert "tape_1.gradient(g_loss" in result.code
    assert codes(result) == ["TFC103", "TFC103"]


def test_a_loss_computed_after_another_update_is_declined() -> None:
    """Two losses whose statements interleave with the first update cannot share one tape block
    without moving the update: the second site (whose slice holds the first, an inline
    optimizer's ``minimize`` as much as a named one's) is declined naming it; the first gets the
    tape form, exactly as with named optimizers."""
    source, result = run("""
        v = tf.get_variable("v", [3, 1])
        h = tf.matmul(x, w)
        d_loss = tf.reduce_sum(h)
        d_op = tf.train.AdamOptimizer(0.1).minimize(d_loss, var_list=[w])
        g_loss = -tf.reduce_sum(h * v)
        g_op = tf.train.AdamOptimizer(0.1).minimize(g_loss, var_list=[v])
    """)
    assert codes(result) == ["TFC103", "TFC202"]
    assert result.diagnostics[1].message.startswith("another gradient computation (")
    assert "g_op = tf.train.AdamOptimizer(0.1).minimize(g_loss, var_list=[v])" in result.code
    assert "tape.gradient(d_loss, variables)" in result.code


def test_noqa_suppresses_the_rewrite_and_its_diagnostic() -> None:
    """``# noqa: TFC103`` keeps the line as is and silent."""
    source, result = run("""
        loss = tf.reduce_sum(tf.matmul(x, w))
        train_op = tf.train.AdamOptimizer(0.1).minimize(loss)  # noqa: TFC103
    """)
    assert result.code == source
    assert "TFC103" not in codes(result)


def test_check_only_reports_a_fixable_site_without_rewriting() -> None:
    """``apply_fixes=False`` reports the safe fix (``[*]``) and changes nothing."""
    source, result = run("""
        loss = tf.reduce_sum(tf.matmul(x, w))
        train_op = tf.train.AdamOptimizer(0.1).minimize(loss)
    """, apply_fixes=False)
    assert result.code == source
    (diag,) = result.diagnostics
    assert diag.code == "TFC103" and not diag.applied and "[*]" in diag.format()


def test_fresh_names_do_not_shadow_existing_ones() -> None:
    """``tape``, ``gradients`` and ``variables`` already in use get a suffix."""
    _, result = run("""
        tape = gradients = variables = None
        loss = tf.reduce_sum(tf.matmul(x, w))
        train_op = tf.train.AdamOptimizer(0.1).minimize(loss)
    """)
    assert "with tf.GradientTape() as tape_1:" in result.code
    assert "gradients_1 = tape_1.gradient(loss, variables_1)" in result.code


def test_statement_with_return_moves_into_the_tape() -> None:
    """A statement that returns may move inside the tape: `return` leaves a `with` block as it
    leaves any block (the Estimator `model_fn` returning early in PREDICT mode)."""
    _, result = run("""
        def f(flag):
            if flag:
                loss = tf.reduce_sum(tf.matmul(x, w))
            else:
                return None
            return tf.train.AdamOptimizer(0.1).minimize(loss)

        f(True)
    """)
    assert "with tf.GradientTape() as tape:\n        if flag:" in result.code
    assert codes(result) == ["TFC103"]


def test_statement_with_yield_cannot_move_into_the_tape() -> None:
    """A generator would suspend with the tape still recording: the site is declined."""
    source, result = run("""
        def f():
            loss = tf.reduce_sum(tf.matmul(x, w))
            yield loss
            yield tf.train.AdamOptimizer(0.1).minimize(loss)
    """)
    assert result.code == source
    assert codes(result) == ["TFC202"]


def test_tensor_loss_in_eager_code_is_declined() -> None:
    """TF1 raised on a tensor loss under eager execution: nothing to preserve, so no rewrite."""
    source = textwrap.dedent("""\
        import tensorflow.compat.v1 as tf
        tf.enable_eager_execution()
        w = tf.Variable(1.0)
        loss = w * w
        train_op = tf.train.AdamOptimizer(0.1).minimize(loss)
    """)
    result = migrate_source(source)
    assert result.code == source and codes(result) == ["TFC202"]


def test_wrapper_used_elsewhere_is_kept() -> None:
    """A ``clip_gradients_by_norm`` optimizer also used by other code keeps its definition."""
    _, result = run("""
        loss = tf.reduce_sum(tf.matmul(x, w))
        base = tf.train.AdamOptimizer(0.1)
        opt = tf.contrib.estimator.clip_gradients_by_norm(base, 1.0)
        train_op = opt.minimize(loss)
        print(opt)
    """)
    assert "train_op = base.apply_gradients(zip(gradients, variables))" in result.code
    assert "clip_by_global_norm(gradients, 1.0)" in result.code
    assert "tfclip_compat.clip_gradients_by_norm(base, 1.0)" in result.code  # TFC001 keeps the other use


def test_add_clip_norm_only_where_no_clipping_exists() -> None:
    """``--add-clip-norm`` adds global-norm clipping to a bare site, never a second clip."""
    _, bare = run("""
        loss = tf.reduce_sum(tf.matmul(x, w))
        train_op = tf.train.AdamOptimizer(0.1).minimize(loss)
    """, add_clip_norm=2.0)
    assert bare.code.count("clip_by_global_norm") == 1 and "2.0)" in bare.code
    _, clipped = run("""
        loss = tf.reduce_sum(tf.matmul(x, w))
        opt = tf.train.AdamOptimizer(0.1)
        gradients, variables = zip(*opt.compute_gradients(loss))
        gradients, _ = tf.clip_by_global_norm(gradients, 5.0)
        train_op = opt.apply_gradients(zip(gradients, variables))
    """, add_clip_norm=2.0)
    assert clipped.code.count("clip_by_global_norm") == 1 and "5.0)" in clipped.code


def test_per_tensor_clipping_stays_per_tensor() -> None:
    """``clip_by_norm`` on each gradient is kept per tensor, never turned into a global norm."""
    _, result = run("""
        loss = tf.reduce_sum(tf.matmul(x, w))
        opt = tf.train.AdamOptimizer(0.1)
        gvs = opt.compute_gradients(loss)
        capped = [(tf.clip_by_norm(g, 1.0), v) for g, v in gvs]
        train_op = opt.apply_gradients(capped)
    """)
    assert "gradients = [tf.clip_by_norm(g, 1.0) for g in gradients]" in result.code
    assert "clip_by_global_norm" not in result.code


def test_unsafe_site_is_reported_but_not_fixed_by_default() -> None:
    """A loss reading a parameter is an unsafe fix: reported, applied only with ``unsafe_fixes``."""
    body = """
        def build(inputs):
            loss = tf.reduce_sum(tf.matmul(inputs, w))
            return tf.train.AdamOptimizer(0.1).minimize(loss)
    """
    source, result = run(body)
    assert result.code == source and "[*unsafe]" in result.diagnostics[0].format()
    _, fixed = run(body, unsafe_fixes=True)
    assert "tape.gradient" in fixed.code and fixed.diagnostics[0].applied


def test_per_replica_lint_is_advisory() -> None:
    """TFC201 reports clipping inside ``strategy.run`` and never edits the file."""
    source = textwrap.dedent("""\
        import tensorflow as tf
        strategy = tf.distribute.MirroredStrategy()

        def step(grads):
            return tf.clip_by_global_norm(grads, 1.0)

        strategy.run(step, args=([],))
    """)
    result = migrate_source(source)
    assert result.code == source and codes(result) == ["TFC201"]


def test_codemods_never_import_tensorflow() -> None:
    """Importing every TF 2 form rule (and running it) leaves TensorFlow unimported."""
    code = (
        "import sys\n"
        "import codemods.rules.tfc101_compute_apply_tape, codemods.rules.tfc102_tf_gradients_tape\n"
        "import codemods.rules.tfc103_minimize_tape, codemods.rules.tfc104_keras_optimizer\n"
        "import codemods.rules.tfc201_per_replica_clipping, codemods.rules.tfc202_unprovable_gradient_site\n"
        "from codemods.api import migrate_source\n"
        "migrate_source('import tensorflow as tf\\nloss = tf.reduce_sum(tf.Variable(1.0))\\n"
        "op = tf.train.AdamOptimizer(0.1).minimize(loss)\\n')\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


class TestMinimizeUnderLibcstTool(CodemodTest):
    """The rule is a plain libcst codemod (``python -m libcst.tool codemod`` runs it the same way)."""

    TRANSFORM = MinimizeToTape

    def test_rewrites_through_the_libcst_harness(self) -> None:
        """``assertCodemod`` on the rule class alone gives the tape form."""
        before = """
            import tensorflow.compat.v1 as tf
            w = tf.get_variable("w", [1])
            loss = tf.reduce_sum(w * w)
            train_op = tf.train.AdamOptimizer(0.1).minimize(loss)
        """
        after = """
            import tensorflow.compat.v1 as tf
            w = tf.get_variable("w", [1])
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(w * w)
            variables = tf.trainable_variables()
            gradients = tape.gradient(loss, variables)
            train_op = tf.train.AdamOptimizer(0.1).apply_gradients(zip(gradients, variables))
        """
        self.assertCodemod(before, after, expected_warnings=[
            "-:4:12: TFC103 `minimize` -> `tf.GradientTape` + `apply_gradients`"])


ODD_SITES = [
    "train_op = tf.train.AdamOptimizer(0.1).minimize()",
    "gvs = tf.train.AdamOptimizer(0.1).compute_gradients()\nop = tf.train.AdamOptimizer(0.1).apply_gradients(gvs)",
    "a, b = zip(*tf.train.AdamOptimizer(0.1).compute_gradients(loss))",
    "opt = tf.train.AdamOptimizer(0.1)\ngvs = opt.compute_gradients(loss)\nfor g, v in gvs:\n    print(g)\nop = opt.apply_gradients(gvs)",
    "g = tf.gradients()\nop = opt.apply_gradients(g)",
    "loss = tf.reduce_sum(x)\ng = tf.gradients(loss, tvars)\nop = opt.apply_gradients(g)",
    "class M:\n    def f(self):\n        self.loss = tf.reduce_sum(x)\n        self.op = self.opt.minimize(self.loss)",
    "async def f():\n    loss = tf.reduce_sum(x)\n    await tf.train.AdamOptimizer(0.1).minimize(loss)",
    "loss = tf.reduce_sum(tf.matmul(x, w))\ntrain = tf.train.AdamOptimizer(0.1).minimize(loss=loss, var_list=None)",
    "args = ()\nloss = tf.reduce_sum(x)\nop = tf.train.AdamOptimizer(0.1).minimize(loss, *args)",
    "opt = tf.train.AdamOptimizer(0.1)\nop = opt.apply_gradients(opt.compute_gradients(tf.reduce_sum(x)))",
    "loss = tf.reduce_sum(tf.matmul(x, w))\nop = tf.train.AdamOptimizer(0.1).minimize(loss * 2.0)",
    "loss = tf.reduce_sum(tf.matmul(x, w))\nop = opt2 = tf.train.AdamOptimizer(0.1).minimize(loss)",
]


def test_odd_sites_never_crash_and_are_idempotent() -> None:
    """Malformed or unusual training sites give valid, idempotent output (or are left alone)."""
    for body in ODD_SITES:
        for options in (Options(), Options(unsafe_fixes=True, add_clip_norm=1.0)):
            source = HEAD + body + "\n"
            first = migrate_source(source, options)
            compile(first.code, "odd", "exec")
            assert migrate_source(first.code, options).code == first.code, body


DETERMINISM_PROGRAM = '''
import tensorflow.compat.v1 as tf

x = tf.placeholder(tf.float32, [None, 3])
w = tf.get_variable("w", [3, 1])
losses = [tf.reduce_mean(tf.matmul(x, w))]
zeta = losses
alpha = losses
beta = losses


def add_zeta():
    zeta.append(tf.constant(1.0))


def add_beta():
    beta.append(tf.constant(2.0))


def add_alpha():
    alpha.append(tf.constant(3.0))


def build():
    loss = tf.add_n(losses)
    return tf.train.AdamOptimizer(0.1).minimize(loss)


add_zeta()
add_beta()
add_alpha()
train_op = build()
'''


def test_decline_reasons_do_not_depend_on_the_hash_seed() -> None:
    """The statement a decline blames is chosen in a fixed order, so every process (each `--jobs`
    worker has its own hash seed) reports the same message for the same file."""
    import os
    import subprocess
    import sys

    script = ("import sys; from codemods.api import migrate_source; "
              "print([d.message for d in migrate_source(sys.stdin.read()).diagnostics])")
    outputs = set()
    for seed in ("0", "1", "2", "3", "4", "5"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        proc = subprocess.run([sys.executable, "-c", script], input=DETERMINISM_PROGRAM, capture_output=True,
                              text=True, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        outputs.add(proc.stdout)
    assert len(outputs) == 1, outputs
    assert "alpha.append" in outputs.pop()  # the first alias in sorted order is blamed
