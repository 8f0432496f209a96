"""tfclip_compat: TF1 gradient-clipping helpers that run on TensorFlow 2.

Drop-in, same-semantics replacements for the clipping helpers TensorFlow 2 removed
(``tf.contrib.estimator.clip_gradients_by_norm``, ``tf.contrib.training.*``,
``tf.contrib.layers.optimize_loss``, ``adaptive_clipping_fn``, ``tf.contrib.slim.learning``'s)
plus robust versions of TF's clip functions, and composable gradient transforms (``Chain``, ``AutoClip``, ``ZClip``,
``AdaptiveGradClip``, ``SkipOnSpike``, ``SkipNonFinite``, ``PerGroup``, ``ClipStatistics``...)
that ``wrap_optimizer`` puts in front of any v1 or Keras optimizer.
Needs TensorFlow (``pip install "tfclip-compat[tf]"``); never imports libcst.

Layout (all private; the public names are this package's flat ``__all__``):

* ``_contrib/`` — the TF 1.15 ``tf.contrib`` drop-ins (frozen behaviour);
* ``_transforms/`` — the gradient-transform API, in themed modules;
* ``_pipeline`` / ``_optimizer`` — the optimizer wrappers that run a transform;
* ``_keras_optimizer`` (+ ``_keras_support``, ``_transform_config``) — the Keras optimizer that
  transforms the cross-replica aggregated gradient inside ``model.fit``;
* ``_restore`` — a TF1 optimizer's checkpointed state into its Keras equivalent;
* ``_norms`` — the ``norm=`` modes (TF 1.15's ops, exact, fast);
* ``_clip`` — robust versions of TF's clip functions; ``_fast_norm`` — the grouped norm;
* ``_nonfinite`` — the ``nonfinite=`` policies; ``_tf`` — the one place TF is imported.

Two public submodules: ``tfclip_compat.mnist``, TF 1's MNIST tutorial loader
(``tensorflow.examples.tutorials.mnist.input_data``, which TF 2 does not ship), batch for batch;
``tfclip_compat.checkpoints``, ``tf.train.Saver`` for an eager program migrated from a session
script (TFC301): the TF 1 checkpoint, built at the first save.
"""

from tfclip_compat._clip import (
    clip_by_average_norm,
    clip_by_global_norm,
    clip_by_norm,
    clip_by_value,
    global_norm,
)
from tfclip_compat._contrib.adaptive import adaptive_clipping_fn
from tfclip_compat._contrib.layers import optimize_loss
from tfclip_compat._contrib.slim import slim_add_gradients_summaries, slim_create_train_op
from tfclip_compat._contrib.training import (
    add_gradients_summaries,
    clip_gradient_norms,
    clip_gradient_norms_fn,
    create_train_op,
    multiply_gradients,
)
from tfclip_compat._fast_norm import fast_clip_by_global_norm, fast_global_norm
from tfclip_compat._keras_optimizer import TransformedKerasOptimizer
from tfclip_compat._optimizer import clip_gradients_by_norm, wrap_optimizer
from tfclip_compat._restore import restore_v1_optimizer_state
from tfclip_compat._transforms import (
    AdaptiveClipping,
    AdaptiveGradClip,
    AutoClip,
    Chain,
    ClipByGlobalNorm,
    ClipByNorm,
    ClipByValue,
    ClipStatistics,
    GradientTransform,
    PerGroup,
    Select,
    SkipNonFinite,
    SkipOnSpike,
    TransformResult,
    ZClip,
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
    "restore_v1_optimizer_state",
    "slim_add_gradients_summaries",
    "slim_create_train_op",
    "wrap_optimizer",
]
