"""The differential fuzzer's long mode and program viewer (issue 9's proof).

    python benchmarks/fuzz.py --programs 10000 --seed 7 --jobs 2   # figures -> benchmarks/out/fuzz.md
    python benchmarks/fuzz.py --seed 0 --index 17 --show           # one program, its rewrites, verdicts
    python benchmarks/fuzz.py --seed 0 --index 17 --minimize       # shrink a failing program
    python benchmarks/fuzz.py --checkpoint --programs 40           # checkpoint compatibility sample

Everything lives in ``tests/fuzz/`` (``cli.py``); see ``docs/fuzzing.md``.
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from tests.fuzz.cli import main  # noqa: E402 - after the path set-up

if __name__ == "__main__":
    sys.exit(main())
