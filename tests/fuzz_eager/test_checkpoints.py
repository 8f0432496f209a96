"""Checkpoints (round 14): a TF 1 script's ``tf.train.Saver`` becomes
``tfclip_compat.checkpoints.Saver``; the harness reads every checkpoint each side wrote (``_side``)
and compares files, keys and tensors bit for bit, so the migrated program writes the checkpoints
the TF 1 program wrote (weights, slots, beta powers, global step; the ``max_to_keep`` rotation and
the ``checkpoint`` state file), which TF 1 code restores. A saver that leaves the optimizer's
variables out is caught."""

from __future__ import annotations

from pathlib import Path

import pytest

from codemods.api import Options, migrate_source

ROOT = Path(__file__).resolve().parents[2]
BEFORE = ROOT / "fixtures" / "TFC301" / "checkpoint_saver.before.py"


@pytest.fixture(scope="module")
def migrated() -> str:
    result = migrate_source(BEFORE.read_text(), Options(select=frozenset({"TFC301"})))
    assert result.changed
    return result.code


def test_the_eager_program_writes_the_tf1_checkpoints(harness, migrated):
    result = harness.pair(BEFORE.read_text(), migrated)
    assert result.verdict == "equal" and result.bitwise, result.detail
    written = result.before["checkpoints"]
    # max_to_keep=2: model.ckpt-2 rotated away, in both worlds
    assert sorted(written) == ["checkpoints/checkpoint", "checkpoints/final.ckpt", "checkpoints/model.ckpt-4"]
    assert {"net/w", "net/w/Adam", "net/w/Adam_1", "beta1_power", "global_step"} <= set(written["checkpoints/final.ckpt"])
    assert sorted(result.after["checkpoints"]) == sorted(written)


def test_a_saver_without_the_optimizer_variables_is_caught(harness, migrated):
    """The comparison is not vacuous: leave the slots out of the eager saver and it fails."""
    wrong = migrated.replace(" + [v for optimizer in (train_op_optimizer,) for v in optimizer.variables()]", "")
    assert wrong != migrated
    result = harness.pair(BEFORE.read_text(), wrong)
    assert result.verdict == "different" and "only before" in result.detail, result.detail


def test_the_shim_saver_says_what_it_needs():
    pytest.importorskip("tensorflow")
    from tfclip_compat.checkpoints import Saver

    with pytest.raises(TypeError, match="pass a function"):
        Saver([])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="var_list"):
        Saver(lambda: [], var_list=[])
    with pytest.raises(ValueError, match="no variables to save yet"):
        Saver(lambda: []).save(None, "unused")


TWO_ADAMS = '''import numpy as np
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 3])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.get_variable("w", [3, 1])
v = tf.get_variable("v", [3, 1])
loss1 = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
loss2 = tf.reduce_mean(tf.square(tf.matmul(x, v) - y))
train1 = tf.train.AdamOptimizer(0.1).minimize(loss1, var_list=[w])
train2 = tf.train.AdamOptimizer(0.2).minimize(loss2, var_list=[v])
saver = tf.train.Saver()

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(2):
        sess.run(train1, {x: np.ones((4, 3)), y: np.ones((4, 1))})
        sess.run(train2, {x: np.ones((4, 3)), y: np.ones((4, 1))})
    print(saver.save(sess, "checkpoints/model.ckpt"))
'''


# the second Adam over `w` too: TF 1 names its slots `w/Adam_2`, `w/Adam_3`
SHARED_ADAMS = TWO_ADAMS.replace("tf.matmul(x, v) - y", "tf.matmul(x, w + v) - y").replace(
    "minimize(loss2, var_list=[v])", "minimize(loss2)")


@pytest.mark.parametrize("source, keys", [
    (TWO_ADAMS, {"beta1_power", "beta1_power_1", "beta2_power_1"}),
    (SHARED_ADAMS, {"beta1_power_1", "w/Adam_2", "w/Adam_3"}),
], ids=["disjoint", "shared"])
def test_two_adams_save_under_the_graphs_unique_names(harness, source, keys):
    """Eagerly both Adams make a `beta1_power`; TF 1's graph named the second `beta1_power_1`. The
    eager saver names them so, in the order the optimizers were built (measured first: the saver
    over the bare variable list raised "same shared_name 'beta1_power'")."""
    assert source.count("AdamOptimizer") == 2
    result = migrate_source(source, Options(select=frozenset({"TFC301"})))
    assert result.changed
    pair = harness.pair(source, result.code)
    assert pair.verdict == "equal" and pair.bitwise, pair.detail
    assert keys <= set(pair.before["checkpoints"]["checkpoints/model.ckpt"])


def test_tf1_names_makes_repeated_names_unique_in_order():
    tf = pytest.importorskip("tensorflow")
    from tfclip_compat.checkpoints import tf1_names

    a, b, c = tf.Variable(1.0, name="beta1_power"), tf.Variable(2.0, name="beta1_power"), tf.Variable(3.0, name="w")
    named = tf1_names([a, c, b, a])
    assert list(named) == ["beta1_power", "w", "beta1_power_1"] and named["beta1_power_1"] is b
