"""Executed equivalence of the ``tf.contrib.slim`` rewrites, bit for bit: TFC002's
``slim.learning`` helpers and TFC003's ``slim.optimize_loss`` / ``slim.adaptive_clipping_fn``.

As in ``test_equivalence_compat.py``: the *before* program is TF1 code as TF-Slim users wrote
it, run in graph mode against the test-only TF 1.15 reference (``tests/reference``, whose
``contrib.slim.learning`` is rebuilt from TF 1.15's ``learning.py``); the *after* program is the
engine's output, run with the real ``tfclip_compat``. Here the comparison is exact
(``rtol=0, atol=0``): losses at every step, every global variable (weights, embedding, optimizer
slots, a batch-norm style moving mean, ``global_step``). The model adds an embedding looked up
with repeated ids (an ``IndexedSlices`` gradient whose ``.values`` norm is not the dense norm).
"""

from __future__ import annotations

import pytest

from _equivalence import assert_equivalent, migrate, run_graph
from test_equivalence_compat import OPTIMIZERS, program

pytest.importorskip("tensorflow")

EMBEDDING = """
emb = {v1}get_variable("emb", initializer=np.arange(12, dtype=np.float32).reshape(6, 2) / 4.0)
loss = loss + tf.reduce_sum(tf.square(tf.nn.embedding_lookup(emb, [1, 1, 1, 3]) - 1.0))
"""


def check_exact(before_src: str, expect: str = "TFC002") -> str:
    """Migrate (rule ``expect`` must apply), run before on the reference and after on the shim,
    compare exactly; no ``contrib`` may remain. Returns the after program."""
    after_src = migrate(before_src, expect=expect)
    assert "contrib" not in after_src
    before = run_graph(before_src, legacy=True)
    after = run_graph(after_src, legacy=False)
    assert_equivalent(before, after, rtol=0.0, atol=0.0)
    return after_src


ALIAS_CREATE_TRAIN_OP = EMBEDDING + """
slim = tf.contrib.slim


def build(loss, global_step):
    return slim.learning.create_train_op(
        loss,
        {opt},
        global_step=global_step,
        clip_gradient_norm={clip},
        gradient_multipliers={{w: 2.0, "emb": 0.5}},
        summarize_gradients=True,
    )


train_op = build(loss, global_step)
"""


@pytest.mark.parametrize("clip", ["0", "0.5"], ids=["no_clip", "clip"])
@pytest.mark.parametrize("opt", ["Adam", "MomentumNesterov", "Adagrad"])
def test_alias_create_train_op_with_clip_and_multipliers(opt: str, clip: str) -> None:
    """``slim = tf.contrib.slim``; ``create_train_op(clip_gradient_norm, gradient_multipliers,
    summarize_gradients)`` trains bit for bit after TFC002, and the alias is gone."""
    build = ALIAS_CREATE_TRAIN_OP.replace("{opt}", OPTIMIZERS[opt]).replace("{clip}", clip)
    after = check_exact(program(build))
    assert "tfclip_compat.slim_create_train_op(" in after and "slim =" not in after


def test_import_as_compute_clip_apply_with_multiply_and_summaries() -> None:
    """``import tensorflow.contrib.slim as slim``: compute -> multiply_gradients ->
    clip_gradient_norms -> add_gradients_summaries -> apply trains bit for bit after TFC002."""
    build = EMBEDDING + """

def build(loss, global_step):
    opt = {v1}train.AdamOptimizer(0.05)
    gradients = opt.compute_gradients(loss)
    gradients = slim.learning.multiply_gradients(gradients, {{"w": 3.0}})
    gradients = slim.learning.clip_gradient_norms(gradients, 0.5)
    slim.learning.add_gradients_summaries(gradients)
    return opt.apply_gradients(grads_and_vars=gradients, global_step=global_step)


train_op = build(loss, global_step)
"""
    after = check_exact(program(build, imports="import tensorflow.contrib.slim as slim"))
    assert "import tensorflow.contrib.slim" not in after


def test_from_import_learning_batch_norm_update_ops_positional() -> None:
    """``from tensorflow.contrib.slim import learning``: UPDATE_OPS (a moving mean), positional
    global step and a clip train bit for bit after TFC002."""
    build = EMBEDDING + """
moving = {v1}get_variable("moving", initializer=np.zeros((1,), np.float32), trainable=False)
{v1}add_to_collection({v1}GraphKeys.UPDATE_OPS, {v1}assign(moving, 0.9 * moving + 0.1 * loss))
train_op = learning.create_train_op(loss, {v1}train.MomentumOptimizer(0.01, 0.9), global_step,
                                    clip_gradient_norm=1.0)
"""
    check_exact(program(build, imports="from tensorflow.contrib.slim import learning"))


# -- TFC003: slim.optimize_loss / slim.adaptive_clipping_fn (contrib.layers' functions in 1.15) --

SLIM_OPTIMIZE_LOSS = EMBEDDING + """
moving = {v1}get_variable("moving", initializer=np.zeros((1,), np.float32), trainable=False)
{v1}add_to_collection({v1}GraphKeys.UPDATE_OPS, {v1}assign(moving, 0.9 * moving + 0.1 * loss))


def build(loss, global_step):
    return {prefix}optimize_loss(
        loss,
        global_step,
        0.05,
        "Adam",
        gradient_multipliers={{"w:0": 2.0, emb: 0.5}},
        clip_gradients={clip},
        summaries=["gradients", "gradient_norm"],
    )


train_op = build(loss, global_step)
"""

SLIM_FORMS = {
    "alias": ("", "slim = tf.contrib.slim\n", "slim."),
    "import_as": ("import tensorflow.contrib.slim as slim", "", "slim."),
    "from_import": ("from tensorflow.contrib.slim import {names}", "", ""),
}
SLIM_CLIPS = {
    "float": "0.5",
    "adaptive": "{prefix}adaptive_clipping_fn(std_factor=1.0, decay=0.9, static_max_norm=2.0, global_step=global_step)",
}


@pytest.mark.parametrize("clip", sorted(SLIM_CLIPS))
@pytest.mark.parametrize("form", sorted(SLIM_FORMS))
def test_slim_optimize_loss_and_adaptive_clipping(form: str, clip: str) -> None:
    """``slim.optimize_loss`` (multipliers by name and by variable, UPDATE_OPS, a float or a
    ``slim.adaptive_clipping_fn`` clip, an embedding with repeated ids) trains bit for bit after
    TFC003 under every slim import form, and no slim import or alias is left."""
    imports, alias, prefix = SLIM_FORMS[form]
    # an import unused before the rewrite is not the rule's to remove: import only what is used
    imports = imports.format(names="adaptive_clipping_fn, optimize_loss" if clip == "adaptive" else "optimize_loss")
    build = alias + SLIM_OPTIMIZE_LOSS.replace("{clip}", SLIM_CLIPS[clip]).replace("{prefix}", prefix)
    after = check_exact(program(build, imports=imports), expect="TFC003")
    assert "tfclip_compat.optimize_loss(" in after and "slim" not in after
    assert ("tfclip_compat.adaptive_clipping_fn(" in after) == (clip == "adaptive")
