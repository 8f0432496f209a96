"""restore_v1_optimizer_state: a TF1 program trains 5 steps and saves; its TFC104 migration (a
Keras optimizer) restores that checkpoint with the function and trains 5 more; the result equals
the TF1 program continuing, for every optimizer TFC104 converts, both checkpoint formats."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

import tfclip_compat as tfc
from _tf_versions import KERAS_MAJOR
from tfclip_compat._restore import _variable_index

V1 = tf.compat.v1
K = tf.keras.optimizers
RNG = np.random.RandomState(11)
BATCHES = [(RNG.randn(8, 3).astype(np.float32), RNG.randn(8, 2).astype(np.float32) * 3) for _ in range(10)]
W0 = RNG.randn(3, 2).astype(np.float32)
B0 = np.zeros(2, np.float32)

# TF1 optimizer -> its Keras class with the arguments TFC104 writes (codemods/rules/tfc104_keras_optimizer.py).
CASES = {
    "GradientDescent": (
        lambda: V1.train.GradientDescentOptimizer(0.1),
        lambda: K.SGD(learning_rate=0.1),
    ),
    "Adam": (
        lambda: V1.train.AdamOptimizer(0.05),
        lambda: K.Adam(learning_rate=0.05, beta_1=0.9, beta_2=0.999, epsilon=1e-08),
    ),
    "Momentum": (
        lambda: V1.train.MomentumOptimizer(0.05, 0.9),
        lambda: K.SGD(learning_rate=0.05, momentum=0.9, nesterov=False),
    ),
    "Momentum-nesterov": (
        lambda: V1.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
        lambda: K.SGD(learning_rate=0.05, momentum=0.9, nesterov=True),
    ),
    "Adagrad": (
        lambda: V1.train.AdagradOptimizer(0.3),
        lambda: K.Adagrad(learning_rate=0.3, initial_accumulator_value=0.1, epsilon=0.0),
    ),
    "Adadelta": (
        lambda: V1.train.AdadeltaOptimizer(1.0),
        lambda: K.Adadelta(learning_rate=1.0, rho=0.95, epsilon=1e-08),
    ),
    "Ftrl": (
        lambda: V1.train.FtrlOptimizer(0.3, l1_regularization_strength=0.01),
        lambda: K.Ftrl(
            learning_rate=0.3, learning_rate_power=-0.5, initial_accumulator_value=0.1,
            l1_regularization_strength=0.01, l2_regularization_strength=0.0,
            l2_shrinkage_regularization_strength=0.0, beta=0.0,
        ),
    ),
}
# Measured (both formats, max over w and b) after 5 restored steps vs TF1 continuing:
# GradientDescent, Adadelta, Ftrl 0 (bit-identical); Adagrad 2.3e-7, Momentum 3.5e-7, Momentum-nesterov 6.9e-7
# relative: asserted at rtol 1e-5. Adam 1.03e-5 relative / 5.7e-7 absolute, from Keras' own Adam
# arithmetic (``beta ** t``, ``m += (g - m) * (1 - beta_1)``): a Keras Adam trained from scratch
# differs from TF1's by 3.1e-5 / 2.1e-6 after 10 steps. Asserted at rtol 1e-5 + atol 1e-6.
RTOL = 1e-5
ATOL = {"Adam": 1e-6}


def _model():
    m = tf.Module()
    m.w = tf.Variable(W0, name="dense/kernel")
    m.b = tf.Variable(B0, name="dense/bias")
    return m


def _grads(m, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(tf.matmul(x, m.w) + m.b - y))
    return tape.gradient(loss, [m.w, m.b])


def _v1_steps(m, opt, gs, batches):
    for x, y in batches:
        opt.apply_gradients(zip(_grads(m, x, y), [m.w, m.b]), global_step=gs)


def _keras_steps(m, opt, gs, batches):
    for x, y in batches:
        opt.apply_gradients(zip(_grads(m, x, y), [m.w, m.b]))
        gs.assign_add(1)  # what TFC104 writes after apply_gradients


def _object_based(case, tmp_path, restore=True):
    """TF1 eager program with tf.train.Checkpoint; returns (TF1 continued, Keras resumed, report)."""
    make_v1, make_keras = CASES[case]
    m, opt = _model(), make_v1()
    gs = tf.Variable(0, dtype=tf.int64, name="global_step")
    _v1_steps(m, opt, gs, BATCHES[:5])
    path = tf.train.Checkpoint(optimizer=opt, model=m, step=gs).save(str(tmp_path / "ckpt"))
    _v1_steps(m, opt, gs, BATCHES[5:])
    want = [m.w.numpy(), m.b.numpy(), int(gs.numpy())]

    m2, kopt = _model(), make_keras()
    gs2 = tf.Variable(0, dtype=tf.int64, name="global_step")
    report = None
    if restore:
        report = tfc.restore_v1_optimizer_state(
            kopt, path, [m2.w, m2.b], objects={"model": m2, "step": gs2}
        )
    else:  # what a migrated program does without the function: the optimizer state is lost
        tf.train.Checkpoint(optimizer=kopt, model=m2, step=gs2).restore(path).expect_partial()
    _keras_steps(m2, kopt, gs2, BATCHES[5:])
    return want, [m2.w.numpy(), m2.b.numpy(), int(gs2.numpy())], report, kopt


def _name_based(case, tmp_path):
    """TF1 graph program with Saver; the migrated eager program restores by variable name."""
    make_v1, make_keras = CASES[case]
    prefix = str(tmp_path / "model.ckpt")
    with tf.Graph().as_default():
        w = V1.get_variable("dense/kernel", initializer=W0)
        b = V1.get_variable("dense/bias", initializer=B0)
        x = V1.placeholder(tf.float32, [None, 3])
        y = V1.placeholder(tf.float32, [None, 2])
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
        gs = V1.train.get_or_create_global_step()
        train_op = make_v1().minimize(loss, global_step=gs)
        saver = V1.train.Saver()
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            for bx, by in BATCHES[:5]:
                sess.run(train_op, {x: bx, y: by})
            path = saver.save(sess, prefix, global_step=gs)
            for bx, by in BATCHES[5:]:
                sess.run(train_op, {x: bx, y: by})
            want = sess.run([w, b]) + [int(sess.run(gs))]

    reader = tf.train.load_checkpoint(path)
    m2, kopt = _model(), make_keras()
    m2.w.assign(reader.get_tensor("dense/kernel"))
    m2.b.assign(reader.get_tensor("dense/bias"))
    gs2 = tf.Variable(0, dtype=tf.int64)
    report = tfc.restore_v1_optimizer_state(kopt, path, [m2.w, m2.b], global_step=gs2)
    _keras_steps(m2, kopt, gs2, BATCHES[5:])
    return want, [m2.w.numpy(), m2.b.numpy(), int(gs2.numpy())], report, kopt


@pytest.mark.parametrize("case", sorted(CASES))
def test_object_based_checkpoint_resumes_like_tf1(case, tmp_path):
    """tf.train.Checkpoint of a TF1 optimizer -> Keras optimizer: 5 more steps equal TF1's (rtol 1e-5; Adam + atol 1e-6)."""
    want, got, report, kopt = _object_based(case, tmp_path)
    np.testing.assert_allclose(got[0], want[0], rtol=RTOL, atol=ATOL.get(case, 1e-7))
    np.testing.assert_allclose(got[1], want[1], rtol=RTOL, atol=ATOL.get(case, 1e-7))
    assert got[2] == want[2] == 10
    assert report["format"] == "object" and report["missing"] == []
    assert report["restored"] == ["dense/kernel", "dense/bias"]
    assert int(kopt.iterations.numpy()) == 10


@pytest.mark.parametrize("case", sorted(CASES))
def test_name_based_checkpoint_resumes_like_tf1(case, tmp_path):
    """A Saver checkpoint of a TF1 graph program -> Keras optimizer in eager: 5 more steps equal TF1's."""
    want, got, report, kopt = _name_based(case, tmp_path)
    np.testing.assert_allclose(got[0], want[0], rtol=RTOL, atol=ATOL.get(case, 1e-7))
    np.testing.assert_allclose(got[1], want[1], rtol=RTOL, atol=ATOL.get(case, 1e-7))
    assert got[2] == want[2] == 10
    assert report["format"] == "name" and report["global_step"] == 5
    assert int(kopt.iterations.numpy()) == 10


@pytest.mark.parametrize("case", ["Adam", "Momentum", "Adagrad"])
def test_without_the_function_state_is_lost(case, tmp_path):
    """Restoring the checkpoint into the Keras optimizer directly loses the state (Keras 3) or fails (Keras 2)."""
    if KERAS_MAJOR < 3:
        # Keras 2 (TF 2.15) refuses a TF1 optimizer's checkpoint for its optimizers outright.
        with pytest.raises(ValueError, match="legacy Keras optimizer into a v2.11"):
            _object_based(case, tmp_path, restore=False)
        return
    want, got, _, kopt = _object_based(case, tmp_path, restore=False)
    assert not np.allclose(got[0], want[0], rtol=1e-3)


def test_momentum_slot_is_scaled_by_minus_learning_rate(tmp_path):
    """Keras SGD's momentum holds -lr times TF1's accumulation."""
    make_v1, make_keras = CASES["Momentum"]
    m, opt = _model(), make_v1()
    _v1_steps(m, opt, None, BATCHES[:3])
    path = tf.train.Checkpoint(optimizer=opt, model=m).save(str(tmp_path / "c"))
    kopt = make_keras()
    tfc.restore_v1_optimizer_state(kopt, path, [m.w, m.b], objects={"model": m})
    keras_m = kopt.momentums[_variable_index(kopt, m.w)].numpy()
    np.testing.assert_allclose(keras_m, -0.05 * opt.get_slot(m.w, "momentum").numpy(), rtol=1e-6)


def test_wrapped_keras_optimizer_is_unwrapped(tmp_path):
    """The Keras optimizer inside clip_gradients_by_norm's wrapper receives the state."""
    make_v1, make_keras = CASES["Adam"]
    m, opt = _model(), make_v1()
    _v1_steps(m, opt, None, BATCHES[:2])
    path = tf.train.Checkpoint(optimizer=opt, model=m).save(str(tmp_path / "c"))
    inner = make_keras()
    report = tfc.restore_v1_optimizer_state(
        tfc.clip_gradients_by_norm(inner, 10.0), path, [m.w, m.b], objects={"model": m}
    )
    assert report["iterations"] == 2 and int(inner.iterations.numpy()) == 2
    np.testing.assert_array_equal(
        inner._momentums[_variable_index(inner, m.w)].numpy(), opt.get_slot(m.w, "m").numpy()
    )


def test_errors_name_the_problem_and_the_remedy(tmp_path):
    """Bad inputs: object checkpoint without objects, unknown optimizer, missing path, wrong betas, graph mode."""
    make_v1, make_keras = CASES["Adam"]
    m, opt = _model(), make_v1()
    _v1_steps(m, opt, None, BATCHES[:2])
    path = tf.train.Checkpoint(optimizer=opt, model=m).save(str(tmp_path / "c"))
    with pytest.raises(ValueError, match="objects="):
        tfc.restore_v1_optimizer_state(make_keras(), path, [m.w, m.b])
    with pytest.raises(TypeError, match="RMSprop.*TFC104"):
        tfc.restore_v1_optimizer_state(K.RMSprop(0.1), path, [m.w, m.b], objects={"model": m})
    with pytest.raises(FileNotFoundError, match="not found"):
        tfc.restore_v1_optimizer_state(make_keras(), str(tmp_path / "nope"), [m.w, m.b])
    with pytest.raises(ValueError, match="beta_1=0.5"):
        tfc.restore_v1_optimizer_state(K.Adam(0.05, beta_1=0.5), path, [m.w, m.b], objects={"model": m})
    other = tf.Variable(np.zeros(4, np.float32), name="other")
    with pytest.raises(ValueError, match=r"no AdamOptimizer state for \['other'\].*allow_missing"):
        tfc.restore_v1_optimizer_state(make_keras(), path, [m.w, other], objects={"model": m})
    report = tfc.restore_v1_optimizer_state(
        make_keras(), path, [m.w, other], objects={"model": m}, allow_missing=True
    )
    assert report["missing"] == ["other"] and report["restored"] == ["dense/kernel"]
    with tf.Graph().as_default():
        with pytest.raises(RuntimeError, match="eagerly"):
            tfc.restore_v1_optimizer_state(make_keras(), path, [m.w])


def test_name_based_with_scope_and_custom_optimizer_name(tmp_path):
    """Saver keys under optimize_loss's scope with name="MyAdam" (``OptimizeLoss/dense/kernel/MyAdam_1``)
    are found with v1_name=, and the step count comes from the scoped beta powers."""
    with tf.Graph().as_default():
        w = V1.get_variable("dense/kernel", initializer=W0)
        gs = V1.train.get_or_create_global_step()
        loss = tf.reduce_sum(tf.square(tf.matmul(tf.constant(BATCHES[0][0]), w)))
        opt = V1.train.AdamOptimizer(0.05, name="MyAdam")
        train = tfc.optimize_loss(loss, gs, None, opt, summaries=[])
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            for _ in range(3):
                sess.run(train)
            path = V1.train.Saver().save(sess, str(tmp_path / "m"))
            want_m = sess.run(opt.get_slot(w, "m"))
    names = [n for n, _ in tf.train.list_variables(path)]
    assert "OptimizeLoss/dense/kernel/MyAdam" in names and "OptimizeLoss/beta1_power" in names
    kopt = CASES["Adam"][1]()
    w2 = tf.Variable(W0, name="dense/kernel")
    report = tfc.restore_v1_optimizer_state(kopt, path, [w2], v1_name="MyAdam")
    assert report["iterations"] == 3 and report["missing"] == []
    np.testing.assert_array_equal(kopt._momentums[0].numpy(), want_m)
    with pytest.raises(ValueError, match="no AdamOptimizer state.*v1_name"):
        tfc.restore_v1_optimizer_state(CASES["Adam"][1](), path, [w2])
