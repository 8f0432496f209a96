"""Smoke test: ``benchmarks/run.py --quick`` runs end to end and prints its report tables.

Timings are figures, not assertions: nothing here checks a number against a goal.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(sys.platform == "win32", reason="the benchmarks use resource.getrusage (POSIX)")
def test_quick_benchmark_prints_and_writes_the_report(tmp_path: Path) -> None:
    """``run.py --quick`` exits 0, prints the machine header, the goals and every section's table, writes
    results.md and the README where told, and skips the corpus section gracefully when there is none."""
    env = {k: v for k, v in os.environ.items() if k != "TFCLIP_BENCH_CORPUS"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    readme = tmp_path / "README.md"
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "run.py"), "--quick", "--out", str(tmp_path),
         "--readme", str(readme)],
        capture_output=True, text=True, timeout=900, cwd=REPO, env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = proc.stdout
    assert "- Machine:" in report and "cores" in report and "load average" in report and "libcst" in report
    assert "| goal | measured" in report
    for heading in ("Tree migration: TensorFlow's own sources", "Tree migration: real TF1 training code (corpus)",
                    "One-file latency", "Scaling with the number of files", "Shim overhead per training step",
                    "Shim: scaling with the number of variables"):
        assert heading in report, heading
    assert "Not run: no corpus" in report
    for goal in ("Cold tree, TensorFlow's own sources: ≥10× faster than tf_upgrade_v2",
                 "Warm check, TensorFlow's own sources: ≤3× the I/O floor",
                 "Latency: check of a file with training sites ≤ 2×", "Latency: check of a file without candidates",
                 "Scaling: linear time", "Scaling: flat memory", "No change in output, TensorFlow's own sources"):
        row = next(line for line in report.splitlines() if line.startswith(f"| {goal}"))
        assert "n/a" not in row.split("|")[-2], row
    # Every contender of the tree table actually ran (a row with a run count, not "not run").
    for row in ("plain read of every file", "cold, --jobs 1 |", "warm cache", "tf_upgrade_v2 --intree/--outtree"):
        line = next(line for line in report.splitlines() if row in line and line.startswith("|"))
        assert "not run" not in line, line
    assert (tmp_path / "results.md").read_text(encoding="utf-8").strip() == report.strip()
    assert (tmp_path / "results.json").exists()
    assert readme.read_text(encoding="utf-8").startswith("# Benchmarks\n")


def test_unknown_section_is_a_usage_error() -> None:
    """``--only`` with an unknown section exits 2 and names the valid sections."""
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "run.py"), "--only", "nonsense"],
        capture_output=True, text=True, timeout=60, cwd=REPO,
    )
    assert proc.returncode == 2
    assert "tree, corpus, latency, scaling, equivalence, shim, varscale" in proc.stderr
