"""tfclip_compat: TF1 gradient-clipping helpers that run on TensorFlow 2.

Drop-in, same-semantics replacements for the clipping helpers TensorFlow 2 removed
(``tf.contrib.estimator.clip_gradients_by_norm``, ``tf.contrib.training.*``,
``tf.contrib.layers.optimize_loss``, ``adaptive_clipping_fn``) plus robust versions of TF's clip
functions, and composable gradient transforms (``Chain``, ``AutoClip``, ``ZClip``,
``AdaptiveGradClip``, ``SkipOnSpike``, ``SkipNonFinite``, ``PerGroup``, ``ClipStatistics``...)
that ``wrap_optimizer`` puts in front of any v1 or Keras optimizer.
Needs TensorFlow (``pip install "tfclip-compat[tf]"``); never imports libcst.
"""

from tfclip_compat._clip import (
    clip_by_average_norm,
    clip_by_global_norm,
    clip_by_norm,
    clip_by_value,
    global_norm,
)
from tfclip_compat._adaptive import AdaptiveClipping, adaptive_clipping_fn
from tfclip_compat._fast_norm import fast_clip_by_global_norm, fast_global_norm
from tfclip_compat._keras_optimizer import TransformedKerasOptimizer
from tfclip_compat._layers import optimize_loss
from tfclip_compat._optimizer import clip_gradients_by_norm, wrap_optimizer
from tfclip_compat._stats import ClipStatistics
from tfclip_compat._transform import Chain, ClipByGlobalNorm, GradientTransform, TransformResult
from tfclip_compat._transforms import (
    AdaptiveGradClip,
    AutoClip,
    ClipByNorm,
    ClipByValue,
    PerGroup,
    Select,
    SkipNonFinite,
    SkipOnSpike,
    ZClip,
)
from tfclip_compat._training import (
    add_gradients_summaries,
    clip_gradient_norms,
    clip_gradient_norms_fn,
    create_train_op,
    multiply_gradients,
)

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
    "TransformedKerasOptimizer",
    "ZClip",
    "adaptive_clipping_fn",
    "add_gradients_summaries",
    "clip_by_average_norm",
    "clip_by_global_norm",
    "clip_by_norm",
    "clip_by_value",
    "clip_gradient_norms",
    "clip_gradient_norms_fn",
    "clip_gradients_by_norm",
    "create_train_op",
    "fast_clip_by_global_norm",
    "fast_global_norm",
    "global_norm",
    "multiply_gradients",
    "optimize_loss",
    "wrap_optimizer",
]
