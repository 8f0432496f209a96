"""Fuzz-only stand-ins for TF 1.15's ``tf.layers`` and ``tf.nn.rnn_cell``, which TF 2.21 with
Keras 3 no longer has (``tf.compat.v1.layers.dense`` raises "`dense` is not available with
Keras 3"; so do ``tf.compat.v1.nn.rnn_cell.GRUCell`` & co).

The generated programs use them the way TF 1.15 code did, so they are rebuilt here from the
TF 1.15 sources in what matters to a gradient-site rewrite: the *functional* layers create their
variables with ``get_variable`` under a uniquified ``variable_scope`` (``dense/kernel``,
``dense_1/kernel``...) and compute their output at call time; batch normalization registers its
moving-average updates in ``UPDATE_OPS``; the RNN cells create their weights on the first call,
i.e. inside ``dynamic_rnn``'s loop body. Initializers follow TF 1.15 (glorot-uniform kernels,
zero biases, GRU gate biases 1.0, LSTM forget bias 1.0 added at call time).

:func:`install` puts them into ``tf.compat.v1`` (every alias of it) for the worker process, so a
"before" program (run through ``reference.run_legacy``) and its "after" rewrite (run with the real
imports) see the same objects. Nothing here is used outside the fuzzer.
"""

from __future__ import annotations

import collections
import types
from typing import Any, Optional

import tensorflow as tf

v1 = tf.compat.v1


def _activate(x: tf.Tensor, activation: Any) -> tf.Tensor:
    return x if activation is None else activation(x)


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
          trainable=True, name=None, reuse=None):
    """``tf.layers.dense``: ``dense/kernel`` [in, units], ``dense/bias`` [units]."""
    with v1.variable_scope(name, default_name="dense", reuse=reuse):
        kernel = v1.get_variable("kernel", [int(inputs.shape[-1]), units], initializer=kernel_initializer,
                                 regularizer=kernel_regularizer, trainable=trainable)
        out = tf.matmul(inputs, kernel)
        if use_bias:
            bias = v1.get_variable("bias", [units], initializer=bias_initializer or v1.zeros_initializer(),
                                   regularizer=bias_regularizer, trainable=trainable)
            out = tf.nn.bias_add(out, bias)
        return _activate(out, activation)


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid", activation=None,
           use_bias=True, kernel_initializer=None, kernel_regularizer=None, trainable=True,
           name=None, reuse=None):
    """``tf.layers.conv2d`` (NHWC): ``conv2d/kernel`` [kh, kw, in, filters], ``conv2d/bias``."""
    kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else kernel_size
    sh, sw = (strides, strides) if isinstance(strides, int) else strides
    with v1.variable_scope(name, default_name="conv2d", reuse=reuse):
        kernel = v1.get_variable("kernel", [kh, kw, int(inputs.shape[-1]), filters],
                                 initializer=kernel_initializer, regularizer=kernel_regularizer,
                                 trainable=trainable)
        out = tf.nn.conv2d(inputs, kernel, [1, sh, sw, 1], padding.upper())
        if use_bias:
            bias = v1.get_variable("bias", [filters], initializer=v1.zeros_initializer(), trainable=trainable)
            out = tf.nn.bias_add(out, bias)
        return _activate(out, activation)


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                        training=False, trainable=True, name=None, reuse=None):
    """``tf.layers.batch_normalization`` (last axis): ``beta``/``gamma`` trainable,
    ``moving_mean``/``moving_variance`` not; in training, batch statistics and two assign ops
    in ``UPDATE_OPS`` (TF1 users must run them through ``control_dependencies``)."""
    assert axis in (-1, len(inputs.shape) - 1), "the fuzz reference normalizes the last axis only"
    depth = int(inputs.shape[-1])
    with v1.variable_scope(name, default_name="batch_normalization", reuse=reuse):
        beta = v1.get_variable("beta", [depth], initializer=v1.zeros_initializer(), trainable=trainable) \
            if center else None
        gamma = v1.get_variable("gamma", [depth], initializer=v1.ones_initializer(), trainable=trainable) \
            if scale else None
        moving_mean = v1.get_variable("moving_mean", [depth], initializer=v1.zeros_initializer(), trainable=False)
        moving_var = v1.get_variable("moving_variance", [depth], initializer=v1.ones_initializer(),
                                     trainable=False)
        if training is True:
            reduce_axes = list(range(len(inputs.shape) - 1))
            mean, variance = tf.nn.moments(inputs, reduce_axes)
            decay = 1.0 - momentum
            v1.add_to_collection(v1.GraphKeys.UPDATE_OPS,
                                 v1.assign_sub(moving_mean, (moving_mean - mean) * decay))
            v1.add_to_collection(v1.GraphKeys.UPDATE_OPS,
                                 v1.assign_sub(moving_var, (moving_var - variance) * decay))
        else:
            mean, variance = moving_mean, moving_var
        return tf.nn.batch_normalization(inputs, mean, variance, beta, gamma, epsilon)


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """``tf.layers.dropout``: identity unless ``training`` is True."""
    if training is not True:
        return tf.identity(inputs)
    return tf.nn.dropout(inputs, rate=rate, noise_shape=noise_shape, seed=seed)


def flatten(inputs, name=None):
    """``tf.layers.flatten``."""
    return tf.reshape(inputs, [-1, int(tf.reduce_prod(inputs.shape[1:]))])


LSTMStateTuple = collections.namedtuple("LSTMStateTuple", ("c", "h"))


class _Cell:
    """Shared part of the TF1 cells: weights created on the first call (inside dynamic_rnn's
    while-loop body), under ``<enclosing scope>/<cell name>``."""

    default_name = "cell"

    def __init__(self, num_units: int, activation: Any = None, name: Optional[str] = None, reuse=None) -> None:
        self._units = num_units
        self._activation = activation or tf.tanh
        self._name = name
        self._reuse = reuse
        self._scope_name: Optional[str] = None

    @property
    def state_size(self):
        return self._units

    @property
    def output_size(self):
        return self._units

    def zero_state(self, batch_size, dtype):
        return tf.zeros(tf.stack([batch_size, self._units]), dtype)

    def _weights(self, name: str, shape, bias_init: float):
        prefix = name + "/" if name else ""
        kernel = v1.get_variable(prefix + "kernel", shape)
        bias = v1.get_variable(prefix + "bias", [shape[1]], initializer=v1.constant_initializer(bias_init))
        return kernel, bias

    def __call__(self, inputs, state, scope=None):
        if self._scope_name is None:
            with v1.variable_scope(self._name, default_name=self.default_name, reuse=self._reuse) as vs:
                self._scope_name = vs
                return self._step(inputs, state)
        with v1.variable_scope(self._scope_name, reuse=True):
            return self._step(inputs, state)


class BasicRNNCell(_Cell):
    """``tf.nn.rnn_cell.BasicRNNCell``: ``basic_rnn_cell/kernel`` [in + units, units]."""

    default_name = "basic_rnn_cell"

    def _step(self, inputs, state):
        kernel, bias = self._weights("", [int(inputs.shape[-1]) + self._units, self._units], 0.0)
        out = self._activation(tf.nn.bias_add(tf.matmul(tf.concat([inputs, state], 1), kernel), bias))
        return out, out


class GRUCell(_Cell):
    """``tf.nn.rnn_cell.GRUCell``: ``gru_cell/gates/{kernel,bias}`` (bias 1.0) and
    ``gru_cell/candidate/{kernel,bias}``."""

    default_name = "gru_cell"

    def _step(self, inputs, state):
        depth = int(inputs.shape[-1]) + self._units
        gk, gb = self._weights("gates", [depth, 2 * self._units], 1.0)
        ck, cb = self._weights("candidate", [depth, self._units], 0.0)
        gates = tf.sigmoid(tf.nn.bias_add(tf.matmul(tf.concat([inputs, state], 1), gk), gb))
        r, u = tf.split(gates, 2, axis=1)
        c = self._activation(tf.nn.bias_add(tf.matmul(tf.concat([inputs, r * state], 1), ck), cb))
        new_h = u * state + (1 - u) * c
        return new_h, new_h


class LSTMCell(_Cell):
    """``tf.nn.rnn_cell.LSTMCell`` / ``BasicLSTMCell``: ``lstm_cell/kernel`` [in + units, 4 units],
    forget bias 1.0 added at call time, state ``LSTMStateTuple(c, h)``."""

    default_name = "lstm_cell"

    def __init__(self, num_units: int, forget_bias: float = 1.0, activation: Any = None,
                 name: Optional[str] = None, reuse=None) -> None:
        super().__init__(num_units, activation, name, reuse)
        self._forget_bias = forget_bias

    @property
    def state_size(self):
        return LSTMStateTuple(self._units, self._units)

    def zero_state(self, batch_size, dtype):
        z = tf.zeros(tf.stack([batch_size, self._units]), dtype)
        return LSTMStateTuple(z, z)

    def _step(self, inputs, state):
        c, h = state
        kernel, bias = self._weights("", [int(inputs.shape[-1]) + self._units, 4 * self._units], 0.0)
        lstm = tf.nn.bias_add(tf.matmul(tf.concat([inputs, h], 1), kernel), bias)
        i, j, f, o = tf.split(lstm, 4, axis=1)
        new_c = c * tf.sigmoid(f + self._forget_bias) + tf.sigmoid(i) * self._activation(j)
        new_h = self._activation(new_c) * tf.sigmoid(o)
        return new_h, LSTMStateTuple(new_c, new_h)


class BasicLSTMCell(LSTMCell):
    """``tf.nn.rnn_cell.BasicLSTMCell`` (same arithmetic as :class:`LSTMCell` here)."""

    default_name = "basic_lstm_cell"


def _module(name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name, "fuzz-only TF 1.15 stand-in (tests/fuzz/_tf1_layers.py)")
    for key, value in attrs.items():
        setattr(module, key, value)
    return module


LAYERS = _module("tensorflow.compat.v1.layers", dense=dense, conv2d=conv2d,
                 batch_normalization=batch_normalization, dropout=dropout, flatten=flatten)
RNN_CELL = _module("tensorflow.compat.v1.nn.rnn_cell", BasicRNNCell=BasicRNNCell, GRUCell=GRUCell,
                   LSTMCell=LSTMCell, BasicLSTMCell=BasicLSTMCell, LSTMStateTuple=LSTMStateTuple)


def _set(module: Any, name: str, value: Any) -> None:
    try:  # TFModuleWrapper caches an attribute on first read; read it so the write updates the cache
        getattr(module, name)
    except Exception:  # noqa: BLE001 - Keras 3 raises AttributeError subclasses of its own
        pass
    setattr(module, name, value)


def install() -> None:
    """Make ``tf.compat.v1.layers`` and ``tf.compat.v1.nn.rnn_cell`` the stand-ins (idempotent)."""
    import tensorflow.compat.v1 as imported_v1

    aliases = {id(m): m for m in (tf.compat.v1, imported_v1, tf.compat.v1.compat.v1, tf.compat.v2.compat.v1)}
    for module in aliases.values():
        _set(module, "layers", LAYERS)
        _set(module.nn, "rnn_cell", RNN_CELL)
