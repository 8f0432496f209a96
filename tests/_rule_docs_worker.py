"""Subprocess side of ``test_rule_docs.py``: train each documented Example as TF1 ran it and its
"Use instead" as the migrated program runs, and compare (the fuzzer's world: the test-only
``tf.contrib`` reference on the legacy side, ``tf.layers`` stand-ins on both sides).

Reads ``[{"code", "kind", "example", "use_instead"}]`` as JSON on stdin; writes
``{code: {"same": bool, "detail": str}}`` after an ``@@RESULTS@@`` line.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.fuzz import oracle  # noqa: E402


def main() -> None:
    oracle.install_world()
    results = {}
    for case in json.load(sys.stdin):
        try:
            before = oracle.run(case["kind"], case["example"], legacy=True)
            after = oracle.run(case["kind"], case["use_instead"], legacy=False)
            same, detail = oracle.compare(before, after)
        except Exception as exc:  # noqa: BLE001 - reported to the test
            same, detail = False, f"{type(exc).__name__}: {exc}"[:1500]
        results[case["code"]] = {"same": same, "detail": detail}
    sys.stdout.write("\n@@RESULTS@@\n" + json.dumps(results))


if __name__ == "__main__":
    main()
