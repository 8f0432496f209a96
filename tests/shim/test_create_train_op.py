"""``tfclip_compat`` vs the TF 1.15 ``tf.contrib.training`` reference, trained in graph mode.

Every public function of ``tfclip_compat._contrib.training`` is driven through >= 10 training steps of a
tiny model (dense + embedding lookup, so both dense and ``IndexedSlices`` gradients) and compared
with ``tests/reference/contrib_training.py``: trained variables, losses and global step are
bit-identical (``np.array_equal``) to TF 1.15's, repeated embedding ids included.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from reference import contrib_training as ref
import tfclip_compat as tfc

v1 = tf.compat.v1
STEPS = 10
RTOL = 1e-5

from _tiny_model_data import E0, IDS_DUPLICATE, IDS_UNIQUE, W0, X, Y  # noqa: E402 - shared data, kept with the constants



def _model(ids=IDS_UNIQUE, loss_scale=None, with_bn=False):
    """Build the tiny model in the default graph; return (loss, variables dict)."""
    w = v1.get_variable("W", initializer=tf.constant(W0))
    b = v1.get_variable("b", initializer=tf.zeros([2]))
    e = v1.get_variable("E", initializer=tf.constant(E0))
    pred = tf.matmul(tf.constant(X), w) + b + tf.nn.embedding_lookup(e, tf.constant(ids))
    variables = {"W": w, "b": b, "E": e}
    if with_bn:
        # batch-norm style: a non-trainable moving mean updated by an op in UPDATE_OPS.
        mean = v1.get_variable("moving_mean", initializer=tf.zeros([2]), trainable=False)
        update = v1.assign(mean, 0.9 * mean + 0.1 * tf.reduce_mean(pred, axis=0))
        v1.add_to_collection(v1.GraphKeys.UPDATE_OPS, update)
        variables["moving_mean"] = mean
    loss = tf.reduce_mean(tf.square(pred - tf.constant(Y)))
    if loss_scale is not None:
        loss = loss * loss_scale
    return loss, variables


def _train(make_train_op, steps=STEPS, feeds=None, **model_kwargs):
    """Build a graph with ``make_train_op(loss, variables)``; run ``steps`` steps.

    Returns (losses, final variable values, global step value or None, graph).
    """
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(0)
        loss, variables = _model(**model_kwargs)
        train_op = make_train_op(loss, variables)
        gs = v1.train.get_global_step()
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            losses = []
            for i in range(steps):
                feed = feeds(i) if feeds else None
                losses.append(sess.run(train_op, feed_dict=feed))
            values = {k: sess.run(v) for k, v in variables.items()}
            values.update({v.op.name: sess.run(v) for v in v1.global_variables()})
            step = None if gs is None else int(sess.run(gs))
    return np.array(losses), values, step, graph


def _assert_same(a, b, exact=True):
    """Assert two ``_train`` results hold equal losses, variables and global step.

    ``exact``: bit-identical (what the drop-ins claim against TF 1.15); else rtol 1e-5.
    """
    la, va, sa, _ = a
    lb, vb, sb, _ = b
    check = np.testing.assert_array_equal if exact else (
        lambda x, y, err_msg="": np.testing.assert_allclose(x, y, rtol=RTOL, err_msg=err_msg)
    )
    check(la, lb)
    assert sorted(va) == sorted(vb)
    for name in va:
        check(va[name], vb[name], err_msg=name)
    assert sa == sb


def _both(opt_factory, **kwargs):
    """Train with the reference and with the shim, same arguments; return both results."""
    def make(module):
        def build(loss, variables):
            extra = {}
            for key, value in kwargs.items():
                extra[key] = value(variables) if callable(value) and key != "transform_grads_fn" else value
            if "transform_grads_fn" in kwargs:
                extra["transform_grads_fn"] = kwargs["transform_grads_fn"](module, variables)
            return module.create_train_op(loss, opt_factory(), **extra)
        return build

    return _train(make(ref)), _train(make(tfc))


OPTIMIZERS = {
    "sgd": lambda: v1.train.GradientDescentOptimizer(0.05),
    "adam": lambda: v1.train.AdamOptimizer(0.1),
    "momentum": lambda: v1.train.MomentumOptimizer(0.05, 0.9),
}


@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
def test_default_arguments_match_reference(opt):
    """Defaults (graph global step, all trainable variables) train exactly like TF 1.15."""
    r, s = _both(OPTIMIZERS[opt])
    _assert_same(r, s)
    assert s[2] == STEPS
    assert r[0][-1] < r[0][0]


def test_clip_gradient_norms_fn_matches_reference_dense_and_sparse():
    """Per-tensor clipping via ``clip_gradient_norms_fn`` equals TF 1.15 and really clips."""
    r, s = _both(
        OPTIMIZERS["sgd"],
        transform_grads_fn=lambda m, _: m.clip_gradient_norms_fn(0.5),
    )
    _assert_same(r, s)
    unclipped = _train(lambda loss, _: ref.create_train_op(loss, OPTIMIZERS["sgd"]()))
    assert not np.allclose(unclipped[1]["W"], s[1]["W"], rtol=1e-3)


def test_clip_gradient_norms_direct_call_matches_reference():
    """``clip_gradient_norms`` called inside a custom transform equals TF 1.15's."""
    r, s = _both(
        OPTIMIZERS["adam"],
        transform_grads_fn=lambda m, _: (lambda gv: m.clip_gradient_norms(gv, 0.3)),
    )
    _assert_same(r, s)


def test_multiply_gradients_by_variable_and_op_name_matches_reference():
    """``multiply_gradients`` keyed by a variable and by an op name equals TF 1.15 (dense + sparse)."""
    r, s = _both(
        OPTIMIZERS["sgd"],
        transform_grads_fn=lambda m, vs: (
            lambda gv: m.multiply_gradients(gv, {vs["W"]: 2.0, "E": 0.25})
        ),
    )
    _assert_same(r, s)
    plain = _train(lambda loss, _: ref.create_train_op(loss, OPTIMIZERS["sgd"]()))
    assert not np.allclose(plain[1]["E"], s[1]["E"])


def test_no_global_step_matches_reference():
    """``global_step=None`` creates and increments no step, as in TF 1.15."""
    r, s = _both(OPTIMIZERS["adam"], global_step=None)
    _assert_same(r, s)
    assert s[2] is None
    assert "global_step" not in s[1]


def test_explicit_global_step_and_variables_to_train_match_reference():
    """An explicit step variable and a subset ``variables_to_train`` behave as in TF 1.15."""
    def step(_):
        return v1.get_variable("my_step", initializer=tf.constant(5, tf.int64), trainable=False)

    r, s = _both(
        OPTIMIZERS["adam"],
        global_step=step,
        variables_to_train=lambda vs: [vs["W"], vs["E"]],
    )
    _assert_same(r, s)
    assert r[1]["my_step"] == 5 + STEPS
    np.testing.assert_array_equal(s[1]["b"], np.zeros(2, np.float32))


def test_summarize_gradients_matches_reference_and_adds_summaries():
    """``summarize_gradients=True`` trains identically and adds TF 1.15's summary names."""
    r, s = _both(OPTIMIZERS["sgd"], summarize_gradients=True)
    _assert_same(r, s)
    names = sorted(op.name for op in s[3].get_operations() if op.type in ("HistogramSummary", "ScalarSummary"))
    ref_names = sorted(op.name for op in r[3].get_operations() if op.type in ("HistogramSummary", "ScalarSummary"))
    assert names == ref_names
    assert "summarize_grads/W_gradient" in names and "summarize_grads/E_gradient_norm" in names


def _train_bn(module, update_ops_arg):
    def build(loss, variables):
        kwargs = {}
        if update_ops_arg is not None:
            kwargs["update_ops"] = update_ops_arg
        return module.create_train_op(loss, OPTIMIZERS["sgd"](), **kwargs)

    return _train(build, with_bn=True)


@pytest.mark.parametrize("update_ops_arg", [None, []], ids=["collection", "none"])
def test_update_ops_match_reference(update_ops_arg):
    """UPDATE_OPS (batch-norm moving mean) run with the step by default, and not with ``[]``."""
    r, s = _train_bn(ref, update_ops_arg), _train_bn(tfc, update_ops_arg)
    _assert_same(r, s)
    moved = not np.allclose(s[1]["moving_mean"], 0.0)
    assert moved is (update_ops_arg is None)


def test_partial_update_ops_logs_tf1_warning(monkeypatch):
    """Passing ``update_ops`` that miss part of UPDATE_OPS logs TF 1.15's warning."""
    messages = []
    monkeypatch.setattr(v1.logging, "warning", lambda msg, *a: messages.append(msg % a if a else msg))
    with tf.Graph().as_default():
        loss, _ = _model(with_bn=True)
        tfc.create_train_op(loss, OPTIMIZERS["sgd"](), update_ops=[])
    assert any("does not contain all the update_ops" in m for m in messages)


def test_check_numerics_raises_on_nan_loss_like_tf1():
    """With ``check_numerics`` a NaN loss fails the step with TF 1.15's message."""
    graph = tf.Graph()
    with graph.as_default():
        scale = v1.placeholder(tf.float32, [])
        loss, _ = _model(loss_scale=scale)
        train_op = tfc.create_train_op(loss, OPTIMIZERS["sgd"]())
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            sess.run(train_op, {scale: 1.0})
            with pytest.raises(tf.errors.InvalidArgumentError, match="LossTensor is inf or nan"):
                sess.run(train_op, {scale: np.nan})


BAD_STEP = 3


def _feeds_with_inf(scale):
    return lambda i: {scale: np.inf if i == BAD_STEP else 1.0}


def _train_nonfinite(module, policy=None, skip_bad_step=False):
    """Train where step BAD_STEP has an inf loss scale (inf/NaN gradients), check_numerics off."""
    holder = {}

    def build(loss, variables):
        kwargs = {"check_numerics": False}
        if policy is not None:
            kwargs["nonfinite"] = policy
        return module.create_train_op(loss * holder["scale"], OPTIMIZERS["adam"](), **kwargs)

    graph = tf.Graph()
    with graph.as_default():
        holder["scale"] = v1.placeholder(tf.float32, [])
        loss, variables = _model()
        train_op = build(loss, variables)
        gs = v1.train.get_global_step()
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            for i in range(STEPS):
                if i == BAD_STEP and skip_bad_step:
                    continue
                sess.run(train_op, {holder["scale"]: np.inf if i == BAD_STEP else 1.0})
            return {v.op.name: sess.run(v) for v in v1.global_variables()}, int(sess.run(gs))


def test_nonfinite_propagate_matches_tf1():
    """Default ``nonfinite="propagate"`` applies inf/NaN gradients exactly like TF 1.15."""
    r, _ = _train_nonfinite(ref)
    s, _ = _train_nonfinite(tfc)
    assert np.isnan(s["W"]).all()
    for name in r:
        np.testing.assert_allclose(r[name], s[name], rtol=RTOL, equal_nan=True)


def test_nonfinite_skip_leaves_step_out():
    """``nonfinite="skip"``: the bad step changes no variable, slot or step counter."""
    expected, expected_step = _train_nonfinite(ref, skip_bad_step=True)
    got, step = _train_nonfinite(tfc, "skip")
    assert step == expected_step == STEPS - 1
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=RTOL, err_msg=name)


def test_nonfinite_raise_names_the_variable():
    """``nonfinite="raise"`` fails the bad step with an error naming a variable; nothing moves."""
    graph = tf.Graph()
    with graph.as_default():
        scale = v1.placeholder(tf.float32, [])
        loss, variables = _model()
        train_op = tfc.create_train_op(
            loss * scale, OPTIMIZERS["sgd"](), check_numerics=False, nonfinite="raise"
        )
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            sess.run(train_op, {scale: 1.0})
            before = sess.run(variables["W"])
            with pytest.raises(tf.errors.InvalidArgumentError, match="nonfinite='raise'.*variable"):
                sess.run(train_op, {scale: np.inf})
            np.testing.assert_array_equal(sess.run(variables["W"]), before)


def _dense_clip_transform(max_norm):
    """Reference transform: TF 1.15's clip_gradient_norms applied to the densified gradients."""
    def transform(grads_and_vars):
        dense = [(tf.convert_to_tensor(g), v) for g, v in grads_and_vars]
        return ref.clip_gradient_norms(dense, max_norm)

    return transform


def _duplicate_ids_run(transform_grads_fn, module=tfc, optimizer="sgd"):
    return _train(
        lambda loss, _: module.create_train_op(
            loss, OPTIMIZERS[optimizer](), transform_grads_fn=transform_grads_fn
        ),
        ids=IDS_DUPLICATE,
    )


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_duplicate_indices_default_is_tf115_bit_for_bit(optimizer):
    """With repeated embedding ids, ``clip_gradient_norms_fn`` trains bit for bit as TF 1.15.

    TF 1.15 clipped an ``IndexedSlices`` by the norm of its ``.values``; so does the default.
    """
    sparse_ref = _duplicate_ids_run(ref.clip_gradient_norms_fn(0.5), ref, optimizer)
    got = _duplicate_ids_run(tfc.clip_gradient_norms_fn(0.5), tfc, optimizer)
    _assert_same(sparse_ref, got)


def test_duplicate_indices_exact_norm_is_opt_in():
    """``norm="exact"`` clips by the dense gradient's norm: TF 1.15 on densified gradients.

    It differs from TF 1.15's sparse result, which proves the default really is TF 1.15's.
    """
    dense_ref = _duplicate_ids_run(_dense_clip_transform(0.5), ref)
    sparse_ref = _duplicate_ids_run(ref.clip_gradient_norms_fn(0.5), ref)
    got = _duplicate_ids_run(tfc.clip_gradient_norms_fn(0.5, norm="exact"))
    _assert_same(dense_ref, got, exact=False)
    assert not np.allclose(sparse_ref[1]["E"], got[1]["E"], rtol=1e-3)


def test_clip_gradient_norms_sparse_duplicates_values():
    """Two slices of 3s on one row: TF 1.15 (default) clips the values' norm 4.24 to 3; "exact" the dense norm 6."""
    with tf.Graph().as_default():
        var = v1.get_variable("v", initializer=tf.zeros([4, 2]))
        grad = tf.IndexedSlices(tf.constant([[3.0, 3.0], [3.0, 3.0]]), tf.constant([1, 1]), tf.constant([4, 2]))
        ((default, _),) = tfc.clip_gradient_norms([(grad, var)], 3.0)
        ((exact, _),) = tfc.clip_gradient_norms([(grad, var)], 3.0, norm="exact")
        ((tf1_clipped, _),) = ref.clip_gradient_norms([(grad, var)], 3.0)
        assert isinstance(default, tf.IndexedSlices) and isinstance(exact, tf.IndexedSlices)
        with v1.Session() as sess:
            default_values, tf1_values, exact_dense = sess.run(
                [default.values, tf1_clipped.values, tf.convert_to_tensor(exact)]
            )
    np.testing.assert_array_equal(default_values, tf1_values)
    assert np.linalg.norm(default_values) == pytest.approx(3.0, rel=1e-6)
    assert np.linalg.norm(exact_dense) == pytest.approx(3.0, rel=1e-6)


def test_clip_gradient_norms_float16():
    """float16 norm overflow: the default reproduces TF 1.15 (squares summed in float16 overflow,
    the gradient becomes 0); ``norm="exact"`` reduces in float32 and clips to norm 5."""
    with tf.Graph().as_default():
        var = v1.get_variable("h", initializer=tf.zeros([1000], tf.float16))
        grad = tf.fill([1000], tf.constant(300.0, tf.float16))
        ((exact, _), (none_grad, _)) = tfc.clip_gradient_norms([(grad, var), (None, var)], 5.0, norm="exact")
        ((default, _),) = tfc.clip_gradient_norms([(grad, var)], 5.0)
        ((tf1, _),) = ref.clip_gradient_norms([(grad, var)], 5.0)
        with v1.Session() as sess:
            out, default_out, tf1_out = sess.run([exact, default, tf1])
    assert none_grad is None
    assert out.dtype == np.float16
    assert np.isfinite(out).all()
    assert np.linalg.norm(out.astype(np.float32)) == pytest.approx(5.0, rel=1e-2)
    np.testing.assert_array_equal(default_out, tf1_out)
    assert (default_out == 0).all()


def test_clip_gradient_norms_rejects_bad_norm_mode():
    """``norm=`` must be "tf1" or "exact" (per-tensor clipping has no "fast" mode); the error lists them."""
    with pytest.raises(ValueError, match="norm='fast'.*'tf1', 'exact'"):
        tfc.clip_gradient_norms_fn(1.0, norm="fast")


def test_add_gradients_summaries_names_and_none():
    """Two summaries per gradient (TF 1.15 names); a None gradient adds none."""
    with tf.Graph().as_default():
        loss, variables = _model()
        grads = [(g, v) for g, v in zip(tf.gradients(loss, list(variables.values())), variables.values())]
        grads.append((None, v1.get_variable("unused", initializer=tf.zeros([1]))))
        summaries = tfc.add_gradients_summaries(grads)
        reference = ref.add_gradients_summaries(grads)
        assert len(summaries) == len(reference) == 6
        assert [s.op.name for s in summaries] == [s.op.name.replace("_1", "") for s in reference]
        assert summaries[0].op.name == "W_gradient" and summaries[1].op.name == "W_gradient_norm"
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            sess.run(summaries)


def test_train_op_collection_and_return_value():
    """The returned tensor is the loss, and it is added to the TRAIN_OP collection once."""
    with tf.Graph().as_default():
        loss, _ = _model()
        train_op = tfc.create_train_op(loss, OPTIMIZERS["sgd"]())
        assert train_op.dtype == tf.float32 and train_op.shape.rank == 0
        # TF 1.15: apply_gradients registers its op there too; create_train_op adds the loss.
        assert [t for t in v1.get_collection(v1.GraphKeys.TRAIN_OP) if t is train_op] == [train_op]
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            first = sess.run(loss)
            assert sess.run(train_op) == pytest.approx(first, rel=RTOL)


def test_works_inside_tf_function_with_v1_optimizer():
    """Inside ``tf.function`` (graph mode in TF 2) it trains like a Session step."""
    w = tf.Variable(W0)
    opt = v1.train.GradientDescentOptimizer(0.05)

    @tf.function
    def step():
        loss = tf.reduce_mean(tf.square(tf.matmul(tf.constant(X), w) - tf.constant(Y)))
        return tfc.create_train_op(loss, opt, global_step=None, variables_to_train=[w])

    first = float(step())
    for _ in range(STEPS - 1):
        last = float(step())
    assert last < first
    expected = W0.copy()
    for _ in range(STEPS):
        grad = 2.0 * X.T @ (X @ expected - Y) / Y.size
        expected = expected - 0.05 * grad
    np.testing.assert_allclose(w.numpy(), expected, rtol=1e-4)


# ---------------------------------------------------------------- bad arguments


def test_bad_nonfinite_policy_is_rejected():
    """An unknown ``nonfinite`` policy fails at construction, naming the argument."""
    with tf.Graph().as_default():
        loss, _ = _model()
        with pytest.raises(ValueError, match="nonfinite"):
            tfc.create_train_op(loss, OPTIMIZERS["sgd"](), nonfinite="ignore")


def test_non_optimizer_is_rejected():
    """An object without compute/apply_gradients gives a TypeError naming ``optimizer``."""
    with tf.Graph().as_default():
        loss, _ = _model()
        with pytest.raises(TypeError, match="optimizer must be"):
            tfc.create_train_op(loss, object())


def test_non_trainable_variable_to_train_is_rejected():
    """A non-trainable variable in ``variables_to_train`` is named (TF 1.15: bare assert)."""
    with tf.Graph().as_default():
        loss, _ = _model()
        frozen = v1.get_variable("frozen", initializer=tf.zeros([1]), trainable=False)
        with pytest.raises(ValueError, match="variables_to_train contains 'frozen'"):
            tfc.create_train_op(loss, OPTIMIZERS["sgd"](), variables_to_train=[frozen])
        with pytest.raises(ValueError, match=r"variables_to_train=\[\]\): the list of variables to train is empty"):
            tfc.create_train_op(loss, OPTIMIZERS["sgd"](), variables_to_train=[])


def test_graph_without_trainable_variables_says_so():
    """No trainable variable at all: the message says the graph has none and how to fix it."""
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="the graph has no trainable variables.*variables_to_train="):
            tfc.create_train_op(tf.constant(1.0), OPTIMIZERS["sgd"]())


def test_eager_mode_is_refused_with_remedy():
    """Eager execution gets a RuntimeError pointing to graph mode / GradientTape."""
    with pytest.raises(RuntimeError, match="GradientTape"):
        tfc.create_train_op(tf.constant(1.0), OPTIMIZERS["sgd"]())


@pytest.mark.parametrize("max_norm", [0.0, -1.0, None, [1.0]])
def test_bad_max_norm_is_rejected(max_norm):
    """``max_norm`` must be a positive scalar, for both clip functions."""
    with pytest.raises(ValueError, match="max_norm"):
        tfc.clip_gradient_norms([], max_norm)
    with pytest.raises(ValueError, match="max_norm"):
        tfc.clip_gradient_norms_fn(max_norm)


def test_multiply_gradients_bad_arguments_like_tf1():
    """TF 1.15's ValueErrors: non-list pairs, empty or non-dict multipliers, None gradient."""
    with tf.Graph().as_default():
        var = v1.get_variable("m", initializer=tf.zeros([2]))
        grad = tf.ones([2])
        for module in (ref, tfc):
            with pytest.raises(ValueError, match="`grads_and_vars` must be a list"):
                module.multiply_gradients(((grad, var),), {var: 2.0})
            with pytest.raises(ValueError, match="`gradient_multipliers` is empty"):
                module.multiply_gradients([(grad, var)], {})
            with pytest.raises(ValueError, match="`gradient_multipliers` must be a dict"):
                module.multiply_gradients([(grad, var)], [(var, 2.0)])
            with pytest.raises(ValueError, match="Requested multiple of `None` gradient"):
                module.multiply_gradients([(None, var)], {"m": 2.0})


LEGACY_PROGRAM = """
import numpy as np
import tensorflow as tf

x = tf.constant(X)
w = tf.get_variable("W", initializer=tf.constant(W0))
e = tf.get_variable("E", initializer=tf.constant(E0))
pred = tf.matmul(x, w) + tf.nn.embedding_lookup(e, IDS)
loss = tf.reduce_mean(tf.square(pred - Y))
train_op = tf.contrib.training.create_train_op(
    loss, tf.train.AdamOptimizer(0.1),
    transform_grads_fn=tf.contrib.training.clip_gradient_norms_fn(0.5))
"""


def _run_program(source, migrate):
    from reference import run_legacy

    if migrate:
        source = source.replace("tf.contrib.training.", "tfc.")
    with tf.Graph().as_default():
        ns = run_legacy(source, {"tfc": tfc, "X": X, "Y": Y, "W0": W0, "E0": E0, "IDS": IDS_UNIQUE})
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            losses = [sess.run(ns["train_op"]) for _ in range(STEPS)]
            return losses, sess.run([ns["w"], ns["e"], v1.train.get_global_step()])


def test_legacy_contrib_program_and_migrated_program_train_the_same():
    """A TF1 ``tf.contrib.training`` program run via ``run_legacy`` equals its tfclip_compat rewrite."""
    before_losses, before = _run_program(LEGACY_PROGRAM, migrate=False)
    after_losses, after = _run_program(LEGACY_PROGRAM, migrate=True)
    np.testing.assert_allclose(before_losses, after_losses, rtol=RTOL)
    for b, a in zip(before, after):
        np.testing.assert_allclose(a, b, rtol=RTOL)
    assert after[2] == STEPS


def test_run_legacy_resolves_contrib_imports():
    """``run_legacy`` maps ``tensorflow``/``tensorflow.contrib.*`` imports to the reference."""
    from reference import contrib, legacy_tf, run_legacy

    ns = run_legacy(
        """
        import tensorflow as tf
        import tensorflow.compat.v1 as tf1
        from tensorflow.contrib.layers import optimize_loss
        from tensorflow.contrib import training
        import numpy
        """
    )
    assert ns["tf"] is legacy_tf() and ns["tf"].train is v1.train
    assert ns["optimize_loss"] is contrib.layers.optimize_loss
    assert ns["training"] is contrib.training and ns["tf1"] is v1.compat.v1
    assert callable(legacy_tf().contrib.estimator.clip_gradients_by_norm)


def test_non_scalar_loss_is_accepted_like_tf1():
    """A vector loss (TF 1.15 differentiated its sum) trains exactly like the reference."""
    def vector_loss(module):
        return lambda loss, vs: module.create_train_op(
            tf.stack([loss, 0.5 * loss]), OPTIMIZERS["sgd"]()
        )

    r, s = _train(vector_loss(ref)), _train(vector_loss(tfc))
    _assert_same(r, s)
    assert r[0].shape == (STEPS, 2)


def test_gradient_computation_options_are_passed_through():
    """``gate_gradients``, ``aggregation_method`` and colocation reach compute_gradients as in TF 1.15."""
    r, s = _both(
        OPTIMIZERS["momentum"],
        gate_gradients=v1.train.Optimizer.GATE_GRAPH,
        aggregation_method=tf.AggregationMethod.EXPERIMENTAL_TREE,
        colocate_gradients_with_ops=True,
    )
    _assert_same(r, s)
