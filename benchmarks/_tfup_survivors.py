"""Find which files ``tf_upgrade_v2`` survives, by running its upgrader on each file in-process.

``tf_upgrade_v2 --intree`` aborts the whole tree on the first uncaught exception (a pasta
``AnnotationError`` on TensorFlow's own sources), so the tree benchmark times both tools on the
files it survives. This runs the same upgrader the command builds (``ast_edits.ASTCodeUpgrader``
with ``tf_upgrade_v2.TFAPIChangeSpec`` in its default mode) on each file's text, one import of
TensorFlow per worker instead of one per file.

Usage: ``python benchmarks/_tfup_survivors.py --jobs N LISTFILE OUTFILE``; LISTFILE holds one path
per line; OUTFILE receives ``{path: {"ok": bool, "parsed": bool, "error": str}}`` as JSON.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
from typing import Any, Dict, List, Tuple

_UPGRADER: Any = None


def _init_worker() -> None:
    """Silence the upgrader's console chatter and build it once per worker process."""
    global _UPGRADER
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    from tensorflow.tools.compatibility import ast_edits, tf_upgrade_v2

    # The same spec tf_upgrade_v2_main.main() builds with its default flags.
    spec = tf_upgrade_v2.TFAPIChangeSpec(import_rename=False, upgrade_compat_v1_import=True)
    _UPGRADER = ast_edits.ASTCodeUpgrader(spec)


def _check(path: str) -> Tuple[str, Dict[str, Any]]:
    """Upgrade one file's text; report whether the upgrader survived and whether it parsed it."""
    try:
        # process_opened_file reads with open(in_filename, "r") too: same decoding.
        with open(path, "r") as handle:
            text = handle.read()
        parsed, _, _, _ = _UPGRADER.update_string_pasta(text, path)
    except Exception as exc:  # noqa: BLE001 - any escaping exception aborts tf_upgrade_v2's tree run
        return path, {"ok": False, "parsed": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
    return path, {"ok": True, "parsed": bool(parsed), "error": ""}


def main(argv: List[str] | None = None) -> int:
    """Check every listed file with a pool of ``--jobs`` workers and write the JSON verdicts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("listfile")
    parser.add_argument("outfile")
    args = parser.parse_args(argv)
    with open(args.listfile, encoding="utf-8") as handle:
        paths = [line.rstrip("\n") for line in handle if line.strip()]
    results: Dict[str, Dict[str, Any]] = {}
    if paths:
        jobs = max(1, min(args.jobs, len(paths)))
        with multiprocessing.get_context("spawn").Pool(jobs, initializer=_init_worker) as pool:
            for path, verdict in pool.imap_unordered(_check, paths, chunksize=4):
                results[path] = verdict
    with open(args.outfile, "w", encoding="utf-8") as handle:
        json.dump(results, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
