"""Run generated session scripts through TFC301 and the harness; verdicts and the summary.

Per program (:func:`check`):

1. *before* runs (TF 1 graph mode). A failure is ``before-invalid`` -- a generator bug, except
   for outside programs whose construct TF 2.21 no longer has (``tf.estimator``): those are
   checked for the decline only (``before-unrunnable``, counted, not a failure);
2. the engine runs TFC301 only (``codemods.api.migrate_source`` with ``select={"TFC301"}``,
   what ``tfclip-migrate fix --select TFC301 FILE`` runs);
3. unchanged output is ``declined`` (counted by the rule's reason; "no TFC301 diagnostic" when
   the rule said nothing); a changed *outside* program is ``applied-outside`` (the rule must
   decline those); a changed inside program runs *after* (eager) and is compared:
   ``applied-equal`` or ``applied-different`` (or ``crash``: the after program raised). The
   output is migrated again: a second change is noted as ``not idempotent``.

Failures: ``applied-different``, ``crash``, ``applied-outside``, ``before-invalid``,
``engine-error``.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from typing import Any, Dict, Iterable, List, Optional

from tests.fuzz_eager.generator import Program, program
from tests.fuzz_eager.harness import Harness, compare

RULE = "TFC301"
FAILURES = ("applied-different", "crash", "applied-outside", "before-invalid", "engine-error")
UNRUNNABLE = ("estimator",)  # TF 2.21 has no tf.estimator: decline-only programs


def migrate(source: str) -> Any:
    from codemods.api import Options, migrate_source

    return migrate_source(source, Options(select=frozenset({RULE})), path="script.py")


def _normalise(message: str) -> str:
    message = re.sub(r"`[^`]*`", "`…`", message)
    message = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", message)
    return re.sub(r"\b\d+\b", "N", message).strip()


def check(prog: Program, harness: Harness, *, rtol: float = 0.0, notebook: bool = False) -> Dict[str, Any]:
    """The verdict of one program (never raises). ``notebook``: the program cut into notebook
    cells goes through ``fix`` as an ``.ipynb`` (:mod:`tests.fuzz_eager.notebooks`); *after* is
    the rewritten notebook's code cells, run in order."""
    out: Dict[str, Any] = {"seed": prog.seed, "index": prog.index, "inside": prog.inside,
                           "outside": prog.outside, "tags": sorted(prog.tags) + (["notebook"] if notebook else [])}
    before = harness.before(prog.source)
    if not before.get("ok"):
        if prog.outside in UNRUNNABLE:
            out["before"] = "unrunnable"
        else:
            out.update(verdict="before-invalid", detail=before.get("error", ""))
            return out
    try:
        if notebook:
            from tests.fuzz_eager import notebooks

            result = notebooks.migrate(notebooks.as_notebook(prog.source, prog.seed * 1_000_003 + prog.index), RULE)
            if not result.changed:
                result.code = prog.source
        else:
            result = migrate(prog.source)
    except Exception as exc:  # noqa: BLE001 - a verdict
        out.update(verdict="engine-error", detail=f"{type(exc).__name__}: {exc}")
        return out
    diags = [d for d in result.diagnostics if d.code == RULE]
    if not result.changed or result.code == prog.source:
        reasons = [d.message for d in diags if not d.applied]
        out.update(verdict="declined", reason=_normalise(reasons[0]) if reasons else "no TFC301 diagnostic",
                   detail="; ".join(reasons))
        return out
    out["code"] = result.code
    try:
        if notebook:
            out["idempotent"] = not notebooks.migrate(result.notebook, RULE).changed
        else:
            again = migrate(result.code)
            out["idempotent"] = not again.changed or again.code == result.code
    except Exception as exc:  # noqa: BLE001
        out["idempotent"] = False
        out["idempotence_error"] = f"{type(exc).__name__}: {exc}"
    if not prog.inside:
        out.update(verdict="applied-outside", detail=f"TFC301 rewrote a program with {prog.outside}")
        return out
    after = harness.after(result.code, before)
    if not after.get("ok"):
        out.update(verdict="crash", detail=after.get("error", ""))
        return out
    comparison = compare(before, after, rtol=rtol)
    out.update(verdict="applied-equal" if comparison.verdict == "equal" else "applied-different",
               detail=comparison.detail, bitwise=comparison.bitwise, max_abs_diff=comparison.max_abs_diff,
               printed_numbers=comparison.printed_numbers, variables=comparison.variables,
               only_after=comparison.only_after)
    return out


def run(seed: int, indices: Iterable[int], *, rtol: float = 0.0, progress: bool = False,
        notebook: bool = False) -> Dict[str, Any]:
    """Check programs ``indices`` of ``seed`` (as notebooks: ``notebook``); the results and their summary."""
    start = time.time()
    results: List[Dict[str, Any]] = []
    with Harness() as harness:
        for index in indices:
            res = check(program(seed, index), harness, rtol=rtol, notebook=notebook)
            results.append(res)
            if progress:
                print(f"  {seed}:{index} {res['verdict']} {res.get('reason', '')}", flush=True)
    return {"seed": seed, "results": results, "wall_s": time.time() - start, "summary": summarize(results)}


def summarize(results: List[Dict[str, Any]]) -> Dict[str, Any]:
    verdicts = Counter(r["verdict"] for r in results)
    declined_inside = Counter(r.get("reason") for r in results if r["verdict"] == "declined" and r["inside"])
    declined_outside = Counter(r["outside"] for r in results if r["verdict"] == "declined" and not r["inside"])
    return {
        "programs": len(results),
        "inside": sum(r["inside"] for r in results),
        "outside": sum(not r["inside"] for r in results),
        "verdicts": dict(verdicts),
        "applied": verdicts["applied-equal"] + verdicts["applied-different"] + verdicts["crash"],
        "bitwise": sum(bool(r.get("bitwise")) for r in results),
        "not_idempotent": sum(r.get("idempotent") is False for r in results),
        "declined_inside_by_reason": dict(declined_inside.most_common()),
        "declined_outside_by_construct": dict(declined_outside.most_common()),
        "failures": [f"{r['seed']}:{r['index']} {r['verdict']}: {str(r.get('detail', ''))[:300]}"
                     for r in results if r["verdict"] in FAILURES],
    }


def format_summary(report: Dict[str, Any]) -> str:
    s = report["summary"]
    v = s["verdicts"]
    rows = [
        ("programs generated", s["programs"]),
        ("  inside the class", s["inside"]),
        ("  just outside it", s["outside"]),
        ("applied (TFC301 rewrote)", s["applied"]),
        ("  applied-and-equal", v.get("applied-equal", 0)),
        ("    of which bit for bit", s["bitwise"]),
        ("  applied-and-DIFFERENT", v.get("applied-different", 0)),
        ("  crash (after raised)", v.get("crash", 0)),
        ("  not idempotent", s["not_idempotent"]),
        ("declined (left byte-identical)", v.get("declined", 0)),
        ("applied-outside (must decline)", v.get("applied-outside", 0)),
        ("before-invalid (generator bug)", v.get("before-invalid", 0)),
        ("engine-error", v.get("engine-error", 0)),
    ]
    width = max(len(k) for k, _ in rows)
    lines = [f"seed {report['seed']}: {s['programs']} programs in {report['wall_s']:.1f} s wall", ""]
    lines += [f"| {'verdict'.ljust(width)} | count |", f"|{'-' * (width + 2)}|------:|"]
    lines += [f"| {k.ljust(width)} | {c:5d} |" for k, c in rows]
    if s["declined_inside_by_reason"]:
        lines += ["", "declined inside the class, by reason:"]
        lines += [f"  {c:4d}  {reason}" for reason, c in s["declined_inside_by_reason"].items()]
    if s["declined_outside_by_construct"]:
        lines += ["", "declined outside the class, by construct:"]
        lines += [f"  {c:4d}  {k}" for k, c in s["declined_outside_by_construct"].items()]
    if s["failures"]:
        lines += ["", "FAILURES:"] + [f"  {f}" for f in s["failures"]]
        lines += ["", "reproduce one: python -m tests.fuzz_eager --seed S --index I --show"]
    return "\n".join(lines)


def show(seed: int, index: int, rtol: float = 0.0) -> str:
    prog = program(seed, index)
    with Harness() as harness:
        res = check(prog, harness, rtol=rtol)
    parts = [f"# seed {seed} index {index}: {res['verdict']} ({'inside' if prog.inside else prog.outside})",
             f"# tags: {', '.join(sorted(prog.tags))}", prog.source]
    if res.get("detail"):
        parts.append(f"# detail: {res['detail']}")
    if res.get("code"):
        parts += ["# --- after TFC301 ---", res["code"]]
    return "\n".join(parts)


def failures(report: Dict[str, Any]) -> List[Dict[str, Any]]:
    return [r for r in report["results"] if r["verdict"] in FAILURES]


def one(seed: int, index: int, rtol: float = 0.0) -> Optional[Dict[str, Any]]:
    with Harness() as harness:
        return check(program(seed, index), harness, rtol=rtol)
