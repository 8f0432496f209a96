"""Issue 25 (precision): the planner's decline reasons are true, and values it can prove are
Python values, known callables or untouched objects no longer decline a site.

Each class has a program where the reason is true (still declined, or unsafe, naming the real
cause) and one where it must not appear. (Engine-only checks; executed equivalence of the
rewrites is the differential fuzzer's, ``tests/fuzz``.)
"""

from __future__ import annotations

from typing import List, Tuple

import pytest

from codemods.api import migrate_source
from codemods.engine.core import FixSafety, Options

HEAD = '''import contextlib
import tensorflow.compat.v1 as tf

x = tf.placeholder(tf.float32, [None, 3])
w = tf.get_variable("w", [3, 3])
'''


def _run(source: str, options: Options = Options()) -> Tuple[str, List[Tuple[str, FixSafety, str]]]:
    result = migrate_source(source, options, path="m.py")
    return result.code, [(d.code, d.fix, d.message) for d in result.diagnostics]


def _safe_rewrite(source: str) -> bool:
    code, found = _run(source)
    return code != source and not any(c == "TFC202" for c, _, _ in found) and all(
        fix is not FixSafety.UNSAFE for c, fix, _ in found if c.startswith("TFC1"))


# -- a. a parameter used as a callee ---------------------------------------------------------

LAYER = HEAD + '''
def layer(h, n, activation=None):
    v = tf.get_variable("v%d" % n, [3, 3])
    h = tf.matmul(h, v)
    if activation is not None:
        h = activation(h)
    return h

{extra}h1 = layer(x, 1, activation={arg})
out = layer(h1, 2)
loss = tf.reduce_mean(out)
opt = tf.train.AdamOptimizer(0.1)
gvs = opt.compute_gradients(loss)
capped = [(tf.clip_by_norm(g, 1.0), v) for g, v in gvs]
train_op = opt.apply_gradients(capped)
'''


@pytest.mark.parametrize("extra, arg", [
    ("", "tf.nn.relu"),
    ("", "None"),
    ("def act(t):\n    return tf.nn.relu(t) * 2.0\n\n", "act"),
    ("", "lambda t: tf.tanh(t) + 1.0"),
    ("flag = True\n", "tf.nn.relu if flag else None"),
])
def test_parameter_callee_known_in_every_caller_is_rewritten(extra: str, arg: str) -> None:
    """A parameter called as a function, bound by every caller in the file to a TF function,
    ``None``, a local function or a lambda, gets a safe fix and no "another module" reason."""
    source = LAYER.format(extra=extra, arg=arg)
    _, found = _run(source)
    assert _safe_rewrite(source), found
    assert not any("another module" in message for _, _, message in found), found


def test_parameter_callee_bound_to_an_imported_function_stays_unsafe() -> None:
    """When a caller passes a function of another module, the fix stays unsafe and the reason
    names the parameter and that function."""
    source = LAYER.format(extra="from mylib import helper\n", arg="helper")
    _, found = _run(source)
    notes = [message for code, fix, message in found if code == "TFC101" and fix is FixSafety.UNSAFE]
    assert notes and "`activation`, a parameter of `layer` that a caller binds to `helper`, defined in another " \
                      "module" in notes[0], found


def test_parameter_callee_of_a_function_passed_around_declines_naming_it() -> None:
    """A callee parameter of a function used as a value (its callers cannot be listed) declines
    inside a function, and the reason leads with that parameter, not with graph collections."""
    source = HEAD + '''
def mlp(h, act):
    v = tf.get_variable("v", [3, 3])
    return act(tf.matmul(h, v))

def train(model_fn):
    loss = tf.reduce_mean(model_fn(x, tf.nn.relu))
    opt = tf.train.AdamOptimizer(0.1)
    gvs = opt.compute_gradients(loss)
    return opt.apply_gradients([(tf.clip_by_norm(g, 1.0), v) for g, v in gvs])

train(mlp)
'''
    code, found = _run(source)
    reasons = [message for c, _, message in found if c == "TFC202"]
    assert code == source
    assert reasons and reasons[0].startswith("the loss is computed by `act`, a parameter of `mlp`, which this "
                                             "file does not only call directly"), reasons


# -- b. Python values --------------------------------------------------------------------------

CONFIG = '''import argparse
import numpy as np
import tensorflow.compat.v1 as tf

parser = argparse.ArgumentParser()
parser.add_argument("--rnn_size", type=int, default=4)
args = parser.parse_args([])
w0 = tf.get_variable("w0", [3])

class Config(object):
    vocab_size = 10
    hidden = 4

    def __init__(self):
        self.batch_size = 2
        self.scale = {scale}

class Model(object):
    def __init__(self, config, x_train):
        self.batch_size = config.batch_size
        self.n = x_train.shape[1]
        self.x = tf.placeholder(tf.float32, [self.batch_size, self.n])
        w = tf.get_variable("w", [self.n, args.rnn_size])
        scale = float(len(range(config.vocab_size))) * config.scale
        self.loss = tf.reduce_mean(tf.matmul(self.x, w)) * scale / self.batch_size
        opt = tf.train.AdamOptimizer(0.1)
        gvs = opt.compute_gradients(self.loss)
        capped = [(tf.clip_by_norm(g, 1.0), v) for g, v in gvs]
        self.train = opt.apply_gradients(capped)

x_train = np.zeros([8, 3], dtype=np.float32)
m = Model(Config(), x_train)
'''


def test_python_values_do_not_decline() -> None:
    """Config fields copied from themselves, ``.shape`` of a NumPy array passed to a class,
    ``len``/``range``/``float``, class constants and argparse values are Python values: safe fix."""
    source = CONFIG.format(scale="1.0 / self.hidden")
    _, found = _run(source)
    assert _safe_rewrite(source), found


def test_a_config_field_holding_a_tensor_still_declines() -> None:
    """The same program with a config field computed from a variable declines, naming the field."""
    source = CONFIG.format(scale="tf.reduce_sum(w0)")
    code, found = _run(source)
    reasons = [message for c, _, message in found if c == "TFC202"]
    assert code == source
    assert reasons and "`config.scale`" in reasons[0], reasons


# -- c. every binding form; a blamed statement really changes the value ------------------------

SITE = '''
def step():
    loss = tf.reduce_mean(tf.matmul(x, w) * h)
    return tf.train.GradientDescentOptimizer(0.1).minimize(loss)

train_op = step()
'''
TENSOR = "tf.matmul(x, w)"
# form -> (binding code with {v} for the value, the statement text the decline must quote)
FORMS = {
    "assignment": ("h = {v}\n", "`h = tf.matmul(x, w)`"),
    "tuple assignment": ("h, _ = {v}, 0\n", "`h, _ = tf.matmul(x, w), 0`"),
    "augmented": ("h = 1.0\nh += {v}\n", "`h += tf.matmul(x, w)`"),
    "for": ("for h in [{v}]:\n    pass\n", "`for h in [tf.matmul(x, w)]: pass`"),
    "with": ("with contextlib.nullcontext({v}) as h:\n    pass\n", "`with contextlib.nullcontext(tf.matmul(x, w)) as"),
    "walrus": ("if (h := {v}) is not None:\n    pass\n", "`if (h := tf.matmul(x, w)) is not None: pass`"),
    "match capture": ("match {v}:\n    case h:\n        pass\n", "`match` capture pattern at `h`"),
    "match sub-pattern": ("match [{v}]:\n    case [h]:\n        pass\n", "`match` capture pattern at `h`"),
    "comprehension": ("hs = [g * 1.0 for g in [{v}]]\nh = hs[0]\n", "`h = hs[0]`"),
    "global": ("def build():\n    global h\n    h = {v}\n\nbuild()\n", "`h = tf.matmul(x, w)`"),
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_every_binding_form_of_a_tensor_declines_quoting_that_binding(form: str) -> None:
    """A tensor of a variable bound outside the function by any binding form declines, and the
    reason quotes the statement that binds it."""
    binding, quoted = FORMS[form]
    source = HEAD + binding.format(v=TENSOR) + SITE
    code, found = _run(source)
    reasons = [message for c, _, message in found if c == "TFC202"]
    assert code == source
    assert reasons and "`h`" in reasons[0] and quoted in reasons[0], reasons


@pytest.mark.parametrize("form", sorted(FORMS))
def test_every_binding_form_of_a_python_value_is_rewritten(form: str) -> None:
    """The same binding forms of a Python value (``2.0``) get a safe fix."""
    binding, _ = FORMS[form]
    source = HEAD + binding.format(v="2.0") + SITE
    _, found = _run(source)
    assert _safe_rewrite(source), found


@pytest.mark.parametrize("binding", [
    "try:\n    raise ValueError()\nexcept ValueError as h:\n    pass\n",  # except ... as
    "from math import pi as h\n",  # import ... as, of a data module
])
def test_except_and_import_bindings_of_python_values_are_rewritten(binding: str) -> None:
    """``except ... as`` (an exception object) and ``import ... as`` of a data module bind
    Python values: safe fix."""
    source = HEAD + binding + SITE
    _, found = _run(source)
    assert _safe_rewrite(source), found


def test_import_as_of_another_module_is_unsafe_naming_it() -> None:
    """``from mylib import helper as h``: what ``h`` is cannot be seen, so the fix is unsafe and
    says so."""
    source = HEAD + "from mylib import helper as h\n" + SITE
    code, found = _run(source)
    assert code == source
    assert any(fix is FixSafety.UNSAFE and "`h`, imported from another module" in message
               for _, fix, message in found), found


NONLOCAL = HEAD + '''
def outer():
    h = 1.0
    def build():
        nonlocal h
        h = {v}
    build()
    loss = tf.reduce_mean(tf.matmul(x, w) * h)
    return tf.train.GradientDescentOptimizer(0.1).minimize(loss)

train_op = outer()
'''


def test_nonlocal_binding() -> None:
    """``nonlocal``: a Python value is rewritten (the call that binds it moves into the tape); a
    tensor of a variable declines quoting the binding statement."""
    assert _safe_rewrite(NONLOCAL.format(v="2.0"))
    source = NONLOCAL.format(v=TENSOR)
    code, found = _run(source)
    assert code == source
    assert any(c == "TFC202" and "`h = tf.matmul(x, w)`" in message for c, _, message in found), found


CNN = HEAD + '''
def conv(t, v, b):
    return tf.nn.relu(tf.matmul(t, v) + b)

def pool(t, k=2):
    return t * float(k)

{helper}
def net(t, weights, biases):
    h1 = conv(t, weights["w1"], biases["b1"])
    h1 = pool(h1, k=2)
    return tf.matmul(h1, weights["out"]) + biases["out"]

weights = {{"w1": tf.Variable(tf.ones([3, 3])), "out": tf.Variable(tf.ones([3, 2]))}}
biases = {{"b1": tf.Variable(tf.zeros([3])), "out": tf.Variable(tf.zeros([2]))}}
{call}
def step():
    loss = tf.reduce_mean(net(x, weights, biases))
    return tf.train.AdamOptimizer(0.1).minimize(loss)

train_op = step()
'''


def test_passing_a_dict_to_functions_that_do_not_change_it_blames_nothing() -> None:
    """``h1 = pool(h1)`` and ``conv(t, v, b)`` do not change ``biases``: no decline blames them."""
    source = CNN.format(helper="def show(d):\n    print(len(d))\n", call="show(biases)\n")
    _, found = _run(source)
    assert _safe_rewrite(source), found


def test_a_function_that_changes_the_dict_is_blamed() -> None:
    """A local function that stores into the dict it is given, called outside the tape, is the
    statement the decline quotes."""
    source = CNN.format(helper='def add(d):\n    d["b1"] = tf.reduce_sum(w)\n', call="add(biases)\n")
    code, found = _run(source)
    reasons = [message for c, _, message in found if c == "TFC202"]
    assert code == source
    assert reasons and "`biases`, which `add(biases)`" in reasons[0], reasons


MODULE_ALIAS = '''import tensorflow.compat.v1 as tf
rnn = tf.nn.rnn_cell
layers = tf.layers
other = rnn.GRUCell(4)
dense = layers.Dense(4)
x = tf.placeholder(tf.float32, [2, 4])
{body}
loss = tf.reduce_mean(h)
opt = tf.train.AdamOptimizer(0.1)
gvs = opt.compute_gradients(loss)
capped = [(tf.clip_by_norm(g, 1.0), v) for g, v in gvs]
train_op = opt.apply_gradients(capped)
'''


def test_a_module_alias_is_the_module() -> None:
    """``rnn = tf.nn.rnn_cell``: constructors through the alias change nothing, and calls
    through it are the TF APIs they name (safe fix)."""
    source = MODULE_ALIAS.format(body="cell = rnn.BasicRNNCell(4)\nout, _ = cell(x, cell.zero_state(2, tf.float32))\n"
                                      "h = layers.dense(out, 4)")
    _, found = _run(source)
    assert _safe_rewrite(source), found


def test_a_hazard_through_a_module_alias_declines() -> None:
    """A static RNN called through a module alias is the cached-read hazard it names."""
    source = MODULE_ALIAS.replace("rnn = tf.nn.rnn_cell", "rnn = tf.nn.rnn_cell\nnn = tf.nn").format(
        body="cell = rnn.BasicRNNCell(4)\nouts, _ = nn.static_rnn(cell, [x], dtype=tf.float32)\nh = outs[-1]")
    code, found = _run(source)
    assert code == source
    assert any(c == "TFC202" and "cached reads" in message for c, _, message in found), found


# -- d. Keras optimizers are TF 2 form already --------------------------------------------------

KERAS = '''import tensorflow as tf
w = tf.Variable(1.0)
opt = {ctor}
opt.minimize(lambda: w * w, var_list=[w])
'''


@pytest.mark.parametrize("ctor", ["tf.keras.optimizers.Adam(0.1)", "tf.optimizers.SGD(0.1)",
                                  "tf.keras.optimizers.legacy.Adam(0.1)"])
def test_keras_optimizer_sites_are_not_tf1_sites(ctor: str) -> None:
    """``minimize`` on a Keras optimizer gets no TFC202 ("cannot prove this is a `tf.train`
    optimizer") and TFC203, selected, does not list it as left in TF 1 form."""
    source = KERAS.format(ctor=ctor)
    code, found = _run(source, Options(select=frozenset({"TFC"})))
    assert code == source
    assert not [f for f in found if f[0] in ("TFC202", "TFC203")], found


def test_an_optimizer_of_unknown_class_still_declines() -> None:
    """An optimizer whose class cannot be seen keeps the "cannot prove" decline."""
    source = KERAS.format(ctor="make_optimizer()").replace("import tensorflow as tf",
                                                           "import tensorflow as tf\nfrom mylib import make_optimizer")
    _, found = _run(source)
    assert any(c == "TFC202" and "cannot prove this is a `tf.train` optimizer" in message
               for c, _, message in found), found


LOOP = '''import tensorflow.compat.v1 as tf

x = tf.placeholder(tf.float32, [None, 3])

def body(i, h):
    return i + 1, {step}

def run(step_fn):
    _, out = tf.while_loop(lambda i, h: i < 2, step_fn, [0, x])
    return out

loss = tf.reduce_mean(run(body))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
'''


def test_a_loop_body_passed_as_a_parameter_is_followed() -> None:
    """``tf.while_loop(c, step_fn, ...)`` where every caller passes a local function: that
    function's body is checked (a layer inside declines with the loop reason; plain ops do not)."""
    source = LOOP.format(step='tf.layers.dense(h, 3, name="d", reuse=tf.AUTO_REUSE)')
    code, found = _run(source)
    assert code == source
    assert any(c == "TFC202" and "`tf.while_loop` whose body may create or read variables" in message
               for c, _, message in found), found
    assert _safe_rewrite(LOOP.format(step="tf.tanh(h)"))


def test_a_function_that_stores_the_dict_where_it_is_changed_is_blamed() -> None:
    """A local function that stores the dict it is given in a container (``REG[0] = d``), which
    code outside the tape then changes, is the statement the decline quotes."""
    source = CNN.format(helper="REG = [None]\n\ndef register(d):\n    REG[0] = d\n",
                        call='register(biases)\nREG[0]["b1"] = tf.reduce_sum(w)\n')
    code, found = _run(source)
    reasons = [message for c, _, message in found if c == "TFC202"]
    assert code == source
    assert reasons and "`biases`, which `register(biases)`" in reasons[0], reasons


ARGS = '''import argparse
import tensorflow.compat.v1 as tf

parser = argparse.ArgumentParser()
parser.add_argument("--batch_size", type=int, default=4)
args = parser.parse_args([])
w0 = tf.get_variable("w0", [3])

class Model(object):
    def __init__(self, args, infer=False):
        self.args = args
        if infer:
            args.batch_size = {stored}
        self.batch_size = args.batch_size
        self.x = tf.placeholder(tf.float32, [4, 3])
        w = tf.get_variable("w", [3, 2])
        self.cost = tf.reduce_mean(tf.matmul(self.x, w)) / self.batch_size
        tvars = tf.trainable_variables()
        grads, _ = tf.clip_by_global_norm(tf.gradients(self.cost, tvars), 5.0)
        self.train_op = tf.train.AdamOptimizer(0.01).apply_gradients(zip(grads, tvars))

model = Model(args)
'''


def test_storing_a_python_value_into_an_argument_does_not_taint_it() -> None:
    """``args.batch_size = 1`` inside the constructor stores a Python value: ``args`` stays a
    Python value (safe fix); storing a tensor of a variable there declines, naming ``args``."""
    source = ARGS.format(stored="1")
    _, found = _run(source)
    assert _safe_rewrite(source), found
    source = ARGS.format(stored="tf.reduce_sum(w0)")
    code, found = _run(source)
    assert code == source
    assert any(c == "TFC202" and "`args`" in message for c, _, message in found), found


# -- h. a name rebound later in the block ends its history (the backward slice) ---------------

SECTIONS = '''import numpy as np
import tensorflow.compat.v1 as tf

x = tf.placeholder(tf.float32, [None, 3])
A = tf.Variable(tf.ones([3, 1]))
out = tf.matmul(x, A)
loss = tf.reduce_mean(tf.square(out))
first_step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
sess = tf.Session()
sess.run(tf.global_variables_initializer())
sess.run(first_step, feed_dict={{x: np.ones((2, 3))}})

{rebind}
xent = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(logits=out, labels=tf.ones_like(out)))
second_step = tf.train.GradientDescentOptimizer(0.05).minimize(xent)
'''

REBOUND = '''x = tf.placeholder(tf.float32, [None, 3])
A = tf.Variable(tf.zeros([3, 1]))
out = tf.add(tf.matmul(x, A), 1.0)'''




def test_names_rebound_in_a_later_section_leave_the_first_section_outside_the_tape() -> None:
    """The cookbook's two examples in one file: the second loss reads only names the second
    section rebinds, so the first section's `minimize` (and the session feeding its old
    placeholder) are not among the statements that compute it, and the second site is rewritten."""
    source = SECTIONS.format(rebind=REBOUND)
    code, found = _run(source)
    assert not any(c == "TFC202" and "another gradient computation" in m for c, _, m in found), found
    assert code.count("tf.GradientTape()") == 2, code


@pytest.mark.parametrize("rebind, why", [
    # `out` is not rebound: the second loss still reads the first section's tensor
    ("x = tf.placeholder(tf.float32, [None, 3])", "out"),
    # the rebinding runs only under a condition: the first `out` may reach the loss
    ("if np.ones(1)[0] > 0:\n    " + REBOUND.replace("\n", "\n    "), "conditional"),
    # the new `out` is the old object under another name (an alias, not a new value)
    ("kept = out\nout = kept", "alias"),
])
def test_a_name_not_certainly_rebound_keeps_its_history(rebind: str, why: str) -> None:
    """Only a plain assignment at the block's level of a new value ends a name's history; when the
    second loss may still read the first section's values, the first `minimize` is among the
    statements the tape must wrap and the decline says so."""
    source = SECTIONS.format(rebind=rebind)
    _, found = _run(source)
    assert any(c == "TFC202" and "another gradient computation" in m for c, _, m in found), (why, found)


# -- i. which variables a var_list holds ------------------------------------------------------

TRAINABLE_HEAD = '''import tensorflow.compat.v1 as tf

x = tf.placeholder(tf.float32, [None, 3])
'''

VAR_LISTS = {
    # one name bound to a trainable variable in two notebook sections
    "rebound_variables": '''w2 = tf.Variable(tf.ones([3, 1]), name="w2")
w2 = tf.Variable(tf.zeros([3, 1]), name="w2b")
loss = tf.reduce_mean(tf.matmul(x, w2))
train_vars = [w2]
''',
    # items of dicts of trainable variables
    "dict_items": '''weights = {"h": tf.Variable(tf.ones([3, 4])), "out": tf.Variable(tf.ones([4, 1]))}
loss = tf.reduce_mean(tf.matmul(tf.matmul(x, weights["h"]), weights["out"]))
train_vars = [weights["h"], weights["out"]]
''',
    # a field every store of which is a filter of tf.trainable_variables()
    "field": '''w2 = tf.get_variable("d_w", [3, 1])
loss = tf.reduce_mean(tf.matmul(x, w2))


class Sets(object):
    pass


sets = Sets()
sets.d_vars = [v for v in tf.trainable_variables() if "d_" in v.name]
''',
}

NOT_TRAINABLE = {
    "rebound_variables": ('w2 = tf.Variable(tf.zeros([3, 1]), name="w2b")',
                          'w2 = tf.Variable(tf.zeros([3, 1]), name="w2b", trainable=False)', "trainable"),
    "dict_items": ('train_vars = [weights["h"], weights["out"]]',
                   'weights["out"] = tf.Variable(tf.ones([4, 1]), trainable=False)\n'
                   'train_vars = [weights["h"], weights["out"]]', "trainable"),
    "field": ('sets.d_vars = [v',
              'sets.d_vars = [tf.Variable(1.0, trainable=False)]\nsets.d_vars.append(tf.Variable(1.0, trainable=False))\n'
              'sets.d_vars = [v', "changed in place"),
}


def _minimize(form: str) -> str:
    var_list = "sets.d_vars" if form == "field" else "train_vars"
    return f"train_op = tf.train.AdamOptimizer(0.1).minimize(loss, var_list={var_list})\n"


@pytest.mark.parametrize("form", sorted(VAR_LISTS))
def test_var_lists_proven_trainable_are_rewritten(form: str) -> None:
    """A var_list of variables bound only to trainable variables (every binding of a name, the
    items of a dict nothing changes, a field every store of which is trainable) is what a tape
    watches: the site is rewritten."""
    source = TRAINABLE_HEAD + VAR_LISTS[form] + _minimize(form)
    code, found = _run(source)
    assert "tf.GradientTape()" in code, found
    assert not any(c == "TFC202" for c, _, _ in found), found


@pytest.mark.parametrize("form", sorted(NOT_TRAINABLE))
def test_var_lists_that_may_hold_a_non_trainable_variable_decline(form: str) -> None:
    """The same forms with a binding, an item store or an append of a non-trainable variable: `minimize`
    would differentiate it and a tape would not, so the site declines and says why."""
    old, new, why = NOT_TRAINABLE[form]
    body = VAR_LISTS[form].replace(old, new)
    assert body != VAR_LISTS[form]
    source = TRAINABLE_HEAD + body + _minimize(form)
    code, found = _run(source)
    assert code == source
    assert any(c == "TFC202" and why in m for c, _, m in found), found


# -- j. the reference-variable gate names what it found ---------------------------------------

@pytest.mark.parametrize("flag, declined", [("True", False), ("False", True), ("FLAGS.resource", True)])
def test_use_resource_true_makes_resource_variables(flag: str, declined: bool) -> None:
    """`use_resource=True` asks for the resource variables a tape watches (no decline); any other
    value may make TF 1 reference variables, and the decline quotes that keyword."""
    source = f'''import tensorflow.compat.v1 as tf

x = tf.placeholder(tf.float32, [None, 3])
with tf.variable_scope("m", use_resource={flag}):
    w = tf.get_variable("w", [3, 1])
loss = tf.reduce_sum(tf.matmul(x, w))
train_op = tf.train.AdamOptimizer(0.1).minimize(loss)
'''
    code, found = _run(source)
    reasons = [m for c, _, m in found if c == "TFC202"]
    if declined:
        assert code == source and any("`use_resource=` other than `True`" in m for m in reasons), found
    else:
        assert "tf.GradientTape()" in code and not reasons, found


def test_the_reference_variable_gate_names_the_switch() -> None:
    """`disable_v2_behavior()` is named as the cause, not a list of every switch the gate knows."""
    source = "import tensorflow.compat.v1 as tf\n\ntf.disable_v2_behavior()\n" + HEAD.split("\n", 2)[2] + \
        "loss = tf.reduce_sum(tf.matmul(x, w))\ntrain_op = tf.train.AdamOptimizer(0.1).minimize(loss)\n"
    _, found = _run(source)
    assert any(c == "TFC202" and "reference variables (`tf.disable_v2_behavior()`)" in m for c, _, m in found), found


# -- k. a TF optimizer's gradient methods only read the lists they are given --------------------

GAN_DICTS = '''import tensorflow.compat.v1 as tf

x = tf.placeholder(tf.float32, [None, 3])
weights = {"g": tf.Variable(tf.ones([3, 3])), "d": tf.Variable(tf.ones([3, 1]))}
fake = tf.tanh(tf.matmul(x, weights["g"]))
g_loss = -tf.reduce_mean(tf.matmul(fake, weights["d"]))
d_loss = tf.reduce_mean(tf.matmul(x, weights["d"])) + tf.reduce_mean(tf.matmul(fake, weights["d"]))
{g_opt}
d_opt = tf.train.AdamOptimizer(0.1)
g_vars = [weights["g"]]
d_vars = [weights["d"]]
train_g = g_opt.minimize(g_loss, var_list=g_vars)
train_d = d_opt.minimize(d_loss, var_list=d_vars)
'''


def test_a_tf_optimizers_minimize_does_not_change_its_var_list() -> None:
    """The second GAN site: `g_opt.minimize(..., var_list=g_vars)` between the losses and the site
    reads `g_vars` (and through it `weights`) without changing them, so it is not blamed."""
    code, found = _run(GAN_DICTS.replace("{g_opt}", "g_opt = tf.train.AdamOptimizer(0.1)"))
    assert code.count(".gradient(") == 2, found
    assert not any(c == "TFC202" for c, _, _ in found), found


def test_a_minimize_method_of_an_unknown_object_may_change_its_arguments() -> None:
    """The same call on an object of a class of this file whose `minimize` appends to the list it
    is given: the list (and `weights`, which it aliases) may change, and that call is blamed."""
    g_opt = '''class Wrapper(object):
    def minimize(self, loss, var_list):
        var_list.append(tf.Variable(1.0, trainable=False))
        return tf.no_op()


g_opt = Wrapper()'''
    _, found = _run(GAN_DICTS.replace("{g_opt}", g_opt))
    assert any(c == "TFC202" and "g_opt.minimize" in m for c, _, m in found), found
