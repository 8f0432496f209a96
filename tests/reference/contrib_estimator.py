"""Reference: TF 1.15 ``tf.contrib.estimator.clip_gradients_by_norm``, rebuilt on tf.compat.v1.

Written from the TF 1.15 source semantics of
``tensorflow/contrib/estimator/python/estimator/extenders.py`` — independent of tfclip_compat:
``clip_grads`` unzips the pairs, calls ``clip_ops.clip_by_global_norm`` (TF 1.15's own,
``reference.clip_ops``: the norm of ``IndexedSlices.values``) and re-zips;
``_TransformGradients`` is a ``tf.train.Optimizer`` named ``'ClipByNorm' + optimizer.get_name()``
that delegates ``compute_gradients``, ``get_slot`` and ``get_slot_names`` and transforms in
``apply_gradients``. It does NOT override ``variables()``, so ``variables()`` returns the
wrapper's own, empty, state: ``Saver(tf.trainable_variables() + opt.variables())`` saved no
optimizer state, which is what old checkpoints hold.
"""

import tensorflow as tf

from . import clip_ops


def clip_gradients_by_norm(optimizer, clip_norm):
    """TF 1.15 contrib semantics: clip by the global norm, then apply with ``optimizer``."""

    def clip_grads(grads_and_vars):
        gradients, variables = zip(*grads_and_vars)
        gradients = clip_ops.clip_by_global_norm(gradients, clip_norm)[0]
        return list(zip(gradients, variables))

    return _TransformGradients(
        optimizer=optimizer, transform_grads_fn=clip_grads, name="ClipByNorm" + optimizer.get_name()
    )


class _TransformGradients(tf.compat.v1.train.Optimizer):
    """TF 1.15 ``_TransformGradients``: apply ``transform_grads_fn`` before the real optimizer."""

    def __init__(self, optimizer, transform_grads_fn, name=None):
        super().__init__(use_locking=False, name=name or optimizer.get_name())
        self._optimizer = optimizer
        self._transform_grads_fn = transform_grads_fn

    def compute_gradients(self, *args, **kwargs):
        return self._optimizer.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        grads_and_vars = self._transform_grads_fn(grads_and_vars)
        return self._optimizer.apply_gradients(grads_and_vars, global_step, name)

    def get_slot(self, *args, **kwargs):
        return self._optimizer.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._optimizer.get_slot_names(*args, **kwargs)
