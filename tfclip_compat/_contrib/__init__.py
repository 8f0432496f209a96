"""The TF 1.15 ``tf.contrib`` drop-ins: same names, signatures and numerics as TF 1.15.

* ``estimator`` — ``clip_gradients_by_norm``'s v1 wrapper;
* ``training`` — ``create_train_op``, ``clip_gradient_norms``, ``clip_gradient_norms_fn``,
  ``add_gradients_summaries``, ``multiply_gradients``;
* ``layers`` — ``optimize_loss`` (with ``OPTIMIZER_CLS_NAMES`` / ``OPTIMIZER_SUMMARIES``);
* ``adaptive`` — ``adaptive_clipping_fn``;
* ``slim`` — ``slim_create_train_op``, ``slim_add_gradients_summaries`` (``tf.contrib.slim.learning``'s
  own helpers; its ``clip_gradient_norms`` / ``multiply_gradients`` are ``training``'s).

These are frozen behaviour: they reproduce what a TF 1.15 program computed. New behaviour
belongs to the transform API (``tfclip_compat._transforms``) and the robust clip functions
(``tfclip_compat._clip``).
"""
