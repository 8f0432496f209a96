"""Executed-equivalence harness for the codemods: run a legacy program as TF1 ran it, run the
codemod's output on TF 2, and compare what training produced.

Shared by the TF 2 form tests (``test_equivalence_tf2.py``) and the compat form tests.

Program contract
----------------
A *graph program* is module source that, executed in a fresh ``tf.Graph()``, defines

* ``train_op``: the op one training step runs (or a list of ops, run one after the other in
  separate ``Session.run`` calls, as GAN code runs its discriminator and generator steps);
* ``loss``: the loss tensor (fetched before each step's update, in its own ``Session.run``);
* optionally ``feeds(step) -> dict``: a feed dict per step, keyed by *names* of the program's
  globals (``{"x": array}``), so that before and after programs are fed identically.

An *eager program* defines ``train_step()`` (one step; returns the loss value or None) and
optionally ``compute_loss()`` (called after training for the final loss). Its variables are the
``tf.Variable``s among its globals (and those of any global object with ``.variables``).

Use::

    before = run_graph(BEFORE, legacy=True)          # tf = TF 1.15 namespace, contrib = reference
    after_src = migrate(BEFORE, add_clip_norm=5.0)   # the engine's output, never hand-written
    after = run_graph(after_src, legacy=False)       # plain TF 2 imports
    assert_equivalent(before, after)

``legacy=True`` executes through ``reference.run_legacy``: ``import tensorflow as tf`` is TF 1.15's
namespace (``tf.compat.v1`` + the test-only ``tf.contrib`` reference), never ``tfclip_compat``.
``legacy=False`` executes with the real importer, as a user's migrated file would run on TF 2.

Every trace records the loss at every step, every global variable by name (model variables,
optimizer slots, ``global_step``) and the global step; :func:`assert_equivalent` compares them all
with ``rtol=1e-5``.
"""

from __future__ import annotations

import random
import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import tensorflow as tf

from codemods.api import Options, Result, migrate_source

STEPS = 20


@dataclass
class Trace:
    """What one training run produced."""

    losses: List[float]
    variables: Dict[str, np.ndarray]
    global_step: Optional[int] = None
    namespace: Dict[str, Any] = field(default_factory=dict, repr=False)


def migrate(source: str, *, expect: Optional[str] = None, **options: Any) -> str:
    """Run the whole engine on ``source`` and return the new code.

    Fails (AssertionError) when nothing changed, or when ``expect`` (a rule code such as
    ``"TFC103"``) is given and no applied diagnostic of that code was produced.
    """
    result: Result = migrate_source(textwrap.dedent(source), Options(**options))
    assert result.changed, "the codemod left the program unchanged:\n" + "\n".join(
        d.format() for d in result.diagnostics
    )
    if expect is not None:
        codes = {d.code for d in result.diagnostics if d.applied}
        assert expect in codes, f"no applied {expect} fix; diagnostics: {[d.format() for d in result.diagnostics]}"
    return result.code


def _exec(source: str, legacy: bool, executor: Optional[Callable[[str], Dict[str, Any]]] = None) -> Dict[str, Any]:
    if executor is not None:
        return executor(source)
    if legacy:
        from reference import run_legacy  # tests/ is on sys.path (conftest.py)

        return run_legacy(source)
    scope: Dict[str, Any] = {"__name__": "__after__"}
    exec(compile(textwrap.dedent(source), "<after>", "exec"), scope)  # noqa: S102 - test helper
    return scope


def run_graph(source: str, *, legacy: bool, steps: int = STEPS, seed: int = 0,
              executor: Optional[Callable[[str], Dict[str, Any]]] = None) -> Trace:
    """Build ``source`` in a fresh graph (TF1 default mode) and train ``steps`` steps.

    ``executor`` (optional) replaces the default way of executing the source (``legacy`` picks
    ``reference.run_legacy`` or a plain ``exec``); it returns the program's globals.
    """
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(seed)
        # Unseeded Keras (and tf-keras `tf.layers`) initializers draw from Python's `random`.
        random.seed(seed)
        np.random.seed(seed)
        ns = _exec(source, legacy, executor)
        train_op, loss = ns["train_op"], ns["loss"]
        feeds: Callable[[int], Dict[str, Any]] = ns.get("feeds") or (lambda step: {})
        global_step = tf.compat.v1.train.get_global_step()
        variables = tf.compat.v1.global_variables()
        init = tf.compat.v1.global_variables_initializer()
        losses: List[float] = []
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(init)
            for step in range(steps):
                feed = {ns[name]: value for name, value in feeds(step).items()}
                # The loss first, then the step: fetching both in one run would race whenever the
                # loss tensor is not an input of the update (a callable loss builds its own ops).
                losses.append(float(sess.run(loss, feed_dict=feed)))
                for op in train_op if isinstance(train_op, list) else [train_op]:
                    sess.run(op, feed_dict=feed)
            values = sess.run(variables)
            step_value = None if global_step is None else int(sess.run(global_step))
    return Trace(
        losses=losses,
        variables={v.op.name: np.asarray(x) for v, x in zip(variables, values)},
        global_step=step_value,
        namespace=ns,
    )


def _eager_variables(ns: Dict[str, Any]) -> Dict[str, np.ndarray]:
    found: Dict[str, np.ndarray] = {}
    for key, value in sorted(ns.items()):
        if isinstance(value, tf.Variable):
            found[key] = value.numpy()
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, tf.Variable) for v in value):
            for i, v in enumerate(value):
                found[f"{key}[{i}]"] = v.numpy()
        elif hasattr(value, "variables") and not isinstance(value, type):
            owned = value.variables() if callable(value.variables) else value.variables
            # by position: eager slot names are uniquified process-wide (Adam_2, Adam_3...)
            for i, v in enumerate(owned if isinstance(owned, (list, tuple)) else ()):
                if isinstance(v, tf.Variable):
                    found[f"{key}.variables()[{i}]"] = v.numpy()
    return found


def run_eager(source: str, *, legacy: bool, steps: int = STEPS, seed: int = 0,
              executor: Optional[Callable[[str], Dict[str, Any]]] = None) -> Trace:
    """Execute ``source`` eagerly and call its ``train_step()`` ``steps`` times (``executor``: as
    in :func:`run_graph`)."""
    assert tf.executing_eagerly(), "run_eager needs eager execution (TF 2 default)"
    tf.random.set_seed(seed)
    random.seed(seed)
    np.random.seed(seed)
    ns = _exec(source, legacy, executor)
    losses: List[float] = []
    for _ in range(steps):
        value = ns["train_step"]()
        if value is not None:
            losses.append(float(value))
    if "compute_loss" in ns:
        losses.append(float(ns["compute_loss"]()))
    step = ns.get("global_step")
    return Trace(
        losses=losses,
        variables=_eager_variables(ns),
        global_step=None if step is None else int(step.numpy()),
        namespace=ns,
    )


def assert_equivalent(before: Trace, after: Trace, *, rtol: float = 1e-5, atol: float = 1e-7,
                      variables: Optional[List[str]] = None) -> None:
    """Losses, global step and every variable (or the named ``variables``) agree to ``rtol``."""
    assert before.losses, "the before program produced no loss values"
    np.testing.assert_allclose(after.losses, before.losses, rtol=rtol, atol=atol, err_msg="loss per step")
    assert after.global_step == before.global_step, (before.global_step, after.global_step)
    names = variables if variables is not None else sorted(before.variables)
    assert names, "no variables to compare"
    if variables is None:
        assert sorted(after.variables) == names, (sorted(after.variables), names)
    for name in names:
        np.testing.assert_allclose(after.variables[name], before.variables[name], rtol=rtol, atol=atol,
                                   err_msg=f"variable {name}")
