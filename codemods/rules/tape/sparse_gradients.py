"""Can a variable of this module receive a sparse gradient (``IndexedSlices``)? TFC104's gate.

TF builds ``IndexedSlices`` gradients in the gradient functions of ``Gather``/``GatherV2``/
``ResourceGather``, ``GatherNd``/``ResourceGatherNd`` (indices of shape ``[N, 1]``) and
``SparseSegment{Sum,Mean,SqrtN}`` (``tensorflow/python/ops/array_grad.py``, ``math_grad.py``,
``resource_variable_ops.py``); ``Identity``/``Cast``/``ConcatV2``/``ReadVariableOp`` pass one
through. So no variable can receive one when no code the loss runs reaches those ops. This module
proves that the only way it can, by listing what the code may run:

* every TensorFlow name the module uses is on :data:`DENSE_APIS` (APIs whose implementation
  reaches none of those ops), else it is the reason: a known sparse source
  (:data:`SPARSE_APIS`, a ``.sparse_read``/``.gather`` method) or an API not known to be dense;
* the module imports nothing but TensorFlow, NumPy and the standard library (another module's
  code is not seen);
* no parameter is called, nor a method of a parameter (a caller elsewhere may pass any code),
  and no ``getattr``/``eval``/``exec``/``__import__``.

Anything else is unknown, and unknown means "it can".
"""

from __future__ import annotations

import sys
from typing import Optional

import libcst as cst
from libcst.metadata import Assignment

# Known to give the tensor or variable they read a sparse gradient (they reach a gather or a
# sparse segment reduction).
SPARSE_APIS = frozenset({
    "tf.gather", "tf.gather_nd", "tf.batch_gather", "tf.boolean_mask", "tf.nn.embedding_lookup",
    "tf.nn.embedding_lookup_sparse", "tf.nn.safe_embedding_lookup_sparse", "tf.nn.nce_loss",
    "tf.nn.sampled_softmax_loss", "tf.keras.layers.Embedding", "tf.keras.backend.gather",
    "tf.sparse.segment_sum", "tf.sparse.segment_mean", "tf.sparse.segment_sqrt_n", "tf.sparse_segment_sum",
    "tf.sparse_segment_mean", "tf.sparse_segment_sqrt_n", "tf.contrib.layers.embed_sequence",
    "tf.feature_column.embedding_column", "tf.feature_column.shared_embedding_columns",
    "tf.IndexedSlices",
})
# Methods that read rows of a variable (``ResourceGather`` / ``ResourceGatherNd``).
SPARSE_METHODS = frozenset({"sparse_read", "gather", "gather_nd"})

_MATH = (
    "abs add add_n cos cosh divide div truediv realdiv floordiv exp expm1 log log1p maximum minimum mod multiply "
    "negative pow reciprocal round rsqrt sigmoid sign sin sinh softplus sqrt square squared_difference subtract "
    "tanh reduce_sum reduce_mean reduce_max reduce_min reduce_prod reduce_logsumexp reduce_std reduce_variance "
    "argmax argmin equal not_equal greater greater_equal less less_equal logical_and logical_or logical_not "
    "matmul tensordot einsum cumsum erf"
).split()
_ARRAY = (
    "Variable GradientTape constant convert_to_tensor identity stop_gradient cast to_float to_int32 to_int64 "
    "reshape transpose expand_dims squeeze concat stack unstack tile pad shape size rank zeros ones zeros_like "
    "ones_like fill range linspace eye one_hot clip_by_value clip_by_norm clip_by_global_norm global_norm "
    "clip_by_average_norm where function random_normal random_uniform truncated_normal set_random_seed "
    "enable_eager_execution enable_v2_behavior executing_eagerly float16 float32 float64 int32 int64 bool "
    "string print Print"
).split()
_NN = (
    "relu relu6 elu selu leaky_relu softplus softsign sigmoid tanh softmax log_softmax bias_add conv1d conv2d "
    "max_pool avg_pool max_pool2d avg_pool2d dropout l2_loss l2_normalize moments batch_normalization "
    "sigmoid_cross_entropy_with_logits softmax_cross_entropy_with_logits softmax_cross_entropy_with_logits_v2 "
    "sparse_softmax_cross_entropy_with_logits"
).split()
_LOSSES = ("mean_squared_error absolute_difference softmax_cross_entropy sparse_softmax_cross_entropy "
           "sigmoid_cross_entropy log_loss hinge_loss").split()
_KERAS_LAYERS = ("Dense Conv1D Conv2D Flatten Dropout Activation ReLU MaxPooling1D MaxPooling2D MaxPool2D "
                 "AveragePooling2D GlobalAveragePooling2D GlobalMaxPooling2D BatchNormalization "
                 "LayerNormalization InputLayer Reshape").split()

# TF APIs whose implementation reaches no op that builds a sparse gradient (see the module docstring).
DENSE_APIS = frozenset(
    [f"tf.{n}" for n in _MATH + _ARRAY]
    + [f"tf.math.{n}" for n in _MATH]
    + [f"tf.random.{n}" for n in ("normal", "uniform", "truncated_normal", "set_seed")]
    + [f"tf.nn.{n}" for n in _NN + ["tanh", "sigmoid"]]
    + [f"tf.losses.{n}" for n in _LOSSES]
    + [f"tf.keras.layers.{n}" for n in _KERAS_LAYERS]
    + ["tf.keras.Sequential", "tf.keras.Model", "tf.keras.Input", "tf.keras.models.Sequential",
       "tf.keras.models.Model", "tf.keras.losses.MeanSquaredError", "tf.keras.losses.mean_squared_error",
       "tf.train.get_or_create_global_step", "tf.train.get_global_step", "tf.compat.v1.enable_eager_execution",
       "tf.get_variable", "tf.trainable_variables", "tf.variable_scope", "tf.name_scope"]
    + [f"tf.layers.{n}" for n in ("dense", "conv1d", "conv2d", "flatten", "dropout", "max_pooling2d",
                                  "average_pooling2d", "batch_normalization")]
    + [f"tf.train.{n}Optimizer" for n in ("GradientDescent", "Momentum", "Adam", "Adagrad", "Adadelta", "RMSProp",
                                          "Ftrl")]
)
# Modules whose code cannot build a TensorFlow op on a variable the tape records.
_SEEN_MODULES = {"tensorflow", "numpy", "__future__"} | set(sys.stdlib_module_names)
_DYNAMIC = {"getattr", "eval", "exec", "__import__"}


def _dense(name: str) -> bool:
    """On :data:`DENSE_APIS`, or an initializer (it makes a variable's first value: no gradient)."""
    return name in DENSE_APIS or name.startswith(("tf.keras.initializers.", "tf.initializers.")) or (
        name.startswith("tf.") and name.endswith("_initializer") and "." not in name[3:])


def sparse_gradient_reason(facts, module: cst.Module) -> Optional[str]:
    """Why a variable of ``module`` may receive an ``IndexedSlices`` gradient (its first cause, a
    true sentence that ends where the caller's message goes on), or None when none can.

    ``facts`` is the planner's ``codemods.rules.tape.facts.ModuleFacts`` for ``module``."""
    finder = _Finder(facts)
    module.visit(finder)
    return finder.reason


class _Finder(cst.CSTVisitor):
    def __init__(self, facts) -> None:
        self.facts = facts
        self.reason: Optional[str] = None
        self.param_stored: Optional[bool] = None

    def _found(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason

    def visit_Import(self, node: cst.Import) -> bool:
        for alias in node.names:
            top = self.facts.code(alias.name).split(".")[0]
            if top not in _SEEN_MODULES:
                self._found(f"the module imports `{top}`, whose code is not seen here (it may read a variable "
                            "through a gather)")
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        top = self.facts.code(node.module).split(".")[0] if node.module is not None else ""
        if node.relative or top not in _SEEN_MODULES:
            where = "." * len(node.relative) + (self.facts.code(node.module) if node.module is not None else "")
            self._found(f"the module imports from `{where}`, whose code is not seen here (it may read a variable "
                        "through a gather)")
            return False
        if top == "tensorflow" and not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                self._check_tf(alias.name, alias.name)
        elif top == "tensorflow":
            self._found("`from tensorflow... import *` brings in names that cannot be checked")
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if self._check_tf(node, node):
            return False
        if node.attr.value in SPARSE_METHODS and isinstance(self.facts.parent(node), cst.Call):
            self._found(f"{self.facts.where(node)} may read rows of a variable (`.{node.attr.value}` gives it a "
                        "sparse gradient)")
        return True

    def visit_Name(self, node: cst.Name) -> None:
        self._check_tf(node, node)
        if node.value in _DYNAMIC and isinstance(self.facts.parent(node), cst.Call):
            self._found(f"{self.facts.where(node)} runs code that cannot be seen")

    def _param(self, name: cst.Name) -> Optional[cst.Param]:
        """The parameter ``name`` is bound to, if it is one."""
        for a in self.facts.assignments(name):
            if isinstance(a, Assignment):
                node = a.node if isinstance(a.node, cst.Param) else self.facts.parent(a.node)
                if isinstance(node, cst.Param):
                    return node
        return None

    def _own_self(self, param: cst.Param) -> bool:
        """``param`` is the ``self`` of a method of a class of this module, and no attribute in the
        module is ever assigned a value read from another parameter (so what ``self.layer`` holds
        was built by this module's code, which the other checks see)."""
        params = self.facts.parent(param)
        method = self.facts.parent(params) if isinstance(params, cst.Parameters) else None
        body = self.facts.parent(method) if isinstance(method, cst.FunctionDef) else None
        if not (isinstance(body, cst.IndentedBlock) and isinstance(self.facts.parent(body), cst.ClassDef)):
            return False
        if not (params.params and params.params[0] is param) or method.decorators:  # type: ignore[union-attr]
            return False
        if self.param_stored is None:
            finder = _ParamStored(self)
            self.facts.module.visit(finder)
            self.param_stored = finder.found
        return not self.param_stored

    def visit_Call(self, node: cst.Call) -> None:
        root = node.func
        while isinstance(root, (cst.Attribute, cst.Call, cst.Subscript)):
            root = root.value if not isinstance(root, cst.Call) else root.func
        param = self._param(root) if isinstance(root, cst.Name) else None
        if param is not None and not (root is not node.func and self._own_self(param)):
            self._found(f"{self.facts.where(node)} calls into the parameter `{root.value}`, which a caller elsewhere "
                        "may bind to any code")

    def _check_tf(self, node: cst.CSTNode, at: cst.CSTNode) -> bool:
        """Check a whole TensorFlow name (``tf.nn.embedding_lookup``); True when it is one."""
        parent = self.facts.parent(node)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            return False  # a prefix of a longer name: the longer one is checked
        names = self.facts.tf_names(node)
        if not names:
            return False
        for name in sorted(names):
            if name in SPARSE_APIS:
                self._found(f"{self.facts.where(at)} gives the variable it reads a sparse gradient")
            elif not _dense(name) and name != "tf":
                self._found(f"{self.facts.where(at)} is not known to give dense gradients only")
        return True


class _ParamStored(cst.CSTVisitor):
    """Whether an attribute is assigned a value that reads a parameter (not a method's ``self``)."""

    def __init__(self, finder: _Finder) -> None:
        self.finder = finder
        self.found = False

    def visit_Assign(self, node: cst.Assign) -> None:
        if any(isinstance(t.target, (cst.Attribute, cst.Subscript)) for t in node.targets):
            self._reads_param(node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, (cst.Attribute, cst.Subscript)):
            self._reads_param(node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if isinstance(node.target, (cst.Attribute, cst.Subscript)) and node.value is not None:
            self._reads_param(node.value)

    def _reads_param(self, value: cst.BaseExpression) -> None:
        finder = self.finder

        class Names(cst.CSTVisitor):
            def visit_Name(inner, name: cst.Name) -> None:  # noqa: N805 - the outer self is needed
                param = finder._param(name)
                if param is not None:
                    params = finder.facts.parent(param)
                    first = isinstance(params, cst.Parameters) and params.params and params.params[0] is param
                    if not (first and name.value == "self"):
                        self.found = True

        value.visit(Names())
