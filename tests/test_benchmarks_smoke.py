"""Smoke test: ``benchmarks/run.py --quick`` runs end to end and prints its report tables.

Timings are figures, not assertions: nothing here checks a number against a goal.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(sys.platform == "win32", reason="the benchmarks use resource.getrusage (POSIX)")
def test_quick_benchmark_prints_and_writes_the_report(tmp_path: Path) -> None:
    """``run.py --quick`` exits 0, prints the machine header and every section's table, and writes results.md."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "run.py"), "--quick", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600, cwd=REPO, env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = proc.stdout
    assert "- Machine:" in report and "cores" in report and "TensorFlow" in report and "libcst" in report
    assert "| goal | measured" in report
    for heading in ("## 1. Tree migration", "## 2. One-file latency", "## 3. Shim overhead",
                    "### 4a. Scaling with the number of files", "### 4b. Scaling with the number of variables"):
        assert heading in report, heading
    # Every contender of the tree table actually ran (a row with a run count, not "not run").
    for row in ("plain read of every file", "--jobs 1 |", "tf_upgrade_v2 --intree/--outtree"):
        line = next(line for line in report.splitlines() if row in line and line.startswith("|"))
        assert "not run" not in line, line
    assert (tmp_path / "results.md").read_text(encoding="utf-8").strip() == report.strip()
    assert (tmp_path / "results.json").exists()


def test_unknown_section_is_a_usage_error() -> None:
    """``--only`` with an unknown section exits 2 and names the valid sections."""
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "run.py"), "--only", "nonsense"],
        capture_output=True, text=True, timeout=60, cwd=REPO,
    )
    assert proc.returncode == 2
    assert "tree, latency, shim, varscale" in proc.stderr
