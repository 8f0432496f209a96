"""Random, realistic TF1 training programs for the differential fuzzer, deterministic per seed.

``generate(seed, index) -> Program``: the ``index``-th program of ``seed`` (a ``random.Random``
seeded with the text ``"seed:index"``, so any program is reproducible alone). A program is complete
Python 3 source as a user wrote it for TF 1.15 (``import tensorflow as tf`` or
``import tensorflow.compat.v1 as tf``) and follows the contract of ``tests/_equivalence.py``:
graph programs define ``train_op``, ``loss`` and ``feeds(step)``; eager programs define
``train_step()``.

The grammar (every production tags the program with a block name, see :data:`BLOCKS`):

* program = imports, data + placeholders, *model*, *loss*, *training site*, summaries;
* model = 1-3 blocks of ``_blocks.MODEL_BLOCKS`` then a projection, placed at module level, in a
  helper ``def model(inp)``, in a ``class Model`` (loss on ``self.loss``, a method adding weight
  decay later), split into a module-level feature tensor read by a helper ``def head()``, or
  built per tower (list ``append``/``extend``/``+=``/item assignment);
* loss = MSE, Keras loss object/function, ``tf.losses.*`` + ``get_total_loss()``, the
  ``'losses'`` collection, regularization-collection terms, weight decay, a gradient penalty;
* training site = ``minimize`` / ``compute_gradients`` + clip comprehension / ``zip(*)`` +
  ``clip_by_global_norm`` / ``tf.gradients`` / contrib helpers, with any optimizer class,
  learning-rate form and ``global_step`` form, optionally inside a function taking the loss as a
  parameter, under ``control_dependencies(UPDATE_OPS)``, a ``name_scope`` or ``tf.cond``;
* GAN programs (two optimizers, two losses) and eager programs (``opt.minimize(callable)``).
* the second round's kinds (``_programs.py``): actor-critic (``tf.gradients(..., grad_ys=...)``) and
  sections (one ``optimizer`` name rebound per section) programs, chosen from the second stream.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import FrozenSet, List, Set

from tests.fuzz import _blocks, _kinds, _precision, _rebinding, _shapes
from tests.fuzz._programs import PROGRAM_BLOCKS, actor_critic_program, eager_program, sections_program
from tests.fuzz._sites import OPTIMIZERS, SITE_BLOCKS, gan_program, training_site

__all__ = ["BLOCKS", "Gen", "Program", "generate"]

# The share of graph programs replaced by the second round's program kinds (``_programs.py``).
NEW_KINDS = 0.16


@dataclass(frozen=True)
class Program:
    seed: int
    index: int
    kind: str  # "graph" or "eager"
    source: str
    blocks: FrozenSet[str]


@dataclass
class Gen:
    """Generation state: the random source, fresh-name counters, tags and model facts."""

    rng: random.Random
    # The second stream: choices added after a seed's meaning was fixed draw from it, so that the
    # programs the new productions leave alone are identical to what ``rng`` alone produced.
    alt: random.Random = field(default_factory=lambda: random.Random(0))
    # The third stream (issue 25's value kinds, ``_kinds.py``): same rule.
    r3: random.Random = field(default_factory=lambda: random.Random(0))
    # The fourth stream (issue 25's precision productions, ``_precision.py``): same rule.
    r4: random.Random = field(default_factory=lambda: random.Random(0))
    # The fifth stream (round 7: names rebound later in the same block, ``_rebinding.py``): same rule.
    r5: random.Random = field(default_factory=lambda: random.Random(0))
    # The sixth stream (round 13: ``_shapes.py``, and the GAN class form of ``_sites.py``): same rule.
    r6: random.Random = field(default_factory=lambda: random.Random(0))
    tags: Set[str] = field(default_factory=set)
    counters: dict = field(default_factory=dict)
    has_regularizer: bool = False
    has_update_ops: bool = False
    uses_control_flow: bool = False
    imports: List[str] = field(default_factory=list)
    feeds: dict = field(default_factory=dict)

    def tag(self, name: str) -> None:
        self.tags.add(name)

    def new(self, prefix: str) -> str:
        n = self.counters.get(prefix, 0)
        self.counters[prefix] = n + 1
        return prefix if n == 0 else f"{prefix}{n}"

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, table: dict) -> str:
        names = list(table)
        return self.rng.choices(names, weights=[table[n][1] for n in names])[0]


def indent(lines: List[str], depth: int = 1) -> List[str]:
    pad = "    " * depth
    return [pad + ln if ln else "" for ln in lines]


def _model_body(g: Gen, h: str, width: int, out_width: int, *, allow=None):
    """1-3 model blocks then a projection to ``out_width``: (lines, prediction name)."""
    lines: List[str] = []
    shape_form = _shapes.draw(g) if allow is None else None
    if shape_form == _shapes.BYSTANDER:
        block_lines, h, width = _shapes.shape_block(g, h, width, shape_form)
        lines += block_lines
    if allow is None and g.r3.random() < _kinds.GRAPH_SHARE:
        # (first, so that a module-level model computes it before anything else the loss needs)
        block_lines, h, width = _kinds.kinds_block(g, h, width)
        lines += block_lines
    if allow is None and g.r5.random() < _rebinding.GRAPH_SHARE:
        block_lines, h, width = _rebinding.rebinding_block(g, h, width)
        lines += block_lines
    if allow is None and g.r4.random() < _precision.GRAPH_SHARE:
        block_lines, h, width = _precision.precision_block(g, h, width)
        lines += block_lines
    if shape_form is not None and shape_form != _shapes.BYSTANDER:
        block_lines, h, width = _shapes.shape_block(g, h, width, shape_form)
        lines += block_lines
    for _ in range(g.rng.choice([1, 1, 2, 2, 3])):
        name = g.pick(_blocks.MODEL_BLOCKS)
        if allow is not None and name not in allow:
            name = "raw_matmul"
        block_lines, h, width = _blocks.MODEL_BLOCKS[name][0](g, h, width)
        lines += block_lines
    proj = g.rng.random()
    pred = g.new("pred")
    if proj < 0.5:
        w_lines, w = _blocks.new_weight(g, (width, out_width), "w_out")
        lines += w_lines + [f"{pred} = tf.matmul({h}, {w})"]
    elif proj < 0.75:
        g.tag("layers_dense")
        lines.append(f"{pred} = tf.layers.dense({h}, {out_width}, "
                     f"kernel_initializer=tf.glorot_uniform_initializer(seed={g.rng.randint(1, 99)}))")
    else:
        g.tag("keras_dense")
        lines.append(f"{pred} = tf.keras.layers.Dense({out_width})({h})")
    return lines, pred


def _data_loss(g: Gen, pred: str, target: str) -> str:
    """An expression of the data term (MSE in one of its spellings), scaled so clipping bites."""
    form = g.rng.random()
    if form < 0.55:
        g.tag("loss_mse")
        return f"5.0 * tf.reduce_mean(tf.square({pred} - {target}))"
    if form < 0.75:
        g.tag("keras_loss_object")
        return f"5.0 * tf.keras.losses.MeanSquaredError()({target}, {pred})"
    if form < 0.85:
        g.tag("keras_loss_function")
        return f"5.0 * tf.reduce_mean(tf.keras.losses.mse({target}, {pred}))"
    g.tag("huber")
    return f"5.0 * tf.reduce_mean(tf.square({pred} - {target})) + tf.losses.huber_loss({target}, {pred}, " \
           "loss_collection=None)"


def _loss_terms(g: Gen, pred: str, target: str, loss: str) -> List[str]:
    """Statements that bind ``loss`` from the prediction: data term + extra terms."""
    data = _data_loss(g, pred, target)
    form = g.rng.random()
    lines: List[str] = []
    reg_sum = None
    if g.has_regularizer:
        g.tag("regularization_collection")
        reg_sum = g.rng.choice(["tf.add_n(tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES))",
                                "tf.losses.get_regularization_loss()"])
    if form < 0.15:
        g.tag("tf_losses_total")
        lines.append(f"tf.losses.mean_squared_error({target}, {pred}, weights=5.0)")
        lines.append(f"{loss} = tf.losses.get_total_loss()")  # includes the regularization losses
        return lines
    if form < 0.3:
        g.tag("losses_collection")
        lines.append(f'tf.add_to_collection("losses", {data})')
        if reg_sum:
            lines.append(f'tf.add_to_collection("losses", {reg_sum})')
        lines.append(f'{loss} = tf.add_n(tf.get_collection("losses"), name="total_loss")')
        return lines
    lines.append(f"{loss} = {data}" + (f" + {reg_sum}" if reg_sum else ""))
    if g.chance(0.15):
        g.tag("weight_decay")
        lines.append(f"{loss} += 1e-3 * tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables()])")
    if g.chance(0.08):
        g.tag("lookalike_gradient_penalty")
        lines.append(f"penalty = tf.gradients({pred}, x)[0]")
        lines.append(f"{loss} = {loss} + 0.1 * tf.reduce_mean(tf.square(penalty))")
    return lines


def _graph_model(g: Gen, width: int, out_width: int):
    """The model + loss part of a graph program: (lines, loss expression, var_list candidates)."""
    shape = g.rng.random()
    head_scope = g.chance(0.3)
    if shape < 0.4:
        g.tag("model_module_level")
        lines, pred = _model_body(g, "x", width, out_width)
        lines += _loss_terms(g, pred, "y", "loss")
        return lines, "loss"
    if shape < 0.58:
        g.tag("helper_function")
        body, pred = _model_body(g, "inp", width, out_width)
        lines = ["def model(inp):"] + indent(body + [f"return {pred}"]) + ["", ""]
        if head_scope:
            lines += ['with tf.variable_scope("model"):', "    prediction = model(x)"]
        else:
            lines.append("prediction = model(x)")
        lines += _loss_terms(g, "prediction", "y", "loss")
        return lines, "loss"
    if shape < 0.74:
        return _class_model(g, width, out_width)
    if shape < 0.86:
        g.tag("module_tensor_helper")
        body, feat = _model_body(g, "x", width, width)
        w_lines, w = _blocks.new_weight(g, (width, out_width), "w_head")
        lines = body + w_lines + ["", "", "def head_loss():",
                                  f"    return 5.0 * tf.reduce_mean(tf.square(tf.matmul({feat}, {w}) - y))",
                                  "", "", "loss = head_loss()"]
        return lines, "loss"
    return _towers(g, width, out_width)


def _class_model(g: Gen, width: int, out_width: int):
    g.tag("model_class")
    body, pred = _model_body(g, "inputs", width, out_width)
    data = _data_loss(g, pred, "labels").replace("5.0 * ", "")
    init = body + [f"self.pred = {pred}"]
    split = g.chance(0.4)
    if split:
        g.tag("self_loss_terms")
        init += [f"self.r_cost = {data}", "self.kl_cost = tf.reduce_mean(tf.square(self.pred))",
                 "self.loss = 5.0 * (self.r_cost + self.kl_cost * 0.01)"]
    else:
        init += [f"self.loss = 5.0 * {data}"]
    lines = ["class Model(object):", "    def __init__(self, inputs, labels):"] + indent(init, 2)
    decay = g.chance(0.5)
    if decay:
        g.tag("method_adds_loss_term")
        lines += ["", "    def add_weight_decay(self, scale):",
                  "        self.loss = self.loss + scale * tf.add_n(",
                  "            [tf.nn.l2_loss(v) for v in tf.trainable_variables()])"]
    lines += ["", "", "model = Model(x, y)"]
    if decay:
        lines.append("model.add_weight_decay(1e-3)")
    if g.chance(0.5):
        lines.append("loss = model.loss")
        return lines, "loss"
    return lines, "model.loss"


def _towers(g: Gen, width: int, out_width: int):
    g.tag("towers")
    body, pred = _model_body(g, "inp", width, out_width, allow={"raw_matmul", "layers_dense", "keras_activation",
                                                                  "convert_to_tensor", "keras_backend_dot"})
    lines = ["def tower_model(inp):"] + indent(body + [f"return {pred}"]) + ["", ""]
    term = "5.0 * tf.reduce_mean(tf.square(tower_model(x[i * 4:(i + 1) * 4]) - y[i * 4:(i + 1) * 4]))"
    form = g.rng.choice(["append", "extend", "iadd", "item"])
    g.tag("towers_" + form)
    reuse = g.rng.choice(['reuse=tf.AUTO_REUSE', 'reuse=i > 0'])
    lines.append("tower_losses = [None, None]" if form == "item" else "tower_losses = []")
    lines += ["for i in range(2):", f'    with tf.variable_scope("tower", {reuse}):']
    add = {"append": f"tower_losses.append({term})", "extend": f"tower_losses.extend([{term}])",
           "iadd": f"tower_losses += [{term}]", "item": f"tower_losses[i] = {term}"}[form]
    lines.append("        " + add)
    lines.append("loss = tf.add_n(tower_losses) / 2.0")
    return lines, "loss"


def _header(g: Gen, body: str) -> List[str]:
    """Imports. TF 1.15's ``tensorflow.compat.v1`` had no ``contrib``: programs that spell
    ``tf.contrib.…`` import ``tensorflow`` itself."""
    lines = ["import numpy as np"]
    if "tf.contrib." in body or g.chance(0.35):
        g.tag("import_tensorflow_as_tf")
        lines.append("import tensorflow as tf")
    else:
        g.tag("import_compat_v1")
        lines.append("import tensorflow.compat.v1 as tf")
    return lines


def _graph_program(g: Gen) -> str:
    width, out_width = g.rng.choice([3, 4]), g.rng.choice([1, 2])
    model_lines, loss_expr = _graph_model(g, width, out_width)
    site_lines = training_site(g, loss_expr)
    head = _header(g, "\n".join(model_lines + site_lines)) + g.imports
    # (TF1 could not take the second-order gradient of a v1 while loop: no gradient penalty there)
    if (g.uses_control_flow and g.chance(0.3) or g.chance(0.03)) and "lookalike_gradient_penalty" not in g.tags:
        g.tag("disable_control_flow_v2")
        head += ["", "tf.disable_control_flow_v2()"]
    data = ["", f"rng = np.random.RandomState({g.rng.randint(0, 999)})",
            f"X_DATA = rng.randn(3, 8, {width}).astype(np.float32)",
            f"Y_DATA = (2.0 * rng.randn(3, 8, {out_width})).astype(np.float32)", "", "",
            "def feeds(step):",
            '    return {"x": X_DATA[step % 3], "y": Y_DATA[step % 3]' +
            "".join(f', "{k}": {v}' for k, v in g.feeds.items()) + "}", "", "",
            f'x = tf.placeholder(tf.float32, [None, {width}], name="x")',
            f'y = tf.placeholder(tf.float32, [None, {out_width}], name="y")']
    if model_lines and model_lines[0].startswith(("def ", "class ")):
        data += ["", ""]
    tail = [] if loss_expr == "loss" else [f"loss = {loss_expr}"]
    return "\n".join(head + data + model_lines + site_lines + tail) + "\n"


def generate(seed: int, index: int) -> Program:
    """The ``index``-th program of ``seed`` (reproducible alone)."""
    g = Gen(random.Random(f"{seed}:{index}"), random.Random(f"{seed}:{index}:round2"),
            random.Random(f"{seed}:{index}:round3"), random.Random(f"{seed}:{index}:round4"),
            random.Random(f"{seed}:{index}:round7"), random.Random(f"{seed}:{index}:round13"))
    roll = g.rng.random()
    new_kind = g.alt.random()
    if roll >= 0.2 and new_kind < NEW_KINDS:
        # the program kinds of the second planner round replace a share of the graph programs
        body = (actor_critic_program if g.alt.random() < 0.5 else sections_program)(g)
        source = "\n".join(_header(g, body)) + "\n" + body
        kind = "graph"
    elif roll < 0.12:
        g.tag("eager")
        body = eager_program(g)
        source = "\n".join(_header(g, body)) + "\n" + body
        kind = "eager"
    elif roll < 0.2:
        g.tag("gan")
        body = gan_program(g)
        source = "\n".join(_header(g, body)) + "\n" + body
        kind = "graph"
    else:
        source = _graph_program(g)
        kind = "graph"
    return Program(seed, index, kind, source, frozenset(g.tags))


def _all_blocks() -> FrozenSet[str]:
    model = {
        "raw_matmul", "layers_dense", "layers_conv2d", "batch_norm", "layers_batch_norm", "keras_batch_norm",
        "layers_dropout", "nn_dropout", "keras_dense", "keras_activation", "keras_backend_dot",
        "convert_to_tensor", "stop_gradient", "straight_through", "gradient_reversal", "variable_scope_reuse",
        "auto_reuse", "reuse_true", "use_resource_false", "non_trainable_keyword", "non_trainable_positional",
        "collection_trainable_variables", "collection_trainable_resource_variables", "dynamic_rnn",
        "rnn_BasicRNNCell", "rnn_GRUCell", "rnn_LSTMCell", "rnn_BasicLSTMCell", "while_loop", "map_fn",
        "cond_model", "lookalike_clip_activation", "regularizer", "contrib_l2_regularizer",
        "regularization_collection", "loss_mse", "keras_loss_object", "keras_loss_function", "huber",
        "tf_losses_total", "losses_collection", "weight_decay", "lookalike_gradient_penalty",
        "model_module_level", "helper_function", "model_class", "self_loss_terms", "method_adds_loss_term",
        "module_tensor_helper", "towers", "towers_append", "towers_extend", "towers_iadd", "towers_item",
        "import_tensorflow_as_tf", "import_compat_v1", "disable_control_flow_v2", "eager", "gan",
    }
    return frozenset(model | SITE_BLOCKS | PROGRAM_BLOCKS | _kinds.KIND_TAGS | _precision.PRECISION_TAGS | _rebinding.REBINDING_TAGS
                     | _shapes.SHAPE_TAGS
                     | {"optimizer_" + name for name in OPTIMIZERS})


# Every block name the grammar can produce (the self-test checks the CI seed produces them all).
BLOCKS: FrozenSet[str] = _all_blocks()
