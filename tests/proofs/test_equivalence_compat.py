"""Executed equivalence of the compat rewrites (TFC001-TFC004).

Each *before* program is TF1 code as users wrote it; it runs in graph mode against the
test-only TF 1.15 reference of ``tf.contrib`` (``tests/reference``, never the shim). The
*after* program is the engine's output for it (never hand-written) and runs on TF 2 with the
real ``tfclip_compat``. After 20 steps the loss at every step, every global variable
(weights, optimizer slots, ``global_step``) and the global step agree to ``rtol=1e-5``
(``tests/_equivalence.py``, shared with the TF 2 form tests).

The model is small and deterministic (constant initial values, fixed data), its loss is
scaled so that the clipping thresholds below are active, and it owns an ``unused`` variable
whose gradient is ``None``.
"""

from __future__ import annotations

import pytest

from _equivalence import assert_equivalent, migrate, run_graph

pytest.importorskip("tensorflow")

# -- program pieces ----------------------------------------------------------------------

# The model, in TF1 spelling; `{v1}` is `tf.` (import tensorflow.compat.v1 as tf) or
# `tf.compat.v1.` (tf_upgrade_v2 output with import tensorflow as tf).
MODEL = """
rng = np.random.RandomState(0)
X = rng.randn(16, 4).astype(np.float32)
Y = (X @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32) + 0.3).astype(np.float32)
x = {v1}placeholder(tf.float32, [None, 4], name="x")
y = {v1}placeholder(tf.float32, [None, 1], name="y")
w = {v1}get_variable("w", initializer=np.full((4, 1), 0.1, np.float32))
b = {v1}get_variable("b", initializer=np.zeros((1,), np.float32))
unused = {v1}get_variable("unused", initializer=np.ones((2,), np.float32))
loss = 10.0 * tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
global_step = {v1}train.get_or_create_global_step()


def feeds(step):
    return {{"x": X, "y": Y}}
"""

HEADERS = {
    # `import tensorflow.compat.v1 as tf`: valid TF 1.15 and TF 2 (contrib imported by name)
    "compat_v1": ("import numpy as np\nimport tensorflow.compat.v1 as tf\n{imports}\n", "tf."),
    # tf_upgrade_v2 output: tf.compat.v1.* renamed, tf.contrib.* left with an ERROR
    "upgraded": ("import numpy as np\nimport tensorflow as tf\n{imports}\n", "tf.compat.v1."),
}


def program(build: str, *, imports: str = "", form: str = "upgraded") -> str:
    """A full before program: header, model, then ``build`` (which must set ``train_op``)."""
    header, v1 = HEADERS[form]
    return header.format(imports=imports) + MODEL.format(v1=v1) + "\n" + build.format(v1=v1)


def check(before_src: str, code: str, **options) -> str:
    """Migrate ``before_src`` (asserting ``code`` was applied), run both, compare; return after."""
    after_src = migrate(before_src, expect=code, **options)
    assert "tf.contrib" not in after_src and "tensorflow.contrib" not in after_src
    before = run_graph(before_src, legacy=True)
    after = run_graph(after_src, legacy=False)
    assert_equivalent(before, after)
    assert before.global_step is None or before.global_step > 0
    return after_src


# -- TFC001: clip_gradients_by_norm, every TF1 optimizer class --------------------------

OPTIMIZERS = {
    "GradientDescent": "{v1}train.GradientDescentOptimizer(0.05)",
    "Momentum": "{v1}train.MomentumOptimizer(0.01, momentum=0.9)",
    "MomentumNesterov": "{v1}train.MomentumOptimizer(0.01, momentum=0.9, use_nesterov=True)",
    "Adam": "{v1}train.AdamOptimizer(0.05)",
    "Adagrad": "{v1}train.AdagradOptimizer(0.1)",
    "Adadelta": "{v1}train.AdadeltaOptimizer(1.0)",
    "RMSProp": "{v1}train.RMSPropOptimizer(0.01)",
    "Ftrl": "{v1}train.FtrlOptimizer(0.1)",
}

CLIP_MINIMIZE = """
def build(loss, global_step):
    original_optimizer = {opt}
    optimizer = tf.contrib.estimator.clip_gradients_by_norm(original_optimizer, clip_norm=1.0)
    return optimizer.minimize(loss, global_step=global_step)


train_op = build(loss, global_step)
"""


@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
def test_clip_gradients_by_norm_minimize(opt: str) -> None:
    """Seed 002's wrapper + minimize(global_step=) trains identically after TFC001, per optimizer."""
    build = CLIP_MINIMIZE.replace("{opt}", OPTIMIZERS[opt])
    after = check(program(build), "TFC001")
    assert "tfclip_compat.clip_gradients_by_norm(original_optimizer, clip_norm=1.0)" in after


def test_clip_gradients_by_norm_compute_apply_var_list_and_schedule() -> None:
    """from-import form; compute_gradients(var_list subset)/apply_gradients with a decaying rate."""
    build = """
def build(loss, global_step):
    lr = tf.train.exponential_decay(0.1, global_step, 5, 0.5, staircase=True)
    opt = clip_gradients_by_norm(tf.train.MomentumOptimizer(lr, momentum=0.9), 0.5)
    grads_and_vars = opt.compute_gradients(loss, var_list=[w, unused])
    return opt.apply_gradients(grads_and_vars, global_step=global_step)


train_op = build(loss, global_step)
"""
    before = program(
        build, form="compat_v1", imports="from tensorflow.contrib.estimator import clip_gradients_by_norm"
    )
    after = check(before, "TFC001")
    assert "from tensorflow.contrib" not in after


def test_clipping_is_active_in_these_programs() -> None:
    """The threshold matters: a huge clip_norm trains differently (so equality above is not vacuous)."""
    import numpy as np

    build = CLIP_MINIMIZE.replace("{opt}", OPTIMIZERS["GradientDescent"])
    after_src = migrate(program(build), expect="TFC001")
    clipped = run_graph(after_src, legacy=False)
    unclipped = run_graph(after_src.replace("clip_norm=1.0", "clip_norm=1e9"), legacy=False)
    assert not np.allclose(clipped.losses, unclipped.losses, rtol=1e-3)


# -- TFC002: tf.contrib.training -----------------------------------------------------------

CREATE_TRAIN_OP = """
def build(loss, global_step):
    optimizer = {opt}
    return ct.create_train_op(
        loss,
        optimizer,
        global_step=global_step,
        transform_grads_fn=ct.clip_gradient_norms_fn(max_norm=0.5),
        summarize_gradients=True,
    )


train_op = build(loss, global_step)
"""


@pytest.mark.parametrize("opt", ["Adam", "MomentumNesterov", "Adagrad", "RMSProp"])
def test_create_train_op_with_clip_gradient_norms_fn(opt: str) -> None:
    """create_train_op + clip_gradient_norms_fn (+ gradient summaries) trains identically after TFC002."""
    build = CREATE_TRAIN_OP.replace("{opt}", OPTIMIZERS[opt])
    check(program(build, form="compat_v1", imports="from tensorflow.contrib import training as ct"), "TFC002")


def test_clip_gradient_norms_multiply_and_summaries_in_compute_apply() -> None:
    """compute -> multiply_gradients -> clip_gradient_norms -> add_gradients_summaries -> apply."""
    build = """
def build(loss, global_step):
    opt = {v1}train.AdamOptimizer(0.05)
    gv = opt.compute_gradients(loss)
    gv = tf.contrib.training.multiply_gradients(gv, {{w: 2.0, b: 0.5}})
    gv = tf.contrib.training.clip_gradient_norms(gv, 0.5)
    tf.contrib.training.add_gradients_summaries(gv)
    return opt.apply_gradients(gv, global_step=global_step)


train_op = build(loss, global_step)
"""
    check(program(build), "TFC002")


def test_create_train_op_variables_to_train_positional() -> None:
    """Positional arguments and a variables_to_train subset survive the rewrite."""
    build = """
def build(loss, global_step):
    return tf.contrib.training.create_train_op(
        loss, {v1}train.GradientDescentOptimizer(0.05), global_step, None, [w])


train_op = build(loss, global_step)
"""
    check(program(build), "TFC002")


# -- TFC003: optimize_loss ------------------------------------------------------------------

OPTIMIZE_LOSS = """
def build(loss, global_step):
    return tf.contrib.layers.optimize_loss(
        loss, global_step, learning_rate=0.05, optimizer={name!r}, clip_gradients=1.0,
        learning_rate_decay_fn=lambda lr, gs: {v1}train.exponential_decay(lr, gs, 5, 0.5))


train_op = build(loss, global_step)
"""


@pytest.mark.parametrize("name", ["SGD", "Adam", "Adagrad", "RMSProp", "Ftrl"])
def test_optimize_loss_by_name_with_clipping_and_decay(name: str) -> None:
    """optimize_loss(optimizer=name, clip_gradients=float, decay) trains identically after TFC003."""
    check(program(OPTIMIZE_LOSS.replace("{name!r}", repr(name))), "TFC003")


def test_optimize_loss_instance_multipliers_and_variables() -> None:
    """An optimizer instance, gradient_multipliers and a variables subset (from-import form)."""
    build = """
def build(loss, global_step):
    return optimize_loss(loss, global_step, None, tf.train.MomentumOptimizer(0.01, momentum=0.9),
                         gradient_multipliers={{"w": 3.0}}, clip_gradients=2.0, variables=[w, b])


train_op = build(loss, global_step)
"""
    before = program(build, form="compat_v1", imports="from tensorflow.contrib.layers import optimize_loss")
    check(before, "TFC003")


def test_optimize_loss_gradient_noise_draws_the_same_numbers() -> None:
    """optimize_loss(gradient_noise_scale=...) after TFC003 (a safe fix) draws the same noise as
    contrib under a graph seed: the shim creates the same random ops in the same order."""
    build = """
def build(loss, global_step):
    return tf.contrib.layers.optimize_loss(loss, global_step, 0.05, "SGD", gradient_noise_scale=0.5,
                                           clip_gradients=1.0)


train_op = build(loss, global_step)
"""
    before = program(build)
    after = migrate(before, expect="TFC003")
    assert_equivalent(run_graph(before, legacy=True), run_graph(after, legacy=False), rtol=0, atol=0)


# -- TFC004: clip_by_average_norm ------------------------------------------------------------


@pytest.mark.parametrize("opt", ["GradientDescent", "Adam"])
def test_clip_by_average_norm_per_gradient(opt: str) -> None:
    """compute -> clip_by_average_norm each (None-safe) -> apply trains identically after TFC004."""
    build = """
def build(loss, global_step):
    opt = {opt}
    gvs = opt.compute_gradients(loss)
    capped = [(None if g is None else tf.clip_by_average_norm(g, 0.2), v) for g, v in gvs]
    return opt.apply_gradients(capped, global_step=global_step)


train_op = build(loss, global_step)
""".replace("{opt}", OPTIMIZERS[opt])
    before = program(build, form="compat_v1")
    after = migrate(before, expect="TFC004")
    assert "tfclip_compat.clip_by_average_norm(g, 0.2)" in after
    assert_equivalent(run_graph(before, legacy=True), run_graph(after, legacy=False))


def test_optimize_loss_with_adaptive_clipping_fn() -> None:
    """optimize_loss(clip_gradients=adaptive_clipping_fn(...)) trains identically after TFC003."""
    build = """
def build(loss, global_step):
    clip = tf.contrib.layers.adaptive_clipping_fn(std_factor=1.0, decay=0.9, static_max_norm=2.0,
                                                  global_step=global_step)
    return tf.contrib.layers.optimize_loss(loss, global_step, 0.05, "Adam", clip_gradients=clip)


train_op = build(loss, global_step)
"""
    after = check(program(build), "TFC003")
    assert "tfclip_compat.adaptive_clipping_fn(" in after
