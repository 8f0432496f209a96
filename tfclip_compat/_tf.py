"""The one place where ``tfclip_compat`` imports and version-probes TensorFlow.

Every other module does ``from tfclip_compat._tf import tf``. When TensorFlow is not
installed this raises an :class:`ImportError` that tells the user how to get it: the
lint/fix side of the project (``codemods/``, the CLI) installs without TensorFlow, the
runtime shim needs the ``tf`` extra.
"""

from __future__ import annotations

from typing import Any, Tuple

_INSTALL_HINT = (
    "tfclip_compat needs TensorFlow >= 2.15, which is not installed. "
    'Install it with: pip install "tfclip-compat[tf]"'
)

try:
    import tensorflow as tf
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(_INSTALL_HINT) from exc

if tf is None:  # pragma: no cover - ``sys.modules["tensorflow"] = None`` style blocking
    raise ImportError(_INSTALL_HINT)


def _parse_version(text: str) -> Tuple[int, int]:
    parts = text.split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):  # pragma: no cover - exotic dev builds
        return (0, 0)


TF_VERSION: Tuple[int, int] = _parse_version(tf.__version__)
if TF_VERSION < (2, 15):  # pragma: no cover - the extra pins >= 2.15
    raise ImportError(
        f"tfclip_compat needs TensorFlow >= 2.15, found {tf.__version__}. "
        'Upgrade with: pip install -U "tfclip-compat[tf]"'
    )

#: The TF1 optimizer base class (``tf.compat.v1.train.Optimizer``).
V1Optimizer: Any = tf.compat.v1.train.Optimizer


def keras_optimizer_base() -> Any:
    """Return the Keras optimizer base class (``tf.keras.optimizers.Optimizer``), or None."""
    try:
        return tf.keras.optimizers.Optimizer
    except (AttributeError, ImportError):  # pragma: no cover - keras missing
        return None


def is_keras_optimizer(obj: object) -> bool:
    """Return True when ``obj`` is a Keras (3) optimizer instance."""
    base = keras_optimizer_base()
    return base is not None and isinstance(obj, base)


__all__ = ["TF_VERSION", "V1Optimizer", "is_keras_optimizer", "keras_optimizer_base", "tf"]
