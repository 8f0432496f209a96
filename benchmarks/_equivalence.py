"""The fast path changes no output: every file of a tree through the engine with the pre-pass and
without it (``prefilter=False``: every rule runs on every file CPython parses), compared byte for byte.

Usage: ``python benchmarks/_equivalence.py [--jobs N] [--check] TREE`` -- prints one JSON line:
``{"files": N, "compared": C, "by_design": B, "mismatches": [...], "seconds": S}``.

``by_design``: files the pre-pass never parses because no rule's candidate token occurs in them,
which the reference does parse -- and, being Python 2 or broken, reports as TFC900. The CLI
documents that such files are not reported (docs/cli.md, "Which files"); every other file must
give identical rewritten bytes and identical diagnostics.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_OPTIONS: Any = None


def _outcome(data: bytes, path: str, prefilter: bool) -> Tuple[str, Any]:
    from codemods.api import SourceError, migrate_bytes

    try:
        new, result = migrate_bytes(data, _OPTIONS, path=path, prefilter=prefilter)
    except SourceError as exc:
        return ("error", exc.reason)
    return ("ok", (new, [d.format() + f" applied={d.applied}" for d in result.diagnostics]))


def _one(path: str) -> Tuple[str, str, Optional[str]]:
    """``(path, verdict, detail)``: verdict ``same``, ``by-design`` or ``mismatch``."""
    from codemods.api import decode_source, may_contain_targets

    with open(path, "rb") as handle:
        data = handle.read()
    fast = _outcome(data, path, True)
    slow = _outcome(data, path, False)
    if fast == slow:
        return path, "same", None
    if slow[0] == "error" and fast == ("ok", (data, [])):
        try:
            candidate = may_contain_targets(decode_source(data)[0], _OPTIONS)
        except Exception:  # noqa: BLE001 - undecodable: the fast path reports it as the reference does
            candidate = True
        if not candidate:
            return path, "by-design", None
    return path, "mismatch", json.dumps({"fast": repr(fast)[:2000], "reference": repr(slow)[:2000]})


def _init(check: bool) -> None:
    global _OPTIONS
    from codemods.api import Options

    _OPTIONS = Options(apply_fixes=not check)


def main(argv: Optional[List[str]] = None) -> int:
    """Compare every ``.py`` file under the tree; print the JSON summary; exit 1 on a mismatch."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--check", action="store_true", help="check mode (no fixes applied) instead of fix")
    parser.add_argument("tree")
    args = parser.parse_args(argv)
    paths = sorted(os.path.join(d, n) for d, _, names in os.walk(args.tree) for n in names if n.endswith(".py"))
    start = time.perf_counter()
    if args.jobs > 1:
        with multiprocessing.Pool(args.jobs, initializer=_init, initargs=(args.check,)) as pool:
            results = pool.map(_one, paths, chunksize=8)
    else:
        _init(args.check)
        results = [_one(path) for path in paths]
    counts: Dict[str, int] = {"same": 0, "by-design": 0, "mismatch": 0}
    mismatches = []
    for path, verdict, detail in results:
        counts[verdict] += 1
        if detail is not None:
            mismatches.append({"path": os.path.relpath(path, args.tree), "detail": detail})
    print(json.dumps({"files": len(paths), "compared": counts["same"], "by_design": counts["by-design"],
                      "mismatches": mismatches, "seconds": time.perf_counter() - start}))
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
