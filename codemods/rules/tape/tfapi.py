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

* :data:`Api.UNKNOWN` -- every name no table lists. Its value may carry a gradient whatever its
  arguments are (it is never left outside the tape as gradient-free or as a variable object), and
  the call may read or create variables and add to graph collections, like a layer call.

Kinds come from these tables only, never from how a name is spelled: a capitalised constructor
is not a variable object unless :data:`OBJECTS` lists it (``tf.distributions.Categorical(logits=
...)``, ``tf.Print(W, [W])`` and ``LSTMStateTuple(...)`` hold or are tensors computed from their
arguments: :data:`PURE_OPS`), and an op is gradient-free-of-free-inputs only when
:data:`PURE_OPS` / :data:`PURE_PREFIXES` list it. APIs that create *cached reads* of variables
while the tape is paused (``tf.nn.static_rnn`` & co, ``caching_device``) are
:data:`CACHED_READS`: :meth:`~codemods.rules.tape.facts.ModuleFacts.module_gate` declines the module.
"""

from __future__ import annotations

import enum
from typing import Dict, FrozenSet, Sequence, Tuple


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
    UNKNOWN = "unknown"  # not in any table: may carry a gradient, may read/create variables


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
# Factories returning gradient-free objects (initializers, regularizer functions, init ops), in the
# namespaces TF defines them in.
OBJECT_FACTORY_SUFFIXES = ("_initializer", "_regularizer")
OBJECT_FACTORY_NAMESPACES = ("tf.", "tf.initializers.", "tf.keras.initializers.", "tf.contrib.layers.",
                             "tf.keras.regularizers.", "tf.contrib.framework.")
OBJECT_FACTORY_NAMES: FrozenSet[str] = frozenset({
    "tf.keras.regularizers.l1", "tf.keras.regularizers.l2", "tf.keras.regularizers.l1_l2",
    "tf.contrib.layers.sum_regularizer", "tf.contrib.layers.apply_regularization_fn",
})

# Ops whose result is computed from their arguments only (a tensor depending on its inputs, or
# an object holding such tensors): gradient-free exactly when every argument is.
_PURE_TOP = """
abs accumulate_n acos acosh add add_n angle argsort asin asinh assert_equal assert_greater
assert_greater_equal assert_less assert_less_equal assert_negative assert_non_negative assert_positive
assert_rank assert_type atan atan2 atanh batch_to_space bitcast boolean_mask broadcast_to cast ceil
check_numerics cholesky clip_by_average_norm clip_by_global_norm clip_by_norm clip_by_value complex concat
conj cos cosh cross cumprod cumsum depth_to_space diag diag_part digamma div div_no_nan divide
dynamic_partition dynamic_stitch einsum ensure_shape erf erfc exp expand_dims expm1 extract_image_patches
floor floor_div floordiv floormod gather gather_nd global_norm group identity identity_n imag
invert_permutation lbeta lgamma log log1p log_sigmoid matmul matrix_band_part matrix_determinant
matrix_diag matrix_diag_part matrix_inverse matrix_set_diag matrix_solve matrix_transpose maximum meshgrid
minimum mod multiply negative no_op norm pad pow print real realdiv reciprocal reduce_all reduce_any
reduce_logsumexp reduce_max reduce_mean reduce_min reduce_prod reduce_sum reshape reverse reverse_sequence
reverse_v2 rint round rsqrt scalar_mul scatter_nd searchsorted segment_max segment_mean segment_min
segment_prod segment_sum sequence_mask sigmoid sign sin sinh slice softplus softsign space_to_batch
space_to_depth sparse_tensor_dense_matmul split sqrt square squared_difference squeeze stack strided_slice
subtract tan tanh tensordot tile to_double to_float to_int32 to_int64 trace transpose truediv truncatediv
truncatemod tuple unique unsorted_segment_max unsorted_segment_mean unsorted_segment_min
unsorted_segment_prod unsorted_segment_sum unstack where where_v2 histogram_fixed_width bincount
Print IndexedSlices SparseTensor SparseTensorValue TensorShape Dimension as_dtype make_ndarray
make_tensor_proto
"""
_PURE_NN = """
relu relu6 elu selu crelu leaky_relu softplus softsign sigmoid tanh swish gelu softmax log_softmax bias_add
conv1d conv2d conv3d conv2d_transpose conv3d_transpose conv1d_transpose depthwise_conv2d separable_conv2d
atrous_conv2d convolution max_pool avg_pool max_pool2d avg_pool2d max_pool1d avg_pool1d pool dropout
l2_loss l2_normalize lrn local_response_normalization moments weighted_moments batch_normalization
fused_batch_norm sigmoid_cross_entropy_with_logits softmax_cross_entropy_with_logits
softmax_cross_entropy_with_logits_v2 sparse_softmax_cross_entropy_with_logits
weighted_cross_entropy_with_logits embedding_lookup embedding_lookup_sparse top_k xw_plus_b
normalize_moments sufficient_statistics zero_fraction log_poisson_loss nce_loss sampled_softmax_loss
ctc_loss compute_average_loss scale_regularization_loss
"""
_PURE_KERAS_BACKEND = """
dot batch_dot sum mean square sqrt exp log abs concatenate reshape relu sigmoid tanh softmax transpose
expand_dims squeeze stack max min clip epsilon floatx int_shape shape cast maximum minimum pow
binary_crossentropy categorical_crossentropy sparse_categorical_crossentropy l2_normalize flatten
batch_flatten gather clear_session set_floatx
"""
_PURE_KERAS_LOSSES = """
mse mae mape msle mean_squared_error mean_absolute_error mean_absolute_percentage_error
mean_squared_logarithmic_error binary_crossentropy categorical_crossentropy sparse_categorical_crossentropy
huber kld kl_divergence kullback_leibler_divergence logcosh log_cosh hinge squared_hinge categorical_hinge
cosine_similarity poisson
"""
# Python-side utilities (seeds, modes, logging, flags, configuration): no tensor of the model.
_UTILITIES = """
set_random_seed enable_eager_execution disable_eager_execution executing_eagerly enable_v2_behavior
disable_v2_behavior enable_control_flow_v2 disable_control_flow_v2 enable_resource_variables
disable_resource_variables get_logger reset_default_graph function
keras.utils.set_random_seed keras.utils.to_categorical keras.backend.set_learning_phase
"""
PURE_OPS: FrozenSet[str] = frozenset(
    ["tf." + n for n in _PURE_TOP.split()] + ["tf.nn." + n for n in _PURE_NN.split()]
    + ["tf.keras.backend." + n for n in _PURE_KERAS_BACKEND.split()]
    + ["tf.keras.losses." + n for n in _PURE_KERAS_LOSSES.split()]
    + ["tf." + n for n in _UTILITIES.split()]
    + ["tf.nn.rnn_cell.LSTMStateTuple", "tf.contrib.rnn.LSTMStateTuple"]  # a namedtuple of its arguments
)
# Namespaces made of computation and utility functions only (no variables, no collections).
PURE_PREFIXES = ("tf.math.", "tf.linalg.", "tf.keras.activations.", "tf.signal.", "tf.bitwise.", "tf.strings.",
                 "tf.dtypes.", "tf.nest.", "tf.config.", "tf.logging.", "tf.app.", "tf.flags.",
                 "tf.distributions.", "tf.debugging.", "tf.sparse.")

# Classes whose instances are objects, not tensors: constructing one computes nothing from tensors
# (a layer's, cell's or optimizer's variables are read where it is called or applied).
_OBJECT_NAMES = """
Session InteractiveSession Graph ConfigProto GPUOptions RunOptions RunMetadata GraphOptions
OptimizerOptions Module train.Saver train.Checkpoint train.CheckpointManager train.Coordinator
train.ExponentialMovingAverage train.MonitoredTrainingSession train.MonitoredSession
train.SingularMonitoredSession train.Scaffold train.ClusterSpec train.Server train.ChiefSessionCreator
train.StopAtStepHook train.LoggingTensorHook train.CheckpointSaverHook train.SummarySaverHook
train.NanTensorHook keras.Model keras.Sequential keras.models.Model keras.models.Sequential
nn.rnn_cell.RNNCell nn.rnn_cell.BasicRNNCell nn.rnn_cell.GRUCell nn.rnn_cell.LSTMCell
nn.rnn_cell.BasicLSTMCell nn.rnn_cell.MultiRNNCell nn.rnn_cell.DropoutWrapper nn.rnn_cell.ResidualWrapper
nn.rnn_cell.DeviceWrapper contrib.rnn.RNNCell contrib.rnn.BasicRNNCell contrib.rnn.GRUCell
contrib.rnn.LSTMCell contrib.rnn.BasicLSTMCell contrib.rnn.MultiRNNCell contrib.rnn.DropoutWrapper
contrib.rnn.ResidualWrapper contrib.rnn.LayerNormBasicLSTMCell contrib.rnn.LSTMBlockCell
contrib.rnn.GRUBlockCell contrib.rnn.GRUBlockCellV2 contrib.rnn.UGRNNCell contrib.rnn.NASCell
contrib.rnn.AttentionCellWrapper contrib.rnn.OutputProjectionWrapper contrib.rnn.InputProjectionWrapper
contrib.training.HParams estimator.Estimator estimator.EstimatorSpec estimator.RunConfig
tpu.CrossShardOptimizer contrib.tpu.CrossShardOptimizer
"""
OBJECTS: FrozenSet[str] = frozenset("tf." + n for n in _OBJECT_NAMES.split())
# Session classes: ``sess.run(...)`` returns NumPy values (no gradient path).
SESSIONS: FrozenSet[str] = frozenset({
    "tf.Session", "tf.InteractiveSession", "tf.train.MonitoredTrainingSession", "tf.train.MonitoredSession",
    "tf.train.SingularMonitoredSession", "tf.keras.backend.get_session", "tf.get_default_session",
})
# Namespaces whose *classes* (capitalised names) are layers, optimizers, losses, metrics,
# initializers, regularizers, constraints or callbacks: configuration objects.
OBJECT_CLASS_NAMESPACES = ("tf.keras.layers.", "tf.keras.optimizers.", "tf.keras.losses.", "tf.keras.metrics.",
                           "tf.keras.initializers.", "tf.keras.regularizers.", "tf.keras.constraints.",
                           "tf.keras.callbacks.", "tf.layers.", "tf.initializers.", "tf.distribute.",
                           "tf.estimator.")
# TF1 optimizer classes (``tf.train.AdamOptimizer``, ``tf.contrib.opt.AdamWOptimizer``...).
OPTIMIZER_NAMESPACES = ("tf.train.", "tf.contrib.opt.", "tf.contrib.optimizer_v2.", "tf.compat.v1.train.")

# APIs that create cached reads of variables (``caching_device``) while a tape is paused
# (``init_scope``): a tape then gives those variables no gradient (measured on TF 2.21:
# ``tf.nn.static_rnn`` / ``static_bidirectional_rnn`` give "No gradients provided" for every cell
# weight; ``variable_scope(..., caching_device=...)`` leaves its variables untrained).
CACHED_READS: FrozenSet[str] = frozenset({
    "tf.nn.static_rnn", "tf.nn.static_bidirectional_rnn", "tf.nn.static_state_saving_rnn",
    "tf.contrib.rnn.static_rnn", "tf.contrib.rnn.static_bidirectional_rnn",
    "tf.contrib.rnn.static_state_saving_rnn", "tf.contrib.rnn.stack_bidirectional_rnn",
})
CACHED_READ_PREFIXES = ("tf.contrib.legacy_seq2seq.",)
CACHED_READ_KEYWORDS = frozenset({"caching_device"})
CACHED_READ_METHODS = frozenset({"set_caching_device"})


# Arguments no gradient flows through, whatever value is passed: integer shapes, sizes, axes,
# strides, permutations and indices (TF registers no gradient for them, or the op needs a Python
# int). ``(position, keyword)`` per canonical name. A value read only in such a position may be
# computed outside the tape, and does not make an op's result depend on it (``tf.placeholder(
# tf.float32, [None, self.n_actions])`` is gradient-free whatever ``self.n_actions`` is).
_SHAPE = ((0, "shape"),)
NON_DIFFERENTIABLE_ARGS: Dict[str, Tuple[Tuple[int, str], ...]] = {
    "tf.placeholder": ((1, "shape"),), "tf.placeholder_with_default": ((1, "shape"),),
    "tf.get_variable": ((1, "shape"),), "tf.get_local_variable": ((1, "shape"),),
    "tf.zeros": _SHAPE, "tf.ones": _SHAPE, "tf.fill": ((0, "dims"),),
    "tf.random_normal": _SHAPE, "tf.random_uniform": _SHAPE, "tf.truncated_normal": _SHAPE,
    "tf.random.normal": _SHAPE, "tf.random.uniform": _SHAPE, "tf.random.truncated_normal": _SHAPE,
    "tf.reshape": ((1, "shape"),), "tf.tile": ((1, "multiples"),), "tf.transpose": ((1, "perm"),),
    "tf.expand_dims": ((1, "axis"),), "tf.squeeze": ((1, "axis"),), "tf.concat": ((1, "axis"),),
    "tf.stack": ((1, "axis"),), "tf.unstack": ((1, "num"), (2, "axis")),
    "tf.split": ((1, "num_or_size_splits"), (2, "axis")),
    "tf.slice": ((1, "begin"), (2, "size")), "tf.one_hot": ((1, "depth"),),
    "tf.reduce_sum": ((1, "axis"),), "tf.reduce_mean": ((1, "axis"),), "tf.reduce_max": ((1, "axis"),),
    "tf.reduce_min": ((1, "axis"),), "tf.reduce_prod": ((1, "axis"),),
    "tf.gather": ((1, "indices"),), "tf.nn.embedding_lookup": ((1, "ids"),),
    "tf.nn.max_pool": ((1, "ksize"), (2, "strides")), "tf.nn.avg_pool": ((1, "ksize"), (2, "strides")),
    "tf.nn.conv2d": ((2, "strides"),), "tf.nn.top_k": ((1, "k"),),
    "tf.layers.dense": ((1, "units"),), "tf.layers.conv2d": ((1, "filters"), (2, "kernel_size"), (3, "strides")),
    "tf.layers.conv1d": ((1, "filters"), (2, "kernel_size"), (3, "strides")),
    "tf.layers.max_pooling2d": ((1, "pool_size"), (2, "strides")),
    "tf.layers.average_pooling2d": ((1, "pool_size"), (2, "strides")),
    "tf.contrib.layers.fully_connected": ((1, "num_outputs"),),
    "tf.contrib.slim.fully_connected": ((1, "num_outputs"),),
    "tf.contrib.layers.conv2d": ((1, "num_outputs"), (2, "kernel_size"), (3, "stride")),
    "tf.contrib.slim.conv2d": ((1, "num_outputs"), (2, "kernel_size"), (3, "stride")),
}


def non_differentiable_argument(name: str, call_args: Sequence, arg) -> bool:
    """Whether ``arg`` (one of ``call_args``, libcst ``Arg`` nodes of a call of the canonical TF
    name ``name``) is an argument no gradient flows through (:data:`NON_DIFFERENTIABLE_ARGS`)."""
    spec = NON_DIFFERENTIABLE_ARGS.get(name)
    if not spec:
        return False
    keyword = arg.keyword.value if arg.keyword is not None else None
    if keyword is not None:
        return any(keyword == k for _, k in spec)
    position = 0
    for other in call_args:
        if other.star or other.keyword is not None:
            return False  # `*args` before it: its position is unknown
        if other is arg:
            return any(position == p for p, _ in spec)
        position += 1
    return False

def is_cached_read(name: str) -> bool:
    """An API that sets up cached variable reads (static RNNs, which set ``caching_device``)."""
    return name in CACHED_READS or name.startswith(CACHED_READ_PREFIXES)


def _is_object_class(name: str, last: str) -> bool:
    if name in OBJECTS:
        return True
    if not last[:1].isupper():
        return False
    if name.startswith(OBJECT_CLASS_NAMESPACES):
        return True
    return last.endswith("Optimizer") and name.startswith(OPTIMIZER_NAMESPACES)


def is_tf1_optimizer_class(name: str) -> bool:
    """``tf.train.AdamOptimizer`` and the other TF 1 optimizer classes (canonical names)."""
    return name.rsplit(".", 1)[-1].endswith("Optimizer") and name.startswith(OPTIMIZER_NAMESPACES)


def classify(name: str) -> Api:
    """The :class:`Api` kind of the canonical TF name ``name`` (``tf.X``); :data:`Api.UNKNOWN`
    for every name no table lists."""
    parts = name.rsplit(".", 2)
    last = parts[-1]
    if name in GRADIENTS or (last in OPTIMIZER_GRADIENT_METHODS and len(parts) == 3 and parts[1][:1].isupper()):
        return Api.GRADIENT
    if name in HAZARDS or name.startswith(HAZARD_PREFIXES) or is_cached_read(name):
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
    if name in OBJECT_FACTORY_NAMES or (last.endswith(OBJECT_FACTORY_SUFFIXES)
                                        and name[:-len(last)] in OBJECT_FACTORY_NAMESPACES):
        return Api.OBJECT
    if name in PURE_OPS or name in PURE_IN_LAYER_NAMESPACES or name.startswith(PURE_PREFIXES):
        return Api.PURE
    if _is_object_class(name, last):
        return Api.OBJECT
    if name.startswith("tf.keras.backend.") and last in ("variable", "zeros", "ones", "eye", "random_normal_variable",
                                                          "random_uniform_variable"):
        return Api.VARIABLE
    if name.startswith(LAYER_PREFIXES):
        return Api.LAYER
    return Api.UNKNOWN


def is_rnn_layer_class(name: str) -> bool:
    """``tf.keras.layers.LSTM``-like classes whose call runs cells inside a while loop."""
    last = name.rsplit(".", 1)[-1]
    return last in RNN_LAYER_CLASSES or (name.startswith("tf.contrib.rnn.") and "Fused" in last)

# TensorFlow *modules* (canonical names): a name bound only to one of them (``rnn = tf.nn.rnn_cell``,
# ``layers = tf.layers``) is that module, so ``rnn.GRUCell`` is ``tf.nn.rnn_cell.GRUCell`` and gets
# that API's kind. A module object holds no tensors the program computes and is never "changed".
TF_MODULES: FrozenSet[str] = frozenset({
    "tf", "tf.nn", "tf.nn.rnn_cell", "tf.layers", "tf.losses", "tf.train", "tf.math", "tf.linalg", "tf.image",
    "tf.random", "tf.signal", "tf.sparse", "tf.strings", "tf.summary", "tf.metrics", "tf.initializers",
    "tf.distributions", "tf.data", "tf.io", "tf.compat", "tf.compat.v1", "tf.keras", "tf.keras.layers",
    "tf.keras.backend", "tf.keras.initializers", "tf.keras.regularizers", "tf.keras.activations",
    "tf.keras.losses", "tf.keras.optimizers", "tf.keras.models", "tf.contrib", "tf.contrib.rnn",
    "tf.contrib.layers", "tf.contrib.slim", "tf.contrib.seq2seq", "tf.contrib.framework",
    "tf.contrib.distributions", "tf.contrib.cudnn_rnn", "tf.contrib.legacy_seq2seq", "tf.contrib.opt",
    "tf.contrib.estimator", "tf.contrib.training", "tf.estimator", "tf.saved_model", "tf.GraphKeys",
})
