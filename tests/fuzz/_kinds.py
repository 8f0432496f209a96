"""The third round's productions (issue 25): values whose *kind* the planner must not guess.

Each graph block ``block(g, h, width) -> (lines, out, out_width)`` follows ``_blocks``' contract
and is placed *first* in a model body, so that under a module-level model its statements come
before everything else the loss needs: a planner that takes one of these values for a variable
object (or for gradient-free) leaves it above ``with tf.GradientTape()`` and the weights it reads
stop training. The classes:

* A -- objects built by a TF constructor from tensors: ``tf.distributions.Normal/Categorical``,
  ``tf.Print`` (also rebinding the variable's own name), ``tf.nn.rnn_cell.LSTMStateTuple``, and
  another constructor the planner has no entry for (``tf.TensorArray``);
* B -- a slice, an item, a gather or a method read of a variable (``pos = wpe[:2]``,
  ``go = embedding[GO_ID]``, ``w.value()``);
* C -- APIs that create cached reads while the tape is paused: ``tf.nn.static_rnn``,
  ``tf.nn.static_bidirectional_rnn``, ``variable_scope(..., caching_device=...)``.

Every choice here draws from the third stream ``g.r3`` (``"seed:index:round3"``), so a program
the new productions leave alone is byte-identical to the second round's.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

# The share of model bodies that start with one of these blocks, and of eager programs that use one.
GRAPH_SHARE = 0.28
EAGER_SHARE = 0.35


def _weight(g, shape: Tuple[int, int], prefix: str) -> Tuple[List[str], str]:
    name = g.new(prefix)
    seed = g.r3.randint(1, 99)
    if g.r3.random() < 0.5:
        return [f'{name} = tf.get_variable("{name}", [{shape[0]}, {shape[1]}], '
                f'initializer=tf.random_uniform_initializer(-0.4, 0.4, seed={seed}))'], name
    return [f'{name} = tf.Variable(tf.truncated_normal([{shape[0]}, {shape[1]}], stddev=0.3, seed={seed}), '
            f'name="{name}")'], name


def distribution(g, h: str, width: int):
    g.tag("kinds_distribution")
    lines, w = _weight(g, (width, width), "w_dist")
    dist, out = g.new("dist"), g.new("h")
    if g.r3.random() < 0.5:
        g.tag("kinds_distribution_normal")
        lines += [f"{dist} = tf.distributions.Normal(loc=tf.matmul({h}, {w}), scale=1.0)",
                  f"{out} = tf.tanh({dist}.mean())"]
    else:
        g.tag("kinds_distribution_categorical")
        logits = g.new("logits")
        lines += [f"{logits} = tf.matmul({h}, {w})",
                  f"{dist} = tf.distributions.Categorical(logits={logits})",
                  f"{out} = {h} + {dist}.probs"]
    return lines, out, width


def print_wrapper(g, h: str, width: int):
    g.tag("kinds_print")
    lines, w = _weight(g, (width, width), "w_print")
    out = g.new("h")
    form = g.r3.choice([0, 1, 1, 2])
    if form == 0:
        g.tag("kinds_print_rebinds_variable")  # `W = tf.Print(W, [W])`
        lines += [f'{w} = tf.Print({w}, [tf.reduce_sum({w})], "{w}: ", summarize=1)',
                  f"{out} = tf.tanh(tf.matmul({h}, {w}))"]
    elif form == 1:
        g.tag("kinds_print_tensor")
        mm = g.new("mm")
        lines += [f'{mm} = tf.Print(tf.matmul({h}, {w}), [tf.reduce_sum({w})], "mm: ", summarize=1)',
                  f"{out} = tf.tanh({mm})"]
    else:
        g.tag("kinds_identity")
        read = g.new("w_read")
        lines += [f"{read} = tf.identity({w})", f"{out} = tf.tanh(tf.matmul({h}, {read}))"]
    return lines, out, width


def state_tuple(g, h: str, width: int):
    g.tag("kinds_state_tuple")
    lines, w = _weight(g, (width, width), "w_state")
    state, out = g.new("state"), g.new("h")
    lines.append(f"{state} = tf.nn.rnn_cell.LSTMStateTuple(tf.tanh(tf.matmul({h}, {w})), {h})")
    form = g.r3.randrange(3)
    if form == 0:
        lines.append(f"{out} = {state}.c + 0.5 * {state}.h")
    elif form == 1:
        c, hh = g.new("c"), g.new("hh")
        lines += [f"{c}, {hh} = {state}", f"{out} = {c} * {hh} + {c}"]
    else:
        lines.append(f"{out} = tf.add_n(list({state}))")
    return lines, out, width


def variable_slice(g, h: str, width: int):
    g.tag("kinds_variable_slice")
    form = g.r3.randrange(4)
    out = g.new("h")
    if form == 0:
        g.tag("kinds_slice")  # GPT-2's `wpe[:n_ctx]`
        lines, wpe = _weight(g, (width + 2, width), "wpe")
        pos = g.new("pos")
        lines += [f"{pos} = {wpe}[:2]", f"{out} = {h} + tf.reduce_mean({pos}, 0)"]
    elif form == 1:
        g.tag("kinds_item")  # seq2seq's `embedding[GO_ID]`
        lines, emb = _weight(g, (width + 2, width), "embedding")
        go = g.new("go")
        lines = ["GO_ID = 1"] + lines + [f"{go} = {emb}[GO_ID]", f"{out} = tf.tanh({h} + {go})"]
    elif form == 2:
        g.tag("kinds_gather")
        lines, emb = _weight(g, (width + 2, width), "embedding")
        rows = g.new("rows")
        lines += [f"{rows} = tf.gather({emb}, [0, 2])", f"{out} = {h} * tf.reduce_sum({rows}, 0)"]
    else:
        g.tag("kinds_variable_method")
        lines, w = _weight(g, (width, width), "w_value")
        val = g.new("w_val")
        lines += [f"{val} = {w}.value()", f"{out} = tf.tanh(tf.matmul({h}, {val}))"]
    return lines, out, width


def static_rnn(g, h: str, width: int):
    g.tag("kinds_static_rnn")
    cell_cls = g.r3.choice(["BasicRNNCell", "GRUCell", "LSTMCell"])
    seq, cell, outs, state, out = g.new("steps"), g.new("cell"), g.new("outputs"), g.new("state"), g.new("h")
    lines = [f"{seq} = tf.unstack(tf.reshape({h}, [-1, {width}, 1]), axis=1)",
             f"{cell} = tf.nn.rnn_cell.{cell_cls}(3)"]
    scope = g.new("static_rnn")
    if g.r3.random() < 0.6:
        lines.append(f'{outs}, {state} = tf.nn.static_rnn({cell}, {seq}, dtype=tf.float32, scope="{scope}")')
        lines.append(f"{out} = {outs}[-1]")
        return lines, out, 3
    g.tag("kinds_static_bidirectional_rnn")
    cell_bw = g.new("cell_bw")
    lines += [f"{cell_bw} = tf.nn.rnn_cell.{cell_cls}(3)",
              f"{outs}, _, _ = tf.nn.static_bidirectional_rnn({cell}, {cell_bw}, {seq}, dtype=tf.float32, "
              f'scope="{scope}")',
              f"{out} = {outs}[-1]"]
    return lines, out, 6


def caching_device(g, h: str, width: int):
    g.tag("kinds_caching_device")
    scope = g.new("cached")
    w_lines, w = _weight(g, (width, width), "w_cached")
    out = g.new("h")
    lines = [f'with tf.variable_scope("{scope}", caching_device="/cpu:0"):'] + ["    " + ln for ln in w_lines]
    if g.r3.random() < 0.5:
        lines.append(f"    {out} = tf.tanh(tf.matmul({h}, {w}))")
    else:
        lines.append(f"{out} = tf.tanh(tf.matmul({h}, {w}))")
    return lines, out, width


def tensor_array(g, h: str, width: int):
    g.tag("kinds_unknown_constructor")
    lines, w = _weight(g, (width, width), "w_ta")
    ta, out = g.new("ta"), g.new("h")
    lines += [f"{ta} = tf.TensorArray(tf.float32, size=2)",
              f"{ta} = {ta}.write(0, tf.matmul({h}, {w}))",
              f"{ta} = {ta}.write(1, {h})",
              f"{out} = tf.tanh(tf.reduce_sum({ta}.stack(), 0))"]
    return lines, out, width


KIND_BLOCKS: Dict[str, Tuple[object, float]] = {
    "distribution": (distribution, 1.0),
    "print_wrapper": (print_wrapper, 1.5),
    "state_tuple": (state_tuple, 1.0),
    "variable_slice": (variable_slice, 1.6),
    "static_rnn": (static_rnn, 0.8),
    "caching_device": (caching_device, 0.6),
    "tensor_array": (tensor_array, 0.6),
}


def kinds_block(g, h: str, width: int):
    """One block of :data:`KIND_BLOCKS`, chosen from the third stream."""
    names = list(KIND_BLOCKS)
    name = g.r3.choices(names, weights=[KIND_BLOCKS[n][1] for n in names])[0]
    return KIND_BLOCKS[name][0](g, h, width)  # type: ignore[operator]


def eager_kinds(g, width: int, out_width: int) -> Tuple[List[str], List[str]]:
    """For an eager program: (module-level lines, lines inside ``compute_loss`` that change
    ``pred``). The module-level ``pos`` is computed once, as TF1 eager computed it."""
    form = g.r3.randrange(4)
    seed = g.r3.randint(1, 99)
    table = f'wpe = tf.Variable(np.random.RandomState({seed}).uniform(-0.5, 0.5, (4, {out_width}))' \
            '.astype(np.float32), name="wpe")'
    if form == 0:
        g.tag("eager_kinds_slice_outside")
        return [table, "pos = wpe[:2]"], ["    pred = pred + tf.reduce_mean(pos, 0)"]
    if form == 1:
        g.tag("eager_kinds_slice_inside")
        return [table], ["    pred = pred + wpe[1]"]
    if form == 2:
        g.tag("eager_kinds_distribution")
        return [], ["    pred = tf.distributions.Normal(loc=pred, scale=1.0).mean()"]
    g.tag("eager_kinds_state_tuple")
    return [], ["    st = tf.nn.rnn_cell.LSTMStateTuple(pred, 0.5 * pred)", "    pred = st.c + st.h"]


KIND_TAGS = frozenset({
    "kinds_distribution", "kinds_distribution_normal", "kinds_distribution_categorical", "kinds_print",
    "kinds_print_rebinds_variable", "kinds_print_tensor", "kinds_identity", "kinds_state_tuple",
    "kinds_variable_slice", "kinds_slice", "kinds_item", "kinds_gather", "kinds_variable_method",
    "kinds_static_rnn", "kinds_static_bidirectional_rnn", "kinds_caching_device", "kinds_unknown_constructor",
    "eager_kinds_slice_outside", "eager_kinds_slice_inside", "eager_kinds_distribution", "eager_kinds_state_tuple",
})
