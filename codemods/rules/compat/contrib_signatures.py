"""TF 1.15 signatures of the removed clipping helpers, and how ``tfclip_compat`` differs.

Data only, apart from the engine (``codemods/rules/compat/shim_rewrite.py``). The compat rules bind
every call site's arguments against these signatures: a call TF 1.15 itself would have
rejected, or one whose arguments cannot be seen (``*args``, ``**kwargs``), is reported
and left untouched. ``tests/test_codemods_compat_spec.py`` checks this table against
the real ``tfclip_compat`` signatures, so the table cannot drift from the shim.

Sources: ``tensorflow/contrib/estimator/python/estimator/extenders.py``,
``tensorflow/contrib/training/python/training/training.py``,
``tensorflow/contrib/layers/python/layers/optimizers.py``,
``tensorflow/contrib/slim/python/slim/learning.py`` and
``tensorflow/python/ops/clip_ops.py`` at r1.15.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Mapping, Tuple

# A parameter with this default is optional; the value is irrelevant to the rules.
OPTIONAL = object()
REQUIRED = inspect.Parameter.empty


@dataclass(frozen=True)
class HelperSpec:
    """One removed helper: its TF 1.15 parameters and the shim's differences."""

    shim_name: str
    # Parameter names in positional order, each with REQUIRED or OPTIONAL.
    params: Tuple[Tuple[str, object], ...]
    # Parameters whose *non-default* use the shim may not reproduce exactly: a call
    # passing one of them gets an unsafe fix, with the reason.
    unsafe_params: Mapping[str, str] = field(default_factory=dict)
    # Parameters the shim does not accept at all: a call passing one gets no fix.
    unsupported_params: FrozenSet[str] = frozenset()

    def signature(self) -> inspect.Signature:
        """The TF 1.15 signature as an :class:`inspect.Signature` (for binding call sites)."""
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        return inspect.Signature(
            [
                inspect.Parameter(name, kind, default=(REQUIRED if default is REQUIRED else None))
                for name, default in self.params
            ]
        )


def _spec(shim_name: str, *params: Tuple[str, object], **kwargs: object) -> HelperSpec:
    return HelperSpec(shim_name, tuple(params), **kwargs)  # type: ignore[arg-type]


R, O = REQUIRED, OPTIONAL

# shim name -> spec (the same spec serves every qualified name in CONTRIB_TO_SHIM).
HELPERS: Dict[str, HelperSpec] = {
    "clip_gradients_by_norm": _spec("clip_gradients_by_norm", ("optimizer", R), ("clip_norm", R)),
    "create_train_op": _spec(
        "create_train_op",
        ("total_loss", R),
        ("optimizer", R),
        ("global_step", O),
        ("update_ops", O),
        ("variables_to_train", O),
        ("transform_grads_fn", O),
        ("summarize_gradients", O),
        ("gate_gradients", O),
        ("aggregation_method", O),
        ("colocate_gradients_with_ops", O),
        ("check_numerics", O),
    ),
    "clip_gradient_norms": _spec(
        "clip_gradient_norms", ("gradients_to_variables", R), ("max_norm", R)
    ),
    "clip_gradient_norms_fn": _spec("clip_gradient_norms_fn", ("max_norm", R)),
    "add_gradients_summaries": _spec("add_gradients_summaries", ("grads_and_vars", R)),
    "slim_create_train_op": _spec(
        "slim_create_train_op",
        ("total_loss", R),
        ("optimizer", R),
        ("global_step", O),
        ("update_ops", O),
        ("variables_to_train", O),
        ("clip_gradient_norm", O),
        ("summarize_gradients", O),
        ("gate_gradients", O),
        ("aggregation_method", O),
        ("colocate_gradients_with_ops", O),
        ("gradient_multipliers", O),
        ("check_numerics", O),
    ),
    "slim_add_gradients_summaries": _spec("slim_add_gradients_summaries", ("grads_and_vars", R)),
    "multiply_gradients": _spec(
        "multiply_gradients", ("grads_and_vars", R), ("gradient_multipliers", R)
    ),
    "optimize_loss": _spec(
        "optimize_loss",
        ("loss", R),
        ("global_step", R),
        ("learning_rate", R),
        ("optimizer", R),
        ("gradient_noise_scale", O),
        ("gradient_multipliers", O),
        ("clip_gradients", O),
        ("learning_rate_decay_fn", O),
        ("update_ops", O),
        ("variables", O),
        ("name", O),
        ("summaries", O),
        ("colocate_gradients_with_ops", O),
        ("increment_global_step", O),
        # `gradient_noise_scale` is safe: the shim creates the same `truncated_normal` ops as
        # contrib, in the same order, so under a graph seed it draws the same numbers
        # (tests/test_equivalence_compat.py checks it bit for bit).
    ),
    "adaptive_clipping_fn": _spec(
        "adaptive_clipping_fn",
        ("std_factor", O),
        ("decay", O),
        ("static_max_norm", O),
        ("global_step", O),
        ("report_summary", O),
        ("epsilon", O),
        ("name", O),
    ),
    "clip_by_average_norm": _spec(
        "clip_by_average_norm",
        ("t", R),
        ("clip_norm", R),
        ("name", O),
        unsafe_params={
            # Same values (bit for bit on float32), but TF named the output tensor
            # `<name>:0` and the shim names it `<name>/clipped:0`: a graph-mode
            # `get_tensor_by_name("<name>:0")` would break.
            "name": "the shim's output tensor is named `<name>/clipped`, TF's was `<name>`",
        },
    ),
}

# Names the shim does not export (yet): sites are reported without a fix. Checked
# against ``tfclip_compat.__all__`` by the spec test, so it shrinks as the shim grows.
SHIM_MISSING: FrozenSet[str] = frozenset()
