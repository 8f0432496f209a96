"""Issue 25 (precision, round 13): what the loss cannot differentiate through stands outside the
tape. A value read only as a shape, axis, size or index of a listed TF call (or through ``int``)
carries no gradient, whatever it is; NumPy functions and ``str`` methods do not change their
arguments; only the slice's statements are checked for their reads (a loop or session the loss
does not need still is, and is named); two ``minimize`` calls in one ``control_dependencies``
block share one ``with`` of two tapes. Also the closure soundness hole found this round. Each
class has a program where the old reason is gone and one where the reason is true and stays.
(Engine-only checks; executed equivalence of the rewrites is the differential fuzzer's,
``tests/fuzz/_shapes.py`` and the GAN class form in ``tests/fuzz/_sites.py``.)
"""

from __future__ import annotations

from typing import List, Tuple

import pytest

from codemods.api import migrate_source
from codemods.engine.core import FixSafety, Options


def _run(source: str) -> Tuple[str, List[Tuple[str, FixSafety, str]]]:
    result = migrate_source(source, Options(), path="m.py")
    return result.code, [(d.code, d.fix, d.message) for d in result.diagnostics]


# The DQN of the RL tutorials: the action count is a constructor parameter (its callers are in
# another file) read as shapes of variables and placeholders.
DQN = '''import numpy as np
import tensorflow.compat.v1 as tf


class DQN(object):
    def __init__(self, n_actions, n_features, learning_rate=0.01):
        self.n_actions = n_actions
        self.n_features = n_features
        self.lr = learning_rate
        self._build_net()

    def _build_net(self):
        def build_layers(s, n_l1):
            w1 = tf.get_variable("w1", [self.n_features, n_l1])
            w2 = tf.get_variable("w2", shape=[n_l1, self.n_actions])
            return tf.matmul(tf.nn.relu(tf.matmul(s, w1)), w2)
        self.s = tf.placeholder(tf.float32, [None, self.n_features])
        self.q_target = tf.placeholder(tf.float32, [None, self.n_actions])
        with tf.variable_scope("eval"):
            self.q_eval = build_layers(self.s, 20)
        with tf.variable_scope("loss"):
            self.loss = tf.reduce_mean(tf.squared_difference(self.q_target, {use}))
        with tf.variable_scope("train"):
            self._train_op = tf.train.RMSPropOptimizer(self.lr).minimize(self.loss)

    def choose_action(self):
        return np.random.randint(0, self.n_actions)

    def name(self):
        return "dqn_{{}}_{{}}".format(self.n_actions, self.n_features)
'''


@pytest.mark.parametrize("use", [
    "self.q_eval",
    "tf.reshape(self.q_eval, [-1, self.n_actions])",
    "tf.reduce_sum(tf.reshape(self.q_eval, (-1, self.n_actions * 1)), axis=1, keepdims=True)",
])
def test_a_parameter_read_only_as_a_shape_gets_a_safe_fix(use: str) -> None:
    """``self.n_actions`` (a parameter whose callers are in another file), read only as shapes of
    ``get_variable``/``placeholder``/``reshape`` and as an axis, no longer makes the fix unsafe;
    ``np.random.randint(0, self.n_actions)`` and ``str.format`` elsewhere do not count as changes."""
    source = DQN.format(use=use)
    code, found = _run(source)
    assert [(c, f) for c, f, _ in found] == [("TFC103", FixSafety.SAFE)], found
    assert "with tf.GradientTape() as tape:" in code


def test_the_same_parameter_read_as_a_value_stays_unsafe() -> None:
    """Read as a factor of the loss, the parameter may carry a gradient: the fix stays unsafe and
    names it."""
    source = DQN.format(use="self.q_eval * self.n_actions")
    _, found = _run(source)
    assert [(c, f) for c, f, _ in found] == [("TFC103", FixSafety.UNSAFE)], found
    assert "`self.n_actions`, set from a parameter whose callers are not in this file" in found[0][2]


TENSOR_SHAPE = """import tensorflow.compat.v1 as tf

x = tf.placeholder(tf.float32, [None, 4])
w = tf.get_variable("w", [4, 4])
side = tf.get_variable("side", [4])


class Holder(object):
    def __init__(self, cols):
        self.cols = cols


def build(dims):
    out = tf.tanh(tf.matmul({use}, w))
    loss = tf.reduce_mean(out)
    return tf.train.AdamOptimizer(0.1).minimize(loss)


makers = {{"holder": Holder}}
train_op = build(makers["holder"]({value}))
"""


def test_a_tensor_read_only_as_a_shape_gets_a_safe_fix() -> None:
    """A field of an object built outside the tape from a variable (a tensor) is fine as a shape:
    no gradient flows through a shape."""
    source = TENSOR_SHAPE.format(value="tf.cast(tf.reduce_sum(side * 0.0) + 4.0, tf.int32)", use="tf.reshape(x, [-1, dims.cols])")
    _, found = _run(source)
    assert [(c, f) for c, f, _ in found] == [("TFC103", FixSafety.SAFE)], found


def test_a_tensor_read_as_a_value_gets_no_safe_fix() -> None:
    """The same field multiplied into the model may carry the variable's gradient: no safe fix, and
    the reason names it."""
    source = TENSOR_SHAPE.format(value="tf.reduce_sum(side)", use="x * dims.cols")
    _, found = _run(source)
    assert len(found) == 1 and found[0][1] is not FixSafety.SAFE, found
    assert "`dims.cols`" in found[0][2]


@pytest.mark.parametrize("change, changed", [
    ("np.random.randint(0, cfg.units)", False),
    ("np.zeros((cfg.units, 2))", False),
    ('"units_{}".format(cfg.units)', False),
    ("np.random.shuffle(cfg.units)", True),
    ("np.copyto(cfg.units, np.zeros(2))", True),
    ("np.multiply(np.ones(2), 2.0, out=cfg.units)", True),
    ("np.add.at(cfg.units, [0], 1.0)", True),
    ("random.shuffle(cfg.units)", True),
])
def test_which_library_calls_change_their_arguments(change: str, changed: bool) -> None:
    """NumPy and ``math`` functions and ``str`` methods leave their arguments as they were, except
    NumPy's in-place functions and any call given ``out=``; other libraries (``random.shuffle``)
    may change what they are given. A field that may be changed in place is read as a tensor."""
    from codemods.rules.tape.facts import ModuleFacts, resolve_metadata
    from codemods.rules.tape.mutations import Mutations
    from libcst.metadata import MetadataWrapper
    import libcst as cst

    from codemods.rules.tape.effects import Analyzer

    source = f"import random\nimport numpy as np\nimport tensorflow as tf\n\ncfg = object()\n{change}\n"
    wrapper = MetadataWrapper(cst.parse_module(source))
    facts = ModuleFacts(wrapper.module, resolve_metadata(wrapper))
    analyzer = Analyzer(facts)
    assert isinstance(analyzer.mutations, Mutations)
    assert analyzer.field_mutated("units") is changed


ENV = '''import tensorflow.compat.v1 as tf
from lib.envs import CliffWalkingEnv


class PolicyEstimator(object):
    def __init__(self, env, learning_rate=0.01):
        self.state = tf.placeholder(tf.int32, [], "state")
        self.target = tf.placeholder(dtype=tf.float32, name="target")
        state_one_hot = tf.one_hot(self.state, int(env.observation_space.n))
        self.output_layer = tf.contrib.layers.fully_connected(
            inputs=tf.expand_dims(state_one_hot, 0), num_outputs=env.action_space.n, activation_fn=None)
        self.loss = tf.reduce_sum(tf.squared_difference(self.output_layer, self.target)) * {scale}
        self.train_op = tf.train.AdamOptimizer(learning_rate=learning_rate).minimize(self.loss)


estimator = PolicyEstimator(CliffWalkingEnv())
'''


def test_fields_of_an_unknown_object_read_as_sizes_are_not_the_losss() -> None:
    """``int(env.observation_space.n)`` (``int`` gives a Python value) and ``num_outputs=`` of a
    layer are no gradient path: the fix is safe. Multiplied into the loss, the same object's field
    gets no safe fix."""
    _, found = _run(ENV.format(scale="1.0"))
    assert [(c, f) for c, f, _ in found] == [("TFC103", FixSafety.SAFE)], found
    _, found = _run(ENV.format(scale="env.reward_scale"))
    assert len(found) == 1 and found[0][1] is not FixSafety.SAFE and "`env.reward_scale`" in found[0][2], found


# Two losses computed by interleaved statements (the cookbook's activation-functions script), and a
# monitoring tensor read by a statement the loss does not need.
BYSTANDER = '''import tensorflow.compat.v1 as tf

x = tf.placeholder(tf.float32, [None, 1])
a1 = tf.Variable(tf.random_normal(shape=[1, 1]))
a2 = tf.Variable(tf.random_normal(shape=[1, 1]))


def build(monitor):
    sigmoid_activation = tf.sigmoid(tf.matmul(x, a1))
    relu_activation = tf.nn.relu(tf.matmul(x, a2))
    loss1 = tf.reduce_mean(tf.square(sigmoid_activation - 0.75))
    monitor_scaled = monitor * 2.0{extra}
    loss2 = tf.reduce_mean(tf.square(relu_activation - 0.75))
    opt = tf.train.GradientDescentOptimizer(0.01)
    return opt.minimize(loss2)


train_relu = build(tf.reduce_mean(tf.matmul(x, a1)))
'''


def test_a_statement_the_loss_does_not_need_is_not_blamed() -> None:
    """``loss1`` and ``monitor_scaled`` sit among the statements of ``loss2`` without being any of
    them: what they read (``monitor``, a tensor the caller computed from a variable) is not the
    loss's. The fix is safe and wraps them as they are."""
    code, found = _run(BYSTANDER.format(extra=""))
    assert [(c, f) for c, f, _ in found] == [("TFC103", FixSafety.SAFE)], found
    assert "        monitor_scaled = monitor * 2.0\n" in code


def test_a_statement_the_loss_needs_is_still_blamed() -> None:
    """When the loss does read it (``relu_activation`` scaled by the monitor), the reason is true
    and names the parameter."""
    source = BYSTANDER.format(extra="\n    relu_activation = relu_activation * monitor_scaled")
    _, found = _run(source)
    assert [c for c, _, _ in found] == ["TFC202"], found
    assert "the parameter `monitor`" in found[0][2]


GAN = '''import tensorflow.compat.v1 as tf

x = tf.placeholder(tf.float32, [None, 4])
z = tf.placeholder(tf.float32, [None, 2])


class GAN(object):{extra_class}
    def __init__(self):
        with tf.variable_scope("g_"):
            g = tf.layers.dense(z, 4)
        with tf.variable_scope("d_"):
            d_real = tf.layers.dense(x, 1)
        with tf.variable_scope("d_", reuse=True):
            d_fake = tf.layers.dense(g, 1)
        self.d_loss = tf.reduce_mean(d_real) - tf.reduce_mean(d_fake)
        self.g_loss = tf.reduce_mean(d_fake)
        t_vars = tf.trainable_variables()
        d_vars = [var for var in t_vars if "d_" in var.name]
        g_vars = [var for var in t_vars if "g_" in var.name]
        with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
            self.d_optim = tf.train.AdamOptimizer(0.1).minimize(self.d_loss, var_list=d_vars){between}
            self.g_optim = tf.train.AdamOptimizer(0.1).minimize(self.g_loss, var_list=g_vars)
'''


def test_two_minimize_calls_in_one_with_block_share_one_with_of_two_tapes() -> None:
    """hwalsuklee's GAN zoo: both ``minimize`` calls in one ``control_dependencies`` block, each
    reading a field of ``self`` the other does not store. Both get a safe fix: one ``with`` of two
    tapes around the shared forward pass, both gradients inside the ``control_dependencies``."""
    code, found = _run(GAN.format(extra_class="", between=""))
    assert [(c, f) for c, f, _ in found] == [("TFC103", FixSafety.SAFE)] * 2, found
    assert "with tf.GradientTape() as tape, tf.GradientTape() as tape_1:" in code
    assert "            gradients_1 = tape_1.gradient(loss_value_1, g_vars)\n" in code


@pytest.mark.parametrize("extra_class, between", [
    ("", "\n            self.g_loss = self.g_loss * 2.0"),
    ("\n    @property\n    def g_loss(self):\n        return self._g\n\n    @g_loss.setter\n    def g_loss(self, v):\n"
     "        self._g = v\n", ""),
    ("", "\n            alias = self\n            alias.g_loss = alias.g_loss * 2.0"),
])
def test_the_second_site_stays_in_its_block_when_the_loss_may_change(extra_class: str, between: str) -> None:
    """Not lifted: the generator's loss stored again between the two calls, read through a
    property (a store elsewhere may change it), or changed through another name of ``self``."""
    code, found = _run(GAN.format(extra_class=extra_class, between=between))
    assert ("TFC103", FixSafety.SAFE) not in [(c, f) for c, f, _ in found][1:], found
    assert "tape_1.gradient(loss_value_1, g_vars)" not in code


SIZES = '''import tensorflow.compat.v1 as tf


def build(batch_size, width):
{helper}    x = tf.placeholder(tf.float32, [batch_size, width])
    w = tf.get_variable("w", [width, 1])
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w){use}))
    return tf.train.AdamOptimizer(0.1).minimize(loss)
'''


@pytest.mark.parametrize("helper, use, safe", [
    ("", "", True),
    ("", " * batch_size", False),
    ("    def scaled(t):\n        return t * batch_size\n", "", True),
    ("    def scaled(t):\n        return t * batch_size\n", " + scaled(1.0)", False),
])
def test_a_parameter_read_only_as_a_size(helper: str, use: str, safe: bool) -> None:
    """Parameters whose callers are not in the file, read by the slice only as shapes, give a safe
    fix; read as a factor of the loss -- directly, or through a nested helper the slice calls --
    they do not."""
    _, found = _run(SIZES.format(helper=helper, use=use))
    assert (found and all(f is FixSafety.SAFE for _, f, _ in found)) is safe, found


CLOSURE = '''import tensorflow.compat.v1 as tf

v = tf.get_variable("v", [1])


def build(scale, width):
    def scaled(t):
        return t * scale
    x = tf.ones([2, width])
    w = tf.get_variable("w", [width, 1])
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w))) + tf.reduce_sum(scaled(1.0))
    return tf.train.AdamOptimizer(0.1).minimize(loss)


train_op = build(tf.reduce_sum(v) * 2.0, 3)
'''


def test_a_parameter_read_through_a_closure_the_loss_calls_is_checked() -> None:
    """Found this round, on main since the parameter checks began: a parameter the loss reads only
    inside a nested function it calls was taken as "used only as an attribute root" (no read in
    the region's syntax) and never checked, so the fix was safe -- and ``v`` (the caller computed
    ``scale`` from it) stopped training (measured: TF 1 moved it from 0.3 to -0.08 in 3 Adam steps,
    the rewrite left it at 0.3). Now the parameter's own check runs and declines."""
    code, found = _run(CLOSURE)
    assert code == CLOSURE
    assert [c for c, _, _ in found] == ["TFC202"] and "the parameter `scale`" in found[0][2], found


BACKPROP = '''import tensorflow.compat.v1 as tf

x = tf.placeholder(tf.float32, [None, 2])
w = tf.Variable(tf.ones([2, 1]))
monitor = tf.reduce_sum(w)
diff = tf.matmul(x, w) - 1.0
{between}
cost = tf.reduce_mean(diff * diff)
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(cost)
'''


@pytest.mark.parametrize("between, declined", [
    ("sess = tf.Session()", False),
    ("for i in range(3):\n    print(i)", False),
    ("for i in range(3):\n    print(monitor)", True),
    ("sess = tf.Session()\nvalue = sess.run(monitor)", True),
])
def test_a_loop_or_session_the_loss_does_not_need(between: str, declined: bool) -> None:
    """A loop or session between the forward pass and a later ``minimize`` (hunkim's back-prop
    lab trains by hand there first) is checked as if the loss needed it: moved into the tape when
    what it reads could be, else declined naming it -- not the loss -- as the reader."""
    source = BACKPROP.format(between=between)
    code, found = _run(source)
    found = [f for f in found if f[0] != "TFC301"]  # (the session script's own report)
    if declined:
        assert code == source
        assert [c for c, _, _ in found] == ["TFC202"], found
        assert "include a loop (" in found[0][2] or "include a session run (" in found[0][2], found
        assert "that the loss does not need, and it reads `monitor`" in found[0][2], found
    else:
        assert [(c, f) for c, f, _ in found] == [("TFC103", FixSafety.SAFE)], found


NOTEBOOK_SIZES = '''import numpy as np
import tensorflow.compat.v1 as tf
from envs import make_env

env = make_env("MsPacman-v0")
n_outputs = env.action_space.n


def epsilon_greedy(q_values, epsilon):
    if np.random.rand() < epsilon:
        return np.random.randint(n_outputs)
    return np.argmax(q_values){extra}


with tf.variable_scope("train"):
    X = tf.placeholder(tf.float32, [None, 4])
    w = tf.get_variable("w", [4, 9])
    q_values = tf.matmul(X, w)
    X_action = tf.placeholder(tf.int32, shape=[None])
    q_value = tf.reduce_sum(q_values * tf.one_hot(X_action, n_outputs), axis=1)
    loss = tf.reduce_mean(tf.square(1.0 - q_value))
    training_op = tf.train.MomentumOptimizer(0.001, 0.95).minimize(loss)
'''


@pytest.mark.parametrize("extra, safe", [
    ("", True),
    ("\n\n\ndef scaled(t):\n    return t * n_outputs", False),
])
def test_a_module_name_read_only_as_a_size(extra: str, safe: bool) -> None:
    """ageron's DQN notebook: ``n_outputs`` comes from the environment (bound outside the block the
    tape goes in) and is read by the loss only as ``one_hot``'s depth (and by NumPy elsewhere): a
    safe fix. A function that multiplies by it
    could be called by the loss: then the name is checked as before (declined, naming it)."""
    _, found = _run(NOTEBOOK_SIZES.format(extra=extra))
    found = [f for f in found if f[0] != "TFC301"]
    if safe:
        assert [(c, f) for c, f, _ in found] == [("TFC103", FixSafety.SAFE)], found
    else:
        assert len(found) == 1 and found[0][1] is not FixSafety.SAFE and "`n_outputs`" in found[0][2], found


REBOUND = '''import tensorflow.compat.v1 as tf

x = tf.placeholder(tf.float32, [None, 2])
w = tf.get_variable("w", [2, 1])
loss = tf.reduce_mean(tf.square(tf.matmul(x, w)))

with tf.name_scope("train"):
    optimizer = tf.train.GradientDescentOptimizer(0.01)
    training_op = optimizer.minimize(loss)
{middle}
with tf.name_scope("train_momentum"):
    optimizer = tf.train.MomentumOptimizer(0.01, 0.9){between}
    training_op2 = optimizer.minimize(loss)
'''


@pytest.mark.parametrize("middle, between, resolved", [
    ("", "", True),
    ("for step in range(3):\n    optimizer = tf.train.AdamOptimizer(0.1)\n", "", True),
    ("", "\n    if flag:\n        optimizer = tf.train.AdamOptimizer(0.1)", False),
    ("def reset():\n    global optimizer\n    optimizer = tf.train.AdamOptimizer(0.1)\n", "", False),
])
def test_an_optimizer_rebound_in_every_cell(middle: str, between: str, resolved: bool) -> None:
    """ageron's notebooks bind ``optimizer`` again in every cell, each time inside ``with
    tf.name_scope("train"):`` just above its ``minimize``: that assignment is the one each call reads
    (a loop or other bindings elsewhere do not matter). Not when it may be bound again between
    them, or by a function through ``global`` (a call could run in between)."""
    source = REBOUND.format(middle=middle, between=between).replace("import tensorflow.compat.v1 as tf",
                                                                    "import tensorflow.compat.v1 as tf\nflag = True")
    _, found = _run(source)
    reasons = [m for c, _, m in found if c == "TFC202"]
    assert any("is assigned more than once" in m for m in reasons) is not resolved, found
    if resolved:
        assert ("TFC103", FixSafety.SAFE) in [(c, f) for c, f, _ in found], found
