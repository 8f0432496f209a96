"""The last places the drop-ins were not TF 1.15 (issue 15 items 2-9), each against the TF 1.15 reference.

Old checkpoints (``Saver`` over ``opt.variables()``), atomic ``nonfinite="raise"``, invalid and
run-time thresholds, ``nonfinite="skip"`` around ``SyncReplicasOptimizer``, the default
variable list inside ``tf.function``, and the messages / AutoGraph noise.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
import tensorflow as tf

import tfclip_compat as tfc
from _tiny_model_data import E0, IDS_DUPLICATE, W0, X, Y
from reference import contrib_estimator, contrib_layers, contrib_training

V1 = tf.compat.v1


# ------------------------------------------------------------- item 2: variables() and old checkpoints
def _saver_program(make_opt, ckpt_in=None, ckpt_out=None, steps=5):
    """A TF1 program: tiny dense + embedding model (repeated ids), Adam wrapped by ``make_opt``,
    ``Saver(tf.trainable_variables() + opt.variables())`` — the TF1 idiom. Optionally restore
    ``ckpt_in`` first, train ``steps``, optionally save ``ckpt_out``; return the trained values."""
    with tf.Graph().as_default():
        w = V1.get_variable("W", initializer=tf.constant(W0))
        e = V1.get_variable("E", initializer=tf.constant(E0))
        pred = tf.matmul(tf.constant(X), w) + tf.nn.embedding_lookup(e, tf.constant(IDS_DUPLICATE))
        loss = tf.reduce_mean(tf.square(pred - tf.constant(Y)))
        gs = V1.train.get_or_create_global_step()
        opt = make_opt()
        train_op = opt.minimize(loss, global_step=gs)
        saver = V1.train.Saver(V1.trainable_variables() + opt.variables())
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            if ckpt_in:
                saver.restore(sess, ckpt_in)
            for _ in range(steps):
                sess.run(train_op)
            if ckpt_out:
                saver.save(sess, ckpt_out)
            return sess.run([w, e])


def test_saver_over_opt_variables_restores_an_old_checkpoint_and_continues_like_tf115(tmp_path):
    """A checkpoint written by the TF 1.15 program restores into the migrated program, which then
    trains 5 more steps bit for bit like the TF 1.15 program continuing."""
    old = str(tmp_path / "old")

    def contrib():
        return contrib_estimator.clip_gradients_by_norm(V1.train.AdamOptimizer(0.1), 0.5)

    def shim():
        return tfc.clip_gradients_by_norm(V1.train.AdamOptimizer(0.1), 0.5)

    _saver_program(contrib, ckpt_out=old)
    want = _saver_program(contrib, ckpt_in=old)
    got = _saver_program(shim, ckpt_in=old)  # NotFoundError (E/Adam...) if variables() != []
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(got[0], W0)


def test_inner_optimizer_variables_are_not_in_an_old_checkpoint(tmp_path):
    """What variables() used to return (the inner optimizer's) fails on that checkpoint: the test can fail."""
    old = str(tmp_path / "old")
    _saver_program(
        lambda: contrib_estimator.clip_gradients_by_norm(V1.train.AdamOptimizer(0.1), 0.5), ckpt_out=old
    )

    class Leaky(type(tfc.clip_gradients_by_norm(V1.train.AdamOptimizer(0.1), 0.5))):
        def variables(self):
            return self.optimizer.variables()

    def leaky():
        inner = V1.train.AdamOptimizer(0.1)
        return Leaky(inner, tfc.ClipByGlobalNorm(0.5), name="ClipByNormAdam")

    with pytest.raises(tf.errors.NotFoundError, match="not found in checkpoint"):
        _saver_program(leaky, ckpt_in=old)


# ------------------------------------------------------------- item 3: nonfinite="raise" is atomic
def _v1_state(adam, variables, gs):
    slots = [adam.get_slot(v, n) for v in variables for n in ("m", "v")]
    powers = [x for x in adam.variables() if "power" in x.name]
    return list(variables) + slots + powers + [gs]


WRAPS = {
    "clip_gradients_by_norm": lambda opt, policy: tfc.clip_gradients_by_norm(opt, 1.0, nonfinite=policy),
    # Per-tensor: w's clipped gradient does not depend on v's, so only the checks order them.
    "wrap_optimizer-ClipByNorm": lambda opt, policy: tfc.wrap_optimizer(opt, tfc.ClipByNorm(1.0), nonfinite=policy),
}


@pytest.mark.parametrize("wrap", sorted(WRAPS))
def test_raise_is_atomic_in_graph_mode(wrap):
    """Graph mode: when the step raises, no variable, slot, beta power or global_step changed."""
    with tf.Graph().as_default():
        v = V1.get_variable("v", initializer=[1.0, 2.0])
        w = V1.get_variable("w", initializer=[0.5, -0.5])
        scale = V1.placeholder(tf.float32, [])
        gs = V1.train.get_or_create_global_step()
        adam = V1.train.AdamOptimizer(0.1)
        opt = WRAPS[wrap](adam, "raise")
        # v's gradient goes NaN; w's stays finite and would be applied first without the checks.
        train_op = opt.minimize(tf.reduce_sum(v * v) * scale + tf.reduce_sum(w * w), global_step=gs)
        state = _v1_state(adam, [v, w], gs)
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            sess.run(train_op, {scale: 1.0})
            before = sess.run(state)
            for _ in range(3):  # several tries: no lucky op ordering
                with pytest.raises(tf.errors.InvalidArgumentError, match="'v:0'"):
                    sess.run(train_op, {scale: np.nan})
            after = sess.run(state)
    for b, a in zip(before, after):
        np.testing.assert_array_equal(b, a)


def test_raise_is_atomic_for_create_train_op():
    """create_train_op(nonfinite="raise"): a failing step leaves every variable, slot and step as it was."""
    with tf.Graph().as_default():
        v = V1.get_variable("v", initializer=[1.0, 2.0])
        w = V1.get_variable("w", initializer=[0.5, -0.5])
        scale = V1.placeholder(tf.float32, [])
        adam = V1.train.AdamOptimizer(0.1)
        loss = tf.reduce_sum(v * v) * scale + tf.reduce_sum(w * w)
        train_op = tfc.create_train_op(loss, adam, nonfinite="raise", check_numerics=False)
        gs = V1.train.get_global_step()
        state = _v1_state(adam, [v, w], gs)
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            sess.run(train_op, {scale: 1.0})
            before = sess.run(state)
            with pytest.raises(tf.errors.InvalidArgumentError, match="'v:0'"):
                sess.run(train_op, {scale: np.inf})
            after = sess.run(state)
    for b, a in zip(before, after):
        np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize("wrap", sorted(WRAPS))
@pytest.mark.parametrize("kind", ["v1", "keras"])
def test_raise_is_atomic_in_tf_function(kind, wrap):
    """tf.function: when the step raises, no variable, slot, beta power or Keras iterations changed."""
    v = tf.Variable([1.0, 2.0], name="fv")
    w = tf.Variable([0.5, -0.5], name="fw")
    inner = V1.train.AdamOptimizer(0.1) if kind == "v1" else tf.keras.optimizers.Adam(0.1)
    opt = WRAPS[wrap](inner, "raise")

    @tf.function
    def step(scale):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(v * v) * scale + tf.reduce_sum(w * w)
        grads = tape.gradient(loss, [v, w])
        opt.apply_gradients(list(zip(grads, [v, w])))

    step(tf.constant(1.0))
    state = lambda: [x.numpy() for x in [v, w] + list(  # noqa: E731
        inner.variables() if kind == "v1" else inner.variables
    )]
    before = state()
    with pytest.raises(tf.errors.InvalidArgumentError, match="fv"):
        step(tf.constant(np.nan))
    after = state()
    assert len(before) >= 6
    for b, a in zip(before, after):
        np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize("kind", ["v1", "keras"])
def test_raise_is_atomic_under_mirrored_strategy(kind, two_replica_strategy):
    """MirroredStrategy, NaN on replica 1 only: the step raises and no replica changed anything."""
    strategy = two_replica_strategy
    with strategy.scope():
        v = tf.Variable([1.0, 2.0], name="mv")
        w = tf.Variable([0.5, -0.5], name="mw")
        inner = V1.train.AdamOptimizer(0.1) if kind == "v1" else tf.keras.optimizers.Adam(0.1)
        opt = WRAPS["wrap_optimizer-ClipByNorm"](inner, "raise")
        if kind == "keras":
            opt.build([v, w])

    @tf.function
    def step(bad):
        def replica_fn():
            rid = tf.distribute.get_replica_context().replica_id_in_sync_group
            poison = tf.where(tf.logical_and(bad, tf.equal(rid, 1)), np.nan, 0.0)
            opt.apply_gradients([(tf.constant([1.0, 1.0]) + poison, v), (tf.constant([1.0, -1.0]), w)])

        strategy.run(replica_fn)

    step(tf.constant(False))
    variables = lambda: [v, w] + list(inner.variables() if kind == "v1" else inner.variables)  # noqa: E731
    before = [x.numpy() for x in variables()]
    with pytest.raises(tf.errors.InvalidArgumentError, match="mv"):
        step(tf.constant(True))
    after = [x.numpy() for x in variables()]
    for b, a in zip(before, after):
        np.testing.assert_array_equal(b, a)


# ------------------------------------------------------------- item 4: thresholds and what is applied
def test_runtime_infinite_clip_norm_is_an_error_and_changes_nothing():
    """A placeholder clip_norm fed inf (TF 1.15: NaN weights) fails the step by name; weights stay finite."""
    with tf.Graph().as_default():
        v = V1.get_variable("v", initializer=[3.0, 4.0])
        clip = V1.placeholder(tf.float32, [])
        opt = tfc.clip_gradients_by_norm(V1.train.GradientDescentOptimizer(0.1), clip, nonfinite="skip")
        train_op = opt.minimize(tf.reduce_sum(v * v))
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            sess.run(train_op, {clip: 1.0})
            before = sess.run(v)
            for bad in (np.inf, np.nan, 0.0, -1.0):
                with pytest.raises(tf.errors.InvalidArgumentError, match="clip_norm must be a finite number > 0"):
                    sess.run(train_op, {clip: bad})
            np.testing.assert_array_equal(sess.run(v), before)


class _PoisonTransform(tfc.GradientTransform):
    """Returns NaN gradients for finite inputs: what a bad threshold does after the norm was checked."""

    @tf.autograph.experimental.do_not_convert
    def __call__(self, grads_and_vars):
        out = [(g * float("nan"), v) for g, v in grads_and_vars]
        norm = tfc.global_norm([g for g, _ in grads_and_vars])
        return tfc.TransformResult(out, None, {"global_norm": norm})


def test_skip_and_raise_look_at_the_applied_gradients():
    """Finite input, NaN output: "skip" skips (the pre-transform norm was finite), "raise" says so."""
    v = tf.Variable([1.0, 2.0], name="pv")
    opt = tfc.wrap_optimizer(V1.train.GradientDescentOptimizer(0.1), _PoisonTransform(), nonfinite="skip")
    opt.apply_gradients([(tf.constant([1.0, 1.0]), v)])
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    opt = tfc.wrap_optimizer(V1.train.GradientDescentOptimizer(0.1), _PoisonTransform(), nonfinite="raise")
    with pytest.raises(tf.errors.InvalidArgumentError, match="'pv:0' after the gradient transform"):
        opt.apply_gradients([(tf.constant([1.0, 1.0]), v)])
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


@pytest.mark.parametrize("bad", [float("inf"), float("nan"), 0.0, -2.0])
def test_invalid_thresholds_are_rejected_by_every_drop_in(bad):
    """clip_norm / max_norm / clip_gradients of inf, NaN, 0 or < 0 raise a ValueError naming the argument."""
    with pytest.raises(ValueError, match="clip_norm must be a finite number > 0"):
        tfc.clip_gradients_by_norm(V1.train.GradientDescentOptimizer(0.1), bad)
    with pytest.raises(ValueError, match="clip_norm must be a finite number > 0"):
        tfc.clip_gradients_by_norm(V1.train.GradientDescentOptimizer(0.1), tf.constant(bad))
    with pytest.raises(ValueError, match="max_norm must be a finite number > 0"):
        tfc.clip_gradient_norms_fn(bad)
    with tf.Graph().as_default():
        w = V1.get_variable("w", initializer=[1.0])
        with pytest.raises(ValueError, match="clip_gradients=.* must be a finite number > 0"):
            tfc.optimize_loss(tf.reduce_sum(w), None, 0.1, "SGD", clip_gradients=bad)


# ------------------------------------------------------------- item 5: skip around SyncReplicasOptimizer
def _sync_program(wrap, scales):
    """Single-process SyncReplicasOptimizer (1 replica): the chief's queue runner in a thread, as
    its session hook starts it, and no initial token, so every worker step waits for the chief's
    update of its own gradient (deterministic). Returns (w, global step)."""
    with tf.Graph().as_default():
        w = V1.get_variable("w", initializer=[1.0, 2.0])
        scale = V1.placeholder(tf.float32, [])
        gs = V1.train.get_or_create_global_step()
        sync = V1.train.SyncReplicasOptimizer(
            V1.train.AdamOptimizer(0.1), replicas_to_aggregate=1, total_num_replicas=1
        )
        train_op = wrap(sync).minimize(tf.reduce_sum(w * w) * scale, global_step=gs)
        # What the chief's session hook runs: these must be ops of this graph (issue: they were not).
        chief_ops = [sync.chief_init_op, sync.get_init_tokens_op(0), sync.ready_for_local_init_op]
        queue_runner = sync.get_chief_queue_runner()
        coord = V1.train.Coordinator()
        config = V1.ConfigProto(operation_timeout_in_ms=20000)  # a protocol bug fails, not hangs
        with V1.Session(config=config) as sess:
            sess.run([V1.global_variables_initializer(), V1.local_variables_initializer()])
            sess.run(chief_ops)
            threads = queue_runner.create_threads(sess, coord=coord, daemon=True, start=True)
            for s in scales:
                sess.run(train_op, {scale: s})
            result = sess.run([w, gs])
            coord.request_stop()
        # Closing the session cancels the chief's pending TakeGrad; the coordinator absorbs it.
        for t in threads:
            t.join(10)
        return result


def test_skip_around_sync_replicas_optimizer():
    """nonfinite="skip" around SyncReplicasOptimizer builds (the hook's ops are in the graph),
    skips the inf step (weights, slots unchanged; global_step still advances, as the Sync
    protocol needs) and otherwise trains bit for bit like TF 1.15's contrib wrapper."""
    got_w, got_step = _sync_program(
        lambda sync: tfc.clip_gradients_by_norm(sync, 1.0, nonfinite="skip"), [1.0, np.inf, 1.0, 1.0]
    )
    want_w, want_step = _sync_program(
        lambda sync: contrib_estimator.clip_gradients_by_norm(sync, 1.0), [1.0, 1.0, 1.0]
    )
    assert (got_step, want_step) == (4, 3)
    np.testing.assert_array_equal(got_w, want_w)


def test_sync_replicas_rejects_transforms_that_skip_per_worker():
    """A transform that asks to skip cannot run per worker of a SyncReplicasOptimizer: a clear error."""
    with tf.Graph().as_default():
        w = V1.get_variable("w", initializer=[1.0])
        gs = V1.train.get_or_create_global_step()
        sync = V1.train.SyncReplicasOptimizer(V1.train.AdamOptimizer(0.1), 1, total_num_replicas=1)
        opt = tfc.wrap_optimizer(sync, tfc.SkipNonFinite())
        with pytest.raises(ValueError, match="SkipNonFinite asks to skip steps.*SyncReplicasOptimizer"):
            opt.minimize(tf.reduce_sum(w * w), global_step=gs)


# ------------------------------------------------------------- item 7: default variables in tf.function
def _graph_reference(build, steps=5):
    """The TF 1.15 program in graph mode (reference module); returns the trained variables."""
    with tf.Graph().as_default():
        w = V1.get_variable("W", initializer=tf.constant(W0))
        b = V1.get_variable("b", initializer=tf.zeros([2]))
        e = V1.get_variable("E", initializer=tf.constant(E0))
        pred = tf.matmul(tf.constant(X), w) + b + tf.nn.embedding_lookup(e, tf.constant(IDS_DUPLICATE))
        loss = tf.reduce_mean(tf.square(pred - tf.constant(Y)))
        train = build(loss)
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            for _ in range(steps):
                sess.run(train)
            return sess.run([w, b, e])


def _function_run(build, steps=5):
    """The same program inside a tf.function with variables created eagerly (TF 2 style)."""
    w = tf.Variable(W0, name="W")
    b = tf.Variable(tf.zeros([2]), name="b")
    e = tf.Variable(E0, name="E")
    cache = {}

    @tf.function
    def step():
        pred = tf.matmul(tf.constant(X), w) + b + tf.nn.embedding_lookup(e, tf.constant(IDS_DUPLICATE))
        loss = tf.reduce_mean(tf.square(pred - tf.constant(Y)))
        return build(loss, cache)

    for _ in range(steps):
        step()
    return [w.numpy(), b.numpy(), e.numpy()]


def test_create_train_op_default_variables_inside_tf_function():
    """create_train_op in a tf.function with the default variable list trains like TF 1.15 in a graph."""
    def shim(loss, cache):
        opt = cache.setdefault("opt", V1.train.AdamOptimizer(0.1))
        return tfc.create_train_op(loss, opt, global_step=None)

    want = _graph_reference(
        lambda loss: contrib_training.create_train_op(loss, V1.train.AdamOptimizer(0.1), global_step=None)
    )
    got = _function_run(shim)
    for a, r in zip(got, want):
        np.testing.assert_allclose(a, r, rtol=1e-6)
    assert not np.allclose(got[2], E0)


def test_optimize_loss_default_variables_inside_tf_function():
    """optimize_loss in a tf.function, default variables, float clip (order-sensitive sum): as TF 1.15."""
    def shim(loss, cache):
        opt = cache.setdefault("opt", V1.train.AdamOptimizer(0.1))
        return tfc.optimize_loss(loss, None, None, opt, clip_gradients=0.5, summaries=[])

    want = _graph_reference(
        lambda loss: contrib_layers.optimize_loss(
            loss, None, None, V1.train.AdamOptimizer(0.1), clip_gradients=0.5, summaries=[]
        )
    )
    got = _function_run(shim)
    for a, r in zip(got, want):
        np.testing.assert_allclose(a, r, rtol=1e-6)


def test_default_trainable_variables_are_in_creation_order():
    """Inside tf.function the default list is the read trainable variables in creation order, no frozen ones."""
    from tfclip_compat._contrib._graph import default_trainable_variables

    a = tf.Variable(1.0, name="a")
    frozen = tf.Variable(1.0, name="frozen", trainable=False)
    c = tf.Variable(1.0, name="c")
    seen = []

    @tf.function
    def f():
        _ = c * a * frozen  # read c first: the order must still be a, c
        seen.extend(default_trainable_variables())
        return 0

    f()
    assert [v.name for v in seen] == ["a:0", "c:0"]


# ------------------------------------------------------------- item 9: messages and AutoGraph noise
def test_keras_apply_before_build_says_to_build():
    """Keras apply(grads) without trainable_variables on an unbuilt optimizer says build() / trainable_variables=."""
    opt = tfc.clip_gradients_by_norm(tf.keras.optimizers.SGD(0.1), 1.0)
    with pytest.raises(ValueError, match=r"needs a built optimizer: call build\(.*or pass trainable_variables"):
        opt.apply([tf.constant([1.0])])


class _Records(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def test_no_autograph_warning_when_traced():
    """Tracing the wrappers, the transforms and the drop-ins in tf.function logs no AutoGraph warning."""
    handler = _Records()
    logger = tf.get_logger()
    logger.addHandler(handler)
    try:
        v = tf.Variable([1.0, 2.0])
        opts = [
            tfc.clip_gradients_by_norm(V1.train.AdamOptimizer(0.1), 1.0),
            tfc.wrap_optimizer(V1.train.GradientDescentOptimizer(0.1), tfc.Chain(tfc.ClipByGlobalNorm(1.0), tfc.AutoClip())),
            tfc.clip_gradients_by_norm(tf.keras.optimizers.Adam(0.1), 1.0, nonfinite="skip"),
            tfc.wrap_optimizer(tf.keras.optimizers.SGD(0.1), tfc.Chain(tfc.ClipByGlobalNorm(1.0), tfc.AutoClip())),
        ]
        for opt in opts:
            @tf.function
            def step(opt=opt):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_sum(v * v)
                opt.apply_gradients([(tape.gradient(loss, v), v)])

            step()
        gd = V1.train.GradientDescentOptimizer(0.1)

        @tf.function
        def drop_ins():
            loss = tf.reduce_sum(v * v)
            return tfc.create_train_op(
                loss, gd, global_step=None, variables_to_train=[v],
                transform_grads_fn=tfc.clip_gradient_norms_fn(1.0),
            )

        drop_ins()
    finally:
        logger.removeHandler(handler)
    noisy = [m for m in handler.messages if "AutoGraph" in m]
    assert noisy == []
