"""The public API: a sorted, complete ``__all__`` whose names all import and are documented."""

from __future__ import annotations

import inspect

import tfclip_compat

EXPECTED = {
    "add_gradients_summaries",
    "clip_by_average_norm",
    "clip_by_global_norm",
    "clip_by_norm",
    "clip_by_value",
    "clip_gradient_norms",
    "clip_gradient_norms_fn",
    "clip_gradients_by_norm",
    "create_train_op",
    "global_norm",
    "multiply_gradients",
    "optimize_loss",
    "restore_v1_optimizer_state",
    "slim_add_gradients_summaries",
    "slim_create_train_op",
}


def test_all_is_sorted_and_unique():
    """``__all__`` is sorted alphabetically without duplicates."""
    assert list(tfclip_compat.__all__) == sorted(set(tfclip_compat.__all__))


def test_all_contains_the_contracted_api():
    """Every name of the shared shim contract is exported."""
    assert EXPECTED <= set(tfclip_compat.__all__)


def test_all_is_complete():
    """Every public callable defined on the package is listed in ``__all__``."""
    public = {
        name
        for name, obj in vars(tfclip_compat).items()
        if not name.startswith("_") and callable(obj) and not inspect.ismodule(obj)
    }
    assert public == set(tfclip_compat.__all__)


def test_every_name_is_importable_and_documented():
    """``from tfclip_compat import X`` works for each name, and each has a docstring."""
    for name in tfclip_compat.__all__:
        ns: dict = {}
        exec(f"from tfclip_compat import {name}", ns)  # noqa: S102 - the import form users write
        obj = ns[name]
        assert callable(obj)
        assert (obj.__doc__ or "").strip(), name
        assert obj.__module__.startswith("tfclip_compat._"), name


CONTRIB_DROP_INS = {
    "adaptive_clipping_fn",
    "add_gradients_summaries",
    "clip_gradient_norms",
    "clip_gradient_norms_fn",
    "create_train_op",
    "multiply_gradients",
    "optimize_loss",
    "slim_add_gradients_summaries",
    "slim_create_train_op",
}
TRANSFORMS = {
    "AdaptiveClipping",
    "AdaptiveGradClip",
    "AutoClip",
    "Chain",
    "ClipByGlobalNorm",
    "ClipByNorm",
    "ClipByValue",
    "ClipStatistics",
    "GradientTransform",
    "PerGroup",
    "Select",
    "SkipNonFinite",
    "SkipOnSpike",
    "TransformResult",
    "ZClip",
}


def test_layout_separates_contrib_drop_ins_from_transforms():
    """TF 1.15 drop-ins live in ``tfclip_compat._contrib``, transforms in ``tfclip_compat._transforms``."""
    for name in CONTRIB_DROP_INS:
        assert getattr(tfclip_compat, name).__module__.startswith("tfclip_compat._contrib."), name
    for name in TRANSFORMS:
        assert getattr(tfclip_compat, name).__module__.startswith("tfclip_compat._transforms."), name
