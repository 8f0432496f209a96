"""Test-only reference of TF 1.15 ``tf.contrib.training`` gradient helpers.

Rewritten from the TF 1.15 source (``tensorflow/contrib/training/python/training/training.py``,
as also ported verbatim to ``tf_slim/training/training.py``) on top of ``tf.compat.v1``, with the
same control flow, the same ops and the same ``assert`` statements. It never imports
``tfclip_compat``: it is the "before" side of the shim's equivalence tests.

Deliberately kept TF 1.15 quirks (the shim documents where it differs):
- ``clip_gradient_norms`` clips ``IndexedSlices.values`` by *their* norm, which is not the norm of
  the dense gradient when indices repeat;
- ``create_train_op`` checks ``variables_to_train`` with bare ``assert`` statements.
"""

from __future__ import annotations

import tensorflow as tf

from . import clip_ops

v1 = tf.compat.v1

_USE_GLOBAL_STEP = 0

__all__ = [
    "add_gradients_summaries",
    "clip_gradient_norms",
    "clip_gradient_norms_fn",
    "create_train_op",
    "multiply_gradients",
]


def _with_dependencies(dependencies, output_tensor):
    """``control_flow_ops.with_dependencies``: ``output_tensor`` after ``dependencies``."""
    with v1.name_scope(None, "control_dependency", list(dependencies) + [output_tensor]) as name:
        with tf.control_dependencies(dependencies):
            return tf.identity(output_tensor, name=name)


def add_gradients_summaries(grads_and_vars):
    """Add a histogram and a norm summary for each gradient (TF 1.15)."""
    summaries = []
    for grad, var in grads_and_vars:
        if grad is not None:
            if isinstance(grad, tf.IndexedSlices):
                grad_values = grad.values
            else:
                grad_values = grad
            summaries.append(v1.summary.histogram(var.op.name + "_gradient", grad_values))
            summaries.append(
                v1.summary.scalar(var.op.name + "_gradient_norm", clip_ops.global_norm([grad_values]))
            )
        else:
            v1.logging.info("Var %s has no gradient", var.op.name)
    return summaries


def clip_gradient_norms(gradients_to_variables, max_norm):
    """Clip each gradient by its own norm (TF 1.15; sparse: norm of ``.values``)."""
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


def clip_gradient_norms_fn(max_norm):
    """Return a ``transform_grads_fn`` that calls ``clip_gradient_norms`` (TF 1.15)."""

    def clip_norms(gradients_to_variables):
        return clip_gradient_norms(gradients_to_variables, max_norm)

    return clip_norms


def multiply_gradients(grads_and_vars, gradient_multipliers):
    """Scale the gradients of the variables (or variable op names) in the dict (TF 1.15)."""
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

            if isinstance(grad, tf.IndexedSlices):
                tmp = grad.values * tf.convert_to_tensor(gradient_multipliers[key], dtype=grad.dtype)
                grad = tf.IndexedSlices(tmp, grad.indices, grad.dense_shape)
            else:
                grad *= tf.convert_to_tensor(gradient_multipliers[key], dtype=grad.dtype)
        multiplied_grads_and_vars.append((grad, var))
    return multiplied_grads_and_vars


def create_train_op(
    total_loss,
    optimizer,
    global_step=_USE_GLOBAL_STEP,
    update_ops=None,
    variables_to_train=None,
    transform_grads_fn=None,
    summarize_gradients=False,
    gate_gradients=v1.train.Optimizer.GATE_OP,
    aggregation_method=None,
    colocate_gradients_with_ops=False,
    check_numerics=True,
):
    """Return the loss tensor that, when run, applies one optimizer step (TF 1.15)."""
    if global_step is _USE_GLOBAL_STEP:
        global_step = v1.train.get_or_create_global_step()

    # Update ops use GraphKeys.UPDATE_OPS collection if update_ops is None.
    global_update_ops = set(v1.get_collection(v1.GraphKeys.UPDATE_OPS))
    if update_ops is None:
        update_ops = global_update_ops
    else:
        update_ops = set(update_ops)
    if not global_update_ops.issubset(update_ops):
        v1.logging.warning(
            "update_ops in create_train_op does not contain all the update_ops in GraphKeys.UPDATE_OPS"
        )

    # Make sure update_ops are computed before total_loss.
    if update_ops:
        with tf.control_dependencies(update_ops):
            barrier = tf.no_op(name="update_barrier")
        total_loss = _with_dependencies([barrier], total_loss)

    if variables_to_train is None:
        variables_to_train = v1.trainable_variables()
    else:
        for v in variables_to_train:
            assert v.trainable or v in v1.trainable_variables()

    assert variables_to_train

    grads = optimizer.compute_gradients(
        total_loss,
        variables_to_train,
        gate_gradients=gate_gradients,
        aggregation_method=aggregation_method,
        colocate_gradients_with_ops=colocate_gradients_with_ops,
    )

    if transform_grads_fn:
        grads = transform_grads_fn(grads)

    if summarize_gradients:
        with tf.name_scope("summarize_grads"):
            add_gradients_summaries(grads)

    grad_updates = optimizer.apply_gradients(grads, global_step=global_step)

    with tf.name_scope("train_op"):
        if check_numerics:
            total_loss = tf.debugging.check_numerics(total_loss, "LossTensor is inf or nan")
        train_op = _with_dependencies([grad_updates], total_loss)

    train_ops = v1.get_collection_ref(v1.GraphKeys.TRAIN_OP)
    if train_op not in train_ops:
        train_ops.append(train_op)

    return train_op
