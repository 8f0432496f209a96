"""The fourth round's productions (issue 25, precision): values the planner now proves, so that
the fuzzer runs the rewrites they unlock.

Each graph block ``block(g, h, width) -> (lines, out, out_width)`` follows ``_blocks``' contract
(its lines may sit at module level, in a function or in ``__init__``):

* a parameter used as a callee (``activation(h)``) of a local helper, bound by its callers to a TF
  function, ``None``, a local function or a lambda;
* Python values: literal arithmetic, ``len``/``range``/``float``/``int``, a NumPy array, ``.shape``,
  string formatting, a local config class whose field is copied from another instance;
* a TF module alias (``nn = tf.nn``, ``layers_mod = tf.layers``) called through;
* a dict of variables passed to local functions that only read it.

Every choice draws from the fourth stream ``g.r4`` (``"seed:index:round4"``), so a program these
productions leave alone is byte-identical to the third round's.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

# The share of model bodies that start with one of these blocks.
GRAPH_SHARE = 0.2


def weight(g, shape: Tuple[int, int], prefix: str, rng=None) -> Tuple[List[str], str]:
    """A ``get_variable`` with a seeded uniform initializer; the seed from ``rng`` (this
    module's stream ``g.r4`` by default)."""
    name = g.new(prefix)
    seed = (rng or g.r4).randint(1, 99)
    return [f'{name} = tf.get_variable("{name}", [{shape[0]}, {shape[1]}], '
            f'initializer=tf.random_uniform_initializer(-0.4, 0.4, seed={seed}))'], name


def param_callee(g, h: str, width: int):
    g.tag("precision_param_callee")
    fn, act_fn = g.new("apply_act"), g.new("act_fn")
    lines, w1 = weight(g, (width, width), "w_act")
    more, w2 = weight(g, (width, width), "w_act")
    lines += more
    choice = g.r4.randrange(4)
    pre: List[str] = []
    if choice == 0:
        g.tag("precision_param_callee_tf")
        arg = g.r4.choice(["tf.nn.relu", "tf.tanh", "tf.nn.sigmoid"])
    elif choice == 1:
        g.tag("precision_param_callee_local")
        pre = [f"def {act_fn}(t):", "    return tf.nn.relu(t) * 0.5 + 0.1 * t"]
        arg = act_fn
    elif choice == 2:
        g.tag("precision_param_callee_lambda")
        arg = "lambda t: tf.tanh(t) * 1.5"
    else:
        g.tag("precision_param_callee_none")
        arg = "None"
    h1, out = g.new("h"), g.new("h")
    lines = pre + [f"def {fn}(t, v, activation=None):",
                   "    t = tf.matmul(t, v)",
                   "    if activation is not None:",
                   "        t = activation(t)",
                   "    return t"] + lines + [
        f"{h1} = {fn}({h}, {w1}, activation={arg})",
        f"{out} = tf.tanh({fn}({h1}, {w2}))"]
    return lines, out, width


def python_values(g, h: str, width: int):
    g.tag("precision_python_values")
    cls, cfg, arr, name = g.new("Cfg"), g.new("cfg"), g.new("gain_np"), g.new("w_name")
    w, out = g.new("w_pv"), g.new("h")
    lines = [f"class {cls}(object):",
             f"    hidden = {width}",
             "    def __init__(self, base=None):",
             f"        self.gain = {g.r4.choice(['0.5', '0.75', '1.25'])} if base is None else base.gain",
             "        self.steps = 2 * 3 - 4 if base is None else base.steps",
             f"{cfg} = {cls}({cls}())",
             f"{arr} = np.linspace(0.5, 1.5, {width}).astype(np.float32)",
             f'{name} = "{w}_{{}}_{{}}".format({cfg}.hidden, len(range({cfg}.steps)))']
    lines.append(f'{w} = tf.get_variable({name}, [{arr}.shape[0], {cfg}.hidden], '
                 f'initializer=tf.random_uniform_initializer(-0.4, 0.4, seed={g.r4.randint(1, 99)}))')
    scale = f"{cfg}.gain * float({cfg}.hidden) / int({width})"
    lines.append(f"{out} = tf.tanh(tf.matmul({h} * {arr}, {w}) * {scale})")
    return lines, out, width


def module_alias(g, h: str, width: int):
    g.tag("precision_module_alias")
    out = g.new("h")
    if g.r4.random() < 0.5:
        g.tag("precision_module_alias_nn")
        alias = g.new("nn_mod")
        lines, w = weight(g, (width, width), "w_alias")
        lines = [f"{alias} = tf.nn"] + lines + [f"{out} = {alias}.relu(tf.matmul({h}, {w})) + 0.1 * {h}"]
    else:
        g.tag("precision_module_alias_layers")
        alias = g.new("layers_mod")
        lines = [f"{alias} = tf.layers",
                 f"{out} = {alias}.dense({h}, {width}, activation=tf.tanh, "
                 f"kernel_initializer=tf.glorot_uniform_initializer(seed={g.r4.randint(1, 99)}))"]
    return lines, out, width


def dict_of_weights(g, h: str, width: int):
    g.tag("precision_dict_of_weights")
    ws, bs, fn, pool = g.new("wdict"), g.new("bdict"), g.new("dense_fn"), g.new("scale_fn")
    h1, out = g.new("h"), g.new("h")
    seed1, seed2 = g.r4.randint(1, 99), g.r4.randint(1, 99)
    lines = [f"def {fn}(t, v, b):",
             "    return tf.nn.relu(tf.matmul(t, v) + b)",
             f"def {pool}(t, k=2):",
             "    return t * float(k) * 0.5",
             f"{ws} = {{'a': tf.Variable(tf.random_uniform([{width}, {width}], -0.4, 0.4, seed={seed1})), "
             f"'b': tf.Variable(tf.random_uniform([{width}, {width}], -0.4, 0.4, seed={seed2}))}}",
             f"{bs} = {{'a': tf.Variable(tf.zeros([{width}])), 'b': tf.Variable(tf.zeros([{width}]))}}",
             f"{h1} = {fn}({h}, {ws}['a'], {bs}['a'])",
             f"{h1} = {pool}({h1}, k=2)",
             f"{out} = tf.tanh(tf.matmul({h1}, {ws}['b']) + {bs}['b'])"]
    return lines, out, width


PRECISION_BLOCKS: Dict[str, Tuple[object, float]] = {
    "param_callee": (param_callee, 1.4),
    "python_values": (python_values, 1.0),
    "module_alias": (module_alias, 0.8),
    "dict_of_weights": (dict_of_weights, 0.8),
}


def precision_block(g, h: str, width: int):
    """One block of :data:`PRECISION_BLOCKS`, chosen from the fourth stream."""
    names = list(PRECISION_BLOCKS)
    name = g.r4.choices(names, weights=[PRECISION_BLOCKS[n][1] for n in names])[0]
    return PRECISION_BLOCKS[name][0](g, h, width)  # type: ignore[operator]


PRECISION_TAGS = frozenset({
    "precision_param_callee", "precision_param_callee_tf", "precision_param_callee_local",
    "precision_param_callee_lambda", "precision_param_callee_none", "precision_python_values",
    "precision_module_alias", "precision_module_alias_nn", "precision_module_alias_layers",
    "precision_dict_of_weights",
})
