"""Stand-in for ``tfclip-migrate fix TREE --jobs N`` built on the engine API only.

Used by ``run.py`` only while the CLI (``codemods.cli``) is not importable, so the harness can be
developed against the engine; rows measured with it are labelled "engine driver". It walks the
tree for ``.py`` files, runs :func:`codemods.api.migrate_bytes` on each (in ``--jobs`` worker
processes), writes changed files back and prints ``path:line:col: CODE message`` per finding.

Usage: ``python benchmarks/_engine_driver.py [--jobs N] TREE``
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
from typing import List, Tuple


def _one(path: str) -> Tuple[str, List[str], bool, str]:
    """Migrate one file in place; return its findings, whether it changed, and any error."""
    from codemods.api import Options, SourceError, migrate_bytes

    with open(path, "rb") as handle:
        data = handle.read()
    try:
        new, result = migrate_bytes(data, Options(), path=path)
    except SourceError as exc:
        return path, [], False, exc.reason
    if new != data:
        with open(path, "wb") as handle:
            handle.write(new)
    lines = [f"{d.path}:{d.line}:{d.col}: {d.code} {d.message}" for d in result.diagnostics]
    return path, lines, new != data, ""


def main(argv: List[str] | None = None) -> int:
    """Migrate every ``.py`` file of the tree; exit 1 when something changed or was found."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("tree")
    args = parser.parse_args(argv)
    paths = sorted(
        os.path.join(d, n) for d, _, names in os.walk(args.tree) for n in names if n.endswith(".py")
    )
    if args.jobs > 1:
        with multiprocessing.Pool(args.jobs) as pool:
            results = pool.map(_one, paths, chunksize=16)
    else:
        results = [_one(p) for p in paths]
    findings = changed = 0
    for path, lines, was_changed, error in results:
        for line in lines:
            print(line)
        findings += len(lines)
        changed += was_changed
        if error:
            print(f"{path}: skipped: {error}", file=sys.stderr)
    print(f"{len(paths)} files, {changed} rewritten, {findings} findings", file=sys.stderr)
    return 1 if findings or changed else 0


if __name__ == "__main__":
    sys.exit(main())
