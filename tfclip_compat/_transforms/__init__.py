"""The gradient-transform API (``optax.chain`` style) behind ``tfclip_compat.wrap_optimizer``.

Every class here is a :class:`~tfclip_compat._transforms.base.GradientTransform`: it maps
``grads_and_vars`` to ``TransformResult(grads_and_vars, skip, stats)``; compose them with
:class:`Chain` and hand the result to :func:`tfclip_compat.wrap_optimizer`::

    transform = tfclip_compat.Chain(
        tfclip_compat.SkipNonFinite(),
        tfclip_compat.SkipOnSpike(std_factor=6.0, window=100),
        tfclip_compat.AutoClip(percentile=10.0),
    )
    opt = tfclip_compat.wrap_optimizer(tf.keras.optimizers.Adam(1e-3), transform)

Modules, one theme each:

* ``base`` — the contract (``GradientTransform``, ``TransformResult``), ``Chain``,
  ``check_clip_norm``;
* ``clipping`` — stateless clips: ``ClipByGlobalNorm``, ``ClipByNorm``, ``ClipByValue``;
* ``adaptive`` — ``AdaptiveGradClip``, ``AutoClip``, ``ZClip``, ``AdaptiveClipping``;
* ``skipping`` — ``SkipNonFinite``, ``SkipOnSpike``;
* ``grouping`` — ``PerGroup``, ``Select``;
* ``statistics`` — ``ClipStatistics``;
* ``_util`` — state variables, control dependencies, shared stats (see its docstring for how
  state behaves under tf.distribute and in checkpoints).

Common stats (scalars, float32): ``global_norm`` (norm of the gradients the transform
received), ``clipped_global_norm`` (norm of what it returns) and ``clipped`` (1.0 when it
changed the gradients). Transform-specific ones are listed per class. Non-finite norms
(inf/NaN) are never recorded into a transform's statistics; the step itself is left to
:class:`SkipNonFinite` or the wrapper's ``nonfinite=`` policy.

The TF 1.15 drop-ins (``tf.contrib`` replacements) are a separate package,
``tfclip_compat._contrib``; this one is new API with no TF 1.15 counterpart to match.
"""

from tfclip_compat._transforms._util import state_variable, variable_name
from tfclip_compat._transforms.adaptive import AdaptiveClipping, AdaptiveGradClip, AutoClip, ZClip
from tfclip_compat._transforms.base import Chain, GradientTransform, TransformResult, check_clip_norm
from tfclip_compat._transforms.clipping import ClipByGlobalNorm, ClipByNorm, ClipByValue
from tfclip_compat._transforms.grouping import PerGroup, Select
from tfclip_compat._transforms.skipping import SkipNonFinite, SkipOnSpike
from tfclip_compat._transforms.statistics import ClipStatistics

__all__ = [
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
    "check_clip_norm",
    "state_variable",
    "variable_name",
]
