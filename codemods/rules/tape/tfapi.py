"""What each TensorFlow API does to the gradient path: the planner's explicit allowlist.

A tape records the ops created while it is active; ``tape.gradient`` differentiates through the
recorded ops only. So a value computed *before* the tape may be read inside it only when no
gradient can flow through it. This table says, for a canonical TF name (``tf.X`` as
``codemods.rules.tfnames.canonical`` spells it), which of these it is:

* :data:`Api.SOURCE` -- a data source (placeholder, constant, ``tf.data``, ``tf.keras.Input``):
  gradient-free when its arguments are.
* :data:`Api.CUT` -- an op no gradient flows through (``tf.stop_gradient``, ``tf.shape``,
  comparisons, ``zeros_like``...): gradient-free whatever its arguments are.
* :data:`Api.PURE` -- an op computed from its arguments only: gradient-free when they are.
* :data:`Api.VARIABLE` -- creates or looks up a variable object; its *reads* happen where it is
  used, inside the tape.
* :data:`Api.OBJECT` -- builds an object (layer, model, cell, optimizer, initializer...) whose
  calls read variables where they happen. A call of such an object is a :data:`Api.LAYER` call.
* :data:`Api.LAYER` -- reads (and may create) variables, and may add to graph collections
  (``tf.layers.dense``, ``tf.contrib.layers.fully_connected``...): never gradient-free.
* :data:`Api.COLLECTION_READ` / :data:`Api.COLLECTION_WRITE` -- reads tensors from / adds
  tensors to graph collections (``tf.losses.get_total_loss``, ``tf.add_to_collection``).
* :data:`Api.HAZARD` -- a tape differs from ``tf.gradients`` through it (measured on TF 2.21:
  ``tf.nn.dynamic_rnn`` gives ``None`` gradients for the cell's variables under a tape even when
  they exist before it).
* :data:`Api.LOOP` -- runs callables in a ``while_loop`` (``map_fn``, ``scan``...): agrees with
  ``tf.gradients`` (measured) when the callables only compute (no variable created inside).
* :data:`Api.GRADIENT` -- computes gradients (``tf.gradients``, a tape): another site.

Unknown names are classified conservatively: a capitalised name is an object, a lowercase
name in a variable-owning namespace (``tf.layers``, ``tf.contrib``, ``tf.metrics``...) is a
layer call, anything else under ``tf.`` is a pure op (computed from its arguments).
"""

from __future__ import annotations

import enum
from typing import FrozenSet


class Api(enum.Enum):
    SOURCE = "source"
    CUT = "cut"
    PURE = "pure"
    VARIABLE = "variable"
    OBJECT = "object"
    LAYER = "layer"
    COLLECTION_READ = "collection-read"
    COLLECTION_WRITE = "collection-write"
    HAZARD = "hazard"
    LOOP = "loop"
    GRADIENT = "gradient"
    CONTROL = "control"  # cond/case: branches are analysed as part of the statement
    CONTEXT = "context"  # name_scope, variable_scope, control_dependencies, device


SOURCES: FrozenSet[str] = frozenset({
    "tf.placeholder", "tf.placeholder_with_default", "tf.sparse_placeholder", "tf.constant",
    "tf.convert_to_tensor",  # gradient-free only when its argument is (a variable is not)
    "tf.zeros", "tf.ones", "tf.fill", "tf.range", "tf.linspace", "tf.lin_space", "tf.eye",
    "tf.random_normal", "tf.random_uniform", "tf.truncated_normal", "tf.random_shuffle",
    "tf.random_crop", "tf.multinomial", "tf.random_gamma", "tf.random_poisson",
    "tf.keras.Input", "tf.keras.layers.Input", "tf.keras.backend.learning_phase",
    "tf.keras.backend.placeholder", "tf.string_to_hash_bucket_fast",
})
SOURCE_PREFIXES = ("tf.data.", "tf.random.", "tf.io.", "tf.image.decode", "tf.gfile.", "tf.io.gfile.",
                   "tf.parse_", "tf.decode_", "tf.read_file", "tf.TFRecordReader", "tf.train.shuffle_batch",
                   "tf.train.batch", "tf.train.string_input_producer", "tf.train.slice_input_producer")

# No gradient flows through these outputs (NotDifferentiable in TF's gradient registry, or an
# integer/boolean result).
CUTS: FrozenSet[str] = frozenset({
    "tf.stop_gradient", "tf.shape", "tf.shape_n", "tf.size", "tf.rank", "tf.zeros_like", "tf.ones_like",
    "tf.argmax", "tf.argmin", "tf.math.argmax", "tf.math.argmin", "tf.equal", "tf.not_equal", "tf.less",
    "tf.less_equal", "tf.greater", "tf.greater_equal", "tf.math.equal", "tf.math.not_equal", "tf.math.less",
    "tf.math.less_equal", "tf.math.greater", "tf.math.greater_equal", "tf.logical_and", "tf.logical_or",
    "tf.logical_not", "tf.logical_xor", "tf.math.logical_and", "tf.math.logical_or", "tf.math.logical_not",
    "tf.is_nan", "tf.is_inf", "tf.is_finite", "tf.math.is_nan", "tf.math.is_inf", "tf.math.is_finite",
    "tf.one_hot", "tf.nn.in_top_k", "tf.math.in_top_k", "tf.count_nonzero", "tf.math.count_nonzero",
    "tf.where_v2_condition_only",
})

VARIABLES: FrozenSet[str] = frozenset({
    "tf.Variable", "tf.VariableV1", "tf.get_variable", "tf.get_local_variable", "tf.keras.backend.variable",
    "tf.train.get_or_create_global_step", "tf.train.get_global_step", "tf.train.create_global_step",
    "tf.train.global_step", "tf.contrib.framework.get_or_create_global_step",
    "tf.contrib.framework.get_global_step", "tf.contrib.framework.model_variable",
    "tf.contrib.framework.variable",
})

# Calls returning *lists of variable objects* (not tensors): fine to read outside the tape.
VARIABLE_LISTS: FrozenSet[str] = frozenset({
    "tf.trainable_variables", "tf.global_variables", "tf.all_variables", "tf.model_variables",
    "tf.local_variables", "tf.moving_average_variables", "tf.contrib.framework.get_variables",
    "tf.contrib.framework.get_trainable_variables", "tf.contrib.framework.get_model_variables",
    "tf.contrib.framework.get_variables_to_restore",
})

# Collection keys whose contents are variables (or ops used only for control dependencies).
VARIABLE_COLLECTION_KEYS: FrozenSet[str] = frozenset({
    "tf.GraphKeys.TRAINABLE_VARIABLES", "tf.GraphKeys.GLOBAL_VARIABLES", "tf.GraphKeys.VARIABLES",
    "tf.GraphKeys.MODEL_VARIABLES", "tf.GraphKeys.LOCAL_VARIABLES", "tf.GraphKeys.MOVING_AVERAGE_VARIABLES",
    "tf.GraphKeys.UPDATE_OPS", "tf.GraphKeys.GLOBAL_STEP",
})
VARIABLE_COLLECTION_STRINGS: FrozenSet[str] = frozenset({
    "trainable_variables", "variables", "model_variables", "local_variables", "update_ops",
    "moving_average_variables", "global_step",
})

COLLECTION_READS: FrozenSet[str] = frozenset({
    "tf.get_collection", "tf.get_collection_ref", "tf.losses.get_total_loss", "tf.losses.get_losses",
    "tf.losses.get_regularization_loss", "tf.losses.get_regularization_losses",
    "tf.contrib.losses.get_total_loss", "tf.contrib.losses.get_losses",
    "tf.contrib.losses.get_regularization_losses", "tf.get_default_graph", "tf.keras.backend.get_session",
    "tf.get_default_session", "tf.import_graph_def", "tf.train.import_meta_graph",
})

COLLECTION_WRITES: FrozenSet[str] = frozenset({
    "tf.add_to_collection", "tf.add_to_collections", "tf.losses.add_loss", "tf.contrib.losses.add_loss",
})
COLLECTION_WRITE_PREFIXES = ("tf.losses.", "tf.contrib.losses.", "tf.summary.", "tf.contrib.summary.")

HAZARDS: FrozenSet[str] = frozenset({
    "tf.nn.dynamic_rnn", "tf.nn.bidirectional_dynamic_rnn", "tf.nn.raw_rnn",
    "tf.contrib.rnn.stack_bidirectional_dynamic_rnn", "tf.contrib.seq2seq.dynamic_decode",
    "tf.contrib.recurrent.functional_rnn", "tf.contrib.rnn.static_state_saving_rnn",
    "tf.vectorized_map", "tf.keras.backend.rnn", "tf.recompute_grad", "tf.contrib.layers.recompute_grad",
})
HAZARD_PREFIXES = ("tf.contrib.cudnn_rnn.",)
# Layer classes whose call runs a while_loop over cells (the dynamic_rnn situation).
RNN_LAYER_CLASSES: FrozenSet[str] = frozenset({
    "RNN", "LSTM", "GRU", "SimpleRNN", "Bidirectional", "ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D",
    "CuDNNLSTM", "CuDNNGRU", "CudnnLSTM", "CudnnGRU", "CudnnRNNTanh", "CudnnRNNRelu",
})

LOOPS: FrozenSet[str] = frozenset({
    "tf.while_loop", "tf.map_fn", "tf.scan", "tf.foldl", "tf.foldr", "tf.nn.static_rnn_loop",
})
CONTROL: FrozenSet[str] = frozenset({"tf.cond", "tf.case", "tf.switch_case"})
CONTEXTS: FrozenSet[str] = frozenset({
    "tf.name_scope", "tf.variable_scope", "tf.control_dependencies", "tf.device", "tf.colocate_with",
    "tf.op_scope", "tf.variable_op_scope", "tf.arg_scope", "tf.contrib.framework.arg_scope",
    "tf.keras.backend.name_scope",
})
GRADIENTS: FrozenSet[str] = frozenset({
    "tf.gradients", "tf.hessians", "tf.GradientTape", "tf.test.compute_gradient",
})
# The removed ``tf.contrib.eager`` gradient functions (TF 2: a ``tf.GradientTape``).
EAGER_GRADIENT_FUNCTIONS: FrozenSet[str] = frozenset({
    "tf.contrib.eager.implicit_gradients",
    "tf.contrib.eager.implicit_value_and_gradients",
    "tf.contrib.eager.gradients_function",
    "tf.contrib.eager.value_and_gradients_function",
})
# Methods of a TF optimizer that compute or apply gradients: ``tf.train.AdamOptimizer(lr).minimize``
# is named ``tf.train.AdamOptimizer.minimize`` (a method through its class).
OPTIMIZER_GRADIENT_METHODS: FrozenSet[str] = frozenset({"minimize", "compute_gradients", "apply_gradients"})

# Lowercase functions in these namespaces own variables (or are unknown contrib code).
LAYER_PREFIXES = ("tf.layers.", "tf.contrib.", "tf.metrics.", "tf.feature_column.", "tf.estimator.",
                  "tf.keras.layers.", "tf.nn.rnn_cell.", "tf.keras.models.", "tf.keras.Model",
                  "tf.keras.Sequential", "tf.train.")
# ...except these, which compute from their arguments or return gradient-free objects.
PURE_IN_LAYER_NAMESPACES: FrozenSet[str] = frozenset({
    "tf.keras.layers.add", "tf.keras.layers.concatenate", "tf.keras.layers.multiply",
    "tf.keras.layers.average", "tf.keras.layers.maximum", "tf.keras.layers.minimum",
    "tf.keras.layers.subtract", "tf.keras.layers.dot", "tf.train.exponential_decay",
    "tf.train.piecewise_constant", "tf.train.polynomial_decay", "tf.train.natural_exp_decay",
    "tf.train.inverse_time_decay", "tf.train.cosine_decay", "tf.train.cosine_decay_restarts",
    "tf.train.linear_cosine_decay", "tf.train.noisy_linear_cosine_decay", "tf.contrib.layers.flatten",
    "tf.contrib.layers.one_hot_encoding", "tf.layers.flatten",
})
# Lowercase factories returning gradient-free objects (initializers, regularizer functions).
OBJECT_FACTORY_SUFFIXES = ("_initializer", "_regularizer", "initializer")
OBJECT_FACTORY_NAMES: FrozenSet[str] = frozenset({
    "tf.keras.regularizers.l1", "tf.keras.regularizers.l2", "tf.keras.regularizers.l1_l2",
    "tf.contrib.layers.sum_regularizer", "tf.contrib.layers.apply_regularization_fn",
})


def classify(name: str) -> Api:
    """The :class:`Api` kind of the canonical TF name ``name`` (``tf.X``)."""
    parts = name.rsplit(".", 2)
    last = parts[-1]
    if name in GRADIENTS or (last in OPTIMIZER_GRADIENT_METHODS and len(parts) == 3 and parts[1][:1].isupper()):
        return Api.GRADIENT
    if name in HAZARDS or name.startswith(HAZARD_PREFIXES):
        return Api.HAZARD
    if name in LOOPS:
        return Api.LOOP
    if name in CONTROL:
        return Api.CONTROL
    if name in CONTEXTS:
        return Api.CONTEXT
    if name in VARIABLES:
        return Api.VARIABLE
    if name in COLLECTION_READS:
        return Api.COLLECTION_READ
    if name in COLLECTION_WRITES or name.startswith(COLLECTION_WRITE_PREFIXES):
        return Api.COLLECTION_WRITE
    if name in CUTS:
        return Api.CUT
    if name in SOURCES or name.startswith(SOURCE_PREFIXES):
        return Api.SOURCE
    if name in VARIABLE_LISTS:
        return Api.VARIABLE
    if name in OBJECT_FACTORY_NAMES or last.endswith(OBJECT_FACTORY_SUFFIXES):
        return Api.OBJECT
    if last[:1].isupper():
        return Api.OBJECT
    if name in PURE_IN_LAYER_NAMESPACES:
        return Api.PURE
    if name.startswith(LAYER_PREFIXES):
        return Api.LAYER
    if name.startswith("tf.keras.backend.") and last in ("variable", "zeros", "ones", "eye", "random_normal_variable",
                                                          "random_uniform_variable"):
        return Api.VARIABLE
    return Api.PURE


def is_rnn_layer_class(name: str) -> bool:
    """``tf.keras.layers.LSTM``-like classes whose call runs cells inside a while loop."""
    last = name.rsplit(".", 1)[-1]
    return last in RNN_LAYER_CLASSES or (name.startswith("tf.contrib.rnn.") and "Fused" in last)
