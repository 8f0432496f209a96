"""Imported first by the Keras-wrapper test modules: skips the importing module on Keras 2.

``import _requires_keras3  # noqa: F401`` before any module-level Keras 3 code; the reason is
``_tf_versions.KERAS2_WRAPPER_REASON``. (A failed import is not cached, so every module that
imports this one is skipped.)
"""

from _tf_versions import skip_module_unless_keras3

skip_module_unless_keras3()
