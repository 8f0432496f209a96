"""``tfclip_compat``'s ``tf.contrib.slim.learning`` twins vs the TF 1.15 slim reference, in graph mode.

``slim_create_train_op`` (and ``clip_gradient_norms`` / ``multiply_gradients`` /
``slim_add_gradients_summaries``, what ``slim.learning.*`` is rewritten to) drive 10 training
steps of the tiny dense + embedding model of ``test_create_train_op.py`` and are compared with
``tests/reference/contrib_slim.py`` (rebuilt from TF 1.15's ``learning.py``): trained variables,
losses and global step are bit-identical (``np.array_equal``), repeated embedding ids included.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from reference import contrib_slim as ref
from test_create_train_op import OPTIMIZERS, STEPS, _assert_same, _model, _train
from _tiny_model_data import IDS_DUPLICATE, IDS_UNIQUE
import tfclip_compat as tfc

v1 = tf.compat.v1


class _Shim:
    """The names ``slim.learning.X`` is rewritten to, under slim's names (like the reference)."""

    create_train_op = staticmethod(tfc.slim_create_train_op)
    clip_gradient_norms = staticmethod(tfc.clip_gradient_norms)
    multiply_gradients = staticmethod(tfc.multiply_gradients)
    add_gradients_summaries = staticmethod(tfc.slim_add_gradients_summaries)


def _both(opt, ids=IDS_UNIQUE, with_bn=False, **kwargs):
    """Train with slim's reference and with the twin; ``kwargs`` values may be ``f(variables)``."""

    def make(module):
        def build(loss, variables):
            extra = {k: (v(variables) if callable(v) else v) for k, v in kwargs.items()}
            return module.create_train_op(loss, OPTIMIZERS[opt](), **extra)

        return build

    return (
        _train(make(ref), ids=ids, with_bn=with_bn),
        _train(make(_Shim), ids=ids, with_bn=with_bn),
    )


CASES = {
    "defaults": {},
    "clip": {"clip_gradient_norm": 0.5},
    "clip_int": {"clip_gradient_norm": 1},
    "clip_negative_is_off": {"clip_gradient_norm": -1.0},
    "multipliers": {"gradient_multipliers": lambda vs: {vs["W"]: 2.0, "E": 0.25}},
    "multipliers_and_clip": {
        "gradient_multipliers": lambda vs: {"W": 3.0, vs["E"]: 0.5},
        "clip_gradient_norm": 0.4,
    },
    "no_global_step": {"global_step": None, "clip_gradient_norm": 0.5},
    "subset_no_numerics": {
        "variables_to_train": lambda vs: [vs["W"], vs["E"]],
        "check_numerics": False,
        "clip_gradient_norm": 0.5,
    },
}


@pytest.mark.parametrize("ids", [IDS_UNIQUE, IDS_DUPLICATE], ids=["unique_ids", "repeated_ids"])
@pytest.mark.parametrize("opt", ["sgd", "adam"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_slim_create_train_op_is_tf115_bit_for_bit(case, opt, ids):
    """Every argument combination trains bit for bit as TF 1.15's slim, dense and embedding grads."""
    r, s = _both(opt, ids=ids, **CASES[case])
    _assert_same(r, s)
    assert s[2] == (None if case == "no_global_step" else STEPS)


def test_clipping_and_multipliers_really_change_training():
    """The cases above are not vacuous: clipping and multipliers change the trained values."""
    plain = _both("sgd")[1]
    clipped = _both("sgd", clip_gradient_norm=0.5)[1]
    scaled = _both("sgd", gradient_multipliers=lambda vs: {"E": 0.25})[1]
    assert not np.allclose(plain[1]["W"], clipped[1]["W"], rtol=1e-3)
    assert not np.allclose(plain[1]["E"], scaled[1]["E"], rtol=1e-3)


@pytest.mark.parametrize("update_ops", [None, []], ids=["collection", "none"])
def test_update_ops_batch_norm_collection_matches_tf115(update_ops):
    """UPDATE_OPS (a batch-norm moving mean) run with the step by default and not with ``[]``."""
    kwargs = {"clip_gradient_norm": 0.5}
    if update_ops is not None:
        kwargs["update_ops"] = update_ops
    r, s = _both("momentum", with_bn=True, **kwargs)
    _assert_same(r, s)
    assert (not np.allclose(s[1]["moving_mean"], 0.0)) is (update_ops is None)


def _summary_ops(graph):
    return sorted(
        (op.name, op.type)
        for op in graph.get_operations()
        if op.type in ("HistogramSummary", "ScalarSummary")
    )


def test_summarize_gradients_uses_contrib_training_tags_like_tf115():
    """``summarize_gradients=True`` trains identically and adds TF 1.15's (contrib.training) summaries."""
    r, s = _both("sgd", summarize_gradients=True, clip_gradient_norm=0.5)
    _assert_same(r, s)
    assert _summary_ops(s[3]) == _summary_ops(r[3])
    assert ("summarize_grads/W_gradient", "HistogramSummary") in _summary_ops(s[3])


def _op_list(graph):
    """(name, type) of every op; ``Select`` and ``SelectV2`` count as one (same values: the
    shim's ``clip_by_norm`` builds ``tf.where``'s V2 op, the reference ``v1.where``'s)."""
    return [(op.name.replace("SelectV2", "Select"), op.type.replace("SelectV2", "Select"))
            for op in graph.get_operations()]


def test_graph_ops_match_tf115_name_for_name():
    """The twin builds the same ops with the same names as TF 1.15 (``multiply_grads``, ``clip_grads``)."""
    r, s = _both(
        "adam",
        ids=IDS_DUPLICATE,
        clip_gradient_norm=0.5,
        gradient_multipliers=lambda vs: {"E": 0.25},
    )
    ref_ops = _op_list(r[3])
    shim_ops = _op_list(s[3])
    assert shim_ops == ref_ops
    assert any(name.startswith("clip_grads/") for name, _ in shim_ops)
    assert any(name.startswith("multiply_grads/") for name, _ in shim_ops)


def test_slim_add_gradients_summaries_matches_tf115_tags_and_values():
    """``slim_add_gradients_summaries`` makes slim's ``/gradient`` summaries with TF 1.15's values."""
    results = []
    for fn in (ref.add_gradients_summaries, tfc.slim_add_gradients_summaries):
        graph = tf.Graph()
        with graph.as_default():
            loss, _ = _model(ids=IDS_DUPLICATE)
            grads = v1.train.GradientDescentOptimizer(0.1).compute_gradients(loss)
            summaries = fn(grads)
            with v1.Session() as sess:
                sess.run(v1.global_variables_initializer())
                values = sess.run(summaries)
            results.append(([t.op.name for t in summaries], values))
    assert results[0][0] == results[1][0]
    assert "W/gradient" in results[1][0] and "E/gradient_norm" in results[1][0]
    assert results[0][1] == results[1][1]


@pytest.mark.parametrize(
    "bad", [float("inf"), float("nan"), "5", None, True], ids=["inf", "nan", "str", "none", "bool"]
)
def test_bad_clip_gradient_norm_is_refused_by_name(bad):
    """A non-finite or non-number ``clip_gradient_norm`` raises ``ValueError`` naming it."""
    with tf.Graph().as_default():
        loss, _ = _model()
        with pytest.raises(ValueError, match="clip_gradient_norm"):
            tfc.slim_create_train_op(loss, OPTIMIZERS["sgd"](), clip_gradient_norm=bad)


def test_nonfinite_skip_is_an_opt_in():
    """``nonfinite="skip"`` leaves a step with inf gradients out; the default applies them (TF 1.15)."""
    finals = {}
    for policy in ("propagate", "skip"):
        with tf.Graph().as_default():
            scale = v1.placeholder(tf.float32, [])
            loss, variables = _model()
            train_op = tfc.slim_create_train_op(
                loss * scale, OPTIMIZERS["sgd"](), clip_gradient_norm=0.5,
                check_numerics=False, nonfinite=policy,
            )
            with v1.Session() as sess:
                sess.run(v1.global_variables_initializer())
                sess.run(train_op, {scale: 1.0})
                sess.run(train_op, {scale: np.inf})
                finals[policy] = sess.run(variables["W"])
    assert np.isnan(finals["propagate"]).all()
    assert np.isfinite(finals["skip"]).all()
