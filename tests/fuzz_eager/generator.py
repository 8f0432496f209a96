"""Generator of complete TF 1 session scripts for the whole-program migration (TFC301).

``generate(seed, index) -> str`` is the program source; ``program(seed, index) -> Program`` adds
its grammar tags and whether it lies inside the convertible class. Both draw from
``random.Random(f"{seed}:{index}")``, so each program is reproducible alone.

Inside the class (``Program.inside``): one graph, placeholders fed from numpy, a model built at
module level / in a helper function / in a class, ``tf.layers`` (dense, batch normalization,
dropout), ``get_variable``, ``tf.Variable``, Keras layers, embeddings, ``dynamic_rnn`` with TF 1
cells, one or two optimizers (GANs: ``var_list`` by scope), constant or ``exponential_decay``
learning rates with a global step, (round 14) ``static_rnn`` / bidirectional RNNs / ``LSTMCell`` /
``MultiRNNCell`` / ``sequence_length`` with cells spelled ``tf.nn.rnn_cell``, ``tf.contrib.rnn`` or
``rnn`` (``from tensorflow.contrib import rnn``), ``tf.train.Saver`` saves (every checkpoint
compared), ``minimize`` / compute-clip-apply (``clip_by_value``,
``clip_by_norm``) / ``zip(*compute_gradients)`` + ``clip_by_global_norm`` / ``tf.gradients`` +
``clip_by_global_norm``, UPDATE_OPS under ``control_dependencies``, ``is_training`` and
``keep_prob`` placeholders, a module-level ``tf.reset_default_graph()`` / ``ops.reset_default_graph()``
(``from tensorflow.python.framework import ops``) before the graph, several fetches per training run, evaluation runs with other feeds
(``sess.run`` and ``Tensor.eval``), then one ``with tf.Session() as sess:`` loop.

Just outside it (``Program.outside`` names the construct; the rule must decline and leave the
file byte-identical): ``MonitoredTrainingSession``, queue runners, tensors fetched by name,
ops created inside the loop, ``partial_run``, ``tf.device`` towers, an Estimator ``model_fn``, and
(round 14) ``DropoutWrapper``, the contrib alias used as a value, ``LSTMCell(use_peepholes=True)``,
a save before the first training step, a restore.

Every script prints each fetched number as ``repr(float(v))`` (round-trips: compared bit for
bit), random ops carry op-level seeds under a graph seed (the same masks in graph mode and in a
``tf.function``), and models are tiny (3-8 units, batch 8, 4-6 steps).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import List, Optional, Set

OUTSIDE = ("monitored_session", "queue_runners", "tensor_by_name", "op_in_loop", "partial_run",
           "device_towers", "estimator")
# Spliced into an inside program by its own stream (round 9), so that OUTSIDE's draws stay as they were.
OUTSIDE_SPLICED = ("module_state",)
# Chains grappler regroups differently in a session and in a tf.function (round 11): drawn by their
# own stream inside the classifier, declined by TFC301's chain check.
OUTSIDE_CHAINS = ("sum_of_three_tensors", "constant_in_chain")
# State the session block changes that the eager program would not change the same way (round 12),
# drawn by their own stream in the classifier: initializer runs that reset trained variables, a
# variable's `assign` run after each step, a Python object the graph read changed in place later, a
# helper the graph called defined again (a notebook cell run with an edit), a name the graph read
# rebound by a function through `global`.
OUTSIDE_STATE = ("init_after_training", "init_in_loop", "variable_assign", "changed_after_graph",
                 "helper_redefined", "rebound_by_function")


@dataclass
class Program:
    seed: int
    index: int
    source: str
    inside: bool
    outside: Optional[str] = None  # the construct that puts it outside the class
    tags: Set[str] = field(default_factory=set)


class _Gen:
    def __init__(self, seed: int, index: int) -> None:
        self.r = random.Random(f"{seed}:{index}")
        self.tags: Set[str] = set()
        self.counter = 0
        self.uses_bn = False
        self.training: Optional[str] = None  # name of the is_training placeholder
        self.keep_prob = False
        self.lines: List[str] = []
        # choices added after the first figures draw from their own stream, so that the main
        # stream (and every program that does not take a new production) stays as it was
        self.alt = random.Random(f"{seed}:{index}:round2")
        self.alt3 = random.Random(f"{seed}:{index}:round3")  # productions added with wip/eager2
        self.alt4 = random.Random(f"{seed}:{index}:round4")  # productions added with wip/eager3
        self.alt7 = random.Random(f"{seed}:{index}:round7")  # session objects (round 7)
        self.alt8 = random.Random(f"{seed}:{index}:round8")  # images, convolutions, tf.nn.dropout forms (round 8)
        self.alt9 = random.Random(f"{seed}:{index}:round9")  # helpers that change module-level objects (round 9)
        self.alt9m = random.Random(f"{seed}:{index}:round9-mnist")  # TF 1's MNIST loader (round 9)
        self.alt9x = random.Random(f"{seed}:{index}:round9-xavier")  # contrib's xavier initializer (round 9)
        self.alt9f = random.Random(f"{seed}:{index}:round9-factories")  # variable factories (round 9)
        self.alt10 = random.Random(f"{seed}:{index}:round10")  # `from __future__` imports (round 10)
        self.alt11 = random.Random(f"{seed}:{index}:round11")  # shared weights, chains, training-only runs (round 11)
        self.alt12 = random.Random(f"{seed}:{index}:round12")  # state the session block changes (round 12)
        self.alt14 = random.Random(f"{seed}:{index}:round14")  # static RNNs, more cells, tf.contrib.rnn (round 14)
        self.contrib_rnn_import = False  # `from tensorflow.contrib import rnn` in the header (round 14)
        self.unnamed_variables = self.alt8.random() < 0.5  # `tf.Variable(...)` blocks without `name=` (round 8)
        if self.unnamed_variables:
            self.tags.add("tf_variable:unnamed")
        self.outside: Optional[str] = None  # set before the body is generated

    def pick(self, tag_prefix: str, options, weights=None):
        choice = self.r.choices(options, weights=weights)[0]
        self.tags.add(f"{tag_prefix}:{choice}")
        return choice

    def seed(self) -> int:
        self.counter += 1
        return 100 + self.counter


def _block(g: _Gen, h: str, dim: int, k: int, indent: str) -> (List[str], int):
    """One hidden block on tensor ``h`` of width ``dim``; returns lines and the new width."""
    units = g.r.choice([3, 4, 6, 8])
    kind = g.pick("block", ["tf_layers_dense", "get_variable", "tf_variable", "keras_dense"], [5, 4, 2, 1])
    act = g.r.choice(["tf.nn.relu", "tf.nn.tanh", "tf.nn.sigmoid", "tf.nn.elu"])
    out: List[str] = []
    if kind == "tf_layers_dense":
        name = g.r.choice([None, f"fc{k}"])
        out.append(f"h = tf.layers.dense({h}, {units}, activation={act}" + (f", name=\"{name}\")" if name else ")"))
    elif kind == "get_variable":
        init = g.r.choice(["", ", initializer=tf.glorot_uniform_initializer()",
                           ", initializer=tf.truncated_normal_initializer(stddev=0.2)"])
        if g.alt9x.random() < 0.25:  # (round 9) contrib's xavier initializer (hunkim's labs)
            g.tags.add("init:xavier")
            init = g.alt9x.choice([", initializer=tf.contrib.layers.xavier_initializer()",
                                   f", initializer=tf.contrib.layers.xavier_initializer(seed={g.seed()})",
                                   ", initializer=tf.contrib.layers.xavier_initializer(uniform=True)"])
        out += [f"w{k} = tf.get_variable(\"w{k}\", [{dim}, {units}]{init})",
                f"b{k} = tf.get_variable(\"b{k}\", [{units}], initializer=tf.zeros_initializer())",
                f"h = {act}(tf.matmul({h}, w{k}) + b{k})"]
    elif kind == "tf_variable":
        seed = g.seed()
        if g.unnamed_variables:  # (round 8) TF 1 names them Variable, Variable_1...
            bias = g.alt8.choice([f"tf.zeros([{units}])", "[" + ", ".join(["0.1"] * units) + "]"])
            out += [f"w{k} = tf.Variable(tf.truncated_normal([{dim}, {units}], stddev=0.3, seed={seed}))",
                    f"b{k} = tf.Variable({bias})"]
        else:
            out += [f"w{k} = tf.Variable(tf.truncated_normal([{dim}, {units}], stddev=0.3, seed={seed}), name=\"w{k}\")",
                    f"b{k} = tf.Variable(tf.zeros([{units}]), name=\"b{k}\")"]
        out.append(f"h = {act}(tf.nn.bias_add(tf.matmul({h}, w{k}), b{k}))")
    else:
        out.append(f"h = tf.keras.layers.Dense({units}, activation=\"relu\", name=\"kdense{k}\")({h})")
    extra = g.r.random()
    if g.training is None and extra < 0.55:
        extra = 0.4 if g.keep_prob else 1.0  # no is_training flag: no batch norm, dropout by keep_prob only
    if extra < 0.3:
        g.uses_bn = True
        g.tags.add("batch_norm")
        out.append(f"h = tf.layers.batch_normalization(h, training={g.training})")
    elif extra < 0.55:
        if g.keep_prob and (g.training is None or g.r.random() < 0.5):
            g.tags.add("dropout:nn_keep_prob")
            seed = g.seed()
            form = g.alt8.random()  # (round 8) the unseeded and the rate forms users write
            if form < 0.4:
                out.append(f"h = tf.nn.dropout(h, keep_prob=keep_prob, seed={seed})")
            elif form < 0.8:
                g.tags.add("dropout:nn_unseeded")
                out.append("h = tf.nn.dropout(h, keep_prob)")
            else:
                g.tags.add("dropout:nn_rate")
                out.append("h = tf.nn.dropout(h, rate=1 - keep_prob)")
        else:
            g.tags.add("dropout:tf_layers")
            out.append(f"h = tf.layers.dropout(h, rate=0.25, training={g.training}, seed={g.seed()})")
    return [indent + line for line in out], units


def _conv_front(g: _Gen, side: int, channels: int) -> (List[str], int):
    """(round 8) A convolution and a pooling on the image placeholder ``x`` (module level), flattened
    to ``features``; returns lines and the features' width."""
    filters = g.alt8.choice([2, 3, 4])
    conv = g.alt8.choice(["nn_conv2d", "layers_conv2d"])
    padding = g.alt8.choice(["SAME", "VALID"])
    g.tags.add(f"conv:{conv}")
    lines: List[str] = []
    if conv == "nn_conv2d":
        init = g.alt8.choice(["", ", initializer=tf.truncated_normal_initializer(stddev=0.1)"])
        lines += ["with tf.variable_scope(\"conv1\"):",
                  f"    w_conv = tf.get_variable(\"w\", [3, 3, {channels}, {filters}]{init})",
                  f"    b_conv = tf.get_variable(\"b\", [{filters}], initializer=tf.constant_initializer(0.1))",
                  f"    conv = tf.nn.relu(tf.nn.conv2d(x, w_conv, strides=[1, 1, 1, 1], padding=\"{padding}\") + b_conv)"]
    else:
        name = g.alt8.choice(["", ", name=\"conv1\""])
        lines.append(f"conv = tf.layers.conv2d(x, {filters}, 3, padding=\"{padding.lower()}\", activation=tf.nn.relu{name})")
    size = side if padding == "SAME" else side - 2
    pool = g.alt8.choice(["nn_max_pool", "nn_avg_pool", "layers_max_pooling2d", "layers_average_pooling2d", "none"])
    g.tags.add(f"pool:{pool}")
    if pool == "none":
        lines.append("pooled = conv")
    elif pool.startswith("nn_"):
        op = pool[len("nn_"):]
        lines.append(f"pooled = tf.nn.{op}(conv, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding=\"VALID\")")
        size //= 2
    else:
        op = pool[len("layers_"):]
        lines.append(f"pooled = tf.layers.{op}(conv, 2, 2)")
        size //= 2
    width = size * size * filters
    if g.alt8.random() < 0.5:
        lines.append(f"features = tf.reshape(pooled, [-1, {width}])")
    else:
        lines.append("features = tf.layers.flatten(pooled)")
    return lines, width


def _model_body(g: _Gen, inputs: str, in_dim: int, classes: int, indent: str) -> List[str]:
    lines: List[str] = []
    h, dim = inputs, in_dim
    for k in range(g.r.choice([1, 1, 2])):
        block, dim = _block(g, h, dim, k, indent)
        lines += block
        h = "h"
    head = g.pick("head", ["tf_layers_dense", "get_variable"], [3, 2])
    if head == "tf_layers_dense":
        lines.append(indent + f"logits = tf.layers.dense({h}, {classes}, name=\"out\")")
    else:
        lines += [indent + f"w_out = tf.get_variable(\"w_out\", [{dim}, {classes}])",
                  indent + f"b_out = tf.get_variable(\"b_out\", [{classes}], initializer=tf.zeros_initializer())",
                  indent + f"logits = tf.matmul({h}, w_out) + b_out"]
    return lines


def _model(g: _Gen, inputs: str, in_dim: int, classes: int) -> List[str]:
    place = g.pick("model", ["module", "helper", "class"], [3, 3, 2])
    scope = g.r.choice(["model", "net", "classifier"])
    if place == "module":
        return [f"with tf.variable_scope(\"{scope}\"):"] + _model_body(g, inputs, in_dim, classes, "    ")
    if place == "helper":
        args = "inputs, training" if g.training else "inputs"
        call = f"{inputs}, {g.training}" if g.training else inputs
        saved = g.training
        g.training = "training" if saved else None
        body = _model_body(g, "inputs", in_dim, classes, "        ")
        g.training = saved
        return ["", f"def build_model({args}):", f"    with tf.variable_scope(\"{scope}\"):"] + body + \
            ["        return logits", "", "", f"logits = build_model({call})"]
    saved = g.training
    g.training = "self.training" if saved else None
    body = _model_body(g, "inputs", in_dim, classes, "            ")
    g.training = saved
    body = [line.replace("logits = ", "self.logits = ") if "logits = " in line and "self.logits" not in line
            else line for line in body]
    init_args = "self, inputs, training" if saved else "self, inputs"
    call = f"{inputs}, {saved}" if saved else inputs
    lines = ["", "class Model(object):", f"    def __init__({init_args}):"]
    if saved:
        lines.append("        self.training = training")
    lines += [f"        with tf.variable_scope(\"{scope}\"):"] + body
    return lines + ["", "", f"model = Model({call})", "logits = model.logits"]


def _optimizer(g: _Gen, lr_name: str) -> str:
    kind = g.pick("optimizer", ["GradientDescent", "Momentum", "Adam", "RMSProp", "Adagrad"], [2, 2, 4, 1, 1])
    return {
        "GradientDescent": f"tf.train.GradientDescentOptimizer({lr_name})",
        "Momentum": f"tf.train.MomentumOptimizer({lr_name}, momentum=0.9)",
        "Adam": f"tf.train.AdamOptimizer({lr_name})",
        "RMSProp": f"tf.train.RMSPropOptimizer({lr_name})",
        "Adagrad": f"tf.train.AdagradOptimizer({lr_name})",
    }[kind]


def _train_site(g: _Gen, loss: str, opt: str, target: str, gstep: str, var_list: Optional[str],
                guard: bool = False) -> List[str]:
    site = g.pick("site", ["minimize", "clip_by_value", "clip_by_norm", "zip_global_norm", "tf_gradients"],
                  [3, 2, 2, 2, 2])
    vl = f", var_list={var_list}" if var_list else ""
    if site == "minimize":
        return [f"{target} = {opt}.minimize({loss}{vl}{gstep})"]
    if site in ("clip_by_value", "clip_by_norm"):
        clip = "tf.clip_by_value(grad, -0.5, 0.5)" if site == "clip_by_value" else "tf.clip_by_norm(grad, 0.5)"
        guard = " if grad is not None" if guard else g.r.choice(["", " if grad is not None"])
        return [f"grads_and_vars = {opt}.compute_gradients({loss}{vl})",
                f"capped = [({clip}, var) for grad, var in grads_and_vars{guard}]",
                f"{target} = {opt}.apply_gradients(capped{gstep})"]
    if site == "zip_global_norm":
        return [f"gradients, variables = zip(*{opt}.compute_gradients({loss}{vl}))",
                "gradients, _ = tf.clip_by_global_norm(gradients, 1.0)",
                f"{target} = {opt}.apply_gradients(zip(gradients, variables){gstep})"]
    tvars = var_list or "tf.trainable_variables()"
    return [f"tvars = {tvars}",
            f"grads, _ = tf.clip_by_global_norm(tf.gradients({loss}, tvars), 1.0)",
            f"{target} = {opt}.apply_gradients(zip(grads, tvars){gstep})"]


def _training_only_run(g: _Gen, outs: List[str], fetch: List[str]) -> List[str]:
    """The loop's run: ``sess.run([train_op, loss...])``, or (round 11) a run of the training op
    alone (TFC301's step then returns a tensor for grappler's sake) followed by an evaluation run."""
    draw = g.alt11.random()
    if draw < 0.3 and g.outside in (None,) + OUTSIDE_CHAINS:  # the other outside constructs splice this line
        g.tags.add("run:training_only")
        rest = ", ".join(fetch[1:])
        return ["    sess.run(train_op, feed_dict=feed)",
                f"    {', '.join(outs[1:])} = sess.run({'[' + rest + ']' if len(fetch) > 2 else rest}, feed_dict=feed)"]
    return [f"    {', '.join(outs)} = sess.run([{', '.join(fetch)}], feed_dict=feed)"]


# (round 14) how the RNN encoder runs its cells, and the spelling of the cells (TF 1.15's
# ``tf.contrib.rnn`` re-exports the core cells and static RNNs); the first form is the one every
# earlier program has, drawn by its own stream so that those programs stay as they were.
RNN_FORMS = ("dynamic", "static", "static_bidirectional", "bidirectional_dynamic", "multi_cell")
RNN_SPELLINGS = ("tf.nn.rnn_cell", "tf.contrib.rnn", "rnn")
# Just outside it: contrib names the rule must decline (a cell wrapper that draws dropout masks; the
# module alias used as a value, which the rule cannot follow; LSTMCell's peepholes, whose forget-gate
# chain grappler regroups: measured).
OUTSIDE_RNN = ("rnn_dropout_wrapper", "rnn_alias_as_value", "lstm_peepholes")
# (round 14) checkpoints just outside the class: a save before the first step, a restore.
OUTSIDE_SAVER = ("saver_before_training", "saver_restore")


def _rnn_encoder(g: _Gen, enc: str, cell_args: str, feat_dim: int, length: int) -> (List[str], int):
    """The sequence encoder's lines and its feature width: ``dynamic_rnn`` over one cell as
    before, or (round 14) ``static_rnn`` over ``tf.unstack``, the bidirectional forms, a
    ``MultiRNNCell``, an ``LSTMCell``; cells spelled ``tf.nn.rnn_cell.X``, ``tf.contrib.rnn.X`` or
    ``rnn.X`` (``from tensorflow.contrib import rnn``)."""
    form = g.alt14.choices(RNN_FORMS, weights=[5, 3, 2, 1, 1])[0]
    spelling = "tf.nn.rnn_cell" if form == "dynamic" else g.alt14.choice(RNN_SPELLINGS)
    if form == "dynamic":
        return (["with tf.variable_scope(\"rnn_encoder\"):",
                 f"    cell = tf.nn.rnn_cell.{enc}({cell_args})",
                 "    outputs, state = tf.nn.dynamic_rnn(cell, embedded, dtype=tf.float32)",
                 "features = outputs[:, -1, :]"], feat_dim)
    g.tags.add(f"rnn:{form}")
    g.tags.add(f"rnn_spelling:{spelling}")
    if spelling == "rnn":
        g.contrib_rnn_import = True
    if enc == "BasicLSTMCell" and g.alt14.random() < 0.4:
        option = g.alt14.choice(["", ", forget_bias=1.0", ", use_peepholes=True"])
        if option == ", use_peepholes=True" and g.outside is None:
            g.outside = "lstm_peepholes"  # grappler regroups the peephole's forget-gate chain: declined
        elif option == ", use_peepholes=True":
            option = ""
        enc, cell_args = "LSTMCell", f"{feat_dim}{option}"
        g.tags.add("rnn_cell:LSTMCell")
    module = "tf.nn" if spelling == "tf.nn.rnn_cell" else spelling  # where static_rnn is found
    cell = f"{spelling}.{enc}({cell_args})"
    lines = ["with tf.variable_scope(\"rnn_encoder\"):"]
    if g.outside is None and g.alt14.random() < 0.12:
        construct = g.alt14.choice(OUTSIDE_RNN[:2])  # (peepholes: drawn with the cell above)
        g.outside = construct
        if construct == "rnn_dropout_wrapper":
            cell = f"{spelling}.DropoutWrapper({cell}, output_keep_prob=0.9, seed=7)"
        else:
            g.contrib_rnn_import = True
            lines = ["cells = rnn", "with tf.variable_scope(\"rnn_encoder\"):"]
            cell, module = f"cells.{enc}({cell_args})", "cells"
    # sequence lengths computed in the graph (the ids above 0), and the last relevant output picked
    # by an integer chain (TensorFlow-Examples' dynamic_rnn.py): exact, so TFC301 lets it through
    lengths = form in ("static", "multi_cell") and g.alt14.random() < 0.35
    if lengths:
        g.tags.add("rnn:sequence_length")
        lines = ["lengths = tf.reduce_sum(tf.cast(tf.greater(x, 0), tf.int32), 1)"] + lines
    seq_arg = ", sequence_length=lengths" if lengths else ""
    last = [f"last = tf.range(0, tf.shape(x)[0]) * {length} + (lengths + {length} - 1) % {length}",
            f"features = tf.gather(tf.reshape({{}}, [-1, {feat_dim}]), last)"]
    if form == "static":
        lines += [f"    steps = tf.unstack(embedded, {length}, 1)",
                  f"    cell = {cell}",
                  f"    outputs, state = {module}.static_rnn(cell, steps, dtype=tf.float32{seq_arg})"]
        lines += [last[0], last[1].format("tf.stack(outputs, 1)")] if lengths else ["features = outputs[-1]"]
    elif form == "static_bidirectional":
        lines += [f"    steps = tf.unstack(embedded, {length}, 1)",
                  f"    cell_fw = {cell}", f"    cell_bw = {cell}",
                  f"    outputs, _, _ = {module}.static_bidirectional_rnn(cell_fw, cell_bw, steps, dtype=tf.float32)",
                  "features = outputs[-1]"]
        feat_dim *= 2
    elif form == "bidirectional_dynamic":
        lines += [f"    cell_fw = {cell}", f"    cell_bw = {cell}",
                  "    (out_fw, out_bw), _ = tf.nn.bidirectional_dynamic_rnn(cell_fw, cell_bw, embedded, "
                  "dtype=tf.float32)",
                  "features = tf.concat([out_fw[:, -1, :], out_bw[:, -1, :]], 1)"]
        feat_dim *= 2
    else:
        inner = cell.replace(f"({cell_args})", f"({g.alt14.choice([3, 4])})", 1) if "DropoutWrapper" not in cell else cell
        lines += [f"    cell = {spelling if module != 'cells' else 'cells'}.MultiRNNCell([{inner}, {cell}])",
                  f"    outputs, state = tf.nn.dynamic_rnn(cell, embedded, dtype=tf.float32{seq_arg})"]
        lines += [last[0], last[1].format("outputs")] if lengths else ["features = outputs[:, -1, :]"]
    return lines, feat_dim


def _classifier(g: _Gen) -> List[str]:
    """Data, placeholders, model, loss, optimizer, train op, session loop of a one-model script."""
    seq = g.pick("inputs", ["dense", "embedding"], [3, 1]) == "embedding"
    classes = g.r.choice([2, 3])
    task = "classify" if seq else g.pick("task", ["regress", "classify"])
    steps, batch = g.r.choice([4, 5, 6]), 8
    g.training = g.r.choice([None, "is_training"])
    g.keep_prob = g.r.random() < 0.2
    image = not seq and g.alt8.random() < 0.35  # (round 8) an image classifier: conv, pool, flatten
    if image and not g.keep_prob and g.alt8.random() < 0.6:
        g.keep_prob = True  # the CNN tutorials' dropout between the dense layers
    lines = [f"rng = np.random.RandomState({g.r.randrange(100)})"]
    # (round 9) TF 1's MNIST tutorial loader feeds the classifier (the harness's workers run in a
    # directory with MNIST-format files in MNIST_data/)
    mnist = not seq and not image and task == "classify" and g.alt9m.random() < 0.5
    if mnist:
        g.tags.add("inputs:mnist_loader")
        classes = 10
        lines = ["from tensorflow.examples.tutorials.mnist import input_data", "",
                 "mnist = input_data.read_data_sets(\"MNIST_data/\", one_hot=True)",
                 "x_test, y_test = mnist.test.images[:8], mnist.test.labels[:8]", "",
                 "x = tf.placeholder(tf.float32, [None, 784], name=\"x\")",
                 "y = tf.placeholder(tf.float32, [None, 10], name=\"y\")"]
    if mnist:
        dim = 784
    elif seq:
        vocab, length = g.r.choice([6, 10]), g.r.choice([3, 4])
        lines += [f"x_train = rng.randint(0, {vocab}, size=(32, {length})).astype(np.int32)",
                  f"x_test = rng.randint(0, {vocab}, size=(8, {length})).astype(np.int32)",
                  f"y_train = rng.randint(0, {classes}, size=32).astype(np.int32)",
                  f"y_test = rng.randint(0, {classes}, size=8).astype(np.int32)", "",
                  f"x = tf.placeholder(tf.int32, [None, {length}], name=\"x\")",
                  "y = tf.placeholder(tf.int32, [None], name=\"y\")"]
    else:
        dim = g.r.choice([4, 5])
        if image:
            g.tags.add("inputs:image")
            side, channels = g.alt8.choice([6, 8]), g.alt8.choice([1, 2])
            lines += [f"x_train = rng.rand(32, {side}, {side}, {channels}).astype(np.float32)",
                      f"x_test = rng.rand(8, {side}, {side}, {channels}).astype(np.float32)",
                      f"signal = x_train.reshape(32, -1)[:, :{dim}] - 0.5",
                      f"signal_test = x_test.reshape(8, -1)[:, :{dim}] - 0.5"]
        else:
            lines += [f"x_train = rng.randn(32, {dim}).astype(np.float32)",
                      f"x_test = rng.randn(8, {dim}).astype(np.float32)"]
        train_in, test_in = ("signal", "signal_test") if image else ("x_train", "x_test")
        if task == "regress":
            lines += [f"y_train = np.tanh({train_in}[:, :{classes}] * 1.5).astype(np.float32)",
                      f"y_test = np.tanh({test_in}[:, :{classes}] * 1.5).astype(np.float32)"]
        else:
            lines += [f"y_train = np.eye({classes}, dtype=np.float32)[rng.randint(0, {classes}, size=32)]",
                      f"y_test = np.eye({classes}, dtype=np.float32)[rng.randint(0, {classes}, size=8)]"]
        shape = f"[None, {side}, {side}, {channels}]" if image else f"[None, {dim}]"
        lines += ["", f"x = tf.placeholder(tf.float32, {shape}, name=\"x\")",
                  f"y = tf.placeholder(tf.float32, [None, {classes}], name=\"y\")"]
    if g.training:
        if g.r.random() < 0.3:
            g.tags.add("training:placeholder_with_default")
            lines.append("is_training = tf.placeholder_with_default(False, [], name=\"is_training\")")
        else:
            g.tags.add("training:placeholder")
            lines.append("is_training = tf.placeholder(tf.bool, [], name=\"is_training\")")
    if g.keep_prob:
        lines.append("keep_prob = tf.placeholder(tf.float32, [], name=\"keep_prob\")")
    lines.append("")
    if seq:
        emb = g.r.choice([3, 4])
        lines += [f"embedding = tf.get_variable(\"embedding\", [{vocab}, {emb}])",
                  "embedded = tf.nn.embedding_lookup(embedding, x)"]
        enc = g.pick("encoder", ["mean", "BasicLSTMCell", "GRUCell", "BasicRNNCell"], [2, 2, 1, 1])
        if enc == "mean":
            lines.append("features = tf.reduce_mean(embedded, axis=1)")
            feat_dim = emb
        else:
            feat_dim = g.r.choice([3, 5])
            cell_args = f"{feat_dim}, forget_bias=1.0" if enc == "BasicLSTMCell" else f"{feat_dim}"
            encoder, feat_dim = _rnn_encoder(g, enc, cell_args, feat_dim, length)
            lines += encoder
        lines += _model(g, "features", feat_dim, classes)
    elif image:
        front, width = _conv_front(g, side, channels)
        lines += front + _model(g, "features", width, classes)
    else:
        lines += _model(g, "x", dim, classes)
    lines.append("")
    # (round 11) a weight read three times (a recurrence unrolled by hand: a tape would sum its
    # gradients in another order than TF 1), and chains TFC301 declines
    if g.alt11.random() < 0.25:
        g.tags.add("shared_weight:three_uses")
        lines += ["with tf.variable_scope(\"recurrent\"):",
                  f"    w_rec = tf.get_variable(\"w_rec\", [{classes}, {classes}])"]
        lines += ["logits = tf.matmul(tf.tanh(logits), w_rec)"] * 3
    if g.outside is None and g.alt11.random() < 0.12:
        chain = g.alt11.choice(OUTSIDE_CHAINS)
        g.outside = chain
        lines.append(f"extra = tf.get_variable(\"extra\", [{classes}], initializer=tf.zeros_initializer())")
        if chain == "sum_of_three_tensors":
            lines.append(g.alt11.choice(["logits = tf.nn.relu(logits) + logits + extra",
                                         "logits = tf.add(tf.add(logits, extra), tf.tanh(logits))"]))
        else:
            lines.append(g.alt11.choice(["logits = logits * 2.0 + extra - 0.5", "logits = 0.5 + (logits + extra)"]))
    if seq:
        lines.append("loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))")
        lines.append("accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.cast(tf.argmax(logits, 1), tf.int32), y), tf.float32))")
    elif task == "regress":
        lines.append(g.r.choice(["loss = tf.reduce_mean(tf.square(logits - y))",
                                 "loss = tf.losses.mean_squared_error(y, logits)"]))
    else:
        lines.append(g.r.choice([
            "loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits))",
            "loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))"]))
        if g.alt11.random() < 0.25:  # (round 11) the tutorials' cross-entropy with a constant in its log
            g.tags.add("loss:log_epsilon")
            lines[-1] = g.alt11.choice([
                "loss = -tf.reduce_mean(tf.reduce_sum(y * tf.log(tf.nn.softmax(logits) + 1e-7), axis=1))",
                "loss = -tf.reduce_mean(y * tf.log(tf.sigmoid(logits) + 1e-7) + (1 - y) * tf.log(1 - tf.sigmoid(logits) + 1e-7))"])
        lines.append("accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), tf.argmax(y, 1)), tf.float32))")
    if g.r.random() < 0.15:
        g.tags.add("weight_decay")
        lines.append("loss = loss + 1e-3 * tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables()])")
    has_acc = seq or task == "classify"
    # (round 14) a placeholder only an evaluation tensor reads, which the training runs leave
    # unfed (the cookbook SVMs' `prediction_grid`): TF 1 runs the pruned graph; fed once at the end
    probe = g.alt14.random() < 0.12
    if probe:
        g.tags.add("placeholder:unfed_in_training")
        lines += [f"probe = tf.placeholder(tf.float32, [None, {classes}], name=\"probe\")",
                  "probe_score = tf.reduce_mean(tf.square(logits - probe))"]
    # learning rate and global step
    schedule = g.pick("lr", ["constant", "exponential_decay"], [3, 2])
    gstep_kind = "get_or_create" if schedule == "exponential_decay" else \
        g.pick("global_step", ["none", "get_or_create", "variable"], [2, 2, 1])
    if schedule == "exponential_decay":
        g.tags.add("global_step:get_or_create")
    if gstep_kind == "get_or_create":
        lines.append("global_step = tf.train.get_or_create_global_step()")
    elif gstep_kind == "variable":
        lines.append("global_step = tf.Variable(0, name=\"global_step\", trainable=False)")
    lr0 = g.r.choice(["0.1", "0.05", "0.01"])
    if schedule == "exponential_decay":
        stair = g.r.choice(["True", "False"])
        lines.append(f"learning_rate = tf.train.exponential_decay({lr0}, global_step, 2, 0.5, staircase={stair})")
        lr = "learning_rate"
    else:
        lr = lr0
    lines.append(f"optimizer = {_optimizer(g, lr)}")
    gstep = ", global_step=global_step" if gstep_kind != "none" else ""
    site = _train_site(g, "loss", "optimizer", "train_op", gstep, None)
    if g.uses_bn:
        lines.append("update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)")
        lines.append("with tf.control_dependencies(update_ops):")
        lines += ["    " + s for s in site]
    else:
        lines += site
    lines += ["", ""]
    # the session loop
    train_feed = ["x: x_train[start:start + %d]" % batch, "y: y_train[start:start + %d]" % batch]
    if mnist:
        train_feed = ["x: batch_x", "y: batch_y"]
    eval_feed = ["x: x_test", "y: y_test"]
    if g.training:
        train_feed.append("is_training: True")
        if "training:placeholder" in g.tags:
            eval_feed.append("is_training: False")
    if g.keep_prob:
        train_feed.append("keep_prob: 0.8")
        eval_feed.append("keep_prob: 1.0")
    fetch = ["train_op", "loss"] + (["accuracy"] if has_acc and g.r.random() < 0.6 else [])
    outs = ["_", "train_loss"] + (["train_acc"] if len(fetch) == 3 else [])
    session = g.pick("session", ["with", "with_default_init", "explicit_close"], [4, 1, 1])
    init = "sess.run(tf.global_variables_initializer())"
    if session == "with_default_init":
        init = "tf.global_variables_initializer().run()"
    loop = []
    if session == "explicit_close":
        loop += ["sess = tf.Session()", init]
    else:
        loop += ["with tf.Session() as sess:", "    " + init]
    loop += [f"for step in range({steps}):",
             f"    batch_x, batch_y = mnist.train.next_batch({batch})" if mnist else f"    start = (step * {batch}) % 32",
             "    feed = {" + ", ".join(train_feed) + "}",
             *(_training_only_run(g, outs, fetch)),
             "    print(\"step\", step, \"loss\", repr(float(train_loss))"
             + (", \"accuracy\", repr(float(train_acc)))" if len(fetch) == 3 else ")")]
    eval_kind = g.pick("eval", ["run", "tensor_eval", "none"], [3, 1, 1])
    if eval_kind != "none":
        evals = "{" + ", ".join(eval_feed) + "}"
        loop.append("    if step % 2 == 1:")
        if eval_kind == "run":
            fetches = "[loss, accuracy]" if has_acc else "loss"
            outs_e = "test_loss, test_acc" if has_acc else "test_loss"
            loop.append(f"        {outs_e} = sess.run({fetches}, feed_dict={evals})")
            loop.append("        print(\"eval\", step, repr(float(test_loss))"
                        + (", repr(float(test_acc)))" if has_acc else ")"))
        else:
            session_arg = "session=sess, " if session == "explicit_close" else ""
            loop.append(f"        test_loss = loss.eval({session_arg}feed_dict={evals})")
            loop.append("        print(\"eval\", step, repr(float(test_loss)))")
    # (round 11) two runs in one expression, and a plain printing helper the loop calls (TFC301
    # keeps it module-level Python): only where no outside construct splices the loop
    two_runs, printer = g.alt11.random() < 0.2, g.alt11.random() < 0.2
    if g.outside in (None,) + OUTSIDE_CHAINS:
        if two_runs and has_acc:
            g.tags.add("run:two_in_one_expression")
            loop.append("    print(\"check \" + str(sess.run(loss, feed_dict=feed)) + \" \" + "
                        "str(sess.run(accuracy, feed_dict=feed)))")
        if printer:
            g.tags.add("helper:printing")
            lines += ["def report(name, value):", "    print(name, repr(float(value)))", "", ""]
            loop.append("    report(\"loss\", train_loss)")
    if probe:
        feed = ", ".join(eval_feed + [f"probe: np.full((8, {classes}), 0.25, np.float32)"])
        loop.append("print(\"probe\", repr(float(sess.run(probe_score, feed_dict={" + feed + "}))))")
    # (round 14) checkpoints: `tf.train.Saver()` after the graph, saves after the training run
    # (the harness compares every checkpoint both sides write); just outside: a save that runs
    # before the first step (TF 1 saves the initial slots the eager optimizer has not made), a restore
    saver_draw = g.alt14.random()
    if g.outside is None and saver_draw < 0.23:
        lines += ["", g.alt14.choice(["saver = tf.train.Saver()", "saver = tf.train.Saver(max_to_keep=2)"])]
        trained_at = max(i for i, ln in enumerate(loop) if "train_op" in ln and "sess.run(" in ln)
        step_arg = g.alt14.choice(["step", "global_step"]) if gstep_kind != "none" else "step"
        if saver_draw < 0.15:
            g.tags.add("saver:save")
            if g.alt14.random() < 0.5:
                loop[trained_at + 1:trained_at + 1] = [
                    "    if step % 2 == 1:",
                    f"        print(\"saved\", saver.save(sess, \"checkpoints/model.ckpt\", global_step={step_arg}))"]
            else:
                g.tags.add("saver:after_loop")
                loop.append("print(\"saved\", saver.save(sess, \"checkpoints/final.ckpt\"))")
        elif saver_draw < 0.2:
            g.outside = "saver_before_training"
            loop.insert(next(i for i, ln in enumerate(loop) if ln.startswith("for step in")) + 1,
                        "    saver.save(sess, \"checkpoints/model.ckpt\")")
        else:
            g.outside = "saver_restore"
            loop += ["saver.save(sess, \"checkpoints/final.ckpt\")", "saver.restore(sess, \"checkpoints/final.ckpt\")"]
    if gstep_kind != "none" and g.r.random() < 0.5:
        g.tags.add("fetch_global_step")
        loop.append("print(\"global step\", int(sess.run(global_step)))")
    if session == "explicit_close" and g.outside is not None:
        loop.append("sess.close()")  # the outside constructs are spliced into this exact form
        return lines + loop
    if session == "explicit_close":
        # (round 7) an InteractiveSession (`t.eval()` then needs no session argument), a session
        # created before the graph is built, or one never closed; only in programs inside the
        # class (above: seed 11 index 504 lost its MonitoredSession, 285 and 443 fed a
        # placeholder an InteractiveSession pruned)
        form = g.alt7.random()
        if form < 0.35:
            g.tags.add("session:interactive")
            loop[0] = "sess = tf.InteractiveSession()"
            loop = [ln.replace("loss.eval(session=sess, ", "loss.eval(") for ln in loop]
        if g.alt7.random() < 0.3:
            g.tags.add("session:opened_first")
            at = next(i for i, ln in enumerate(lines) if ln.startswith(("x = ", "x_ids = ", "inputs = "))
                      or "tf.placeholder(" in ln)
            lines = lines[:at] + [loop[0]] + lines[at:]
            loop = loop[1:]
        if g.alt7.random() < 0.7:
            loop.append("sess.close()")
        else:
            g.tags.add("session:never_closed")
        return lines + loop
    if g.alt9.random() < 0.3 and g.outside is None:
        # (round 9) an evaluation tensor built in the session block after training (the
        # tutorials' "Test model" lines), fetched once with the test feeds
        g.tags.add("session:metric_built_after_training")
        if seq:
            metric = "tf.reduce_mean(tf.cast(tf.equal(tf.cast(tf.argmax(logits, 1), tf.int32), y), tf.float32))"
        elif has_acc:
            loop.append("correct_prediction = tf.equal(tf.argmax(logits, 1), tf.argmax(y, 1))")
            metric = "tf.reduce_mean(tf.cast(correct_prediction, tf.float32))"
        else:
            metric = "tf.reduce_mean(tf.abs(logits - y))"
        loop += [f"final_metric = {metric}",
                 "print(\"final\", repr(float(sess.run(final_metric, feed_dict={" + ", ".join(eval_feed) + "}))))"]
    # (round 12) a second initializer run before training (inside the class: dropped, as TF 1
    # initializes the same variables again), or one of OUTSIDE_STATE: state the session block
    # changes that the eager program would not change the same way (the class must decline)
    draw = g.alt12.random()
    if g.outside is None and draw < 0.12:
        g.tags.add("init:twice_before_training")
        loop.insert(2, init)
    elif g.outside is None and draw < 0.28:
        construct = g.alt12.choice(OUTSIDE_STATE)
        g.outside = construct
        if construct == "init_after_training":
            return lines + [loop[0], loop[1]] + ["    " + s for s in loop[2:] + [init.strip()] + loop[2:]]
        if construct == "variable_assign":  # a weight changed by hand after each step (`W.assign`)
            at = next(i for i, ln in enumerate(lines) if ln.startswith("loss = "))
            lines = lines[:at] + ["scale = tf.get_variable(\"scale\", [], initializer=tf.ones_initializer())",
                                  "logits = logits * scale",
                                  g.alt12.choice(["shrink = scale.assign(scale * 0.9)",
                                                  "shrink = [v.assign(v * 0.9) for v in [scale]]"])] + lines[at:]
            step = next(i for i, ln in enumerate(loop) if ln.startswith("    print(\"step\""))
            loop.insert(step + 1, "    sess.run(shrink, feed_dict=feed)")
            return lines + [loop[0], loop[1]] + ["    " + s for s in loop[2:]]
        if construct == "changed_after_graph":  # TF 1 built the graph with 1.5; the session changes it
            at = next(i for i, ln in enumerate(lines) if ln.startswith("loss = "))
            if g.alt12.random() < 0.5:
                lines = lines[:at] + ["hparams = {\"scale\": 1.5}", "logits = logits * hparams[\"scale\"]"] + lines[at:]
                loop.insert(2, "hparams[\"scale\"] = 0.5")
            else:  # numpy data the graph read, shuffled in place
                lines = lines[:at] + ["scales = np.array([1.5, 0.5, 2.0, 0.25], np.float32)",
                                      "logits = logits * scales[0]"] + lines[at:]
                loop.insert(2, "np.random.RandomState(1).shuffle(scales)")
            return lines + [loop[0], loop[1]] + ["    " + s for s in loop[2:]]
        if construct == "rebound_by_function":  # `global scale` in a setter called after the graph
            at = next(i for i, ln in enumerate(lines) if ln.startswith("loss = "))
            lines = (lines[:at] + ["scale = 1.5", "", "", "def set_scale(value):", "    global scale", "    scale = value",
                                   "", "", "logits = logits * scale"] + lines[at:] + ["set_scale(0.5)", ""])
            return lines + [loop[0], loop[1]] + ["    " + s for s in loop[2:]]
        if construct == "helper_redefined":  # TF 1 built the graph with the first definition
            at = next(i for i, ln in enumerate(lines) if ln.startswith("loss = "))
            lines = lines[:at] + ["def squash(t):", "    return tf.tanh(t)", "", "",
                                  "logits = squash(logits)"] + lines[at:] + ["def squash(t):", "    return tf.sigmoid(t)",
                                                                            "", ""]
            return lines + [loop[0], loop[1]] + ["    " + s for s in loop[2:]]
        return lines + [loop[0], "    for trial in range(2):", "    " + loop[1]] + ["        " + s for s in loop[2:]]
    return lines + [loop[0], loop[1]] + ["    " + s for s in loop[2:]]


def _plain(g: _Gen) -> List[str]:
    """The plainest session scripts (tutorial shape): module-level ``get_variable`` weights or a helper
    ``forward``, one or two heads (two optimizers on disjoint variables, run in one ``sess.run``)."""
    g.tags.add("kind:plain")
    dim, hidden, classes = g.r.choice([3, 4]), g.r.choice([4, 6]), g.r.choice([1, 2])
    act = g.r.choice(["tf.tanh", "tf.nn.relu", "tf.sigmoid"])
    init = g.pick("plain_init", ["default", "glorot", "zeros_bias_only"])
    winit = {"default": "", "glorot": ", initializer=tf.glorot_uniform_initializer()",
             "zeros_bias_only": ""}[init]
    heads = g.pick("heads", ["one", "two"], [3, 1])
    place = g.pick("plain_model", ["module", "scope", "helper"])
    float64 = g.alt.random() < 0.2  # numpy's default float64 fed to float32 placeholders
    if float64:
        g.tags.add("plain_float64_feed")
    cast = "" if float64 else ".astype(np.float32)"
    lines = [f"rng = np.random.RandomState({g.r.randrange(100)})",
             f"x_train = rng.randn(32, {dim}){cast}",
             f"y_train = np.tanh(x_train[:, :{classes}] * 2.0).astype(np.float32)",
             f"x_test = rng.randn(8, {dim}).astype(np.float32)",
             f"y_test = np.tanh(x_test[:, :{classes}] * 2.0).astype(np.float32)", "",
             f"x = tf.placeholder(tf.float32, [None, {dim}])",
             f"y = tf.placeholder(tf.float32, [None, {classes}])", ""]
    names = ["a", "b"] if heads == "two" else [""]

    # (round 8) the hunkim / cookbook form: unnamed `tf.Variable`s with random or literal values
    unnamed = g.unnamed_variables and place in ("module", "scope") and g.alt8.random() < 0.6
    if unnamed:
        g.tags.add("plain:unnamed_variables")
    # (round 8) the TensorFlow-Examples form: dicts of unnamed variables at module level, read by
    # the helper that builds the model
    weight_dicts = g.unnamed_variables and place == "helper" and g.alt8.random() < 0.6
    if weight_dicts:
        g.tags.add("plain:weight_dicts")
    w1_init = g.alt8.choice([f"tf.random_normal([{dim}, {hidden}], stddev=0.5)",
                             f"tf.random_uniform([{dim}, {hidden}], -0.5, 0.5)",
                             f"tf.truncated_normal([{dim}, {hidden}], stddev=0.5)"])
    b1_init = g.alt8.choice([f"tf.zeros([{hidden}])", "[" + ", ".join(["0.05"] * hidden) + "]"])

    # (round 9) Deep MNIST's variable factories (`weight_variable(shape)`), called at module level
    factories = unnamed and g.alt9f.random() < 0.5
    named_factories = factories and g.alt9f.random() < 0.3
    if factories:
        g.tags.add("plain:variable_factories" + (":named" if named_factories else ""))
        w_init = g.alt9f.choice(["tf.truncated_normal(shape, stddev=0.5)", "tf.random_normal(shape, stddev=0.5)"])
        if named_factories:
            lines += ["def weight_variable(shape, name):", f"    return tf.Variable({w_init}, name=name)", "", "",
                      "def bias_variable(shape, name):", "    return tf.Variable(tf.constant(0.1, shape=shape), name=name)",
                      "", ""]
        else:
            lines += ["def weight_variable(shape):", f"    initial = {w_init}", "    return tf.Variable(initial)", "", "",
                      "def bias_variable(shape):", "    initial = tf.constant(0.1, shape=shape)",
                      "    return tf.Variable(initial)", "", ""]

    def body(suffix: str, inputs: str, indent: str) -> List[str]:
        if factories:
            def named(n: str) -> str:
                return f", \"{n}{suffix}\"" if named_factories else ""
            return [indent + f"w1{suffix} = weight_variable([{dim}, {hidden}]{named('w1')})",
                    indent + f"b1{suffix} = bias_variable([{hidden}]{named('b1')})",
                    indent + f"w2{suffix} = weight_variable([{hidden}, {classes}]{named('w2')})",
                    indent + f"prediction{suffix} = tf.matmul({act}(tf.matmul({inputs}, w1{suffix}) + b1{suffix}), w2{suffix})"]
        if unnamed:
            return [indent + f"w1{suffix} = tf.Variable({w1_init})",
                    indent + f"b1{suffix} = tf.Variable({b1_init})",
                    indent + f"w2{suffix} = tf.Variable(tf.random_normal([{hidden}, {classes}], stddev=0.5))",
                    indent + f"prediction{suffix} = tf.matmul({act}(tf.matmul({inputs}, w1{suffix}) + b1{suffix}), w2{suffix})"]
        return [indent + f"w1{suffix} = tf.get_variable(\"w1{suffix}\", [{dim}, {hidden}]{winit})",
                indent + f"b1{suffix} = tf.get_variable(\"b1{suffix}\", [{hidden}], initializer=tf.zeros_initializer())",
                indent + f"w2{suffix} = tf.get_variable(\"w2{suffix}\", [{hidden}, {classes}]{winit})",
                indent + f"prediction{suffix} = tf.matmul({act}(tf.matmul({inputs}, w1{suffix}) + b1{suffix}), w2{suffix})"]

    for n in names:
        suffix = f"_{n}" if n else ""
        if place == "module":
            lines += body(suffix, "x", "")
        elif place == "scope":
            lines += [f"with tf.variable_scope(\"model{suffix}\"):"] + body(suffix, "x", "    ")
        elif weight_dicts:
            lines += [f"weights{suffix} = {{",
                      f"    \"h1\": tf.Variable({w1_init}),",
                      f"    \"out\": tf.Variable(tf.random_normal([{hidden}, {classes}], stddev=0.5)),",
                      "}",
                      f"biases{suffix} = {{\"b1\": tf.Variable({b1_init})}}",
                      "", "", f"def forward{suffix}(inputs):",
                      f"    hidden = {act}(tf.matmul(inputs, weights{suffix}[\"h1\"]) + biases{suffix}[\"b1\"])",
                      f"    return tf.matmul(hidden, weights{suffix}[\"out\"])",
                      "", "", f"prediction{suffix} = forward{suffix}(x)"]
        else:
            lines += ["", "", f"def forward{suffix}(inputs):"] + body(suffix, "inputs", "    ") + \
                [f"    return prediction{suffix}", "", "", f"prediction{suffix} = forward{suffix}(x)"]
        lines.append(f"loss{suffix} = tf.reduce_mean(tf.square(prediction{suffix} - y))")
        if n in ("", "a") and g.alt3.random() < 0.25:
            # weight decay over tf.trainable_variables() where it is called: with two heads, the
            # variables of head a only (head b's are created after it)
            g.tags.add("plain_weight_decay")
            lines.append(f"loss{suffix} = loss{suffix} + 1e-3 * tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables()])")
    gstep = ""
    if heads == "one" and g.r.random() < 0.3:
        g.tags.add("plain_global_step")
        lines.append("global_step = tf.train.get_or_create_global_step()")
        gstep = ", global_step=global_step"
    fed_lr = heads == "one" and g.alt.random() < 0.25  # the tutorial habit: a learning-rate placeholder
    if fed_lr:
        g.tags.add("plain_fed_learning_rate")
        lines.append("learning_rate = tf.placeholder(tf.float32, [], name=\"learning_rate\")")
    for n in names:
        suffix = f"_{n}" if n else ""
        lr = g.r.choice(["0.1", "0.05", "0.01"])
        if fed_lr:
            lr = "learning_rate"
        lines.append(f"optimizer{suffix} = {_optimizer(g, lr)}")
        # two heads: the other head's variables get None gradients (TF 1 rejects clipping None)
        lines += _train_site(g, f"loss{suffix}", f"optimizer{suffix}", f"train_op{suffix}", gstep, None,
                             guard=heads == "two")
    steps = g.r.choice([4, 5, 6])
    feed = "{x: x_train[start:start + 8], y: y_train[start:start + 8]}"
    if fed_lr:
        feed = "{x: x_train[start:start + 8], y: y_train[start:start + 8], learning_rate: 0.1 * 0.8 ** step}"
    loop = ["", "", "with tf.Session() as sess:", "    sess.run(tf.global_variables_initializer())",
            f"    for step in range({steps}):", "        start = (step * 8) % 32"]
    if heads == "two":
        order = g.pick("fetch_order", ["ops_first", "losses_first"])
        if order == "ops_first":
            loop.append(f"        _, _, la, lb = sess.run([train_op_a, train_op_b, loss_a, loss_b], feed_dict={feed})")
        else:
            loop.append(f"        la, lb, _, _ = sess.run([loss_a, loss_b, train_op_a, train_op_b], feed_dict={feed})")
        loop.append("        print(\"step\", step, repr(float(la)), repr(float(lb)))")
        test = "[loss_a, loss_b]"
    else:
        fetch = g.pick("fetch", ["op_loss", "loss_op", "separate", "dict"])
        if fetch == "op_loss":
            loop.append(f"        _, value = sess.run([train_op, loss], feed_dict={feed})")
        elif fetch == "loss_op":
            loop.append(f"        value, _ = sess.run([loss, train_op], {feed})")
        elif fetch == "separate":
            if g.alt.random() < 0.4:  # the loss after the update
                g.tags.add("fetch:separate_after")
                loop += [f"        sess.run(train_op, feed_dict={feed})",
                         f"        value = sess.run(loss, feed_dict={feed})"]
            else:
                loop += [f"        value = sess.run(loss, feed_dict={feed})",
                         f"        sess.run(train_op, feed_dict={feed})"]
        else:
            loop += [f"        out = sess.run({{\"train\": train_op, \"loss\": loss}}, feed_dict={feed})",
                     "        value = out[\"loss\"]"]
        loop.append("        print(\"step\", step, \"loss\", repr(float(value)))")
        test = "loss"
    if g.r.random() < 0.6:
        g.tags.add("plain_eval")
        loop += ["        if step % 2 == 1:",
                 f"            test_value = sess.run({test}, feed_dict={{x: x_test, y: y_test}})",
                 "            print(\"eval\", step, repr(test_value.tolist() if hasattr(test_value, \"tolist\") else test_value))"]
    if gstep:
        loop.append("    print(\"global step\", int(sess.run(global_step)))")
    return lines + loop


def _gan(g: _Gen) -> List[str]:
    g.tags.add("kind:gan")
    opt_kind = g.pick("gan_optimizer", ["Adam", "RMSProp", "GradientDescent"], [3, 1, 1])
    make = {"Adam": "tf.train.AdamOptimizer({lr}, beta1=0.5)", "RMSProp": "tf.train.RMSPropOptimizer({lr})",
            "GradientDescent": "tf.train.GradientDescentOptimizer({lr})"}[opt_kind]
    units = g.r.choice([4, 6, 8])
    by = g.pick("var_list", ["collection", "trainable_filter"])
    lines = [f"rng = np.random.RandomState({g.r.randrange(100)})", "",
             "z = tf.placeholder(tf.float32, [None, 3], name=\"z\")",
             "real = tf.placeholder(tf.float32, [None, 2], name=\"real\")", "", "",
             "def generator(noise):",
             "    with tf.variable_scope(\"generator\"):",
             f"        h = tf.layers.dense(noise, {units}, activation=tf.nn.leaky_relu)",
             "        return tf.layers.dense(h, 2)", "", "",
             "def discriminator(samples, reuse=False):",
             "    with tf.variable_scope(\"discriminator\", reuse=reuse):",
             f"        h = tf.layers.dense(samples, {units}, activation=tf.nn.leaky_relu, name=\"h\")",
             "        return tf.layers.dense(h, 1, name=\"logit\")", "", "",
             "fake = generator(z)",
             "d_real = discriminator(real)",
             "d_fake = discriminator(fake, reuse=True)",
             "d_loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.ones_like(d_real), logits=d_real)) + \\",
             "    tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.zeros_like(d_fake), logits=d_fake))",
             "g_loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.ones_like(d_fake), logits=d_fake))"]
    if by == "collection":
        lines += ["d_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope=\"discriminator\")",
                  "g_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope=\"generator\")"]
    else:
        lines += ["t_vars = tf.trainable_variables()",
                  "d_vars = [var for var in t_vars if var.name.startswith(\"discriminator\")]",
                  "g_vars = [var for var in t_vars if var.name.startswith(\"generator\")]"]
    lines += [f"d_optimizer = {make.format(lr='1e-2')}", f"g_optimizer = {make.format(lr='2e-2')}"]
    lines += _train_site(g, "d_loss", "d_optimizer", "d_train", "", "d_vars")
    lines += _train_site(g, "g_loss", "g_optimizer", "g_train", "", "g_vars")
    steps = g.r.choice([3, 4])
    lines += ["", "", "with tf.Session() as sess:", "    sess.run(tf.global_variables_initializer())",
              f"    for step in range({steps}):",
              "        noise = rng.randn(8, 3).astype(np.float32)",
              "        batch = (rng.randn(8, 2) * 0.5 + 1.0).astype(np.float32)",
              "        _, dl = sess.run([d_train, d_loss], feed_dict={z: noise, real: batch})",
              "        _, gl = sess.run([g_train, g_loss], feed_dict={z: noise%s})" % (
                  ", real: batch" if g.alt3.random() < 0.5 else ""),  # feeding real too: common, harmless
              "        print(\"step\", step, \"d\", repr(float(dl)), \"g\", repr(float(gl)))"]
    if g.alt14.random() < 0.25:  # (round 14) a checkpoint of both optimizers (two Adams: beta1_power_1)
        g.tags.add("saver:gan")
        lines.insert(lines.index("with tf.Session() as sess:") - 2, "saver = tf.train.Saver()")
        lines.append("    print(\"saved\", saver.save(sess, \"checkpoints/gan.ckpt\", global_step=step))")
    return lines


def _outside(g: _Gen, kind: str, lines: List[str]) -> List[str]:
    """Turn an inside program's lines into one with the construct ``kind``."""
    text = "\n".join(lines)
    if kind == "monitored_session":
        text = text.replace("with tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())",
                            "with tf.train.MonitoredTrainingSession() as sess:")
        text = text.replace("with tf.Session() as sess:\n    tf.global_variables_initializer().run()",
                            "with tf.train.MonitoredTrainingSession() as sess:")
        text = text.replace("sess = tf.Session()\nsess.run(tf.global_variables_initializer())",
                            "sess = tf.train.MonitoredSession()")
        text = text.replace("loss.eval(feed_dict=", "sess.run(loss, feed_dict=")
        text = text.replace("print(\"global step\", int(sess.run(global_step)))\n", "")
    elif kind == "tensor_by_name":
        text = text.replace("= sess.run([train_op, loss", "= sess.run([train_op, tf.get_default_graph().get_tensor_by_name(loss.name)", 1)
    elif kind == "op_in_loop":
        out = []
        for line in text.split("\n"):
            out.append(line)
            if line.lstrip().startswith("feed = {"):
                indent = line[: len(line) - len(line.lstrip())]
                # (round 9: a random op; stateless ops of forward tensors built in a fetch are in the class)
                out.append(indent + "print(\"noisy loss\", repr(float(sess.run(loss + tf.random_uniform([], seed=7), "
                                    "feed_dict=feed))))")
        text = "\n".join(out)
    elif kind == "partial_run":
        # partial_run cannot run ops (TF 2.21 and TF 1 alike): the loss is fetched through it
        out = []
        for line in text.split("\n"):
            out.append(line)
            if line.lstrip().startswith("feed = {"):
                indent = line[: len(line) - len(line.lstrip())]
                out += [indent + "handle = sess.partial_run_setup([loss], list(feed))",
                        indent + "print(\"partial\", repr(float(sess.partial_run(handle, loss, feed_dict=feed))))"]
        text = "\n".join(out)
    return text.split("\n")


def _module_state(g: _Gen, lines: List[str]) -> Optional[List[str]]:
    """A helper of the forward pass that changes a module-level object (a list it appends its input
    to, or a dict counting its calls): TF 1 ran it once, an eager step would run it at every trace,
    so the rule must decline. None when the program has no such helper."""
    for i, line in enumerate(lines):
        if line.startswith(("def build_model(", "def forward", "    def __init__(self")):
            indent = "        " if line.startswith("    ") else "    "
            params = [p.split("=")[0].strip() for p in line[line.index("(") + 1: line.rindex(")")].split(",")]
            params = [p for p in params if p and p != "self"]
            if g.alt9.random() < 0.5 and params:
                splice = [indent + f"built_inputs.append({params[0]})"]
                header = "built_inputs = []"
            else:
                splice = [indent + "build_calls[\"model\"] = build_calls.get(\"model\", 0) + 1"]
                header = "build_calls = {}"
            start = next((j for j, text in enumerate(lines) if text and not text.startswith(("import", "from", "#"))), 0)
            return lines[:start] + [header] + lines[start:i + 1] + splice + lines[i + 1:]
    return None


_QUEUE = '''rng = np.random.RandomState({rs})
x_data = rng.randn(32, 4).astype(np.float32)
y_data = np.tanh(x_data[:, :1]).astype(np.float32)
x_one, y_one = tf.train.slice_input_producer([x_data, y_data], shuffle=False)
x, y = tf.train.batch([x_one, y_one], batch_size=8)
with tf.variable_scope("model"):
    h = tf.layers.dense(x, 4, activation=tf.nn.relu)
    logits = tf.layers.dense(h, 1)
loss = tf.reduce_mean(tf.square(logits - y))
train_op = tf.train.{opt}(0.05).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess=sess, coord=coord)
    for step in range(3):
        _, train_loss = sess.run([train_op, loss])
        print("step", step, "loss", repr(float(train_loss)))
    coord.request_stop()
    coord.join(threads)'''

_TOWERS = '''rng = np.random.RandomState({rs})
x_train = rng.randn(32, 4).astype(np.float32)
y_train = np.tanh(x_train[:, :1]).astype(np.float32)
x = tf.placeholder(tf.float32, [None, 4], name="x")
y = tf.placeholder(tf.float32, [None, 1], name="y")
optimizer = tf.train.{opt}(0.05)
tower_grads, tower_losses = [], []
for i, (x_part, y_part) in enumerate(zip(tf.split(x, 2), tf.split(y, 2))):
    with tf.device("/cpu:0"), tf.variable_scope("model", reuse=i > 0):
        h = tf.layers.dense(x_part, 4, activation=tf.nn.relu, name="hidden")
        logits = tf.layers.dense(h, 1, name="out")
        tower_loss = tf.reduce_mean(tf.square(logits - y_part))
        tower_losses.append(tower_loss)
        tower_grads.append(optimizer.compute_gradients(tower_loss))
averaged = [(tf.reduce_mean(tf.stack([g for g, _ in pairs]), axis=0), pairs[0][1]) for pairs in zip(*tower_grads)]
train_op = optimizer.apply_gradients(averaged)
loss = tf.add_n(tower_losses) / 2.0

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(4):
        _, train_loss = sess.run([train_op, loss], feed_dict={{x: x_train[:8], y: y_train[:8]}})
        print("step", step, "loss", repr(float(train_loss)))'''

_ESTIMATOR = '''def model_fn(features, labels, mode):
    h = tf.layers.dense(features["x"], 4, activation=tf.nn.relu)
    logits = tf.layers.dense(h, 1)
    loss = tf.reduce_mean(tf.square(logits - labels))
    optimizer = tf.train.{opt}(0.05)
    grads_and_vars = optimizer.compute_gradients(loss)
    capped = [(tf.clip_by_value(grad, -1.0, 1.0), var) for grad, var in grads_and_vars]
    train_op = optimizer.apply_gradients(capped, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


rng = np.random.RandomState({rs})
x_train = rng.randn(32, 4).astype(np.float32)
y_train = np.tanh(x_train[:, :1]).astype(np.float32)
estimator = tf.estimator.Estimator(model_fn=model_fn)
input_fn = tf.estimator.inputs.numpy_input_fn({{"x": x_train}}, y_train, batch_size=8, shuffle=False)
estimator.train(input_fn, steps=4)'''


def program(seed: int, index: int) -> Program:
    """The ``index``-th program of ``seed`` with its tags."""
    g = _Gen(seed, index)
    header = ["import numpy as np", "import tensorflow as tf", "", f"tf.set_random_seed({g.r.randrange(1000)})", ""]
    # the default graph reset before the graph is built: ``tf.reset_default_graph()`` or through
    # ``from tensorflow.python.framework import ops`` (the same function)
    reset = g.alt4.choices(["none", "tf", "ops"], weights=[6, 1, 2])[0]
    if reset != "none":
        g.tags.add(f"reset:{reset}")
        if reset == "ops":
            header.insert(2, "from tensorflow.python.framework import ops")
        header.insert(header.index("") + 1, f"{'ops' if reset == 'ops' else 'tf'}.reset_default_graph()")
    outside = g.r.choices([None] + list(OUTSIDE), weights=[70] + [30 / len(OUTSIDE)] * len(OUTSIDE))[0]
    g.outside = outside
    if outside == "queue_runners":
        body = _QUEUE.format(rs=g.r.randrange(100), opt="AdamOptimizer").split("\n")
    elif outside == "device_towers":
        body = _TOWERS.format(rs=g.r.randrange(100), opt=g.r.choice(["AdamOptimizer", "GradientDescentOptimizer"])).split("\n")
    elif outside == "estimator":
        body = _ESTIMATOR.format(rs=g.r.randrange(100), opt="AdamOptimizer").split("\n")
    else:
        kind = g.pick("kind", ["classifier", "plain", "gan"], [5, 4, 1]) if outside is None else "classifier"
        body = {"gan": _gan, "plain": _plain, "classifier": _classifier}[kind](g)
        if outside is not None:
            body = _outside(g, outside, body)
    if outside is None and g.outside is not None:  # (round 11) a chain drawn inside the classifier
        outside = g.outside
    if outside is None and g.alt9.random() < 0.06:
        spliced = _module_state(g, body)
        if spliced is not None:
            body, outside = spliced, "module_state"
            g.outside = outside
    if outside:
        g.tags.add(f"outside:{outside}")
    doc = [f'"""Generated TF 1 session script (tests/fuzz_eager, seed {seed}, index {index})."""']
    if g.alt10.random() < 0.15:  # (round 10) the Python 2 era's first line: must stay first
        g.tags.add("future_import")
        doc.append(g.alt10.choice(["from __future__ import print_function",
                                   "from __future__ import absolute_import, division, print_function"]))
    if g.contrib_rnn_import:  # (round 14) the tutorials' module alias for TF 1.15's tf.contrib.rnn
        header.insert(header.index("import tensorflow as tf") + 1, "from tensorflow.contrib import rnn")
    source = "\n".join(doc + header + body).rstrip() + "\n"
    return Program(seed, index, source, outside is None, outside, g.tags)


def generate(seed: int, index: int) -> str:
    """The source of the ``index``-th program of ``seed``."""
    return program(seed, index).source
