"""Executed equivalence of the TF 2 form rules (TFC101-TFC103): the legacy program, run as TF1
ran it, and the engine's rewrite of it, run on TF 2, train identically (rtol 1e-5) for 20 steps,
for every rewrite kind and every ``tf.train`` optimizer class."""

from __future__ import annotations


import numpy as np
import pytest

from codemods.api import Options, migrate_source
from _equivalence import assert_equivalent, migrate, run_eager, run_graph

OPTIMIZERS = {
    "GradientDescent": "tf.train.GradientDescentOptimizer({lr})",
    "Momentum": "tf.train.MomentumOptimizer({lr}, momentum=0.9)",
    "Nesterov": "tf.train.MomentumOptimizer({lr}, momentum=0.9, use_nesterov=True)",
    "Adam": "tf.train.AdamOptimizer({lr})",
    "Adagrad": "tf.train.AdagradOptimizer({lr})",
    "Adadelta": "tf.train.AdadeltaOptimizer({lr})",
    "RMSProp": "tf.train.RMSPropOptimizer({lr})",
    "Ftrl": "tf.train.FtrlOptimizer({lr})",
}
RATES = {"Adadelta": "1.0", "RMSProp": "0.01", "Adam": "0.05"}

HEADER = '''
import numpy as np
import tensorflow.compat.v1 as tf
{imports}
rng = np.random.RandomState(0)
X = rng.randn(20, 8, 3).astype(np.float32)
Y = (rng.randn(20, 8, 2) * 5.0).astype(np.float32)


def feeds(step):
    return {{"x": X[step % 20], "y": Y[step % 20]}}


x = tf.placeholder(tf.float32, [None, 3])
y = tf.placeholder(tf.float32, [None, 2])
w = tf.Variable(np.linspace(-1.0, 1.0, 6).reshape(3, 2).astype(np.float32), name="w")
b = tf.Variable(np.full(2, 0.1, np.float32), name="b")
u = tf.Variable(np.ones(2, np.float32), name="u")  # never read by the loss: a None gradient
global_step = tf.train.get_or_create_global_step()
'''

LOSS = '''
h = tf.tanh(tf.matmul(x, w) + b)
loss = tf.reduce_mean(tf.square(h * 3.0 - y))
'''

# What ``--add-clip-norm 0.5`` must be equal to: the TF1 program that clips by hand.
CLIPPED_BY_HAND = '''
optimizer = {opt}
gradients, variables = zip(*optimizer.compute_gradients(loss))
gradients, _ = tf.clip_by_global_norm(gradients, 0.5)
train_op = optimizer.apply_gradients(zip(gradients, variables), global_step=global_step)
'''

# kind -> (program body, engine options, rule expected to fire)
GRAPH_KINDS = {
    "compute_zip_global_norm": ('''
optimizer = {opt}
gradients, variables = zip(*optimizer.compute_gradients(loss))
gradients, _ = tf.clip_by_global_norm(gradients, 1.0)
train_op = optimizer.apply_gradients(zip(gradients, variables), global_step=global_step)
''', {}, "TFC101"),
    "compute_pairs_clip_value_var_list": ('''
optimizer = {opt}
gvs = optimizer.compute_gradients(loss, var_list=[w, b])
capped_gvs = [(tf.clip_by_value(grad, -0.5, 0.5), var) for grad, var in gvs]
train_op = optimizer.apply_gradients(capped_gvs, global_step=global_step)
''', {}, "TFC101"),
    "compute_none_check_clip_norm": ('''
optimizer = {opt}
gradients, variables = zip(*optimizer.compute_gradients(loss))
gradients = [
    None if gradient is None else tf.clip_by_norm(gradient, 0.5)
    for gradient in gradients]
train_op = optimizer.apply_gradients(zip(gradients, variables))
''', {}, "TFC101"),
    "compute_gv_index_clip_value": ('''
optimizer = {opt}
grads_and_vars = optimizer.compute_gradients(loss, [w, b])
capped = [(tf.clip_by_value(gv[0], -0.2, 0.2), gv[1]) for gv in grads_and_vars]
train_op = optimizer.apply_gradients(capped)
''', {}, "TFC101"),
    "compute_filter_average_norm_subset": ('''
optimizer = {opt}
gvs = optimizer.compute_gradients(loss, var_list=[w])
capped = [(tf.clip_by_average_norm(g, 0.05), v) for g, v in gvs if g is not None]
train_op = optimizer.apply_gradients(capped)
''', {}, "TFC101"),
    "compute_bare_add_clip_norm": ('''
optimizer = {opt}
gvs = optimizer.compute_gradients(loss)
train_op = optimizer.apply_gradients(gvs, global_step=global_step)
''', {"add_clip_norm": 0.5}, "TFC101"),
    "minimize_schedule_var_list": ('''
learning_rate = tf.train.exponential_decay({lr}, global_step, 5, 0.5)
optimizer = {opt_lr}
train_op = optimizer.minimize(loss, global_step=global_step, var_list=[w])
''', {}, "TFC103"),
    "minimize_clip_gradients_by_norm": ('''
original_optimizer = {opt}
optimizer = clip_gradients_by_norm(original_optimizer, clip_norm=0.5)
train_op = optimizer.minimize(loss, global_step=global_step)
''', {}, "TFC103"),
    "minimize_add_clip_norm": ('''
train_op = {opt}.minimize(loss, global_step=global_step)
''', {"add_clip_norm": 0.5}, "TFC103"),
    "minimize_inside_control_dependencies": ('''
optimizer = {opt}
counter = tf.Variable(0.0, trainable=False, name="counter")
with tf.control_dependencies([counter.assign_add(1.0)]):
    h2 = tf.tanh(tf.matmul(x, w) + b)
    loss2 = tf.reduce_mean(tf.square(h2 * 3.0 - y))
    train_op = optimizer.minimize(loss2, global_step=global_step)
''', {}, "TFC103"),
    "minimize_callable_graph": ('''
optimizer = {opt}
train_op = optimizer.minimize(
    lambda: tf.reduce_mean(tf.square(tf.tanh(tf.matmul(x, w) + b) * 3.0 - y)),
    global_step=global_step, var_list=[w, b])
''', {}, "TFC103"),
}


def _program(kind: str, optimizer: str, reference: bool = False) -> str:
    """The legacy program of ``kind``; ``reference=True``: the TF1 program its rewrite must equal
    (itself, except for ``--add-clip-norm``, which must equal clipping written by hand)."""
    body, options, code = GRAPH_KINDS[kind]
    if reference and "add_clip_norm" in options:
        body = CLIPPED_BY_HAND
    lr = RATES.get(optimizer, "0.1")
    opt = OPTIMIZERS[optimizer].format(lr=lr)
    opt_lr = OPTIMIZERS[optimizer].format(lr="learning_rate")
    imports = ""
    if "clip_gradients_by_norm" in body:
        imports = "from tensorflow.contrib.estimator import clip_gradients_by_norm\n"
    source = HEADER.format(imports=imports) + LOSS + body.format(opt=opt, opt_lr=opt_lr, lr=lr)
    return source


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
@pytest.mark.parametrize("kind", sorted(GRAPH_KINDS))
def test_graph_rewrite_trains_identically(kind: str, optimizer: str) -> None:
    """The TF1 graph program and the engine's TF 2 tape rewrite of it produce the same losses,
    global step, trained variables and optimizer slots after 20 steps."""
    source = _program(kind, optimizer)
    _, options, code = GRAPH_KINDS[kind]
    after = migrate(source, expect=code, **options)
    assert "GradientTape" in after
    assert "compute_gradients" not in after and ".minimize(" not in after
    before_trace = run_graph(_program(kind, optimizer, reference=True), legacy=True)
    after_trace = run_graph(after, legacy=False)
    assert before_trace.losses[0] != before_trace.losses[-1], "training did not move the loss"
    assert_equivalent(before_trace, after_trace)


def test_unused_variable_keeps_its_value_and_gets_no_slot_update() -> None:
    """The variable with a None gradient is untouched on both sides (a vacuity check)."""
    source = _program("compute_none_check_clip_norm", "Adam")
    after = migrate(source, expect="TFC101")
    trace = run_graph(after, legacy=False)
    np.testing.assert_array_equal(trace.variables["u"], np.ones(2, np.float32))
    assert not np.allclose(trace.variables["w"], np.linspace(-1.0, 1.0, 6).reshape(3, 2))


def test_clipping_is_active_so_the_comparison_is_not_vacuous() -> None:
    """Dropping the clip changes the result: the clipped kinds really exercise clipping."""
    clipped = _program("compute_zip_global_norm", "GradientDescent")
    unclipped = clipped.replace("gradients, _ = tf.clip_by_global_norm(gradients, 1.0)\n", "")
    a = run_graph(clipped, legacy=True)
    b = run_graph(unclipped, legacy=True)
    assert not np.allclose(a.variables["w"], b.variables["w"], rtol=1e-3)


BERT = '''

def create_optimizer(init_lr, num_train_steps):
    """Creates an optimizer training op (the BERT shape, loss computed here)."""
    global_step = tf.train.get_or_create_global_step()
    learning_rate = tf.constant(value=init_lr, shape=[], dtype=tf.float32)
    learning_rate = tf.train.polynomial_decay(
        learning_rate, global_step, num_train_steps, end_learning_rate=0.0, power=1.0, cycle=False)
    optimizer = {opt_lr}
    h = tf.tanh(tf.matmul(x, w) + b)
    loss = tf.reduce_mean(tf.square(h * 3.0 - y))
    tvars = tf.trainable_variables()
    grads = tf.gradients(loss, tvars)

    # This is how the model was pre-trained.
    (grads, _) = tf.clip_by_global_norm(grads, clip_norm=1.0)

    train_op = optimizer.apply_gradients(zip(grads, tvars), global_step=global_step)
    return train_op, loss


train_op, loss = create_optimizer({lr}, 40)
'''


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_bert_shaped_function_trains_identically(optimizer: str) -> None:
    """TFC102 on a BERT ``create_optimizer``-shaped function (polynomial-decay schedule,
    ``tf.gradients`` + ``clip_by_global_norm`` + ``apply_gradients(global_step=)``) is exact."""
    lr = RATES.get(optimizer, "0.1")
    source = HEADER.format(imports="") + BERT.format(opt_lr=OPTIMIZERS[optimizer].format(lr="learning_rate"), lr=lr)
    after = migrate(source, expect="TFC102")
    assert "tf.gradients(" not in after
    assert "# This is how the model was pre-trained." in after
    assert_equivalent(run_graph(source, legacy=True), run_graph(after, legacy=False))


EAGER = '''
import numpy as np
import tensorflow.compat.v1 as tf

tf.enable_eager_execution()

rng = np.random.RandomState(0)
X = rng.randn(20, 8, 3).astype(np.float32)
Y = (rng.randn(20, 8, 2) * 5.0).astype(np.float32)
w = tf.Variable(np.linspace(-1.0, 1.0, 6).reshape(3, 2).astype(np.float32), name="w")
b = tf.Variable(np.full(2, 0.1, np.float32), name="b")
global_step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
state = {{"step": 0}}


def compute_loss():
    i = state["step"] % 20
    h = tf.tanh(tf.matmul(X[i], w) + b)
    return tf.reduce_mean(tf.square(h * 3.0 - Y[i]))


{trainer}
'''

# The optimizer at module level (TFC104 never converts it: another module may checkpoint it), so
# its slots can be compared too.
MODULE_TRAINER = '''optimizer = {opt}


def train_step():
    value = compute_loss()
    optimizer.minimize(compute_loss, global_step=global_step, var_list=[w, b])
    state["step"] += 1
    return value
'''

# The optimizer local to a function: what TFC104 converts to a Keras class.
LOCAL_TRAINER = '''def make_trainer():
    optimizer = {opt}

    def train_step():
        value = compute_loss()
        optimizer.minimize(compute_loss, global_step=global_step, var_list=[w, b])
        state["step"] += 1
        return value

    return train_step


train_step = make_trainer()
'''


def eager_program(optimizer: str, trainer: str) -> str:
    opt = OPTIMIZERS[optimizer].format(lr=RATES.get(optimizer, "0.1"))
    return EAGER.format(trainer=trainer.format(opt=opt))


# TF1 classes TFC104 turns into Keras classes by default (safe), and those it keeps.
KERAS_SAFE = {"GradientDescent": "SGD", "Adagrad": "Adagrad", "Adadelta": "Adadelta", "Ftrl": "Ftrl"}
MODEL = ["w", "b", "global_step"]


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_eager_callable_minimize_trains_identically(optimizer: str) -> None:
    """TF1-style eager ``minimize(callable, var_list=, global_step=)`` and its rewrite agree: the
    tape (TFC103) plus, for the classes with an exact Keras twin and a function-local optimizer,
    the Keras optimizer with the TF1 defaults written out and ``global_step.assign_add(1)`` (TFC104)."""
    source = eager_program(optimizer, LOCAL_TRAINER)
    after = migrate(source, expect="TFC103")
    assert "tape.gradient" in after
    keras = KERAS_SAFE.get(optimizer)
    if keras is not None:
        assert f"tf.keras.optimizers.{keras}(" in after and "global_step.assign_add(1)" in after
    else:
        assert "tf.train." in after and "keras" not in after
    before_trace = run_eager(source, legacy=True)
    after_trace = run_eager(after, legacy=False)
    assert before_trace.global_step == 20
    # Keras optimizers own differently shaped state (iterations, ...): compare the model then.
    assert_equivalent(before_trace, after_trace, variables=MODEL)


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_eager_module_level_optimizer_keeps_its_slots(optimizer: str) -> None:
    """A module-level optimizer stays a ``tf.train`` optimizer (TFC104 reports why), and the tape
    form trains every variable and slot exactly as TF1's eager ``minimize`` did."""
    source = eager_program(optimizer, MODULE_TRAINER)
    result = migrate_source(source, Options())
    after = result.code
    assert "tape.gradient" in after and "keras" not in after
    if optimizer in KERAS_SAFE:
        assert any(d.code == "TFC104" and "module-level name" in d.message for d in result.diagnostics)
    before_trace = run_eager(source, legacy=True)
    after_trace = run_eager(after, legacy=False)
    assert_equivalent(before_trace, after_trace)


@pytest.mark.parametrize("optimizer", ["Adam", "Momentum", "Nesterov"])
def test_unsafe_keras_conversion_differs_only_by_rounding(optimizer: str) -> None:
    """With ``--unsafe-fixes`` Adam/Momentum become Keras classes; the result matches TF1 to
    float32 rounding amplified by training (rtol 1e-3), which is why the fix is unsafe."""
    source = eager_program(optimizer, LOCAL_TRAINER)
    assert "keras" not in migrate(source, expect="TFC103")
    after = migrate(source, expect="TFC104", unsafe_fixes=True)
    before_trace = run_eager(source, legacy=True)
    after_trace = run_eager(after, legacy=False)
    assert_equivalent(before_trace, after_trace, variables=MODEL, rtol=1e-3, atol=1e-5)
