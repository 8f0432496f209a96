"""Test-only reference of TF 1.15 ``tf.contrib.layers.optimize_loss`` and ``adaptive_clipping_fn``.

Rewritten from the TF 1.15 source (``tensorflow/contrib/layers/python/layers/optimizers.py``) on
top of ``tf.compat.v1``, keeping its control flow, variable scope (``OptimizeLoss``), the
``learning_rate`` variable, summary names and error messages. It never imports ``tfclip_compat``.

Deliberately kept TF 1.15 quirks (the shim documents where it differs):
- a float ``clip_gradients`` uses ``tf.clip_by_global_norm``, whose norm of an ``IndexedSlices``
  is the norm of its ``.values`` (wrong with repeated indices) and which overflows in float16;
- ``gradient_multipliers`` keys are variables or ``variable.name`` (``"w:0"``); the multiplier is
  a float32 constant.
"""

from __future__ import annotations

import math

import tensorflow as tf

from . import clip_ops

v1 = tf.compat.v1

__all__ = ["OPTIMIZER_CLS_NAMES", "OPTIMIZER_SUMMARIES", "adaptive_clipping_fn", "optimize_loss"]

OPTIMIZER_CLS_NAMES = {
    "Adagrad": v1.train.AdagradOptimizer,
    "Adam": v1.train.AdamOptimizer,
    "Ftrl": v1.train.FtrlOptimizer,
    "Momentum": lambda learning_rate: v1.train.MomentumOptimizer(learning_rate, momentum=0.9),
    "RMSProp": v1.train.RMSPropOptimizer,
    "SGD": v1.train.GradientDescentOptimizer,
}

OPTIMIZER_SUMMARIES = [
    "learning_rate",
    "loss",
    "gradients",
    "gradient_norm",
    "global_gradient_norm",
]


def _with_dependencies(dependencies, output_tensor):
    """``control_flow_ops.with_dependencies``: ``output_tensor`` after ``dependencies``."""
    with v1.name_scope(None, "control_dependency", list(dependencies) + [output_tensor]) as name:
        with tf.control_dependencies(dependencies):
            return tf.identity(output_tensor, name=name)


def optimize_loss(
    loss,
    global_step,
    learning_rate,
    optimizer,
    gradient_noise_scale=None,
    gradient_multipliers=None,
    clip_gradients=None,
    learning_rate_decay_fn=None,
    update_ops=None,
    variables=None,
    name=None,
    summaries=None,
    colocate_gradients_with_ops=False,
    increment_global_step=True,
):
    """Return the loss tensor that, when run, applies one optimizer step (TF 1.15)."""
    loss = tf.convert_to_tensor(loss)
    v1.assert_scalar(loss)
    if global_step is None:
        global_step = v1.train.get_global_step()
    else:
        v1.train.assert_global_step(global_step)
    with v1.variable_scope(name, "OptimizeLoss", [loss, global_step]):
        # Update ops take UPDATE_OPS collection if not provided.
        if update_ops is None:
            update_ops = set(v1.get_collection(v1.GraphKeys.UPDATE_OPS))
        # Make sure update ops are ran before computing loss.
        if update_ops:
            loss = _with_dependencies(list(update_ops), loss)

        # Learning rate variable, with possible decay.
        lr = None
        if learning_rate is not None:
            if isinstance(learning_rate, tf.Tensor) and learning_rate.get_shape().ndims == 0:
                lr = learning_rate
            elif isinstance(learning_rate, float):
                if learning_rate < 0.0:
                    raise ValueError("Invalid learning_rate %s.", learning_rate)
                lr = v1.get_variable(
                    "learning_rate",
                    [],
                    trainable=False,
                    initializer=v1.constant_initializer(learning_rate),
                )
            else:
                raise ValueError(
                    "Learning rate should be 0d Tensor or float. "
                    "Got %s of type %s" % (str(learning_rate), str(type(learning_rate)))
                )
        if summaries is None:
            summaries = ["loss", "learning_rate", "global_gradient_norm"]
        else:
            for summ in summaries:
                if summ not in OPTIMIZER_SUMMARIES:
                    raise ValueError(
                        "Summaries should be one of [%s], you provided %s."
                        % (", ".join(OPTIMIZER_SUMMARIES), summ)
                    )
        if learning_rate is not None and learning_rate_decay_fn is not None:
            if global_step is None:
                raise ValueError("global_step is required for learning_rate_decay_fn.")
            lr = learning_rate_decay_fn(lr, global_step)
            if "learning_rate" in summaries:
                v1.summary.scalar("learning_rate", lr)

        # Create optimizer, given specified parameters.
        if isinstance(optimizer, str):
            if lr is None:
                raise ValueError(
                    "Learning rate is None, but should be specified if optimizer is string (%s)."
                    % optimizer
                )
            if optimizer not in OPTIMIZER_CLS_NAMES:
                raise ValueError(
                    "Optimizer name should be one of [%s], you provided %s."
                    % (", ".join(OPTIMIZER_CLS_NAMES), optimizer)
                )
            opt = OPTIMIZER_CLS_NAMES[optimizer](learning_rate=lr)
        elif isinstance(optimizer, type) and issubclass(optimizer, v1.train.Optimizer):
            if lr is None:
                raise ValueError(
                    "Learning rate is None, but should be specified if optimizer is class (%s)."
                    % optimizer
                )
            opt = optimizer(learning_rate=lr)
        elif isinstance(optimizer, v1.train.Optimizer):
            opt = optimizer
        elif callable(optimizer):
            if learning_rate is not None:
                opt = optimizer(lr)
            else:
                opt = optimizer()
            if not isinstance(opt, v1.train.Optimizer):
                raise ValueError(
                    "Unrecognized optimizer: function should return subclass of Optimizer. Got %s."
                    % str(opt)
                )
        else:
            raise ValueError(
                "Unrecognized optimizer: should be string, subclass of Optimizer, instance of "
                "subclass of Optimizer or function with one argument. Got %s." % str(optimizer)
            )

        # All trainable variables, if specific variables are not specified.
        if variables is None:
            variables = v1.trainable_variables()

        # Compute gradients.
        gradients = opt.compute_gradients(
            loss, variables, colocate_gradients_with_ops=colocate_gradients_with_ops
        )

        # Optionally add gradient noise.
        if gradient_noise_scale is not None:
            gradients = _add_scaled_noise_to_gradients(gradients, gradient_noise_scale)

        # Multiply some gradients.
        if gradient_multipliers is not None:
            gradients = _multiply_gradients(gradients, gradient_multipliers)
            if not gradients:
                raise ValueError(
                    "Empty list of (gradient, var) pairs encountered. This is most likely to be "
                    "caused by an improper value of gradient_multipliers."
                )

        if "global_gradient_norm" in summaries or "gradient_norm" in summaries:
            v1.summary.scalar(
                "global_norm/gradient_norm", clip_ops.global_norm(list(zip(*gradients))[0])
            )

        # Optionally clip gradients by global norm.
        if isinstance(clip_gradients, float):
            gradients = _clip_gradients_by_norm(gradients, clip_gradients)
        elif callable(clip_gradients):
            gradients = clip_gradients(gradients)
        elif clip_gradients is not None:
            raise ValueError("Unknown type %s for clip_gradients" % type(clip_gradients))

        # Add scalar summary for loss.
        if "loss" in summaries:
            v1.summary.scalar("loss", loss)

        # Add histograms for variables, gradients and gradient norms.
        for gradient, variable in gradients:
            if isinstance(gradient, tf.IndexedSlices):
                grad_values = gradient.values
            else:
                grad_values = gradient

            if grad_values is not None:
                var_name = variable.name.replace(":", "_")
                if "gradients" in summaries:
                    v1.summary.histogram("gradients/%s" % var_name, grad_values)
                if "gradient_norm" in summaries:
                    v1.summary.scalar(
                        "gradient_norm/%s" % var_name, clip_ops.global_norm([grad_values])
                    )

        if clip_gradients is not None and (
            "global_gradient_norm" in summaries or "gradient_norm" in summaries
        ):
            v1.summary.scalar(
                "global_norm/clipped_gradient_norm",
                clip_ops.global_norm(list(zip(*gradients))[0]),
            )

        # Create gradient updates.
        grad_updates = opt.apply_gradients(
            gradients,
            global_step=global_step if increment_global_step else None,
            name="train",
        )

        # Ensure the train_tensor computes grad_updates.
        train_tensor = _with_dependencies([grad_updates], loss)

        return train_tensor


def _clip_gradients_by_norm(grads_and_vars, clip_gradients):
    """Clips gradients by global norm."""
    gradients, variables = zip(*grads_and_vars)
    clipped_gradients, _ = clip_ops.clip_by_global_norm(gradients, clip_gradients)
    return list(zip(clipped_gradients, variables))


def _adaptive_max_norm(norm, std_factor, decay, global_step, epsilon, name):
    """Find max_norm given norm and previous average."""
    with v1.variable_scope(name, "AdaptiveMaxNorm", [norm]):
        log_norm = tf.math.log(norm + epsilon)

        def moving_average(name, value, decay):
            moving_average_variable = v1.get_variable(
                name,
                shape=value.get_shape(),
                dtype=value.dtype,
                initializer=v1.zeros_initializer(),
                trainable=False,
            )
            return _assign_moving_average(moving_average_variable, value, decay)

        # quicker adaptation at the beginning
        if global_step is not None:
            n = tf.cast(global_step, tf.float32)
            decay = tf.minimum(decay, n / (n + 1.0))

        # update averages
        mean = moving_average("mean", log_norm, decay)
        sq_mean = moving_average("sq_mean", tf.square(log_norm), decay)

        variance = sq_mean - tf.square(mean)
        std = tf.sqrt(tf.maximum(epsilon, variance))
        max_norms = tf.exp(mean + std_factor * std)
        return max_norms, mean


def _assign_moving_average(variable, value, decay):
    """``moving_averages.assign_moving_average(..., zero_debias=False)``: v -= (v - x) * (1 - d)."""
    with v1.name_scope(None, "AssignMovingAvg", [variable, value, decay]):
        decay = tf.convert_to_tensor(1.0 - decay, name="decay")
        if decay.dtype != variable.dtype.base_dtype:
            decay = tf.cast(decay, variable.dtype.base_dtype)
        return v1.assign_sub(variable, (variable - value) * decay)


def adaptive_clipping_fn(
    std_factor=2.0,
    decay=0.95,
    static_max_norm=None,
    global_step=None,
    report_summary=False,
    epsilon=1e-8,
    name=None,
):
    """Return TF 1.15's adaptive clipping transform (arXiv:1412.1602, section 3.2.1)."""

    def gradient_clipping(grads_and_vars):
        """Internal function for adaptive clipping."""
        grads, variables = zip(*grads_and_vars)

        norm = clip_ops.global_norm(grads)

        max_norm, log_mean = _adaptive_max_norm(norm, std_factor, decay, global_step, epsilon, name)

        # reports the max gradient norm for debugging
        if report_summary:
            v1.summary.scalar("global_norm/adaptive_max_gradient_norm", max_norm)

        # factor will be 1. if norm is smaller than max_norm
        factor = tf.where(norm < max_norm, tf.ones_like(norm), tf.exp(log_mean) / norm)

        if static_max_norm is not None:
            factor = tf.minimum(static_max_norm / norm, factor)

        # apply factor
        clipped_grads = []
        for grad in grads:
            if grad is None:
                clipped_grads.append(None)
            elif isinstance(grad, tf.IndexedSlices):
                clipped_grads.append(
                    tf.IndexedSlices(grad.values * factor, grad.indices, grad.dense_shape)
                )
            else:
                clipped_grads.append(grad * factor)

        return list(zip(clipped_grads, variables))

    return gradient_clipping


def _add_scaled_noise_to_gradients(grads_and_vars, gradient_noise_scale):
    """Adds scaled noise from a 0-mean normal distribution to gradients."""
    gradients, variables = zip(*grads_and_vars)
    noisy_gradients = []
    for gradient in gradients:
        if gradient is None:
            noisy_gradients.append(None)
            continue
        if isinstance(gradient, tf.IndexedSlices):
            gradient_shape = gradient.dense_shape
        else:
            gradient_shape = gradient.get_shape()
        noise = v1.truncated_normal(gradient_shape) * gradient_noise_scale
        noisy_gradients.append(gradient + noise)
    return list(zip(noisy_gradients, variables))


def _multiply_gradients(grads_and_vars, gradient_multipliers):
    """Multiply specified gradients."""
    multiplied_grads_and_vars = []
    for grad, var in grads_and_vars:
        if grad is not None and (var in gradient_multipliers or var.name in gradient_multipliers):
            key = var if var in gradient_multipliers else var.name
            multiplier = tf.constant(gradient_multipliers[key], dtype=tf.float32)
            if isinstance(grad, tf.IndexedSlices):
                grad_values = grad.values * multiplier
                grad = tf.IndexedSlices(grad_values, grad.indices, grad.dense_shape)
            else:
                grad *= multiplier
        multiplied_grads_and_vars.append((grad, var))
    return multiplied_grads_and_vars


def variance_scaling_initializer(factor=2.0, mode="FAN_IN", uniform=False, seed=None, dtype=tf.float32):
    """TF 1.15 ``tf.contrib.layers.variance_scaling_initializer`` (initializers.py)."""

    def _initializer(shape, dtype=dtype, partition_info=None):
        shape = [int(d) for d in shape]
        fan_in = float(shape[-2]) if len(shape) > 1 else float(shape[-1])
        fan_out = float(shape[-1])
        for dim in shape[:-2]:
            fan_in *= float(dim)
            fan_out *= float(dim)
        if mode == "FAN_IN":
            n = fan_in
        elif mode == "FAN_OUT":
            n = fan_out
        else:
            n = (fan_in + fan_out) / 2.0
        if uniform:
            limit = math.sqrt(3.0 * factor / n)
            return tf.random.uniform(shape, -limit, limit, dtype, seed=seed)
        trunc_stddev = math.sqrt(1.3 * factor / n)
        return tf.random.truncated_normal(shape, 0.0, trunc_stddev, dtype, seed=seed)

    return _initializer


def xavier_initializer(uniform=True, seed=None, dtype=tf.float32):
    """TF 1.15 ``tf.contrib.layers.xavier_initializer`` (= ``xavier_initializer_conv2d``)."""
    return variance_scaling_initializer(factor=1.0, mode="FAN_AVG", uniform=uniform, seed=seed, dtype=dtype)


xavier_initializer_conv2d = xavier_initializer
