"""Subprocess worker for ``test_eager_migration.py``: run a TF 1 session script as TF 1 ran it
(graph mode, ``reference.run_legacy``) and its TFC301 output eagerly (plain TF 2, no
``disable_eager_execution``), from the same initial values by TF 1 variable name, and print a
JSON report: both programs' printed lines and every variable (model variables, optimizer slots,
beta powers) by name.

Needs ``TF_USE_LEGACY_KERAS=1`` before TensorFlow is imported (the caller sets it).
Usage: ``python _eager_migration_worker.py BEFORE.py AFTER.py``.
"""

import contextlib
import io
import json
import os
import shutil
import sys
import zlib

import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(__file__))
from _aligned_dropout import align_dropout_masks  # noqa: E402
from reference import run_legacy  # noqa: E402

align_dropout_masks()  # the same tf.nn.dropout masks in both programs (see that module)


def initial_value(name, value):
    """A deterministic value for a trainable variable, from its TF 1 name."""
    rng = np.random.RandomState(zlib.crc32(name.encode()))
    return rng.uniform(-0.5, 0.5, size=tuple(value.shape)).astype(value.dtype.as_numpy_dtype)


def creator(next_creator, **kwargs):
    if kwargs.get("trainable") is not False:
        iv = kwargs["initial_value"]
        value = tf.convert_to_tensor(iv() if callable(iv) else iv)
        if value.dtype.is_floating:
            name = kwargs.get("name")
            if not tf.executing_eagerly() and kwargs.get("use_resource") is None:
                # a TF 1 `tf.Variable` (get_variable passes use_resource and its full name): the
                # name the graph is about to give it, under the current name scope
                name = tf.compat.v1.get_default_graph().unique_name(name or "Variable", mark_as_used=False)
            kwargs["initial_value"] = initial_value(name.split(":")[0], value)
    return next_creator(**kwargs)


def run_before(source):
    """Run the TF 1 program; the variables are read when its session ends: at the ``with``
    block's exit, at ``close()``, or -- a session object never closed -- when the script ends."""
    variables = {}
    base = tf.compat.v1.Session.__mro__[1]  # BaseSession: close() of Session and InteractiveSession
    exit_, close_, init_ = tf.compat.v1.Session.__exit__, base.close, base.__init__
    opened = []

    def read(session):
        if not session._closed and session.graph is tf.compat.v1.get_default_graph():
            for v in tf.compat.v1.global_variables():
                variables[v.name] = session.run(v)

    def snapshot(self, *exc):
        if exc[0] is None:
            read(self)
        return exit_(self, *exc)

    def close(self):
        read(self)
        return close_(self)

    def init(self, *args, **kwargs):
        init_(self, *args, **kwargs)
        opened.append(self)

    out = io.StringIO()
    tf.compat.v1.Session.__exit__, base.close, base.__init__ = snapshot, close, init
    try:
        with tf.Graph().as_default(), tf.compat.v1.variable_creator_scope(creator), contextlib.redirect_stdout(out):
            run_legacy(source, {"__name__": "__main__"})
            for session in opened:
                read(session)
    finally:
        tf.compat.v1.Session.__exit__, base.close, base.__init__ = exit_, close_, init_
    return out.getvalue().splitlines(), variables


def run_after(source):
    assert tf.executing_eagerly()
    out = io.StringIO()
    scope = {"__name__": "__main__"}
    with tf.variable_creator_scope(creator), contextlib.redirect_stdout(out):
        exec(compile(source, "<after>", "exec"), scope)  # noqa: S102 - test helper
    variables, objects = [], []
    # the emitted model instance (``model``, or ``model_2``... when the script has its own ``model``)
    models = [value for value in scope.values() if isinstance(getattr(value, "tf1_variables", None), list)]
    assert len(models) == 1, f"{len(models)} emitted models"
    for v in models[0].tf1_variables:
        variables.append((v.name, v.numpy()))
        objects.append(v)
    for value in scope.values():
        if isinstance(value, tf.Variable):  # the global step
            variables.append((value.name, value.numpy()))
            objects.append(value)
        value = getattr(value, "optimizer", value)  # tfclip_compat's wrapper: the inner optimizer's state
        if isinstance(value, tf.compat.v1.train.Optimizer):
            for v in value.variables():
                variables.append((v.name, v.numpy()))
                objects.append(v)
    unique = {id(v): (name, value) for v, (name, value) in zip(objects, variables)}
    return out.getvalue().splitlines(), list(unique.values())


def compare(before, after):
    """Every TF 1 variable has an eager twin of the same name (``beta1_power_1`` is the second
    optimizer's ``beta1_power``: eager names are not uniquified) and the same value."""
    problems = []
    by_name = {}
    for name, value in after:
        by_name.setdefault(name, []).append(value)
    seen = set()
    for name, value in sorted(before.items()):
        base = name.split(":")[0]
        stem = base.rsplit("_", 1)[0] if base.rsplit("_", 1)[-1].isdigit() and base not in {
            n.split(":")[0] for n in by_name} else base
        candidates = by_name.get(stem + ":0", [])
        match = next((i for i, c in enumerate(candidates) if (stem, i) not in seen and np.array_equal(c, value)), None)
        if match is None:
            problems.append(f"{name}: no eager variable with the same value "
                            f"(max diff {min((float(np.max(np.abs(c - value))) for c in candidates), default='missing')})")
        else:
            seen.add((stem, match))
    if len(seen) != len(after):
        problems.append(f"{len(after)} eager variables, {len(seen)} matched")
    return problems


def main():
    before_src, after_src = (open(p).read() for p in sys.argv[1:3])
    # the programs run in a fresh directory with MNIST-format files in MNIST_data/ (what the TF 1
    # tutorial loader and tfclip_compat.mnist read)
    from reference.mnist_input_data import fake_mnist_workdir

    work = fake_mnist_workdir("tfclip-eager-proof-")
    os.chdir(work)
    try:
        lines_before, vars_before = run_before(before_src)
        lines_after, vars_after = run_after(after_src)
    finally:
        os.chdir(os.path.dirname(os.path.abspath(__file__)))
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({"lines_before": lines_before, "lines_after": lines_after,
                      "variables": len(vars_before), "problems": compare(vars_before, vars_after)}))


if __name__ == "__main__":
    main()
