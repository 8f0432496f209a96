"""Aligned dropout masks for the equivalence proofs of TFC301 (test-only).

A TF 1 session and an eager TF 2 program both draw dropout masks with the same kernel, fresh in
every run -- but never the same numbers: an op without a seed takes its op seed from the graph's
op count, and a seeded op's stream advances with every run that executes it, eval runs
included, while each eager ``tf.function`` step owns its own copy of the op. So "the same losses
bit for bit" is only a meaningful test once the masks are aligned. :func:`align_dropout_masks`
makes dropout draw its uniform numbers from a stateless op keyed by the op seed (``seed=``, else 0): the same mask for a given shape and
seed in graph mode and eagerly, in every run. What stays under test is everything the migration
could get wrong -- where dropout sits, which keep probability each run feeds (an eval run's
``1.0``), the scaling by ``1/keep_prob`` and the gradient through the mask.

Both forms are covered: ``tf.nn.dropout`` (TF 1's ``keep_prob`` and TF 2's ``rate``) reaches
``nn_ops._dropout`` through ``nn_ops.random_ops.random_uniform``, and so does
``tf.layers.dropout`` (tf-keras' legacy layer), in a session and eagerly (measured: the TFC301
fixtures ``cnn_dropout`` and ``cnn_layers_dropout`` are bit-identical, and the hand conversion
with the dropout dropped is not: ``tests/fuzz_eager/hand``).
"""

from __future__ import annotations

import types


def align_dropout_masks() -> None:
    """Patch ``tf.nn.dropout``'s sampler for this process (idempotent)."""
    from tensorflow.python.ops import nn_ops, random_ops, stateless_random_ops

    if getattr(nn_ops.random_ops, "__aligned__", False):
        return

    def random_uniform(shape, minval=0, maxval=None, dtype=None, seed=None, name=None):
        import tensorflow as tf

        return stateless_random_ops.stateless_random_uniform(
            shape, seed=tf.constant([0 if seed is None else int(seed), 7], tf.int64), minval=minval,
            maxval=maxval, dtype=dtype or tf.float32)

    proxy = types.ModuleType("random_ops_aligned")
    proxy.__dict__.update(vars(random_ops))
    proxy.random_uniform = random_uniform
    proxy.__aligned__ = True
    nn_ops.random_ops = proxy
