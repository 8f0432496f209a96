"""Shared pieces of the Keras ``model.fit`` tests: data, a small model, fit-and-read-weights.

The gradients of this model and data are large enough that a global-norm clip at ``CLIP``
is active on most steps, for the full batch and for each half of it, so per-replica
clipping (Keras' ``clipnorm`` / ``global_clipnorm``) visibly differs from clipping the
aggregated gradient.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

import keras
import numpy as np
import tensorflow as tf

import tfclip_compat as tfc

RNG = np.random.RandomState(0)
X = RNG.randn(32, 6).astype(np.float32)
Y = (X @ RNG.randn(6, 1) * 3 + RNG.randn(32, 1)).astype(np.float32)
BATCH = 8  # the GLOBAL batch: 2 replicas get 4 examples each
CLIP = 1.0


def dataset(x: np.ndarray = X, y: np.ndarray = Y) -> tf.data.Dataset:
    """Global batches in a fixed order (fit shuffles nothing given a dataset)."""
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH)


def make_model(dtype: Optional[str] = None) -> keras.Model:
    """Dense(8, tanh) -> Dense(1), same initial weights every call."""
    keras.utils.set_random_seed(1)
    return keras.Sequential([
        keras.Input((6,)),
        keras.layers.Dense(8, activation="tanh", name="hidden", dtype=dtype),
        keras.layers.Dense(1, name="out", dtype="float32" if dtype else None),
    ])


def weights(model: keras.Model) -> np.ndarray:
    """All model weights, flattened into one vector."""
    return np.concatenate([w.ravel() for w in model.get_weights()])


def optimizer_state(optimizer: Any) -> List[np.ndarray]:
    """Copies of every optimizer variable (slots, iterations, transform state)."""
    return [np.array(v.numpy()) for v in optimizer.variables]


def fit(
    make_optimizer: Callable[[], Any],
    strategy: Optional[tf.distribute.Strategy] = None,
    epochs: int = 2,
    **compile_kwargs: Any,
) -> Dict[str, Any]:
    """Build, compile and fit the model (under ``strategy`` when given); return what we compare."""
    scope = strategy.scope() if strategy is not None else _null_scope()
    with scope:
        model = make_model()
        optimizer = make_optimizer()
        model.compile(optimizer=optimizer, loss="mse", **compile_kwargs)
    history = model.fit(dataset(), epochs=epochs, verbose=0, shuffle=False)
    return {
        "weights": weights(model),
        "iterations": int(model.optimizer.iterations.numpy()),
        "loss": history.history["loss"],
        "model": model,
        "optimizer": model.optimizer,
    }


_ONE_DEVICE: Dict[Callable[[], Any], Dict[str, Any]] = {}


def fit_one_device(make_optimizer: Callable[[], Any]) -> Dict[str, Any]:
    """``fit(make_optimizer)`` on one device, computed once per session (the shared reference)."""
    if make_optimizer not in _ONE_DEVICE:
        result = fit(make_optimizer)
        _ONE_DEVICE[make_optimizer] = {k: result[k] for k in ("weights", "iterations", "loss")}
    return _ONE_DEVICE[make_optimizer]


class _null_scope:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def ours_sgd() -> Any:
    """tfclip_compat's global-norm clip around Keras SGD (the obvious call)."""
    return tfc.clip_gradients_by_norm(keras.optimizers.SGD(0.1), CLIP)


def keras_sgd_global_clipnorm() -> Any:
    """Keras' own global_clipnorm (clips each replica's partial gradient)."""
    return keras.optimizers.SGD(0.1, global_clipnorm=CLIP)


def max_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    """Largest absolute difference between two weight vectors."""
    return float(np.max(np.abs(a - b)))
