"""Non-finite gradient policies shared by every wrapper that applies gradients.

Policies (the ``nonfinite=`` argument):

``"propagate"`` (default)
    TF1 behaviour: inf/NaN gradients are applied as they are (after clipping by a global norm
    they are all NaN, so the variables become NaN).
``"skip"``
    When any gradient is inf/NaN the whole step is skipped: variables, optimizer slots, the
    optimizer's own counters (Adam's beta powers, Keras ``iterations``) *and* ``global_step``
    are left unchanged — the same contract as TensorFlow's own ``LossScaleOptimizer`` ("no
    update is performed, nor is ``global_step`` incremented"). A training loop bounded by
    ``global_step`` therefore runs one extra step per skipped step.
``"raise"``
    An ``tf.errors.InvalidArgumentError`` whose message names the first variable whose gradient
    is not finite (graph mode: raised by ``Session.run``; eager: raised at once). Atomic: every
    update op depends on every check (:func:`after_checks`), so when it raises no variable,
    slot, beta power, ``global_step`` or Keras ``iterations`` has changed.

Stable API used by the other shim modules (``_pipeline``, ``_contrib.training``, ``_contrib.layers``)::

    check_policy(nonfinite) -> str
        Validate and return the policy; ValueError naming ``nonfinite`` and the allowed values.

    apply_with_policy(apply_fn, grads_and_vars, nonfinite, *, name=None, finite=None)
        ``apply_fn(grads_and_vars)`` builds the apply op (graph mode) or performs the update
        (eager) and returns the op / result; it must increment ``global_step`` itself if there is
        one. Returns the op obeying the policy. ``finite`` (optional scalar bool tensor) replaces
        the built-in "every gradient is finite" test, e.g. ``tf.math.is_finite(global_norm)``.
        In graph mode and in ``tf.function`` "skip" is a ``tf.cond``; v1 optimizers create their
        slots under ``init_scope`` so a cond is safe for them, Keras optimizers must be built
        before (the Keras wrapper does that). Inside a replica context (tf.distribute) use
        ``cross_replica_cond`` around an ``apply_fn`` that calls ``merge_call`` (see below).

    all_finite(grads) -> scalar bool Tensor
    assert_finite(grads_and_vars, stage=None) -> grads_and_vars whose gradients raise when not finite
    after_checks(fn, checked_grads_and_vars) -> fn() with control dependencies on every check
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple

from tfclip_compat._tf import tf

POLICIES: Tuple[str, ...] = ("propagate", "skip", "raise")
GradsAndVars = List[Tuple[Any, Any]]


def check_policy(nonfinite: object) -> str:
    """Return ``nonfinite`` if it is a known policy, else raise a ValueError naming it."""
    if not isinstance(nonfinite, str) or nonfinite not in POLICIES:
        raise ValueError(
            f"nonfinite={nonfinite!r} is not a known non-finite gradient policy; "
            f"use one of {', '.join(repr(p) for p in POLICIES)}."
        )
    return nonfinite


def _values(g: Any) -> Any:
    return g.values if isinstance(g, tf.IndexedSlices) else g


def all_finite(grads: Sequence[Any]) -> tf.Tensor:
    """Scalar bool tensor: True when every non-None gradient is free of inf and NaN."""
    flags = [tf.reduce_all(tf.math.is_finite(_values(g))) for g in grads if g is not None]
    if not flags:
        return tf.constant(True)
    return tf.reduce_all(tf.stack(flags))


def _var_name(var: Any) -> str:
    name = getattr(var, "path", None) or getattr(var, "name", None)
    return str(name) if name else repr(var)


def assert_finite(grads_and_vars: Sequence[Tuple[Any, Any]], stage: Optional[str] = None) -> GradsAndVars:
    """Return ``grads_and_vars`` whose gradients fail (naming the variable) when not finite.

    ``stage`` (e.g. ``"after the gradient transform"``) is added to the message. The returned
    gradients are the checks' outputs: anything computed from them runs after the check.
    """
    out: GradsAndVars = []
    where = f" {stage}" if stage else ""
    for g, v in grads_and_vars:
        if g is None:
            out.append((g, v))
            continue
        message = (
            f"nonfinite='raise': the gradient of variable {_var_name(v)!r}{where} contains "
            "inf or NaN; no variable, slot or step counter was updated"
        )
        checked = tf.debugging.check_numerics(_values(g), message)
        if isinstance(g, tf.IndexedSlices):
            checked = tf.IndexedSlices(checked, g.indices, g.dense_shape)
        out.append((checked, v))
    return out


def after_checks(fn: Callable[[], Any], checked: Sequence[Tuple[Any, Any]]) -> Any:
    """Run ``fn()`` with a control dependency on every gradient of ``checked``.

    ``checked`` comes from :func:`assert_finite`; every op ``fn`` builds (the optimizer's
    variable, slot and counter updates) then waits for *all* checks, so a failing check means
    no update at all. Eager execution raised at the check already: ``fn`` runs as is.
    """
    if tf.executing_eagerly():
        return fn()
    deps = [_values(g) for g, _ in checked if g is not None]
    with tf.control_dependencies(deps):
        return fn()


def _as_op(result: Any) -> Any:
    """Turn whatever ``apply_fn`` returned into something ``tf.cond`` can return."""
    if result is None:
        return tf.no_op()
    if isinstance(result, tf.Operation):
        with tf.control_dependencies([result]):
            return tf.no_op()
    return tf.group(result)


def apply_with_policy(
    apply_fn: Callable[[GradsAndVars], Any],
    grads_and_vars: Sequence[Tuple[Any, Any]],
    nonfinite: str,
    *,
    name: Optional[str] = None,
    finite: Optional[Any] = None,
) -> Any:
    """Apply ``grads_and_vars`` with ``apply_fn`` obeying the non-finite policy ``nonfinite``.

    See the module docstring for the contract. Returns what ``apply_fn`` returned
    ("propagate", "raise"), or for "skip" the conditional op (graph / tf.function) or the
    result of ``apply_fn`` / None when skipped (eager).
    """
    check_policy(nonfinite)
    grads_and_vars = list(grads_and_vars)
    if nonfinite == "propagate":
        return apply_fn(grads_and_vars)
    if nonfinite == "raise":
        checked = assert_finite(grads_and_vars)
        return after_checks(lambda: apply_fn(checked), checked)
    if finite is None:
        finite = all_finite([g for g, _ in grads_and_vars])
    if tf.executing_eagerly():
        if bool(finite):
            return apply_fn(grads_and_vars)
        return None
    with tf.name_scope(name or "skip_nonfinite"):
        return tf.cond(
            finite,
            lambda: _as_op(apply_fn(grads_and_vars)),
            tf.no_op,
            name="maybe_apply",
        )


def cross_replica_cond(
    pred: Any,
    apply_fn: Callable[[GradsAndVars], Any],
    grads_and_vars: Sequence[Tuple[Any, Any]],
) -> Any:
    """In a tf.distribute replica context, run ``apply_fn(grads_and_vars)`` only when ``pred``.

    Distribution strategies do not allow a ``tf.cond`` in replica context whose branch calls
    ``merge_call`` (every optimizer's ``apply_gradients`` does), so — like Keras'
    ``LossScaleOptimizer`` — the cond is built in cross-replica context and its branch goes
    back to the replicas with ``call_for_each_replica``, each replica applying its own
    gradients. ``pred`` (scalar bool) must have the same value on every replica (it does when
    computed from all-reduced gradients); the first replica's value is used. Without a
    replica context this is :func:`apply_with_policy` with ``finite=pred``.
    """
    grads_and_vars = list(grads_and_vars)
    ctx = tf.distribute.get_replica_context()
    if ctx is None or not tf.distribute.has_strategy():
        return apply_with_policy(apply_fn, grads_and_vars, "skip", finite=pred)
    variables = [v for _, v in grads_and_vars]
    grads = [g for g, _ in grads_and_vars]

    def per_replica_apply(local_grads: Sequence[Any]) -> Any:
        return apply_fn(list(zip(local_grads, variables)))

    def merge_fn(distribution: Any, pred_pr: Any, grads_pr: Sequence[Any]) -> Any:
        first_pred = distribution.experimental_local_results(pred_pr)[0]

        def branch() -> Any:
            result = distribution.extended.call_for_each_replica(
                per_replica_apply, args=(grads_pr,)
            )
            if result is None:
                return tf.no_op()
            return tf.group(distribution.experimental_local_results(result))

        if tf.executing_eagerly():
            return branch() if bool(first_pred) else None
        return tf.cond(first_pred, branch, tf.no_op)

    return ctx.merge_call(merge_fn, args=(pred, grads))


__all__ = [
    "POLICIES",
    "after_checks",
    "all_finite",
    "apply_with_policy",
    "assert_finite",
    "check_policy",
    "cross_replica_cond",
]
