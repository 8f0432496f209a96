"""Checkpoint compatibility of the safe fixes (issue 15, last bullet): a second oracle mode.

For one generated program whose safe fix changed it (:func:`check`):

* **forward** -- train *before* (as TF1, ``reference.run_legacy``) ``K`` steps and save with
  ``tf.compat.v1.train.Saver()`` (eager programs: ``tf.train.Checkpoint`` over the program's
  variables and optimizers, keyed by their global names, as a TF1 eager user wrote it); build the
  *after* program (the rewrite, on TF 2) in a fresh graph, restore that checkpoint, train ``K``
  more steps; compare the losses of those steps and every variable (rtol 1e-5) with *before*
  continuing from the same checkpoint (see :func:`check` for why not an uninterrupted run);
* **rollback** -- the same with the roles swapped: *after* writes the checkpoint, *before*
  restores it and continues; compared with the same baseline.

Verdicts: ``ok`` (both directions round-trip), ``fails`` (a restore raised, e.g. a key the other
side does not have, or the resumed training differs), ``after-differs`` (the rewrite already trains
differently from scratch -- the differential oracle's failure, not a checkpoint one; reported
apart), ``unchanged``, ``before-invalid``. The sample (:func:`sample`) picks programs by grammar
tags so that every rewrite kind (TFC001-TFC004, TFC101-TFC104) occurs.
"""

from __future__ import annotations

import collections
import os
import shutil
import tempfile
from typing import Any, Dict, List, Optional

import numpy as np
import tensorflow as tf

import _equivalence as eq
from reference import run_legacy
from tests.fuzz import oracle
from tests.fuzz.generator import generate

K = 3
# TFC104 is not among them: it converts an optimizer only where its state cannot be in a
# checkpoint (no Checkpoint/Saver names it, it is local and does not escape), so there is no
# checkpoint to round-trip; `restore_v1_optimizer_state` covers moving such state by hand
# (tests/shim/test_restore_v1_optimizer_state.py).
KINDS = ("TFC001", "TFC002", "TFC003", "TFC004", "TFC101", "TFC102", "TFC103")
# grammar tag -> the rewrite kind it normally triggers (used only to pick the sample)
TAG_KINDS = {
    "contrib_compute_apply": "TFC001",
    "site_contrib_create_train_op": "TFC002", "site_contrib_optimize_loss": "TFC003",
    "clip_by_average_norm": "TFC004", "site_compute_clip": "TFC101", "site_zip_global_norm": "TFC101",
    "site_gv_index": "TFC101", "site_tf_gradients": "TFC102", "site_minimize": "TFC103",
}


def _exec(source: str, legacy: bool) -> Dict[str, Any]:
    return run_legacy(source) if legacy else oracle.exec_after(source)


def train_graph(source: str, legacy: bool, steps: int, *, first_step: int = 0, restore: Optional[str] = None,
                save: Optional[str] = None) -> eq.Trace:
    """``_equivalence.run_graph`` with a ``Saver``: restore before the first step, save after the last."""
    oracle.fresh_state()
    graph = tf.Graph()
    try:
        with graph.as_default():
            tf.compat.v1.set_random_seed(0)
            ns = _exec(source, legacy)
            train_op, loss = ns["train_op"], ns["loss"]
            feeds = ns.get("feeds") or (lambda step: {})
            global_step = tf.compat.v1.train.get_global_step()
            variables = tf.compat.v1.global_variables()
            init = tf.compat.v1.global_variables_initializer()
            saver = tf.compat.v1.train.Saver()
            losses: List[float] = []
            with tf.compat.v1.Session(graph=graph) as sess:
                sess.run(init)
                if restore:
                    saver.restore(sess, restore)
                for step in range(first_step, first_step + steps):
                    feed = {ns[name]: value for name, value in feeds(step).items()}
                    losses.append(float(sess.run(loss, feed_dict=feed)))
                    for op in train_op if isinstance(train_op, list) else [train_op]:
                        sess.run(op, feed_dict=feed)
                if save:
                    saver.save(sess, save)
                values = sess.run(variables)
                step_value = None if global_step is None else int(sess.run(global_step))
    finally:
        tf.compat.v1.enable_control_flow_v2()
    return eq.Trace(losses, {v.op.name: np.asarray(x) for v, x in zip(variables, values)}, step_value, ns)


def _trackables(ns: Dict[str, Any]) -> Dict[str, Any]:
    """What a TF1 eager user put in ``tf.train.Checkpoint(...)``: variables and optimizers by name."""
    found = {}
    for key, value in ns.items():
        if key.startswith("_") or isinstance(value, type):
            continue
        if isinstance(value, tf.Variable) or hasattr(value, "get_slot") or hasattr(value, "apply_gradients"):
            found[key] = value
    return found


def train_eager(source: str, legacy: bool, steps: int, *, first_step: int = 0, restore: Optional[str] = None,
                save: Optional[str] = None) -> eq.Trace:
    """``_equivalence.run_eager`` with a ``tf.train.Checkpoint`` restored first / written last."""
    oracle.fresh_state()
    tf.random.set_seed(0)
    ns = _exec(source, legacy)
    if isinstance(ns.get("state"), dict):  # the generated programs index their data by state["step"]
        ns["state"]["step"] = first_step
    ckpt = tf.train.Checkpoint(**_trackables(ns))
    if restore:
        ckpt.restore(restore)
    losses = [float(ns["train_step"]()) for _ in range(steps)]
    if save:
        ckpt.write(save)
    step = ns.get("global_step")
    return eq.Trace(losses, eq._eager_variables(ns), None if step is None else int(step.numpy()), ns)


def check(seed: int, index: int) -> Dict[str, Any]:
    """The checkpoint round trips of one program's safe fix; never raises.

    Five runs of ``K`` steps: *before* from scratch (saves ``ckpt_b``), *after* from scratch (saves
    ``ckpt_a``; must equal the first, else ``after-differs``), and three resumed runs from step
    ``K``: *before* from ``ckpt_b`` (the baseline), *after* from ``ckpt_b`` (forward) and *before*
    from ``ckpt_a`` (rollback). The baseline is *before* resumed, not *before* run ``2K`` steps in one
    session: TF1's ``Saver`` does not save the state of stateful random ops (``tf.nn.dropout``), so a
    resumed run legitimately differs from an uninterrupted one, on both sides alike.
    """
    program = generate(seed, index)
    out: Dict[str, Any] = {"seed": seed, "index": index, "kind": program.kind, "source": program.source}
    result, error = oracle._migrate(program.source, unsafe=False)
    if result is None:
        out.update(verdict="engine-error", detail=error)
        return out
    out["codes"] = sorted({d.code for d in result.diagnostics if d.applied})
    if not result.changed:
        out.update(verdict="unchanged", detail="")
        return out
    out["code"] = result.code
    train = train_eager if program.kind == "eager" else train_graph
    workdir = tempfile.mkdtemp(prefix="tfclip-fuzz-ckpt-")
    ckpt_b, ckpt_a = os.path.join(workdir, "before"), os.path.join(workdir, "after")
    try:
        try:
            first_b = train(program.source, True, K, save=ckpt_b)
            baseline = train(program.source, True, K, first_step=K, restore=ckpt_b)
        except Exception as exc:  # noqa: BLE001
            out.update(verdict="before-invalid", detail=oracle._error(exc))
            return out
        try:
            first_a = train(result.code, False, K, save=ckpt_a)
            same, detail = oracle.compare(first_b, first_a)
        except Exception as exc:  # noqa: BLE001
            same, detail = False, oracle._error(exc)
        if not same:
            out.update(verdict="after-differs", detail=detail)
            return out
        problems = []
        for direction, source, legacy, path in (("forward", result.code, False, ckpt_b),
                                                ("rollback", program.source, True, ckpt_a)):
            try:
                resumed = train(source, legacy, K, first_step=K, restore=path)
                same, detail = oracle.compare(baseline, resumed)
            except Exception as exc:  # noqa: BLE001 - a failed restore is the finding
                same, detail = False, "restore/continue raised " + oracle._error(exc)
            out[direction] = "ok" if same else detail
            if not same:
                problems.append(f"{direction}: {detail}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    out.update(verdict="fails" if problems else "ok", detail="; ".join(problems))
    return out


# Tags of the differential fuzzer's known failure classes (issue 9): a program carrying one is
# likely ``after-differs`` and then tests no checkpoint, so the sample skips them (and the shapes
# the planner declines: loss parameters, var_list slices).
HAZARDS = frozenset({
    "model_class", "module_tensor_helper", "towers", "losses_collection", "tf_losses_total", "weight_decay",
    "non_trainable_positional", "collection_trainable_variables", "collection_trainable_resource_variables",
    "use_resource_false", "straight_through", "gradient_reversal", "dynamic_rnn", "disable_control_flow_v2",
    "eager_lr_variable", "eager_growing_var_list", "keras_activation", "keras_backend_dot",
    "convert_to_tensor", "layers_conv2d", "layers_batch_norm", "keras_batch_norm", "layers_dropout", "gan",
    "var_list_subset", "loss_parameter",
})


def sample(seed: int, per_kind: int = 3, limit: int = 2500) -> List[int]:
    """Indices of ``seed`` whose grammar tags promise each rewrite kind, ``per_kind`` each, in index
    order, skipping programs with a known failure-class tag (:data:`HAZARDS`); a first pass also
    skips Keras / ``tf.layers`` projections (class 1) and the eager clip wrapper (issue 15 item 2),
    a second one fills the kinds still short.
    Cheap (generation only); whether the engine really applied each kind is in the results
    (``codes``), which the test checks."""
    wanted = collections.Counter({kind: per_kind for kind in KINDS})
    picked: List[int] = []
    for skip in (HAZARDS | {"keras_dense", "layers_dense", "eager_clip_wrapper"}, HAZARDS):
        for index in range(limit):
            tags = generate(seed, index).blocks
            if tags & skip or index in picked:
                continue
            promised = {TAG_KINDS[t] for t in tags if t in TAG_KINDS}
            if any(wanted[k] > 0 for k in promised):
                picked.append(index)
                for k in promised:
                    wanted[k] -= 1
            if not +wanted:
                return sorted(picked)
    return sorted(picked)


def summarise(results: List[dict], seconds: float) -> Dict[str, Any]:
    """Verdict counts and, per applied rewrite kind, how many round-tripped / failed."""
    per_kind: Dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in results:
        for code in r.get("codes", []):
            per_kind[code][r.get("verdict")] += 1
    return {"programs": len(results), "seconds": round(seconds, 1),
            "verdicts": dict(collections.Counter(r.get("verdict") for r in results)),
            "per_kind": {k: dict(v) for k, v in sorted(per_kind.items())}}
