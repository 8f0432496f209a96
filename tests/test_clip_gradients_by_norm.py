"""Tests for tfclip_compat.clip_gradients_by_norm (v1 graph mode, eager, Keras, policies)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

import tfclip_compat
from reference import contrib_estimator

V1 = tf.compat.v1

OPTIMIZERS = {
    "GradientDescent": lambda: V1.train.GradientDescentOptimizer(0.1),
    "Momentum": lambda: V1.train.MomentumOptimizer(0.05, 0.9),
    "Adam": lambda: V1.train.AdamOptimizer(0.05),
    "Adagrad": lambda: V1.train.AdagradOptimizer(0.3),
    "RMSProp": lambda: V1.train.RMSPropOptimizer(0.01),
}


def _train_graph(wrap, make_opt, *, sparse, use_global_step, use_var_list, steps=10, clip=0.5):
    """Build a tiny model in a fresh graph, train ``steps`` steps, return the variable values."""
    rng = np.random.RandomState(0)
    x_np = rng.randn(16, 4).astype(np.float32)
    ids_np = rng.randint(0, 6, size=(16, 3)).astype(np.int32)  # repeated ids -> duplicates
    y_np = rng.randn(16, 1).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        V1.set_random_seed(1)
        x = V1.placeholder(tf.float32, [None, 4])
        y = V1.placeholder(tf.float32, [None, 1])
        w = V1.get_variable("w", initializer=rng.randn(4, 1).astype(np.float32) * 3.0)
        b = V1.get_variable("b", initializer=np.zeros([1], np.float32))
        unused = V1.get_variable("unused", initializer=np.ones([2], np.float32))
        pred = tf.matmul(x, w) + b
        feeds = {x: x_np, y: y_np}
        train_vars = [w, b]
        if sparse:
            ids = V1.placeholder(tf.int32, [None, 3])
            emb = V1.get_variable("emb", initializer=rng.randn(6, 2).astype(np.float32) * 3.0)
            e = tf.reduce_sum(tf.nn.embedding_lookup(emb, ids), axis=[1, 2])[:, None]
            pred = pred + e
            feeds[ids] = ids_np
            train_vars.append(emb)
        loss = tf.reduce_mean(tf.square(pred - y)) * 10.0
        gs = V1.train.get_or_create_global_step() if use_global_step else None
        opt = wrap(make_opt(), clip)
        kwargs = {}
        if use_global_step:
            kwargs["global_step"] = gs
        if use_var_list:
            kwargs["var_list"] = train_vars + [unused]  # unused: None gradient passes through
        train_op = opt.minimize(loss, **kwargs)
        with V1.Session(graph=g) as sess:
            sess.run(V1.global_variables_initializer())
            for _ in range(steps):
                sess.run(train_op, feeds)
            values = sess.run(train_vars)
            step = sess.run(gs) if use_global_step else None
    return values, step


@pytest.mark.parametrize("opt_name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse-repeated-ids"])
def test_matches_contrib_reference_bit_for_bit(opt_name, sparse):
    """The shim trains bit for bit like TF 1.15 contrib (reference) for 10 graph steps.

    The sparse case looks up an embedding with repeated ids, so its gradient is an
    ``IndexedSlices`` with duplicate indices: TF 1.15 normed its ``.values``; so does the shim.
    """
    for use_gs, use_vl in [(False, False), (True, True)]:
        ours, step_ours = _train_graph(
            tfclip_compat.clip_gradients_by_norm,
            OPTIMIZERS[opt_name],
            sparse=sparse,
            use_global_step=use_gs,
            use_var_list=use_vl,
        )
        ref, step_ref = _train_graph(
            contrib_estimator.clip_gradients_by_norm,
            OPTIMIZERS[opt_name],
            sparse=sparse,
            use_global_step=use_gs,
            use_var_list=use_vl,
        )
        assert step_ours == step_ref
        if use_gs:
            assert step_ours == 10
        for a, r in zip(ours, ref):
            np.testing.assert_allclose(a, r, rtol=1e-5, atol=1e-7)
            np.testing.assert_array_equal(a, r)


def _reference_with_dense_norm(optimizer, clip_norm):
    """Contrib's wrapper, with duplicate embedding indices summed before TF's clip (``norm="exact"``)."""

    def clip_grads(grads_and_vars):
        grads, variables = zip(*grads_and_vars)
        fixed = []
        for g in grads:
            if isinstance(g, tf.IndexedSlices):
                uniq, pos = tf.unique(g.indices)
                g = tf.IndexedSlices(
                    tf.math.unsorted_segment_sum(g.values, pos, tf.shape(uniq)[0]), uniq, g.dense_shape
                )
            fixed.append(g)
        # The norm over deduplicated slices, scale applied to the original gradients.
        _, norm = tf.clip_by_global_norm(fixed, clip_norm)
        clipped, _ = tf.clip_by_global_norm(list(grads), clip_norm, use_norm=norm)
        return list(zip(clipped, variables))

    return contrib_estimator._TransformGradients(optimizer, clip_grads, "ClipByNorm" + optimizer.get_name())


@pytest.mark.parametrize("norm", ["exact", "fast"])
def test_exact_and_fast_norms_are_opt_in_and_differ_from_contrib(norm):
    """``norm="exact"``/``"fast"`` clip by the dense norm of repeated ids: equal to contrib on
    deduplicated slices (rtol 1e-5), not to TF 1.15's own result."""
    def ours_with(opt, clip):
        return tfclip_compat.clip_gradients_by_norm(opt, clip, norm=norm)

    kwargs = dict(sparse=True, use_global_step=False, use_var_list=False)
    ours, _ = _train_graph(ours_with, OPTIMIZERS["GradientDescent"], **kwargs)
    dense, _ = _train_graph(_reference_with_dense_norm, OPTIMIZERS["GradientDescent"], **kwargs)
    tf115, _ = _train_graph(contrib_estimator.clip_gradients_by_norm, OPTIMIZERS["GradientDescent"], **kwargs)
    for a, r in zip(ours, dense):
        np.testing.assert_allclose(a, r, rtol=1e-5, atol=1e-7)
    assert not all(np.allclose(a, r, rtol=1e-5) for a, r in zip(ours, tf115))


def test_exact_norm_equals_tf115_without_repeated_ids():
    """Float32 gradients without repeated sparse indices: ``norm="exact"`` is bit-identical to TF 1.15."""
    def exact(opt, clip):
        return tfclip_compat.clip_gradients_by_norm(opt, clip, norm="exact")

    kwargs = dict(sparse=False, use_global_step=True, use_var_list=False)
    ours, _ = _train_graph(exact, OPTIMIZERS["Adam"], **kwargs)
    ref, _ = _train_graph(contrib_estimator.clip_gradients_by_norm, OPTIMIZERS["Adam"], **kwargs)
    for a, r in zip(ours, ref):
        np.testing.assert_array_equal(a, r)


def _adam_embedding_run(make_opt, steps=5):
    """The issue's drift case: Adam with small second moments on an embedding model (graph mode)."""
    rng = np.random.RandomState(3)
    ids = rng.randint(0, 50, size=(64, 4)).astype(np.int32)
    y = rng.randn(64, 1).astype(np.float32)
    with tf.Graph().as_default():
        tables = [
            V1.get_variable(f"emb{i}", initializer=(rng.randn(50, 8) * 0.01).astype(np.float32))
            for i in range(3)
        ]
        dense = [V1.get_variable(f"d{i}", initializer=(rng.randn(8, 1) * 0.1).astype(np.float32)) for i in range(12)]
        h = tf.add_n([tf.reduce_sum(tf.nn.embedding_lookup(t, ids), axis=1) for t in tables])
        pred = tf.add_n([tf.matmul(h, d) for d in dense])
        loss = tf.reduce_mean(tf.square(pred - y)) * 1e-3  # small gradients: small second moments
        train_op = make_opt().minimize(loss)
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            for _ in range(steps):
                sess.run(train_op)
            return sess.run(tables + dense)


def test_adam_small_second_moments_embedding_is_bit_exact():
    """Adam + embedding + small second moments (where 2.3e-5 drift was measured): bit-identical to contrib."""
    ours = _adam_embedding_run(lambda: tfclip_compat.clip_gradients_by_norm(V1.train.AdamOptimizer(1e-3), 1e-4))
    ref = _adam_embedding_run(lambda: contrib_estimator.clip_gradients_by_norm(V1.train.AdamOptimizer(1e-3), 1e-4))
    for a, r in zip(ours, ref):
        np.testing.assert_allclose(a, r, rtol=1e-5)
        np.testing.assert_array_equal(a, r)


def test_wrapper_is_v1_optimizer_with_delegation():
    """The v1 wrapper is a v1 Optimizer named ClipByNorm+inner, delegating slots; variables() is [] as contrib's."""
    with tf.Graph().as_default():
        v = V1.get_variable("v", initializer=[1.0, 2.0])
        adam = V1.train.AdamOptimizer(0.1)
        opt = tfclip_compat.clip_gradients_by_norm(adam, 1.0)
        ref = contrib_estimator.clip_gradients_by_norm(V1.train.AdamOptimizer(0.1), 1.0)
        assert isinstance(opt, V1.train.Optimizer)
        assert opt.get_name() == "ClipByNormAdam"
        opt.minimize(tf.reduce_sum(v * v))
        ref.minimize(tf.reduce_sum(v * 3.0))
        assert opt.get_slot_names() == adam.get_slot_names() == ["m", "v"]
        assert opt.get_slot(v, "m") is adam.get_slot(v, "m")
        names = sorted(x.op.name for x in opt.optimizer.variables())
        assert any("beta1_power" in n for n in names) and any("beta2_power" in n for n in names)
        assert len(adam.variables()) == 4
        # TF 1.15's contrib wrapper owned no variables: variables() is [] for both.
        assert opt.variables() == ref.variables() == []


def _eager_adam_steps(opt, v, steps):
    for i in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(v - float(i))) * 5.0
        opt.apply_gradients([(tape.gradient(loss, v), v)])


def test_v1_checkpoint_saves_inner_state_and_restores_exactly():
    """tf.train.Checkpoint of the v1 wrapper saves Adam's slots and beta powers; restore resumes exactly."""
    v = tf.Variable([1.0, -2.0, 3.0])
    opt = tfclip_compat.clip_gradients_by_norm(V1.train.AdamOptimizer(0.1), 1.0)
    _eager_adam_steps(opt, v, 3)
    ckpt = tf.train.Checkpoint(v=v, optimizer=opt)
    path = ckpt.save(_tmp("v1"))
    names = [n for n, _ in tf.train.list_variables(path)]
    assert any("beta1_power" in n for n in names), names
    assert any("/.OPTIMIZER_SLOT/" in n for n in names), names
    _eager_adam_steps(opt, v, 3)
    expected = v.numpy()

    v2 = tf.Variable([0.0, 0.0, 0.0])
    opt2 = tfclip_compat.clip_gradients_by_norm(V1.train.AdamOptimizer(0.1), 1.0)
    status = tf.train.Checkpoint(v=v2, optimizer=opt2).restore(path)  # deferred: no slots yet
    _eager_adam_steps(opt2, v2, 3)
    status.assert_consumed()
    np.testing.assert_allclose(v2.numpy(), expected, rtol=1e-6)


def _tmp(name):
    import tempfile

    return str(__import__("pathlib").Path(tempfile.mkdtemp()) / name)


def test_keras_wrapper_clips_and_proxies():
    """The Keras wrapper clips by the global norm, proxies iterations/learning_rate and checkpoints."""
    v = tf.Variable([3.0, 4.0])
    opt = tfclip_compat.clip_gradients_by_norm(tf.keras.optimizers.SGD(1.0), 1.0)
    assert opt.name == "ClipByNormSGD"
    opt.apply_gradients([(tf.constant([30.0, 40.0]), v)])  # norm 50 -> clipped to [0.6, 0.8]
    np.testing.assert_allclose(v.numpy(), [2.4, 3.2], rtol=1e-6)
    assert int(opt.iterations) == 1
    opt.learning_rate = 0.5
    assert float(opt.optimizer.learning_rate) == 0.5

    @tf.function
    def step(g):
        opt.apply_gradients([(g, v)])

    step(tf.constant([0.3, 0.4]))  # norm 0.5 < 1: unclipped
    np.testing.assert_allclose(v.numpy(), [2.25, 3.0], rtol=1e-6)
    assert int(opt.iterations) == 2


def test_keras_wrapper_matches_manual_clip_over_steps_and_checkpoint():
    """Keras Adam via the wrapper equals tape+tf.clip_by_global_norm+Adam, also across a checkpoint."""
    rng = np.random.RandomState(0)
    init = rng.randn(5).astype(np.float32)
    targets = [rng.randn(5).astype(np.float32) * 10 for _ in range(10)]

    def run(use_shim, restore_at=None):
        v = tf.Variable(init)
        inner = tf.keras.optimizers.Adam(0.1)
        opt = tfclip_compat.clip_gradients_by_norm(inner, 2.0) if use_shim else inner
        for i, t in enumerate(targets):
            if restore_at is not None and i == restore_at:
                path = tf.train.Checkpoint(v=v, optimizer=opt).save(_tmp("k"))
                v = tf.Variable(np.zeros(5, np.float32))
                opt = tfclip_compat.clip_gradients_by_norm(tf.keras.optimizers.Adam(0.1), 2.0)
                opt.build([v])
                tf.train.Checkpoint(v=v, optimizer=opt).restore(path).assert_consumed()
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(tf.square(v - t))
            g = tape.gradient(loss, v)
            if not use_shim:
                (g,), _ = tf.clip_by_global_norm([g], 2.0)
            opt.apply_gradients([(g, v)])
        return v.numpy()

    manual = run(False)
    np.testing.assert_allclose(run(True), manual, rtol=1e-5)
    np.testing.assert_allclose(run(True, restore_at=5), manual, rtol=1e-5)


@pytest.mark.parametrize(
    "kwargs, exc, words",
    [
        ({"clip_norm": 0.0}, ValueError, "clip_norm"),
        ({"clip_norm": -1}, ValueError, "clip_norm"),
        ({"clip_norm": float("inf")}, ValueError, "clip_norm must be a finite number > 0, got inf.*NaN"),
        ({"clip_norm": float("nan")}, ValueError, "clip_norm must be a finite number > 0, got nan"),
        ({"clip_norm": 1.0, "norm": "dense"}, ValueError, "norm='dense'"),
        ({"clip_norm": [1.0, 2.0]}, ValueError, "clip_norm"),
        ({"clip_norm": "5"}, TypeError, "clip_norm"),
        ({"clip_norm": 1.0, "nonfinite": "ignore"}, ValueError, "nonfinite"),
    ],
)
def test_bad_arguments_fail_at_construction(kwargs, exc, words):
    """Bad clip_norm / policy values raise at construction with a message naming the argument."""
    with pytest.raises(exc, match=words):
        tfclip_compat.clip_gradients_by_norm(V1.train.GradientDescentOptimizer(0.1), **kwargs)


@pytest.mark.parametrize("bad", ["Adam", object(), V1.train.AdamOptimizer, None])
def test_non_optimizer_is_rejected(bad):
    """Anything but an optimizer instance raises a TypeError naming ``optimizer``."""
    with pytest.raises(TypeError, match="optimizer"):
        tfclip_compat.clip_gradients_by_norm(bad, 1.0)


def test_constant_tensor_clip_norm_checked_and_placeholder_accepted():
    """A constant non-positive tensor clip_norm is rejected; a placeholder is accepted."""
    with pytest.raises(ValueError, match="clip_norm"):
        tfclip_compat.clip_gradients_by_norm(V1.train.GradientDescentOptimizer(0.1), tf.constant(-2.0))
    with tf.Graph().as_default():
        ph = V1.placeholder(tf.float32, [])
        tfclip_compat.clip_gradients_by_norm(V1.train.GradientDescentOptimizer(0.1), ph)


@pytest.mark.parametrize("make", [lambda: V1.train.GradientDescentOptimizer(0.1), lambda: tf.keras.optimizers.SGD(0.1)])
def test_empty_gradient_list_has_clear_error(make):
    """An empty grads_and_vars, or only None gradients, raise a clear ValueError."""
    opt = tfclip_compat.clip_gradients_by_norm(make(), 1.0)
    with pytest.raises(ValueError, match="empty"):
        opt.apply_gradients([])
    v = tf.Variable(1.0)
    with pytest.raises(ValueError, match="No gradients"):
        opt.apply_gradients([(None, v)])


def test_summaries_graph_and_eager(tmp_path):
    """summaries=True records pre/post-clip norms: v1 summary ops in graph, event files in eager."""
    with tf.Graph().as_default():
        v = V1.get_variable("v", initializer=[3.0, 4.0])
        opt = tfclip_compat.clip_gradients_by_norm(V1.train.GradientDescentOptimizer(0.1), 1.0, summaries=True)
        opt.minimize(tf.reduce_sum(v * v))
        merged = V1.summary.merge_all()
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            summ = V1.Summary.FromString(sess.run(merged))
        vals = {x.tag: x.simple_value for x in summ.value}
        assert vals["ClipByNormGradientDescent/global_norm"] == pytest.approx(10.0)
        assert vals["ClipByNormGradientDescent/clipped_global_norm"] == pytest.approx(1.0)

    writer = tf.summary.create_file_writer(str(tmp_path))
    v = tf.Variable([3.0, 4.0])
    opt = tfclip_compat.clip_gradients_by_norm(tf.keras.optimizers.SGD(0.1), 1.0, summaries=True)
    with writer.as_default():
        opt.apply_gradients([(tf.constant([6.0, 8.0]), v)])
    writer.flush()
    from tensorflow.python.summary.summary_iterator import summary_iterator  # noqa: PLC0415

    tags = {}
    for f in tmp_path.iterdir():
        for ev in summary_iterator(str(f)):
            for val in ev.summary.value:
                tags[val.tag] = float(tf.make_ndarray(val.tensor))
    assert tags["ClipByNormSGD/global_norm"] == pytest.approx(10.0)
    assert tags["ClipByNormSGD/clipped_global_norm"] == pytest.approx(1.0)


# --- non-finite policies ---------------------------------------------------------------


def _graph_policy_run(policy, bad_value):
    """Two Adam steps in graph mode (finite, then ``bad_value``); return (before, after) states."""
    with tf.Graph().as_default():
        v = V1.get_variable("v", initializer=[1.0, 2.0])
        w = V1.get_variable("w", initializer=[0.5])
        scale = V1.placeholder(tf.float32, [])
        gs = V1.train.get_or_create_global_step()
        adam = V1.train.AdamOptimizer(0.1)
        opt = tfclip_compat.clip_gradients_by_norm(adam, 1.0, nonfinite=policy)
        loss = tf.reduce_sum(v * v) * scale + tf.reduce_sum(w * 3.0)
        train_op = opt.minimize(loss, global_step=gs)
        state = [v, w, adam.get_slot(v, "m"), adam.get_slot(v, "v"), adam.get_slot(w, "m"), gs] + [
            x for x in adam.variables() if "power" in x.op.name
        ]
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            sess.run(train_op, {scale: 1.0})
            before = sess.run(state)
            try:
                sess.run(train_op, {scale: bad_value})
                error = None
            except tf.errors.InvalidArgumentError as exc:
                error = exc
            after = sess.run(state)
    return before, after, error


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_skip_policy_graph_leaves_vars_slots_and_global_step(bad):
    """nonfinite='skip' in graph mode: vars, slots, beta powers and global_step unchanged."""
    before, after, error = _graph_policy_run("skip", bad)
    assert error is None
    for b, a in zip(before, after):
        np.testing.assert_array_equal(b, a)
    assert after[5] == 1  # global_step not advanced on the skipped step


def test_propagate_policy_graph_makes_nan():
    """nonfinite='propagate' (TF1 behaviour): an inf gradient turns every variable NaN."""
    _, after, error = _graph_policy_run("propagate", np.inf)
    assert error is None
    assert np.isnan(after[0]).all() and np.isnan(after[1]).all()
    assert after[5] == 2


def test_raise_policy_graph_names_variable():
    """nonfinite='raise' in graph mode fails the step naming the offending variable only."""
    before, after, error = _graph_policy_run("raise", np.nan)
    assert error is not None and "'v:0'" in error.message and "'w:0'" not in error.message
    np.testing.assert_array_equal(before[0], after[0])


def test_skip_policy_finite_steps_are_unaffected():
    """With finite gradients 'skip' trains exactly like 'propagate'."""
    b1, a1, _ = _graph_policy_run("skip", 2.0)
    b2, a2, _ = _graph_policy_run("propagate", 2.0)
    for x, y in zip(a1, a2):
        np.testing.assert_array_equal(x, y)


def _keras_state(opt, v):
    return [v.numpy()] + [x.numpy() for x in opt.optimizer.variables]


@pytest.mark.parametrize("use_function", [False, True], ids=["eager", "tf.function"])
def test_keras_policies_eager_and_function(use_function):
    """Keras Adam wrapper: skip keeps vars/slots/iterations, raise names the variable, propagate NaNs."""
    for policy in ("skip", "raise", "propagate"):
        v = tf.Variable([1.0, 2.0], name="kv")
        opt = tfclip_compat.clip_gradients_by_norm(tf.keras.optimizers.Adam(0.1), 1.0, nonfinite=policy)

        def step(g, opt=opt, v=v):
            opt.apply_gradients([(g, v)])

        if use_function:
            step = tf.function(step)
        step(tf.constant([1.0, 1.0]))
        before = _keras_state(opt, v)
        bad = tf.constant([np.nan, 1.0])
        if policy == "raise":
            with pytest.raises(tf.errors.InvalidArgumentError, match="kv"):
                step(bad)
            continue
        step(bad)
        after = _keras_state(opt, v)
        if policy == "skip":
            for b, a in zip(before, after):
                np.testing.assert_array_equal(b, a)
            assert int(opt.iterations) == 1
            step(tf.constant([1.0, 1.0]))  # training goes on afterwards
            assert int(opt.iterations) == 2 and np.isfinite(v.numpy()).all()
        else:
            assert np.isnan(v.numpy()).all()


def test_v1_skip_policy_eager():
    """v1 optimizer in eager mode with 'skip': a NaN step changes neither variable nor slots."""
    v = tf.Variable([1.0, 2.0])
    adam = V1.train.AdamOptimizer(0.1)
    opt = tfclip_compat.clip_gradients_by_norm(adam, 1.0, nonfinite="skip")
    opt.apply_gradients([(tf.constant([1.0, 1.0]), v)])
    before = [v.numpy()] + [x.numpy() for x in adam.variables()]
    opt.apply_gradients([(tf.constant([np.inf, 1.0]), v)])
    after = [v.numpy()] + [x.numpy() for x in adam.variables()]
    for b, a in zip(before, after):
        np.testing.assert_array_equal(b, a)


def test_nonfinite_helpers_contract():
    """check_policy names the argument; apply_with_policy skips in eager when not finite."""
    from tfclip_compat import _nonfinite

    with pytest.raises(ValueError, match="nonfinite=.*'propagate', 'skip', 'raise'"):
        _nonfinite.check_policy("drop")
    v = tf.Variable([1.0])
    calls = []

    def apply_fn(gvs):
        calls.append(gvs)
        return v.assign_sub(gvs[0][0])

    assert _nonfinite.apply_with_policy(apply_fn, [(tf.constant([np.nan]), v)], "skip") is None
    _nonfinite.apply_with_policy(apply_fn, [(tf.constant([0.5]), v)], "skip")
    assert len(calls) == 1 and float(v[0]) == 0.5
