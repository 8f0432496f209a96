"""What the session-script migration knows about TensorFlow names (canonical TF 1 paths,
``compat.v1.`` stripped): which may appear in the forward pass, which are kept as ``tf.<path>``
because TF 2 exports the very same function, and TF 1's default initializers.

Unknown means decline: a TF name outside these tables makes the rule decline the file.
"""

from __future__ import annotations

# TF 2 exports these as the same objects as ``tf.compat.v1.<path>`` (checked against the real
# API by tests/proofs/test_eager_migration.py): the emitted program keeps them as ``tf.<path>``.
SAME_IN_TF2 = frozenset({
    "__version__", "abs", "add", "add_n", "cast", "clip_by_global_norm", "clip_by_norm", "clip_by_value", "concat",
    "exp", "float16", "float32", "float64", "identity", "int32", "int64", "matmul", "maximum", "minimum",
    "multiply", "nn.relu", "ones", "reshape", "sigmoid", "sqrt", "square", "stack", "stop_gradient",
    "subtract", "tanh", "unstack", "zeros",
})

# Names the forward pass may use: deterministic, stateless ops whose eager result is the graph
# result, and the variable machinery that ``track_tf1_style_variables`` follows.
FORWARD = SAME_IN_TF2 | frozenset({
    "constant", "expand_dims", "nn.sigmoid", "nn.softmax", "nn.tanh", "ones_like", "squeeze", "transpose",
    "zeros_like",
    "bool", "argmax", "divide", "truediv", "div", "equal", "greater", "less", "log", "log1p", "logical_and",
    "logical_not", "logical_or", "negative", "pow", "reduce_max", "reduce_mean", "reduce_min",
    "reduce_sum", "rsqrt", "sign", "shape", "range", "softplus", "split", "tile", "where", "gather", "one_hot",
    "nn.elu", "nn.leaky_relu", "nn.log_softmax", "nn.relu6", "nn.softplus", "nn.l2_loss",
    "nn.bias_add", "nn.embedding_lookup", "nn.sigmoid_cross_entropy_with_logits",
    "nn.softmax_cross_entropy_with_logits_v2", "nn.sparse_softmax_cross_entropy_with_logits",
    "losses.mean_squared_error", "losses.absolute_difference", "losses.log_loss",
    "losses.sigmoid_cross_entropy", "losses.softmax_cross_entropy",
    "losses.sparse_softmax_cross_entropy", "losses.huber_loss",
    "get_variable", "variable_scope", "name_scope",
    "layers.dense", "layers.flatten",
    # convolutional networks: the same kernels in a session and in a tf.function (measured bit for
    # bit by the proofs and the eager fuzzer); pooling has no variables
    "nn.conv2d", "nn.max_pool", "nn.avg_pool", "nn.max_pool2d", "nn.avg_pool2d",
    "layers.conv2d", "layers.max_pooling2d", "layers.average_pooling2d",
    "nn.softmax_cross_entropy_with_logits",
    # dropout draws a fresh mask in every run, eagerly as in a session (the numbers differ, as a
    # seed need not draw the same numbers in both worlds; the proofs align them:
    # tests/_aligned_dropout.py); `tf.layers.dropout` samples through the same op
    "nn.dropout", "layers.dropout",
    # batch normalization (tf-keras' legacy layer: TF 1's unbiased moving variance); the moving
    # statistics are checked by the program model (every training op under UPDATE_OPS, every other
    # run in inference mode)
    "layers.batch_normalization",
    # TF 1 RNN cells (tf-keras' legacy layers: their variables come from get_variable, so
    # track_tf1_style_variables keeps their names and reuses them) and dynamic_rnn
    "nn.rnn_cell.BasicLSTMCell", "nn.rnn_cell.GRUCell", "nn.rnn_cell.BasicRNNCell", "nn.dynamic_rnn",
    # (round 14) more cells, and the static RNNs: a Python loop over the steps, unrolled in the
    # graph; the step differentiates with tf.compat.v1.gradients (TF 1's algorithm), so the cached
    # reads static_rnn makes (caching_device) are followed as in TF 1 (no tape is paused)
    "nn.rnn_cell.LSTMCell", "nn.rnn_cell.MultiRNNCell", "nn.static_rnn", "nn.static_bidirectional_rnn",
    "nn.bidirectional_dynamic_rnn",
    "constant_initializer", "glorot_normal_initializer", "glorot_uniform_initializer",
    "ones_initializer", "random_normal_initializer", "random_uniform_initializer",
    "truncated_normal_initializer", "zeros_initializer", "initializers.constant",
    "initializers.glorot_normal", "initializers.glorot_uniform", "initializers.ones",
    "initializers.random_normal", "initializers.random_uniform", "initializers.truncated_normal",
    "initializers.zeros",
})

# ``tf.contrib`` initializers TF 2 lacks, and the ``tf.compat.v1`` initializer that computes the
# same thing: ``xavier_initializer(uniform=True)`` is contrib's ``variance_scaling_initializer(
# factor=1.0, mode="FAN_AVG", uniform=True)``, a uniform draw in +-sqrt(3 / fan_avg), as
# ``glorot_uniform_initializer`` (the same op, limit and seed: equal bit for bit in a graph,
# tests/proofs/test_eager_migration.py). ``uniform=False`` is not the same (a truncated normal of
# stddev sqrt(1.3 / fan_avg)): declined.
RENAMED_INITIALIZERS = {
    "contrib.layers.xavier_initializer": "glorot_uniform_initializer",
    "contrib.layers.xavier_initializer_conv2d": "glorot_uniform_initializer",
}
FORWARD = FORWARD | frozenset(RENAMED_INITIALIZERS)

# ``tf.contrib.rnn`` names that are TF 1's core objects under a second path (TF 1.15's
# ``tensorflow/contrib/rnn/__init__.py`` star-imports ``tensorflow.python.ops.rnn_cell`` last and
# imports ``static_rnn``/``static_bidirectional_rnn`` from ``tensorflow.python.ops.rnn``): read as
# the core path, so ``tf.contrib.rnn.BasicLSTMCell`` and ``rnn.BasicLSTMCell`` (``from
# tensorflow.contrib import rnn``) are ``tf.nn.rnn_cell.BasicLSTMCell``. Contrib's own cells
# (``LayerNormBasicLSTMCell``...) keep their contrib path, which no table lists: declined.
CONTRIB_RNN = {f"contrib.rnn.{cell}": f"nn.rnn_cell.{cell}"
               for cell in ("BasicLSTMCell", "BasicRNNCell", "GRUCell", "LSTMCell", "MultiRNNCell",
                            "LSTMStateTuple", "DropoutWrapper", "RNNCell")}
CONTRIB_RNN.update({"contrib.rnn.static_rnn": "nn.static_rnn",
                    "contrib.rnn.static_bidirectional_rnn": "nn.static_bidirectional_rnn"})

# Forward names that create variables (a layer, a cell, an initializer): the program model keeps
# them where TF 1 ran them once.
STATEFUL_PREFIXES = ("layers.", "nn.rnn_cell.", "initializers.")
# Random ops (by path prefix): the forward pass may use only dropout of them.
RANDOM_PREFIXES = ("random_", "random.", "nn.dropout", "layers.dropout", "truncated_normal", "multinomial")

# RNN cells and RNNs: the arguments each may be called with (positional names in order; keywords,
# with the one value allowed when it is not None). Measured in a session and in a tf.function:
# `LSTMCell`'s peepholes put `w_f_diag * c` in the forget gate's chain with the constant
# `forget_bias`, which grappler regroups differently (1 ulp in the variables after 4 steps); the
# other options (`cell_clip`, `num_proj`, `activation`, `sequence_length`, ...) are not measured:
# declined. An `initializer=` is checked as every initializer argument is.
RNN_ARGUMENTS = {
    "nn.rnn_cell.BasicLSTMCell": (("num_units", "forget_bias"), {"state_is_tuple": "True"}),
    "nn.rnn_cell.LSTMCell": (("num_units",), {"forget_bias": None, "state_is_tuple": "True",
                                              "use_peepholes": "False", "initializer": None}),
    "nn.rnn_cell.GRUCell": (("num_units",), {}),
    "nn.rnn_cell.BasicRNNCell": (("num_units",), {}),
    "nn.rnn_cell.MultiRNNCell": (("cells",), {"state_is_tuple": "True"}),
    "nn.dynamic_rnn": (("cell", "inputs"), {"dtype": None, "sequence_length": None}),
    "nn.static_rnn": (("cell", "inputs"), {"dtype": None, "sequence_length": None}),
    "nn.static_bidirectional_rnn": (("cell_fw", "cell_bw", "inputs"), {"dtype": None}),
    "nn.bidirectional_dynamic_rnn": (("cell_fw", "cell_bw", "inputs"), {"dtype": None}),
}
RNN_WHY = {"use_peepholes": "its forget gate adds `w_f_diag * c` into a chain with the constant `forget_bias`, "
                            "which grappler regroups differently in a session and in a `tf.function` (measured: "
                            "1 ulp in the variables after 4 steps)"}

# Initializer classes: allowed as an ``*initializer=`` argument (they run once, at variable creation).
INITIALIZERS = frozenset(n for n in FORWARD if n.endswith(("_initializer", "_initializer_conv2d"))
                         or n.startswith("initializers."))

# Gradient processing between ``compute_gradients`` and ``apply_gradients``.
PROCESSING = frozenset({"clip_by_global_norm", "clip_by_norm", "clip_by_value", "global_norm",
                        "clip_by_average_norm", "identity", "multiply", "zeros_like"})

# ``tf.train.<X>Optimizer`` classes kept as ``tf.compat.v1.train.<X>Optimizer`` (a Keras optimizer
# rounds differently; the v1 optimizers run eagerly on tf.Variables).
OPTIMIZERS = frozenset({
    "train.AdadeltaOptimizer", "train.AdagradOptimizer", "train.AdamOptimizer",
    "train.GradientDescentOptimizer", "train.MomentumOptimizer", "train.RMSPropOptimizer",
})

CONTRIB_CLIP = "contrib.estimator.clip_gradients_by_norm"

# Layers whose variables TF 1 initialised with get_variable's defaults when none is given: the
# positional index of ``kernel_initializer`` and of ``bias_initializer`` in TF 1's signature.
LAYERS_WITH_KERNEL = {"layers.dense": (4, 5), "layers.conv2d": (9, 10)}

FLOAT_DTYPES = frozenset({"float16", "float32", "float64", "bfloat16"})
DTYPES = FLOAT_DTYPES | frozenset({"int32", "int64", "bool", "uint8", "int8", "int16"})
# Dtype strings TF 1's ``tf.as_dtype`` accepts for these dtypes (``tf.placeholder("float", ...)``).
DTYPE_STRINGS = {"float": "float32", "float32": "float32", "half": "float16", "float16": "float16",
                 "double": "float64", "float64": "float64", "bfloat16": "bfloat16", "int32": "int32",
                 "int64": "int64", "bool": "bool", "uint8": "uint8", "int8": "int8", "int16": "int16"}
