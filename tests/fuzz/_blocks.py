"""The model half of the fuzz grammar: building blocks that turn a tensor into a tensor.

Each block is a function ``block(g, h, width) -> (lines, out, out_width)``: ``g`` is the
:class:`~tests.fuzz.generator.Gen` state (random source, fresh names, block tags), ``h`` the name
of the input tensor (``[batch, width]`` float32), ``lines`` the statements to emit (unindented;
the caller places them at module level, in a helper function or in a method), ``out`` the name of
the output tensor. Every block tags itself (``g.tag("layers_dense")``) so that the self-test can
check that the CI seed produces each one.

Blocks only use TF 1.15 API that also runs on TF 2.21 as ``tf.compat.v1`` (plus the stand-ins of
``_tf1_layers`` for ``tf.layers`` / ``tf.nn.rnn_cell``). Random initializers always carry an
op-level seed, so the before and after programs start from identical weights whatever else the
rewrite adds to the graph.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Tuple

Block = Callable[..., Tuple[List[str], str, int]]


def initializer(g) -> str:
    """A ``get_variable`` initializer keyword (seeded), as TF1 code spelled it."""
    seed = g.rng.randint(1, 99)
    return g.rng.choice([
        f"initializer=tf.glorot_uniform_initializer(seed={seed})",
        f"initializer=tf.truncated_normal_initializer(stddev=0.3, seed={seed})",
        f"initializer=tf.random_normal_initializer(stddev=0.3, seed={seed})",
        f"initializer=tf.random_uniform_initializer(-0.4, 0.4, seed={seed})",
        "initializer=tf.constant_initializer(0.1)",
    ])


def new_weight(g, shape: Tuple[int, int], prefix: str = "w") -> Tuple[List[str], str]:
    """Create one weight variable in one of the TF1 spellings (maybe with a regularizer)."""
    name = g.new(prefix)
    seed = g.rng.randint(1, 99)
    form = g.rng.random()
    if form < 0.55:
        extra = ""
        if g.rng.random() < 0.25:
            g.tag("regularizer")
            reg = g.rng.choice(["tf.keras.regularizers.l2(0.01)", "tf.contrib.layers.l2_regularizer(0.01)"])
            if "contrib" in reg:
                g.tag("contrib_l2_regularizer")
            extra = f", regularizer={reg}"
            g.has_regularizer = True
        line = f'{name} = tf.get_variable("{name}", [{shape[0]}, {shape[1]}], {initializer(g)}{extra})'
    elif form < 0.85:
        line = (f'{name} = tf.Variable(tf.truncated_normal([{shape[0]}, {shape[1]}], stddev=0.3, seed={seed}), '
                f'name="{name}")')
    else:
        line = (f'{name} = tf.Variable(np.random.RandomState({seed}).uniform(-0.5, 0.5, ({shape[0]}, {shape[1]}))'
                f'.astype(np.float32), name="{name}")')
    return [line], name


def raw_matmul(g, h: str, width: int):
    g.tag("raw_matmul")
    units = g.rng.choice([3, 4, 5])
    lines, w = new_weight(g, (width, units))
    b = g.new("b")
    lines.append(f'{b} = tf.Variable(tf.zeros([{units}]), name="{b}")')
    out = g.new("h")
    act = g.rng.choice(["tf.nn.relu", "tf.tanh", "tf.nn.sigmoid", "tf.nn.elu", "tf.nn.softplus", ""])
    if g.rng.random() < 0.3:
        lines.append(f"{out} = {act}(tf.nn.bias_add(tf.matmul({h}, {w}), {b}))")
    else:
        lines.append(f"{out} = {act}(tf.matmul({h}, {w}) + {b})")
    return lines, out, units


def layers_dense(g, h: str, width: int):
    g.tag("layers_dense")
    units = g.rng.choice([3, 4])
    out = g.new("h")
    act = g.rng.choice(["tf.nn.relu", "tf.tanh", "None"])
    init = f"kernel_initializer=tf.glorot_uniform_initializer(seed={g.rng.randint(1, 99)})"
    reg = ""
    if g.rng.random() < 0.2:
        g.tag("regularizer")
        g.has_regularizer = True
        reg = ", kernel_regularizer=tf.keras.regularizers.l2(0.01)"
    return [f"{out} = tf.layers.dense({h}, {units}, activation={act}, {init}{reg})"], out, units


def layers_conv2d(g, h: str, width: int):
    g.tag("layers_conv2d")
    img, out = g.new("img"), g.new("h")
    init = f"kernel_initializer=tf.glorot_uniform_initializer(seed={g.rng.randint(1, 99)})"
    return [
        f"{img} = tf.reshape({h}, [-1, {width}, 1, 1])",
        f"{img} = tf.layers.conv2d({img}, 2, (2, 1), activation=tf.nn.relu, {init})",
        f"{out} = tf.reshape({img}, [-1, {2 * (width - 1)}])",
    ], out, 2 * (width - 1)


def layers_batch_norm(g, h: str, width: int):
    g.tag("batch_norm")
    g.has_update_ops = True
    out = g.new("h")
    if g.rng.random() < 0.6:
        g.tag("layers_batch_norm")
        return [f"{out} = tf.layers.batch_normalization({h}, training=True)"], out, width
    g.tag("keras_batch_norm")
    return [f"{out} = tf.keras.layers.BatchNormalization()({h}, training=True)"], out, width


def layers_dropout(g, h: str, width: int):
    out = g.new("h")
    seed = g.rng.randint(1, 99)
    choice = g.rng.random()
    if choice < 0.5:
        g.tag("layers_dropout")
        return [f"{out} = tf.layers.dropout({h}, rate=0.25, training=True, seed={seed})"], out, width
    g.tag("nn_dropout")
    return [f"{out} = tf.nn.dropout({h}, rate=0.25, seed={seed})"], out, width


def keras_dense(g, h: str, width: int):
    g.tag("keras_dense")
    units = g.rng.choice([3, 4])
    out = g.new("h")
    act = g.rng.choice(['"tanh"', '"relu"', "None", "tf.keras.activations.sigmoid"])
    layer = f"tf.keras.layers.Dense({units}, activation={act})"
    if g.rng.random() < 0.4:
        obj = g.new("dense_layer")
        return [f"{obj} = {layer}", f"{out} = {obj}({h})"], out, units
    return [f"{out} = {layer}({h})"], out, units


def keras_activation(g, h: str, width: int):
    g.tag("keras_activation")
    lines, w = new_weight(g, (width, width))
    out = g.new("h")
    fn = g.rng.choice(["sigmoid", "tanh", "relu", "softsign"])
    lines.append(f"{out} = tf.keras.activations.{fn}(tf.matmul({h}, {w}))")
    return lines, out, width


def keras_backend_dot(g, h: str, width: int):
    g.tag("keras_backend_dot")
    units = g.rng.choice([3, 4])
    lines, w = new_weight(g, (width, units))
    out = g.new("h")
    lines.append(f"{out} = tf.tanh(tf.keras.backend.dot({h}, {w}))")
    return lines, out, units


def convert_to_tensor(g, h: str, width: int):
    g.tag("convert_to_tensor")
    lines, w = new_weight(g, (width, width))
    k, out = g.new("k"), g.new("h")
    lines += [f"{k} = tf.convert_to_tensor({w})", f"{out} = tf.nn.relu(tf.matmul({h}, {k}))"]
    return lines, out, width


def stop_gradient(g, h: str, width: int):
    g.tag("stop_gradient")
    lines, w = new_weight(g, (width, width))
    out = g.new("h")
    lines.append(f"{out} = {h} + tf.stop_gradient(tf.matmul({h}, {w})) + 0.1 * tf.matmul({h}, {w})")
    return lines, out, width


def gradient_override(g, h: str, width: int):
    lines, w = new_weight(g, (width, width))
    out = g.new("h")
    graph = g.new("graph")
    lines.append(f"{graph} = tf.get_default_graph()")
    if g.rng.random() < 0.5:
        g.tag("straight_through")
        lines += [f'with {graph}.gradient_override_map({{"Sign": "Identity"}}):',
                  f"    {out} = tf.sign(tf.matmul({h}, {w})) + 0.5 * tf.matmul({h}, {w})"]
    else:
        g.tag("gradient_reversal")
        lines += [f'with {graph}.gradient_override_map({{"Identity": "Neg"}}):',
                  f"    {out} = tf.identity(tf.tanh(tf.matmul({h}, {w})))"]
    return lines, out, width


def variable_scope_reuse(g, h: str, width: int):
    g.tag("variable_scope_reuse")
    fn, scope = g.new("shared_layer"), g.new("shared")
    a, b, out = g.new("a"), g.new("b"), g.new("h")
    init = initializer(g)
    reuse = g.rng.choice(["reuse=True", "reuse=tf.AUTO_REUSE"])
    first = "reuse=tf.AUTO_REUSE" if reuse.endswith("AUTO_REUSE") else ""
    g.tag("auto_reuse" if first else "reuse_true")
    sep = ", " if first else ""
    return [
        f"def {fn}(inp):",
        f'    v = tf.get_variable("v", [{width}, {width}], {init})',
        "    return tf.tanh(tf.matmul(inp, v))",
        "",
        "",
        f'with tf.variable_scope("{scope}"{sep}{first}):',
        f"    {a} = {fn}({h})",
        f'with tf.variable_scope("{scope}", {reuse}):',
        f"    {b} = {fn}({h} * 0.5)",
        f"{out} = {a} + {b}",
    ], out, width


def reference_variable(g, h: str, width: int):
    g.tag("use_resource_false")
    out = g.new("h")
    name = g.new("ref_w")
    if g.rng.random() < 0.5:
        scope = g.new("ref")
        lines = [f'with tf.variable_scope("{scope}", use_resource=False):',
                 f'    {name} = tf.get_variable("{name}", [{width}, {width}], {initializer(g)})']
    else:
        lines = [f'{name} = tf.Variable(tf.truncated_normal([{width}, {width}], stddev=0.3, seed=5), '
                 f'use_resource=False, name="{name}")']
    lines.append(f"{out} = tf.tanh(tf.matmul({h}, {name}))")
    return lines, out, width


def non_trainable(g, h: str, width: int):
    out, s = g.new("h"), g.new("scale")
    form = g.rng.randrange(3)
    if form == 0:
        g.tag("non_trainable_keyword")
        lines = [f'{s} = tf.get_variable("{s}", [{width}], initializer=tf.constant_initializer(1.5), trainable=False)']
    elif form == 1:
        g.tag("non_trainable_positional")
        lines = [f'{s} = tf.Variable(tf.fill([{width}], 1.5), False, name="{s}")']
    else:
        g.tag("non_trainable_positional")
        lines = [f'{s} = tf.get_variable("{s}", [{width}], tf.float32, tf.constant_initializer(1.5), None, False)']
    if g.rng.random() < 0.4:
        key = g.rng.choice(["TRAINABLE_VARIABLES", "TRAINABLE_RESOURCE_VARIABLES"])
        g.tag("collection_" + key.lower())
        lines.append(f"tf.add_to_collection(tf.GraphKeys.{key}, {s})")
    lines.append(f"{out} = {h} * {s}")
    return lines, out, width


def dynamic_rnn(g, h: str, width: int):
    g.tag("dynamic_rnn")
    cell_cls = g.rng.choice(["BasicRNNCell", "GRUCell", "LSTMCell", "BasicLSTMCell"])
    g.tag("rnn_" + cell_cls)
    seq, cell, outs, state, out = g.new("seq"), g.new("cell"), g.new("outputs"), g.new("state"), g.new("h")
    last = f"{state}.h" if "LSTM" in cell_cls else state
    lines = [f"{seq} = tf.reshape({h}, [-1, {width}, 1])",
             f"{cell} = tf.nn.rnn_cell.{cell_cls}(3)"]
    scope = f', scope="{g.new("rnn")}"' if g.rng.random() < 0.3 else ""
    lines.append(f"{outs}, {state} = tf.nn.dynamic_rnn({cell}, {seq}, dtype=tf.float32{scope})")
    lines.append(f"{out} = {last}")
    return lines, out, 3


def while_loop(g, h: str, width: int):
    g.tag("while_loop")
    g.uses_control_flow = True
    lines, w = new_weight(g, (width, width))
    i, body, out = g.new("i"), g.new("body"), g.new("h")
    lines += [
        f"def {body}({i}, acc):",
        f"    return {i} + 1, tf.tanh(tf.matmul(acc, {w}))",
        "",
        "",
        f"_, {out} = tf.while_loop(lambda {i}, acc: {i} < 2, {body}, [tf.constant(0), {h}])",
    ]
    return lines, out, width


def map_fn(g, h: str, width: int):
    g.tag("map_fn")
    g.uses_control_flow = True
    lines, w = new_weight(g, (width, width))
    out = g.new("h")
    lines.append(f"{out} = tf.map_fn(lambda row: tf.tanh(tf.matmul(row[None, :], {w}))[0], {h})")
    return lines, out, width


def cond_model(g, h: str, width: int):
    g.tag("cond_model")
    g.uses_control_flow = True
    lines, w = new_weight(g, (width, width))
    out = g.new("h")
    flag = g.rng.choice(["tf.constant(True)", "tf.reduce_sum(" + h + ") > -1e9"])
    lines.append(f"{out} = tf.cond({flag}, lambda: tf.tanh(tf.matmul({h}, {w})), "
                 f"lambda: tf.nn.relu(tf.matmul({h}, {w})))")
    return lines, out, width


def clip_activation(g, h: str, width: int):
    g.tag("lookalike_clip_activation")
    out = g.new("h")
    return [f"{out} = tf.clip_by_value({h}, -2.0, 2.0)"], out, width


# name -> (block, weight). Weights favour blocks the current planner accepts (raw ops, Keras and
# tf.layers calls) so that most programs are rewritten; the hazards still come often.
MODEL_BLOCKS: Dict[str, Tuple[Block, float]] = {
    "raw_matmul": (raw_matmul, 6.0),
    "layers_dense": (layers_dense, 2.0),
    "layers_conv2d": (layers_conv2d, 0.6),
    "batch_norm": (layers_batch_norm, 0.8),
    "dropout": (layers_dropout, 0.8),
    "keras_dense": (keras_dense, 2.0),
    "keras_activation": (keras_activation, 1.0),
    "keras_backend_dot": (keras_backend_dot, 0.8),
    "convert_to_tensor": (convert_to_tensor, 0.8),
    "stop_gradient": (stop_gradient, 0.6),
    "gradient_override": (gradient_override, 0.6),
    "variable_scope_reuse": (variable_scope_reuse, 0.8),
    "reference_variable": (reference_variable, 0.4),
    "non_trainable": (non_trainable, 0.8),
    "dynamic_rnn": (dynamic_rnn, 0.8),
    "while_loop": (while_loop, 0.6),
    "map_fn": (map_fn, 0.4),
    "cond_model": (cond_model, 0.5),
    "clip_activation": (clip_activation, 0.4),
}

# Blocks that define a nested ``def``: never placed inside a class body method (kept simple).
NEEDS_MODULE_LEVEL = {"variable_scope_reuse", "while_loop"}
