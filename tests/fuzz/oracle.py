"""The differential oracle: one generated program, run as TF1 ran it and after the engine's fix.

:func:`check_program` (called inside a fuzz worker, TensorFlow imported once per process):

1. runs *before* as TF 1.15 did (``tests/_equivalence.py``: graph programs through
   ``reference.run_legacy``, i.e. ``tf.compat.v1`` + the test-only contrib reference, in a fresh
   ``tf.Graph``; eager programs likewise with ``run_eager``). If that fails the program is
   ``before-invalid`` (a generator bug);
2. runs the engine twice: default options (safe fixes only) and ``unsafe_fixes=True``;
3. for each output that differs from the input: it must parse, it runs on TF 2 (the real
   importer and the real ``tfclip_compat``) and is compared with *before*: the loss at every step,
   the global step and every global variable (weights, optimizer slots, beta powers, the step)
   by name at ``rtol=1e-5`` (:func:`compare`; a difference only in names is reported as such).

Verdicts: ``unchanged`` (the engine's TFC202 reasons kept), ``equivalent``, ``differs``,
``crashes``, ``unparsable``, ``engine-error`` (the engine raised), and ``before-invalid`` for the
program. A safe fix that differs, crashes, is unparsable or breaks the engine is a failure.

The world both sides run in: TF 2.21 has no ``tf.layers`` / ``tf.nn.rnn_cell`` under Keras 3, so
the worker installs the stand-ins of ``_tf1_layers`` into ``tf.compat.v1`` (both sides see them);
``tf.contrib`` is the test-only reference on both sides (only what the engine rewrote differs);
an after program that still says ``import tensorflow as tf`` gets ``tf.compat.v1`` (what
``tf_upgrade_v2`` would have made of it), ``import tensorflow.compat.v1 as tf`` is the real one.
"""

from __future__ import annotations

import builtins
import textwrap
import traceback
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf

import _equivalence as eq  # tests/ is on sys.path (worker / conftest)
import reference
from codemods.api import Options, migrate_source
from codemods.engine.core import FixSafety
from tests.fuzz import _tf1_layers
from tests.fuzz.generator import Program, generate

RTOL, ATOL = 1e-5, 1e-7
STEPS = 3
SAFE_FAILURES = ("differs", "crashes", "unparsable", "engine-error")


def _l2_regularizer(scale, scope=None):
    """TF 1.15 ``tf.contrib.layers.l2_regularizer``: ``scale * tf.nn.l2_loss(w)``."""

    def l2(weights):
        return tf.multiply(scale, tf.nn.l2_loss(weights), name="l2_regularizer")

    return l2


def install_world() -> None:
    """Process-wide set-up of the fuzz worker (idempotent): TF1 stand-ins, contrib on both sides."""
    _tf1_layers.install()
    if not hasattr(reference.contrib_layers, "l2_regularizer"):
        reference.contrib_layers.l2_regularizer = _l2_regularizer
    _tf1_layers._set(tf.compat.v1, "contrib", reference.contrib)


def _after_import(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002
    if level == 0 and name == "tensorflow" and not fromlist:
        return tf.compat.v1
    if level == 0 and name.startswith("tensorflow.contrib"):
        return reference._legacy_import(name, globals, locals, fromlist, level)
    return builtins.__import__(name, globals, locals, fromlist, level)


def exec_after(source: str) -> Dict[str, Any]:
    """Execute a rewritten program with the real importer (``import tensorflow as tf`` -> v1)."""
    scope: Dict[str, Any] = {"__name__": "__after__"}
    after_builtins = dict(vars(builtins))
    after_builtins["__import__"] = _after_import
    scope["__builtins__"] = after_builtins
    exec(compile(textwrap.dedent(source), "<after>", "exec"), scope)  # noqa: S102 - test helper
    return scope


def fresh_state() -> None:
    """Undo what one program may leave behind: Keras names/seeds, control-flow v1, graph seed."""
    tf.keras.backend.clear_session(free_memory=False)  # gc.collect() would cost 0.35 s a program
    tf.keras.utils.set_random_seed(0)
    tf.compat.v1.enable_control_flow_v2()


def run(program_kind: str, source: str, *, legacy: bool, steps: int = STEPS) -> eq.Trace:
    """Train ``source`` (``legacy``: as TF1; else the after world) in isolation; return its trace."""
    fresh_state()
    try:
        executor = None if legacy else exec_after
        if program_kind == "eager":
            return eq.run_eager(source, legacy=legacy, steps=steps, executor=executor)
        return eq.run_graph(source, legacy=legacy, steps=steps, executor=executor)
    finally:
        tf.compat.v1.enable_control_flow_v2()


def _is_keras_optimizer(value: Any) -> bool:
    return type(value).__module__.startswith("keras")


def compare(before: eq.Trace, after: eq.Trace) -> Tuple[bool, str]:
    """(same, what differs): losses per step, global step, variable names and values."""
    problems: List[str] = []
    b_vars, a_vars = dict(before.variables), dict(after.variables)
    # TFC104 swaps a TF1 optimizer for a Keras one in eager code: their states are not
    # name-comparable; the model variables (and so the slots' effect) still are.
    for key, value in before.namespace.items():
        if hasattr(value, "get_slot") and _is_keras_optimizer(after.namespace.get(key)):
            for d in (b_vars, a_vars):
                for name in [n for n in d if n.startswith(key + ".variables()")]:
                    del d[name]
    # TF 1.15's `clip_gradients_by_norm` wrapper hid its inner optimizer's state (`variables()` was
    # `[]`); a rewrite that rebinds the wrapper's name to the inner optimizer (every use of the
    # name rewritten: nothing in the program reads `variables()`) exposes it under that name.
    # The inner optimizer was unreachable before, so there is nothing to compare it with.
    for key, value in before.namespace.items():
        if type(value).__name__ == "_TransformGradients" and hasattr(after.namespace.get(key), "get_slot") \
                and not any(n.startswith(key + ".variables()") for n in b_vars):
            for name in [n for n in a_vars if n.startswith(key + ".variables()")]:
                del a_vars[name]
    if len(before.losses) != len(after.losses):
        problems.append(f"{len(before.losses)} losses before, {len(after.losses)} after")
    elif not np.allclose(after.losses, before.losses, rtol=RTOL, atol=ATOL, equal_nan=True):
        problems.append(f"losses {before.losses} before, {after.losses} after")
    if before.global_step != after.global_step:
        problems.append(f"global step {before.global_step} before, {after.global_step} after")
    only_b, only_a = sorted(set(b_vars) - set(a_vars)), sorted(set(a_vars) - set(b_vars))
    value_diffs = []
    for name in sorted(set(b_vars) & set(a_vars)):
        x, y = b_vars[name], a_vars[name]
        if x.shape != y.shape or not np.allclose(y, x, rtol=RTOL, atol=ATOL, equal_nan=True):
            err = float(np.max(np.abs(np.asarray(y, np.float64) - x))) if x.shape == y.shape else float("nan")
            value_diffs.append(f"{name} (max abs diff {err:.3g})")
    if value_diffs:
        problems.append("values differ: " + ", ".join(value_diffs))
    if only_b or only_a:
        unmatched = list(only_a)
        renamed = 0
        for name in only_b:
            hit = next((n for n in unmatched if a_vars[n].shape == b_vars[name].shape
                        and np.allclose(a_vars[n], b_vars[name], rtol=RTOL, atol=ATOL)), None)
            if hit is not None:
                unmatched.remove(hit)
                renamed += 1
        kind = "name-only" if renamed == len(only_b) == len(only_a) else "a different set of variables"
        problems.append(f"variables differ ({kind}): only before {only_b}, only after {only_a}")
    return not problems, "; ".join(problems)


def _error(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    where = next((f"{f.filename}:{f.lineno}" for f in reversed(tb) if f.filename in ("<after>", "<legacy>")), "")
    return f"{type(exc).__name__}: {str(exc).strip()[:600]}" + (f" (at {where})" if where else "")


def check_after(program: Program, code: str, before: eq.Trace) -> Dict[str, Any]:
    """Verdict of one rewritten program against the before trace."""
    try:
        compile(code, "<after>", "exec")
    except SyntaxError as exc:
        return {"verdict": "unparsable", "detail": _error(exc)}
    try:
        after = run(program.kind, code, legacy=False)
    except Exception as exc:  # noqa: BLE001 - every failure of the after program is a verdict
        return {"verdict": "crashes", "detail": _error(exc)}
    same, detail = compare(before, after)
    return {"verdict": "equivalent" if same else "differs", "detail": detail}


def _migrate(source: str, unsafe: bool) -> Tuple[Optional[Any], str]:
    try:
        return migrate_source(source, Options(unsafe_fixes=unsafe), path="fuzz.py"), ""
    except Exception as exc:  # noqa: BLE001 - an engine crash is a verdict, not a worker crash
        return None, _error(exc)


def _offers_unsafe_fix(result: Any) -> bool:
    return any(d.fix is FixSafety.UNSAFE and not d.applied for d in result.diagnostics)


def check_program(program: Program, *, exact_unsafe: bool = False) -> Dict[str, Any]:
    """The whole differential check of one program; never raises.

    The engine only gates fixes marked unsafe behind ``unsafe_fixes`` (``TfcCodemod.may_fix``),
    and reports each one it holds back; so unless ``exact_unsafe``, the unsafe run is skipped
    (and equals the safe one) when the safe run offered no unsafe fix (checked on 300 programs
    of seed 0: never a different output; it saves a quarter of the time).
    """
    out: Dict[str, Any] = {"seed": program.seed, "index": program.index, "kind": program.kind,
                           "blocks": sorted(program.blocks)}
    try:
        before = run(program.kind, program.source, legacy=True)
    except Exception as exc:  # noqa: BLE001
        out.update(verdict="before-invalid", detail=_error(exc))
        return out
    out["verdict"] = "ok"
    previous: Dict[str, Dict[str, Any]] = {}
    safe_result = None
    for mode in ("safe", "unsafe"):
        if mode == "unsafe" and not exact_unsafe and safe_result is not None \
                and not _offers_unsafe_fix(safe_result):
            out["unsafe"] = dict(out["safe"], note="no unsafe fix offered: same as the safe run")
            continue
        result, error = _migrate(program.source, mode == "unsafe")
        if mode == "safe":
            safe_result = result
        if result is None:
            out[mode] = {"verdict": "engine-error", "detail": error, "code": None, "diagnostics": []}
            continue
        diags = [{"code": d.code, "applied": bool(d.applied), "message": d.message, "line": d.line}
                 for d in result.diagnostics]
        entry: Dict[str, Any] = {"code": result.code if result.changed else None, "diagnostics": diags}
        if not result.changed:
            entry.update(verdict="unchanged", detail="")
        elif result.code in previous:
            entry.update({k: previous[result.code][k] for k in ("verdict", "detail")})
        else:
            entry.update(check_after(program, result.code, before))
            previous[result.code] = entry
        out[mode] = entry
    return out


def check(seed: int, index: int, *, exact_unsafe: bool = False) -> Dict[str, Any]:
    """Generate and check the ``index``-th program of ``seed``."""
    program = generate(seed, index)
    result = check_program(program, exact_unsafe=exact_unsafe)
    result["source"] = program.source
    return result
