"""What every benchmark section shares: settings, the measuring of one command, series of
samples, the machine header, tools, and number formatting.

Every contender runs in a fresh subprocess measured by ``_measure.py`` (wall, CPU of the
command and its children, peak RSS). Subprocesses get ``PYTHONPYCACHEPREFIX`` pointing into
``benchmarks/out/pycache`` (and may write bytecode there), so an editable checkout is timed
with compiled bytecode, as an installed package is, without writing ``__pycache__`` into the
tree; each section runs every contender once before timing it (compiles, warms the disk cache).
"""

from __future__ import annotations

import datetime
import importlib.metadata
import importlib.util
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
OUT_DIR = HERE / "out"
BIN = Path(sys.executable).parent
PY = sys.executable
SUBPROCESS_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
SUBPROCESS_ENV.update({"TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPYCACHEPREFIX": str(OUT_DIR / "pycache")})


@dataclass(frozen=True)
class Settings:
    """How much work each section does; ``quick`` is the smoke-test profile."""

    quick: bool
    tree_sample: Optional[int]  # None = every surviving file
    fixture_sample: Optional[int]  # None = every fixture
    corpus_sample: Optional[int]  # None = every surviving corpus file
    tree_rounds: int  # at most; rounds after the first stop once tree_budget_s is spent
    tree_budget_s: float
    ours_timeout_factor: Optional[float]  # kill our cold run after this x tf_upgrade_v2's wall time
    scale_files: Tuple[int, ...]
    scale_base: int  # distinct files replicated to build the scaling trees
    scale_rounds: int  # for trees up to 1,000 files (larger ones: one round)
    latency_rounds: int
    equivalence: bool  # fast path vs reference over the whole corpus / TF tree
    shim_steps: int
    shim_rounds: int
    shim_vars: int
    var_sizes: Tuple[int, ...]
    var_steps: int
    var_rounds: int


FULL = Settings(
    quick=False, tree_sample=None, fixture_sample=None, corpus_sample=None, tree_rounds=5, tree_budget_s=600.0,
    ours_timeout_factor=2.0, scale_files=(10, 100, 1000, 10000), scale_base=10, scale_rounds=3,
    latency_rounds=15, equivalence=True,
    shim_steps=10, shim_rounds=7, shim_vars=200, var_sizes=(10, 100, 1000), var_steps=5, var_rounds=5,
)
QUICK = Settings(
    quick=True, tree_sample=10, fixture_sample=4, corpus_sample=10, tree_rounds=1, tree_budget_s=0.0,
    ours_timeout_factor=None, scale_files=(10, 20), scale_base=5, scale_rounds=1,
    latency_rounds=2, equivalence=False,
    shim_steps=2, shim_rounds=2, shim_vars=20, var_sizes=(10, 20), var_steps=2, var_rounds=2,
)


@dataclass
class Sample:
    """One measured run of one contender."""

    wall: float
    cpu: float
    maxrss_mb: float
    rc: int
    timed_out: bool = False
    stdout: str = ""
    stderr: str = ""


@dataclass
class Series:
    """All runs of one contender; medians and minima over the rounds."""

    name: str
    samples: List[Sample] = field(default_factory=list)

    @property
    def wall(self) -> float:
        return statistics.median(s.wall for s in self.samples) if self.samples else float("nan")

    @property
    def wall_min(self) -> float:
        return min(s.wall for s in self.samples) if self.samples else float("nan")

    @property
    def cpu(self) -> float:
        return statistics.median(s.cpu for s in self.samples) if self.samples else float("nan")

    @property
    def cpu_min(self) -> float:
        return min(s.cpu for s in self.samples) if self.samples else float("nan")

    @property
    def timed_out(self) -> bool:
        """True when any run hit its time limit: the figures are then lower bounds."""
        return any(s.timed_out for s in self.samples)

    @property
    def maxrss_mb(self) -> float:
        return max(s.maxrss_mb for s in self.samples) if self.samples else float("nan")

    def as_json(self) -> Dict[str, Any]:
        return {
            "name": self.name, "wall": self.wall, "wall_min": self.wall_min, "cpu": self.cpu,
            "cpu_min": self.cpu_min, "maxrss_mb": self.maxrss_mb,
            "rcs": [s.rc for s in self.samples], "runs": len(self.samples), "timed_out": self.timed_out,
        }


def measure(cmd: Sequence[str], *, cwd: Optional[Path] = None, keep_output: bool = False,
            timeout: Optional[float] = None, env: Optional[Dict[str, str]] = None) -> Sample:
    """Run ``cmd`` under ``_measure.py`` in a fresh process and return its cost.

    With ``timeout`` the command is killed after that many seconds; the sample is then marked
    ``timed_out`` and its times are lower bounds. ``env`` is added to :data:`SUBPROCESS_ENV`.
    """
    with tempfile.TemporaryDirectory(prefix="tfc-measure-") as tmp:
        out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
        wrapper = [PY, str(HERE / "_measure.py"), "--stdout", str(out), "--stderr", str(err)]
        if cwd is not None:
            wrapper += ["--cwd", str(cwd)]
        if timeout is not None:
            wrapper += ["--timeout", str(timeout)]
        proc = subprocess.run(wrapper + ["--", *cmd], capture_output=True, text=True,
                              env={**SUBPROCESS_ENV, **(env or {})})
        if proc.returncode != 0 or not proc.stdout.strip():
            raise RuntimeError(f"measuring {cmd[:3]} failed: {proc.stderr.strip()[-500:]}")
        data = json.loads(proc.stdout.strip().splitlines()[-1])
        sample = Sample(wall=data["wall"], cpu=data["cpu"], maxrss_mb=data["maxrss_mb"], rc=data["rc"],
                        timed_out=data.get("timed_out", False))
        if keep_output or sample.rc not in (0, 1):
            sample.stdout = out.read_text(errors="replace")
            sample.stderr = err.read_text(errors="replace")
    return sample


def _version(*dists: str) -> str:
    for dist in dists:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "not installed"


def machine_info() -> Dict[str, Any]:
    """CPU model, cores, versions, date and load: the header of every report."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu,
        "cores": os.cpu_count() or 1,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "tensorflow": _version("tensorflow-cpu", "tensorflow"),
        "keras": _version("keras"),
        "libcst": _version("libcst"),
        "commit": commit or "unknown",
        "load_start": os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan"),
    }


def load_now() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def tool(name: str) -> Optional[str]:
    """The console script ``name`` next to this interpreter, else on PATH."""
    local = BIN / name
    return str(local) if local.exists() else shutil.which(name)


def cli_available() -> bool:
    """True when ``tfclip-migrate`` can run (its module exists, the console script is installed)."""
    return tool("tfclip-migrate") is not None and importlib.util.find_spec("codemods.cli") is not None


def fit_line(xs: Sequence[float], ys: Sequence[float]) -> Tuple[float, float, float]:
    """Least-squares ``y = a + b x``; returns ``(a, b, r2)``."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return my, 0.0, float("nan")
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    a = my - b * mx
    ss_tot = sum((y - my) ** 2 for y in ys)
    ss_res = sum((y - a - b * x) ** 2 for x, y in zip(xs, ys))
    return a, b, (1 - ss_res / ss_tot) if ss_tot else float("nan")


def loglog_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Slope of log(y) against log(x) between the first and last point (1.0 = linear)."""
    if len(xs) < 2 or min(ys) <= 0:
        return float("nan")
    return math.log(ys[-1] / ys[0]) / math.log(xs[-1] / xs[0])


def fmt(value: Optional[float], digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:,.{digits}f}"


def verdict(ok: Optional[bool]) -> str:
    return "n/a" if ok is None else ("met" if ok else "**missed**")


def ratio(a: float, b: float) -> float:
    return a / b if b and not math.isnan(a) and not math.isnan(b) else float("nan")
