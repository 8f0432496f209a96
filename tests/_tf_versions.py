"""Which TensorFlow / Keras the shim's tests run on, and the one skip for Keras-2-only gaps.

The shim is tested on TF 2.15 (Keras 2, ``tf.estimator`` present) and on the newest TF
(Keras 3) -- ``.ci/run`` runs the shim's tests in both. The Keras optimizer wrapper
(``TransformedKerasOptimizer``) works on both: ``test_keras_versions.py`` and the Keras tests of
the other shim modules (distributed, checkpoints, policies, atomic ``raise``) run on both. Five
modules (``test_keras_api``, ``_fit``, ``_mixed_precision``, ``_multiworker``, ``_save``) assert
Keras 3 behaviour or use its API, and skip on Keras 2 with :data:`KERAS2_WRAPPER_REASON`
(measured on TF 2.15: 25 of the 34 tests of ``_api``/``_fit``/``_save`` pass there too; the 9
others assert Keras 3 facts).
"""

from __future__ import annotations

import pytest

try:  # TensorFlow is an optional extra; tests that need it import it themselves
    import keras

    KERAS_MAJOR = int(keras.__version__.split(".")[0])
except ImportError:  # pragma: no cover - the dev extra installs TensorFlow
    KERAS_MAJOR = 0

KERAS2_WRAPPER_REASON = (
    "asserts Keras 3 behaviour or uses its API (optimizer.apply, loss_scale_factor, "
    "keras.optimizers.LossScaleOptimizer, keras.src.backend.tensorflow, the .keras format, "
    "per-replica global_clipnorm); the Keras wrapper on Keras 2 is tested by "
    "tests/shim/test_keras_versions.py and the other shim tests"
)

requires_keras3 = pytest.mark.skipif(KERAS_MAJOR < 3, reason=KERAS2_WRAPPER_REASON)


def skip_module_unless_keras3() -> None:
    """Skip the calling test module on Keras 2 (call it before module-level Keras 3 code)."""
    if KERAS_MAJOR < 3:
        pytest.skip(KERAS2_WRAPPER_REASON, allow_module_level=True)
