"""Subprocess side of ``test_soundness_classes.py``: run programs before and after the engine.

Reads ``[{"name", "source", "unsafe"}]`` as JSON on stdin, writes one verdict per program as JSON on
stdout: ``unchanged`` (with the diagnostics), ``equivalent``, or ``differs``/``crashes`` with the
error. Runs with ``TF_USE_LEGACY_KERAS=1`` (set by the caller before TensorFlow is imported) so
``tf.layers`` and ``tf.nn.rnn_cell`` exist, as they do for users running TF1 code on TF 2.21.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

from _equivalence import assert_equivalent, run_graph  # noqa: E402

from codemods.api import Options, migrate_source  # noqa: E402


def verdict(source: str, unsafe: bool) -> dict:
    result = migrate_source(source, Options(unsafe_fixes=unsafe))
    out = {"diagnostics": [f"{d.code} {d.message}" for d in result.diagnostics], "code": result.code}
    if not result.changed:
        out["verdict"] = "unchanged"
        return out
    before = run_graph(source, legacy=True, steps=3)
    try:
        after = run_graph(result.code, legacy=False, steps=3)
    except Exception as exc:  # noqa: BLE001 - the verdict names it
        out.update(verdict="crashes", error=f"{type(exc).__name__}: {exc}"[:2000])
        return out
    try:
        assert_equivalent(before, after)
    except AssertionError as exc:
        out.update(verdict="differs", error=str(exc)[:2000])
        return out
    out["verdict"] = "equivalent"
    return out


def main() -> None:
    cases = json.load(sys.stdin)
    results = {case["name"]: verdict(case["source"], case.get("unsafe", False)) for case in cases}
    sys.stdout.write("\n@@RESULTS@@\n" + json.dumps(results))


if __name__ == "__main__":
    main()
