"""Which TensorFlow / Keras the shim's tests run on, and the one skip for Keras-2-only gaps.

The shim is tested on TF 2.15 (Keras 2, ``tf.estimator`` present) and on the newest TF
(Keras 3) -- ``.ci/run`` runs the shim's tests in both. The Keras optimizer wrapper
(``TransformedKerasOptimizer``) works on both; what both Keras versions share is tested by
``test_keras_versions.py`` on both. The other Keras test modules are written against Keras 3's
API and skip on Keras 2 with :data:`KERAS2_WRAPPER_REASON`.
"""

from __future__ import annotations

import pytest

try:  # TensorFlow is an optional extra; tests that need it import it themselves
    import keras

    KERAS_MAJOR = int(keras.__version__.split(".")[0])
except ImportError:  # pragma: no cover - the dev extra installs TensorFlow
    KERAS_MAJOR = 0

KERAS2_WRAPPER_REASON = (
    "written against Keras 3's API (optimizer.apply, keras.optimizers.LossScaleOptimizer, "
    "variable.path, the .keras format, Keras 3's aggregation hook); the Keras wrapper on "
    "Keras 2 is tested by tests/test_keras_versions.py"
)

requires_keras3 = pytest.mark.skipif(KERAS_MAJOR < 3, reason=KERAS2_WRAPPER_REASON)


def skip_module_unless_keras3() -> None:
    """Skip the calling test module on Keras 2 (call it before module-level Keras 3 code)."""
    if KERAS_MAJOR < 3:
        pytest.skip(KERAS2_WRAPPER_REASON, allow_module_level=True)
