"""Test-only reference of TF 1.15 ``tf.contrib.slim.learning``'s gradient helpers.

Rewritten from the TF 1.15.0 source (``tensorflow/contrib/slim/python/slim/learning.py`` as
shipped in the ``tensorflow-cpu==1.15.0`` wheel) on top of ``tf.compat.v1``, with the same
control flow and the same ops. It never imports ``tfclip_compat``.

What TF 1.15's slim module was, exactly (checked against that source):

- ``clip_gradient_norms``: a *copy* of ``tf.contrib.training.clip_gradient_norms`` (same body:
  an ``IndexedSlices`` is clipped by the norm of its ``.values``, which is not the dense
  gradient's norm when indices repeat);
- ``multiply_gradients``: slim's own version: a ``Tensor`` multiplier is used as is, anything
  else becomes ``constant(multiplier, dtype=grad.dtype)`` (contrib.training's version calls
  ``convert_to_tensor(multiplier, dtype=grad.dtype)``: the same op for every value both accept);
- ``add_gradients_summaries``: slim's own version, tags ``<var op name>/gradient`` (histogram)
  and ``<var op name>/gradient_norm`` (scalar); contrib.training's uses ``_gradient``;
- ``create_train_op``: slim's signature (``clip_gradient_norm``, ``gradient_multipliers``
  instead of ``transform_grads_fn``), implemented by calling **contrib.training's**
  ``create_train_op`` with a ``transform_grads_fn`` that multiplies (scope ``multiply_grads``)
  then clips (scope ``clip_grads``, only when ``clip_gradient_norm > 0``). So
  ``summarize_gradients=True`` adds contrib.training's ``_gradient`` summaries, not slim's.
"""

from __future__ import annotations

import types

import tensorflow as tf

from . import clip_ops, contrib_training

v1 = tf.compat.v1

_USE_GLOBAL_STEP = 0

__all__ = [
    "add_gradients_summaries",
    "clip_gradient_norms",
    "create_train_op",
    "learning",
    "multiply_gradients",
]


def clip_gradient_norms(gradients_to_variables, max_norm):
    """Clip each gradient by its own norm (TF 1.15 slim; sparse: norm of ``.values``)."""
    clipped_grads_and_vars = []
    for grad, var in gradients_to_variables:
        if grad is not None:
            if isinstance(grad, tf.IndexedSlices):
                tmp = clip_ops.clip_by_norm(grad.values, max_norm)
                grad = tf.IndexedSlices(tmp, grad.indices, grad.dense_shape)
            else:
                grad = clip_ops.clip_by_norm(grad, max_norm)
        clipped_grads_and_vars.append((grad, var))
    return clipped_grads_and_vars


def multiply_gradients(grads_and_vars, gradient_multipliers):
    """Scale the gradients of the variables (or variable op names) in the dict (TF 1.15 slim)."""
    if not isinstance(grads_and_vars, list):
        raise ValueError("`grads_and_vars` must be a list.")
    if not gradient_multipliers:
        raise ValueError("`gradient_multipliers` is empty.")
    if not isinstance(gradient_multipliers, dict):
        raise ValueError("`gradient_multipliers` must be a dict.")

    multiplied_grads_and_vars = []
    for grad, var in grads_and_vars:
        if var in gradient_multipliers or var.op.name in gradient_multipliers:
            key = var if var in gradient_multipliers else var.op.name
            if grad is None:
                raise ValueError("Requested multiple of `None` gradient.")

            multiplier = gradient_multipliers[key]
            if not isinstance(multiplier, tf.Tensor):
                multiplier = tf.constant(multiplier, dtype=grad.dtype)

            if isinstance(grad, tf.IndexedSlices):
                tmp = grad.values * multiplier
                grad = tf.IndexedSlices(tmp, grad.indices, grad.dense_shape)
            else:
                grad *= multiplier
        multiplied_grads_and_vars.append((grad, var))
    return multiplied_grads_and_vars


def add_gradients_summaries(grads_and_vars):
    """Add a histogram and a norm summary per gradient, slim's ``/gradient`` tags (TF 1.15)."""
    summaries = []
    for grad, var in grads_and_vars:
        if grad is not None:
            if isinstance(grad, tf.IndexedSlices):
                grad_values = grad.values
            else:
                grad_values = grad
            summaries.append(v1.summary.histogram(var.op.name + "/gradient", grad_values))
            summaries.append(
                v1.summary.scalar(var.op.name + "/gradient_norm", clip_ops.global_norm([grad_values]))
            )
        else:
            v1.logging.info("Var %s has no gradient", var.op.name)
    return summaries


def create_train_op(
    total_loss,
    optimizer,
    global_step=_USE_GLOBAL_STEP,
    update_ops=None,
    variables_to_train=None,
    clip_gradient_norm=0,
    summarize_gradients=False,
    gate_gradients=v1.train.Optimizer.GATE_OP,
    aggregation_method=None,
    colocate_gradients_with_ops=False,
    gradient_multipliers=None,
    check_numerics=True,
):
    """Slim's ``create_train_op`` (TF 1.15): contrib.training's, with multiply-then-clip."""

    def transform_grads_fn(grads):
        if gradient_multipliers:
            with tf.name_scope("multiply_grads"):
                grads = multiply_gradients(grads, gradient_multipliers)

        # Clip gradients.
        if clip_gradient_norm > 0:
            with tf.name_scope("clip_grads"):
                grads = clip_gradient_norms(grads, clip_gradient_norm)
        return grads

    return contrib_training.create_train_op(
        total_loss=total_loss,
        optimizer=optimizer,
        global_step=global_step,
        update_ops=update_ops,
        variables_to_train=variables_to_train,
        transform_grads_fn=transform_grads_fn,
        summarize_gradients=summarize_gradients,
        gate_gradients=gate_gradients,
        aggregation_method=aggregation_method,
        colocate_gradients_with_ops=colocate_gradients_with_ops,
        check_numerics=check_numerics,
    )


#: ``tf.contrib.slim.learning`` (also reached as ``tf.contrib.slim.python.slim.learning``).
learning = types.ModuleType("tensorflow.contrib.slim.learning", "TF 1.15 slim.learning reference.")
for _name in ("add_gradients_summaries", "clip_gradient_norms", "create_train_op", "multiply_gradients"):
    setattr(learning, _name, globals()[_name])
del _name
