"""Benchmarks for tfclip-compat: migration speed and shim overhead, as ratios against yardsticks.

Usage::

    python benchmarks/run.py            # full run (a few minutes on 2 cores)
    python benchmarks/run.py --quick    # smoke run (well under a minute once the cache exists)
    python benchmarks/run.py --only tree,latency   # a subset of: tree, latency, shim, varscale

Prints a markdown report (machine, date, goal summary, one table per measurement) and writes the
same text to ``benchmarks/out/results.md`` (raw numbers in ``results.json``). Every contender runs
in a fresh subprocess measured by ``_measure.py`` (wall, children's CPU time, peak RSS), and the
contenders of one measurement are interleaved round by round, so a busy machine slows all of them
alike; figures are medians (and minima) of the rounds, and the verdicts are ratios to the yardstick
measured in the same run. Nothing here asserts a timing.

Sections (see the README's Benchmarks section for what each row means):

1. ``tree``     -- ``tfclip-migrate fix`` on a copy of TensorFlow's own Python sources plus the
   project's ``fixtures/`` vs ``tf_upgrade_v2 --intree/--outtree`` on the files it survives, vs a
   plain read of every file (the I/O floor); plus time vs number of files (100 / 400 / all).
2. ``latency``  -- ``tfclip-migrate check FILE`` vs ``python -c "import libcst"``.
3. ``shim``     -- per-step cost of ``tfclip_compat.clip_gradients_by_norm`` vs hand-written
   ``tf.clip_by_global_norm`` vs no clipping: graph mode, ``tf.function``, ``MirroredStrategy``.
4. ``varscale`` -- shim step time vs number of variables (10 / 100 / 1,000), graph mode.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import importlib.metadata
import importlib.util
import json
import math
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
OUT_DIR = HERE / "out"
BIN = Path(sys.executable).parent
PY = sys.executable
TF_SOURCES_REL = Path("tensorflow") / "python"
FINDING_RE = re.compile(r":\d+:\d+: TFC\d{3}\b")
# The CLI's stderr summary: "N files scanned: ... (P parsed, ...)" and "findings: TFC001 x3 (3 fixed), ...".
SCANNED_RE = re.compile(r"(\d+) files? scanned")
PARSED_RE = re.compile(r"\((\d+) parsed")
SUMMARY_FINDINGS_RE = re.compile(r"TFC\d{3} x(\d+)")
SUBPROCESS_ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONDONTWRITEBYTECODE": "1"}


# --------------------------------------------------------------------------------------------
# Settings


@dataclass(frozen=True)
class Settings:
    """How much work each section does; ``quick`` is the smoke-test profile."""

    quick: bool
    tree_sample: Optional[int]  # None = every surviving file
    fixture_sample: Optional[int]  # None = every fixture
    tree_rounds: int  # at most; rounds after the first stop once tree_budget_s is spent
    tree_budget_s: float
    ours_timeout_factor: Optional[float]  # kill our tool after this × tf_upgrade_v2's wall time
    scale_files: Tuple[int, ...]
    latency_rounds: int
    shim_steps: int
    shim_rounds: int
    shim_vars: int
    var_sizes: Tuple[int, ...]
    var_steps: int
    var_rounds: int


FULL = Settings(
    quick=False, tree_sample=None, fixture_sample=None, tree_rounds=5, tree_budget_s=240.0,
    ours_timeout_factor=2.0,
    scale_files=(100, 400),
    latency_rounds=15, shim_steps=10, shim_rounds=7, shim_vars=200,
    var_sizes=(10, 100, 1000), var_steps=5, var_rounds=5,
)
QUICK = Settings(
    quick=True, tree_sample=10, fixture_sample=4, tree_rounds=1, tree_budget_s=0.0,
    ours_timeout_factor=None,
    scale_files=(4, 8), latency_rounds=2, shim_steps=2, shim_rounds=2, shim_vars=20,
    var_sizes=(10, 20), var_steps=2, var_rounds=2,
)


# --------------------------------------------------------------------------------------------
# Measuring


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
        return statistics.median(s.wall for s in self.samples)

    @property
    def wall_min(self) -> float:
        return min(s.wall for s in self.samples)

    @property
    def cpu(self) -> float:
        return statistics.median(s.cpu for s in self.samples)

    @property
    def cpu_min(self) -> float:
        return min(s.cpu for s in self.samples)

    @property
    def timed_out(self) -> bool:
        """True when any run hit its time limit: the figures are then lower bounds."""
        return any(s.timed_out for s in self.samples)

    @property
    def maxrss_mb(self) -> float:
        return max(s.maxrss_mb for s in self.samples)

    def as_json(self) -> Dict[str, Any]:
        return {
            "name": self.name, "wall": self.wall, "wall_min": self.wall_min, "cpu": self.cpu,
            "cpu_min": self.cpu_min, "maxrss_mb": self.maxrss_mb,
            "rcs": [s.rc for s in self.samples], "runs": len(self.samples), "timed_out": self.timed_out,
        }


def measure(cmd: Sequence[str], *, cwd: Optional[Path] = None, keep_output: bool = False,
            timeout: Optional[float] = None) -> Sample:
    """Run ``cmd`` under ``_measure.py`` in a fresh process and return its cost.

    With ``timeout`` the command is killed after that many seconds; the sample is then marked
    ``timed_out`` and its times are lower bounds.
    """
    with tempfile.TemporaryDirectory(prefix="tfc-measure-") as tmp:
        out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
        wrapper = [PY, str(HERE / "_measure.py"), "--stdout", str(out), "--stderr", str(err)]
        if cwd is not None:
            wrapper += ["--cwd", str(cwd)]
        if timeout is not None:
            wrapper += ["--timeout", str(timeout)]
        proc = subprocess.run(wrapper + ["--", *cmd], capture_output=True, text=True, env=SUBPROCESS_ENV)
        if proc.returncode != 0 or not proc.stdout.strip():
            raise RuntimeError(f"measuring {cmd[:3]} failed: {proc.stderr.strip()[-500:]}")
        data = json.loads(proc.stdout.strip().splitlines()[-1])
        sample = Sample(wall=data["wall"], cpu=data["cpu"], maxrss_mb=data["maxrss_mb"], rc=data["rc"],
                        timed_out=data.get("timed_out", False))
        if keep_output or sample.rc not in (0, 1):
            sample.stdout = out.read_text(errors="replace")
            sample.stderr = err.read_text(errors="replace")
    return sample


# --------------------------------------------------------------------------------------------
# Machine and tools


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


def tool(name: str) -> Optional[str]:
    """The console script ``name`` next to this interpreter, else on PATH."""
    local = BIN / name
    return str(local) if local.exists() else shutil.which(name)


def cli_available() -> bool:
    """True when ``tfclip-migrate`` can run (its module exists, the console script is installed)."""
    return tool("tfclip-migrate") is not None and importlib.util.find_spec("codemods.cli") is not None


def fix_command(tree: Path, jobs: int) -> Tuple[List[str], str]:
    """The command that migrates ``tree`` in place with ``jobs`` workers, and its label."""
    if cli_available():
        return [str(tool("tfclip-migrate")), "fix", str(tree), "--jobs", str(jobs)], "tfclip-migrate fix"
    return [PY, str(HERE / "_engine_driver.py"), "--jobs", str(jobs), str(tree)], \
        "engine driver (CLI not landed)"


# --------------------------------------------------------------------------------------------
# Inputs: TensorFlow's sources + fixtures, and which of them tf_upgrade_v2 survives


def tf_sources() -> Path:
    """The installed ``tensorflow/python`` directory (found without importing TensorFlow)."""
    spec = importlib.util.find_spec("tensorflow")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("benchmarks: TensorFlow is not installed; run pip install -e \".[dev]\" first")
    return Path(list(spec.submodule_search_locations)[0]) / "python"


def collect_inputs() -> List[Tuple[Path, Path]]:
    """``(source file, path inside the benchmark tree)`` for every input ``.py`` file, sorted."""
    pairs: List[Tuple[Path, Path]] = []
    tf_root = tf_sources()
    for path in sorted(tf_root.rglob("*.py")):
        if path.is_file() and not path.is_symlink():
            pairs.append((path, Path("tensorflow_python") / path.relative_to(tf_root)))
    fixtures = REPO / "fixtures"
    if fixtures.is_dir():
        for path in sorted(fixtures.rglob("*.py")):
            if path.is_file() and not path.is_symlink():
                pairs.append((path, Path("fixtures") / path.relative_to(fixtures)))
    return pairs


def survivors(pairs: List[Tuple[Path, Path]], info: Dict[str, Any], log: Callable[[str], None]
              ) -> Tuple[List[Tuple[Path, Path]], Dict[str, Any]]:
    """Split the inputs by whether ``tf_upgrade_v2`` survives each file (cached per TF version)."""
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    cache_file = OUT_DIR / f"tf_upgrade_v2_survivors-tf{info['tensorflow']}.json"
    cache: Dict[str, Any] = {}
    if cache_file.exists():
        try:
            cache = json.loads(cache_file.read_text())
        except ValueError:
            cache = {}
    digests = {src: hashlib.sha1(src.read_bytes()).hexdigest() for src, _ in pairs}
    missing = [src for src, _ in pairs if digests[src] not in cache]
    if missing:
        log(f"  checking {len(missing)} file(s) with tf_upgrade_v2's upgrader (cached afterwards)...")
        with tempfile.TemporaryDirectory(prefix="tfc-surv-") as tmp:
            listfile, outfile = Path(tmp) / "list", Path(tmp) / "out.json"
            listfile.write_text("".join(f"{p}\n" for p in missing), encoding="utf-8")
            subprocess.run([PY, str(HERE / "_tfup_survivors.py"), "--jobs", str(info["cores"]),
                            str(listfile), str(outfile)], check=True, env=SUBPROCESS_ENV)
            verdicts = json.loads(outfile.read_text())
        for src in missing:
            cache[digests[src]] = verdicts[str(src)]
        cache_file.write_text(json.dumps(cache))
    kept = [pair for pair in pairs if cache[digests[pair[0]]]["ok"]]
    crashed = [(str(rel), cache[digests[src]]["error"]) for src, rel in pairs
               if not cache[digests[src]]["ok"]]
    unparsed = sum(1 for src, _ in pairs if cache[digests[src]]["ok"] and not cache[digests[src]]["parsed"])
    return kept, {"crashed": crashed, "unparsed_by_tfup": unparsed, "cache": str(cache_file)}


def _spread(items: List[Any], n: Optional[int]) -> List[Any]:
    """``n`` items evenly spread over ``items`` (all of them when ``n`` is None or large)."""
    if n is None or n >= len(items):
        return list(items)
    return [items[(i * len(items)) // n] for i in range(n)]


def build_tree(pairs: List[Tuple[Path, Path]], root: Path) -> Dict[str, int]:
    """Copy the given files into ``root``; return file, line and byte counts."""
    lines = size = 0
    for src, rel in pairs:
        dest = root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        data = src.read_bytes()
        dest.write_bytes(data)
        size += len(data)
        lines += data.count(b"\n")
    return {"files": len(pairs), "lines": lines, "bytes": size}


def rewritten_files(original: Path, migrated: Path) -> int:
    """How many ``.py`` files differ between the two trees (the proof the run did something)."""
    count = 0
    for path in original.rglob("*.py"):
        other = migrated / path.relative_to(original)
        if not other.exists() or other.read_bytes() != path.read_bytes():
            count += 1
    return count


def prefilter_candidates(root: Path) -> int:
    """Files in ``root`` that pass the engine's text pre-filter, i.e. that the engine parses."""
    from codemods.api import decode_source, may_contain_targets

    count = 0
    for path in root.rglob("*.py"):
        try:
            text = decode_source(path.read_bytes(), path=str(path))[0]
        except Exception:  # noqa: BLE001 - undecodable files are skipped by the engine too
            continue
        count += may_contain_targets(text)
    return count


# --------------------------------------------------------------------------------------------
# Sections


def section_tree(settings: Settings, info: Dict[str, Any], work: Path,
                 log: Callable[[str], None]) -> Dict[str, Any]:
    """Tree migration: ours (1 job, all cores) vs tf_upgrade_v2 vs the I/O floor, and scaling."""
    tfup = tool("tf_upgrade_v2")
    pairs = collect_inputs()
    total_inputs = len(pairs)
    if settings.tree_sample is not None or settings.fixture_sample is not None:
        # Quick: evenly spread samples of TensorFlow's files and of the fixtures.
        # Small files only: the smoke run must stay fast whatever the engine's speed.
        small = [p for p in pairs if p[0].stat().st_size <= 8000]
        tf_pairs = [p for p in small if p[1].parts[0] == "tensorflow_python"]
        fixture_pairs = [p for p in small if p[1].parts[0] == "fixtures"]
        pairs = _spread(tf_pairs, settings.tree_sample) + _spread(fixture_pairs, settings.fixture_sample)
    kept, surv = survivors(pairs, info, log)
    log(f"  {len(kept)} of {len(pairs)} files survive tf_upgrade_v2 ({len(surv['crashed'])} crash it)")
    src = work / "src"
    counts = build_tree(kept, src)
    candidates = prefilter_candidates(src)

    # Scaling subsets: a seeded shuffle, so each subset looks like the whole.
    order = list(kept)
    random.Random(0).shuffle(order)
    subsets: Dict[int, Tuple[Path, Dict[str, int]]] = {}
    for n in settings.scale_files:
        if n < len(order):
            subsets[n] = (work / f"src{n}", build_tree(order[:n], work / f"src{n}"))
            subsets[n][1]["candidates"] = prefilter_candidates(work / f"src{n}")
    counts["candidates"] = candidates

    cores = info["cores"]
    fix1, label = fix_command(Path("TREE"), 1)
    contenders: Dict[str, Series] = {
        "floor": Series("plain read of every file (I/O floor)"),
        "ours1": Series(f"{label} --jobs 1"),
        f"ours{cores}": Series(f"{label} --jobs {cores}"),
        "tfup": Series("tf_upgrade_v2 --intree/--outtree"),
    }
    scale: Dict[int, Series] = {n: Series(f"{label} --jobs 1, {n} files") for n in subsets}
    findings: Dict[str, List[int]] = {}
    rewritten: Dict[str, List[int]] = {}
    parsed_counts: Dict[str, List[int]] = {}
    errors: List[str] = []

    def run_ours(key: str, tree_src: Path, jobs: int, series: Series) -> None:
        dest = work / "fix"
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(tree_src, dest)
        cmd, _ = fix_command(dest, jobs)
        limit = None
        if settings.ours_timeout_factor and contenders["tfup"].samples:
            # Slower than this multiple of the yardstick already decides the goal; stop there.
            limit = max(30.0, settings.ours_timeout_factor * contenders["tfup"].wall)
        sample = measure(cmd, keep_output=True, timeout=limit)
        series.samples.append(sample)
        if sample.timed_out:
            errors.append(f"{series.name} on {tree_src.name}: killed after {sample.wall:.0f} s "
                          f"({settings.ours_timeout_factor}× tf_upgrade_v2's time)")
        elif sample.rc not in (0, 1):
            errors.append(f"{series.name}: exit {sample.rc}: {sample.stderr.strip()[-300:]}")
        left = len(FINDING_RE.findall(sample.stdout))
        summary = [int(n) for n in SUMMARY_FINDINGS_RE.findall(sample.stderr)]
        # Findings in all (fixed + left) from the CLI's summary; stdout lists only those left.
        findings.setdefault(key, []).append(sum(summary) if summary else left)
        rewritten.setdefault(key, []).append(rewritten_files(tree_src, dest))
        scanned = SCANNED_RE.search(sample.stderr)
        parsed = PARSED_RE.search(sample.stderr)
        if scanned:
            expected = sum(1 for _ in tree_src.rglob("*.py"))
            if int(scanned.group(1)) != expected:
                errors.append(f"{series.name}: scanned {scanned.group(1)} of {expected} files")
        if parsed:
            parsed_counts.setdefault(key, []).append(int(parsed.group(1)))
        sample.stdout = sample.stderr = ""  # keep memory small; counts are recorded above
        shutil.rmtree(dest, ignore_errors=True)

    def run_tfup() -> None:
        if tfup is None:
            return
        dest = work / "tfup_out"
        shutil.rmtree(dest, ignore_errors=True)
        sample = measure([tfup, "--intree", str(src), "--outtree", str(dest)], cwd=work)
        contenders["tfup"].samples.append(sample)
        if sample.rc != 0:
            errors.append(f"tf_upgrade_v2: exit {sample.rc}: {sample.stderr.strip()[-300:]}")
        done = sum(1 for _ in dest.rglob("*.py")) if dest.exists() else 0
        if done != counts["files"]:
            errors.append(f"tf_upgrade_v2 wrote {done} of {counts['files']} files")
        rewritten.setdefault("tfup", []).append(rewritten_files(src, dest) if dest.exists() else 0)
        shutil.rmtree(dest, ignore_errors=True)

    # tf_upgrade_v2 is the slow yardstick (minutes on the whole tree): it runs once, in the first
    # round; the others run every round, in rotating order. Rounds after the first start only
    # while the section's time budget lasts, so a slow engine cannot make the run endless.
    section_start = time.perf_counter()
    for round_index in range(settings.tree_rounds):
        spent = time.perf_counter() - section_start
        if round_index and spent > settings.tree_budget_s:
            log(f"  tree: budget of {settings.tree_budget_s:.0f} s spent after {round_index} round(s)")
            break
        log(f"  tree round {round_index + 1}/{settings.tree_rounds} ({spent:.0f} s so far)")
        jobs_list: List[Callable[[], None]] = [
            lambda: contenders["floor"].samples.append(
                measure([PY, str(HERE / "_io_floor.py"), str(src)])),
            lambda: run_ours("ours1", src, 1, contenders["ours1"]),
            lambda: run_ours(f"ours{cores}", src, cores, contenders[f"ours{cores}"]),
        ]
        for n, (tree_n, _) in subsets.items():
            jobs_list.append(lambda n=n, tree_n=tree_n: run_ours(f"scale{n}", tree_n, 1, scale[n]))
        if round_index == 0:
            jobs_list.insert(0, run_tfup)  # first: its time sets our tool's time limit
        shift = round_index % len(jobs_list)
        for job in jobs_list[shift:] + jobs_list[:shift]:
            job()

    scale_points = [(c, scale[n]) for n, (_, c) in subsets.items()]
    scale_points.append((counts, contenders["ours1"]))
    return {
        "label": label, "inputs": total_inputs, "sampled": len(pairs), "counts": counts,
        "candidates": candidates, "survivors": surv, "tfup_available": tfup is not None,
        "contenders": {k: s.as_json() for k, s in contenders.items() if s.samples},
        "series": contenders, "findings": findings, "rewritten": rewritten, "errors": errors,
        "parsed": parsed_counts,
        "scale": scale_points,
    }


def section_latency(settings: Settings, work: Path, log: Callable[[str], None]) -> Dict[str, Any]:
    """One-file latency: ``tfclip-migrate check FILE`` vs ``python -c "import libcst"``."""
    sample_file = work / "legacy_train.py"
    shutil.copyfile(HERE / "data" / "legacy_train.py.txt", sample_file)
    contenders: Dict[str, Tuple[Series, List[str]]] = {
        "python": (Series('python -c "pass"'), [PY, "-c", "pass"]),
        "libcst": (Series('python -c "import libcst"'), [PY, "-c", "import libcst"]),
    }
    available = cli_available()
    if available:
        contenders["check"] = (Series("tfclip-migrate check FILE"),
                               [str(tool("tfclip-migrate")), "check", str(sample_file)])
    findings: List[int] = []
    rcs: List[int] = []
    names = list(contenders)
    for round_index in range(settings.latency_rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            series, cmd = contenders[name]
            sample = measure(cmd, keep_output=name == "check")
            series.samples.append(sample)
            if name == "check":
                findings.append(len(FINDING_RE.findall(sample.stdout)))
                rcs.append(sample.rc)
                sample.stdout = ""
    log(f"  latency: {settings.latency_rounds} rounds")
    return {
        "cli_available": available,
        "lines": sample_file.read_bytes().count(b"\n"),
        "series": {k: v[0] for k, v in contenders.items()},
        "contenders": {k: v[0].as_json() for k, v in contenders.items()},
        "findings": findings, "rcs": rcs,
    }


def shim_bench(modes: str, vars_: str, steps: int, rounds: int) -> Dict[str, Any]:
    """Run ``_shim_bench.py`` in a fresh process and return its parsed results."""
    cmd = [PY, str(HERE / "_shim_bench.py"), modes, "--vars", vars_, "--steps", str(steps),
           "--rounds", str(rounds), "--warmup", "3"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=SUBPROCESS_ENV, timeout=900)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"error": f"exit {proc.returncode}: {proc.stderr.strip()[-600:]}"}
    return json.loads(lines[-1])


def section_shim(settings: Settings, log: Callable[[str], None]) -> Dict[str, Any]:
    """Shim overhead per training step: graph mode, tf.function, MirroredStrategy."""
    results: List[Dict[str, Any]] = []
    errors: List[str] = []
    # Full: one process per mode (TensorFlow start-up and the device split stay separate).
    # Quick: one process for everything, the variable-scaling sizes included (see main()).
    groups = ["graph,function,mirrored"] if settings.quick else ["graph", "function", "mirrored"]
    sizes = sorted({settings.shim_vars, *settings.var_sizes}) if settings.quick else [settings.shim_vars]
    for group in groups:
        log(f"  shim: {group}")
        data = shim_bench(group, ",".join(map(str, sizes)), settings.shim_steps, settings.shim_rounds)
        if "error" in data:
            errors.append(f"{group}: {data['error']}")
        results.extend(data.get("results", []))
    return {"results": results, "errors": errors}


def section_varscale(settings: Settings, log: Callable[[str], None]) -> Dict[str, Any]:
    """Step time vs number of variables, graph mode, unclipped vs hand-written vs shim."""
    log(f"  varscale: {settings.var_sizes}")
    data = shim_bench("graph", ",".join(map(str, settings.var_sizes)), settings.var_steps,
                      settings.var_rounds)
    return {"results": data.get("results", []), "errors": [data["error"]] if "error" in data else []}


# --------------------------------------------------------------------------------------------
# Report


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


def fmt(value: float, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:,.{digits}f}"


def verdict(ok: Optional[bool]) -> str:
    return "n/a" if ok is None else ("met" if ok else "**missed**")


def render(info: Dict[str, Any], settings: Settings, sections: Dict[str, Any]) -> str:
    """The markdown report: header, goal summary, then one table per section."""
    out: List[str] = []
    mode = "quick (smoke: small samples, few rounds; not for publication)" if settings.quick else "full"
    out.append("# tfclip-compat benchmarks")
    out.append("")
    out.append(f"- Date: {info['date']}; mode: {mode}; commit {info['commit']}")
    out.append(f"- Machine: {info['cpu']}, {info['cores']} cores, {info['os']}; "
               f"load average {fmt(info['load_start'])} at start, {fmt(info.get('load_end', float('nan')))} at end")
    out.append(f"- Python {info['python']}, TensorFlow {info['tensorflow']}, Keras {info['keras']}, "
               f"libcst {info['libcst']}")
    out.append(f"- Wall time for the whole run: {fmt(info.get('elapsed', float('nan')), 0)} s")
    out.append("")
    goals: List[Tuple[str, str, str]] = []
    body: List[str] = []

    tree = sections.get("tree")
    if tree:
        series: Dict[str, Series] = tree["series"]
        cores = info["cores"]
        c = tree["counts"]
        floor, ours1, oursn, tfup = (series["floor"], series["ours1"], series[f"ours{cores}"], series["tfup"])
        body.append("## 1. Tree migration")
        body.append("")
        surv = tree["survivors"]
        crashed = surv["crashed"]
        body.append(f"Input: {c['files']:,} files / {c['lines']:,} lines ({c['bytes'] / 1e6:.1f} MB) — "
                    f"TensorFlow {info['tensorflow']}'s `tensorflow/python` plus the project's `fixtures/`"
                    + (f" (quick: a sample of {tree['sampled']} small files of {tree['inputs']})" if settings.quick else "")
                    + f". `tf_upgrade_v2` crashes on {len(crashed)} of the {tree['sampled']:,} input files "
                    f"(any one of them aborts its whole `--intree` run), so both tools are timed on the "
                    f"{c['files']:,} files it survives; it fails to parse {surv['unparsed_by_tfup']} of those "
                    f"(and writes them out empty). {tree['candidates']:,} of the files pass our text "
                    f"pre-filter and are parsed by libcst; the rest are read and skipped.")
        if crashed:
            body.append("")
            body.append("Crashes: " + "; ".join(f"`{p}` ({e.split(':')[0]})" for p, e in crashed[:8])
                        + (" ..." if len(crashed) > 8 else ""))
        body.append("")
        body.append("| contender | runs | wall s (median) | wall s (min) | CPU s (median) | files/s | lines/s "
                    "| peak RSS MB | files rewritten | findings (fixed + left) |")
        body.append("|---|---|---|---|---|---|---|---|---|---|")
        rw, fd = tree["rewritten"], tree["findings"]
        for key, s in (("floor", floor), ("ours1", ours1), (f"ours{cores}", oursn), ("tfup", tfup)):
            if not s.samples:
                body.append(f"| {s.name} | 0 | not run | | | | | | | |")
                continue
            rewrote = "—" if key == "floor" else str(statistics.median(rw.get(key, [0])))
            found = str(statistics.median(fd[key])) if key in fd else "—"
            gt, lt = (">", "<") if s.timed_out else ("", "")
            if s.timed_out:
                rewrote = found = "killed (time limit)"
            body.append(f"| {s.name} | {len(s.samples)} | {gt}{fmt(s.wall)} | {gt}{fmt(s.wall_min)} | "
                        f"{gt}{fmt(s.cpu)} | {lt}{fmt(c['files'] / s.wall, 0)} | {lt}{fmt(c['lines'] / s.wall, 0)} | "
                        f"{gt}{fmt(s.maxrss_mb, 0)} | {rewrote} | {found} |")
        body.append("")
        body.append("Peak RSS is the largest single process (with `--jobs N`, each worker peaks separately). "
                    "CPU is user+system of the command and every process it waited for.")
        if tfup.samples and ours1.samples:
            speed_wall = tfup.wall / ours1.wall
            speed_cpu = tfup.cpu / ours1.cpu
            speed_n = tfup.wall / oursn.wall if oursn.samples else float("nan")
            mem = ours1.maxrss_mb / tfup.maxrss_mb
            memn = oursn.maxrss_mb / tfup.maxrss_mb if oursn.samples else float("nan")
            lt1 = "<" if ours1.timed_out else ""
            ltn = "<" if oursn.timed_out else ""
            goals.append(("Tree: ≥10× faster than tf_upgrade_v2",
                          f"{lt1}{fmt(speed_wall, 2)}× wall, {lt1}{fmt(speed_cpu, 2)}× CPU (1 job); "
                          f"{ltn}{fmt(speed_n, 2)}× wall ({cores} jobs)"
                          + (" — ours killed at the time limit, so these are upper bounds"
                             if ours1.timed_out or oursn.timed_out else ""),
                          verdict(min(speed_wall, speed_cpu) >= 10 and not ours1.timed_out)))
            goals.append(("Tree: peak memory ≤ ½ of tf_upgrade_v2",
                          f"{'>' if ours1.timed_out else ''}{fmt(mem, 2)}× (1 job), "
                          f"{'>' if oursn.timed_out else ''}{fmt(memn, 2)}× per process ({cores} jobs)",
                          verdict(max(mem, memn if not math.isnan(memn) else 0) <= 0.5)))
        elif not tree["tfup_available"]:
            goals.append(("Tree: ≥10× faster than tf_upgrade_v2", "tf_upgrade_v2 not installed", "n/a"))
        if floor.samples and ours1.samples:
            over_floor = ours1.wall / floor.wall
            over_floor_cpu = ours1.cpu / floor.cpu
            best = min(ours1.wall, oursn.wall) if oursn.samples else ours1.wall
            gt1 = ">" if ours1.timed_out else ""
            goals.append(("Tree: within 3× of the I/O floor",
                          f"{gt1}{fmt(over_floor, 2)}× wall, {gt1}{fmt(over_floor_cpu, 2)}× CPU (1 job); "
                          f"{fmt(best / floor.wall, 2)}× wall (best of 1 / {cores} jobs)",
                          verdict(best / floor.wall <= 3)))
            last_findings = fd.get("ours1", [0])[-1]
            last_rewritten = rw.get("ours1", [0])[-1]
            parsed_by_cli = tree["parsed"].get("ours1", [tree["candidates"]])[-1]
            goals.append(("Tree: our run did real work (not a no-op)",
                          f"{parsed_by_cli:,} files parsed (CLI summary), {last_rewritten} rewritten, "
                          f"{last_findings} findings reported", verdict(tree['candidates'] > 0
                                                                       and (last_findings + last_rewritten) > 0)))
        if tree["errors"]:
            body.append("")
            body.append("Errors: " + " / ".join(f"`{e}`" for e in tree["errors"][:5]))
        # Scaling with the number of files
        pts = sorted(tree["scale"], key=lambda p: p[0]["files"])
        if len(pts) >= 2:
            body.append("")
            body.append(f"### 4a. Scaling with the number of files ({tree['label']} --jobs 1, "
                        f"seeded random subsets of the same files)")
            body.append("")
            body.append("| files | lines | parsed files (pass the pre-filter) | runs | wall s (median) "
                        "| CPU s (median) | CPU ms/file |")
            body.append("|---|---|---|---|---|---|---|")
            for cnt, s in pts:
                gt = "> " if s.timed_out else ""
                body.append(f"| {cnt['files']:,} | {cnt['lines']:,} | {cnt['candidates']:,} | {len(s.samples)} | "
                            f"{gt}{fmt(s.wall)} | {gt}{fmt(s.cpu)} | {gt}{fmt(1e3 * s.cpu / cnt['files'])} |")
            # Killed runs are lower bounds, not points: the fit uses completed runs only.
            pts = [p for p in pts if p[1].samples and not p[1].timed_out]
        if len(pts) >= 2:
            xs = [float(p[0]["files"]) for p in pts]
            ys = [p[1].cpu for p in pts]
            a, b, r2 = fit_line(xs, ys)
            marg = [(ys[i + 1] - ys[i]) / (xs[i + 1] - xs[i]) * 1e3 for i in range(len(xs) - 1)]
            body.append("")
            body.append(f"Least-squares fit of CPU time vs files: {fmt(a, 2)} s fixed + {fmt(b * 1e3, 1)} ms/file, "
                        f"R² = {fmt(r2, 3)}; marginal cost between successive points: "
                        + ", ".join(f"{fmt(m, 1)} ms/file" for m in marg)
                        + ". Similar marginal costs and R² ≈ 1 mean time grows linearly with the tree; "
                        "the cost is driven by the files that pass the pre-filter (they are parsed), so "
                        "subsets with a different share of them deviate from the line.")
            if len(xs) == 2:
                body.append("Only two completed points: a line always fits two, so this says nothing "
                            "about linearity.")
            goals.append(("Scaling in files: linear", f"R² {fmt(r2, 3)} over {len(xs)} points; {fmt(b * 1e3, 1)} ms/file + "
                          f"{fmt(a, 2)} s fixed", "see 4a"))
        body.append("")

    lat = sections.get("latency")
    if lat:
        s = lat["series"]
        body.append("## 2. One-file latency (the pre-commit case)")
        body.append("")
        body.append(f"`tfclip-migrate check` on a {lat['lines']}-line TF1 training script "
                    "(`benchmarks/data/legacy_train.py.txt`), each command a fresh process.")
        body.append("")
        body.append("| command | runs | wall ms (median) | wall ms (min) | CPU ms (median) | peak RSS MB |")
        body.append("|---|---|---|---|---|---|")
        for series in s.values():
            body.append(f"| {series.name} | {len(series.samples)} | {fmt(1e3 * series.wall, 0)} | "
                        f"{fmt(1e3 * series.wall_min, 0)} | {fmt(1e3 * series.cpu, 0)} | {fmt(series.maxrss_mb, 0)} |")
        if "check" in s:
            ratio = s["check"].wall / s["libcst"].wall
            ratio_cpu = s["check"].cpu / s["libcst"].cpu
            body.append("")
            body.append(f"`check` reported {statistics.median(lat['findings'])} findings (exit codes "
                        f"{sorted(set(lat['rcs']))}).")
            goals.append(("Latency: check ≤ 2× `import libcst`",
                          f"{fmt(ratio, 2)}× wall, {fmt(ratio_cpu, 2)}× CPU", verdict(ratio <= 2)))
        else:
            goals.append(("Latency: check ≤ 2× `import libcst`", "CLI not landed yet", "n/a"))
        body.append("")

    shim = sections.get("shim")
    if shim:
        body.append("## 3. Shim overhead per training step (CPU)")
        body.append("")
        body.append("Model: a stack of tanh dense layers (kernel + bias per layer), constant batch; SGD "
                    "(`GradientDescentOptimizer` in graph mode, Keras `SGD` otherwise, learning rate 0.1), clip norm "
                    "1e-3, below the gradient norm, so clipping is active on every step. "
                    "`none` = unclipped step, `hand` = hand-written `tf.clip_by_global_norm`, `shim` = "
                    "`tfclip_compat.clip_gradients_by_norm`. Contenders interleaved in one process per mode.")
        body.append("")
        body.append("| mode | variables | width × batch | contender | ms/step wall (median) | ms/step wall (min) "
                    "| ms/step CPU (median) | × unclipped (CPU) | × hand-written (CPU) | largest variable change |")
        body.append("|---|---|---|---|---|---|---|---|---|---|")
        for res in shim["results"]:
            _shim_rows(body, res)
            con = res["contenders"]
            if "cpu_ms" in con.get("shim", {}) and "cpu_ms" in con.get("none", {}):
                over = con["shim"]["cpu_ms"] / con["none"]["cpu_ms"]
                hand_over = con["hand"]["cpu_ms"] / con["none"]["cpu_ms"] if "cpu_ms" in con.get("hand", {}) else float("nan")
                vs_hand = con["shim"]["cpu_ms"] / con["hand"]["cpu_ms"] if "cpu_ms" in con.get("hand", {}) else float("nan")
                name = {"graph": "graph (v1 Session)", "function": "tf.function",
                        "mirrored": f"MirroredStrategy ×{res['replicas']}"}[res["mode"]]
                goals.append((f"Shim {name}: clipped ≤ 1.05× unclipped",
                              f"{fmt(over, 3)}× (hand-written: {fmt(hand_over, 3)}×)", verdict(over <= 1.05)))
                goals.append((f"Shim {name}: no slower than hand-written",
                              f"{fmt(vs_hand, 3)}×", verdict(vs_hand <= 1.0 + 0.03)))
            elif "error" in con.get("shim", {}):
                goals.append((f"Shim {res['mode']}", f"shim unavailable: {con['shim']['error'][:80]}", "n/a"))
        diffs = [(r["mode"], r["contenders"]["shim_vs_hand_max_abs_diff"]) for r in shim["results"]
                 if "shim_vs_hand_max_abs_diff" in r["contenders"]]
        if diffs:
            body.append("")
            body.append("Sanity (same initial values, same number of steps): largest |shim − hand-written| "
                        "variable difference after the run: "
                        + ", ".join(f"{m} {d:.1e}" for m, d in diffs)
                        + " (expected ≈ 0 on one device; under MirroredStrategy hand-written clips each "
                        "replica's half, the shim the aggregated gradient, so they differ by design).")
        for err in shim["errors"]:
            body.append("")
            body.append(f"Error: `{err[-400:]}`")
        body.append("")
        body.append("\"No slower than hand-written\" is judged with a 3% allowance for noise (the rounds "
                    "spread about that much on a shared machine); the × columns are medians of CPU time.")
        body.append("")

    vs = sections.get("varscale")
    if vs:
        body.append("### 4b. Scaling with the number of variables (graph mode)")
        body.append("")
        body.append("| mode | variables | width × batch | contender | ms/step wall (median) | ms/step wall (min) "
                    "| ms/step CPU (median) | × unclipped (CPU) | × hand-written (CPU) | largest variable change |")
        body.append("|---|---|---|---|---|---|---|---|---|---|")
        for res in vs["results"]:
            _shim_rows(body, res)
        for kind in ("none", "shim"):
            pts = [(r["vars"], r["contenders"][kind]["cpu_ms"]) for r in vs["results"]
                   if "cpu_ms" in r["contenders"].get(kind, {})]
            if len(pts) >= 2:
                slope = loglog_slope([p[0] for p in pts], [p[1] for p in pts])
                per_doubling = 2 ** slope
                body.append("")
                body.append(f"`{kind}`: log-log slope {fmt(slope, 2)} from {pts[0][0]} to {pts[-1][0]} variables "
                            f"(×{fmt(per_doubling, 2)} per doubling; 1.00 / ×2.00 = linear).")
                if kind == "shim":
                    goals.append(("Scaling in variables: linear", f"slope {fmt(slope, 2)} (×{fmt(per_doubling, 2)} "
                                  "per doubling)", "see 4b"))
        for err in vs["errors"]:
            body.append(f"Error: `{err[-400:]}`")
        body.append("")

    out.append("## Goals")
    out.append("")
    out.append("| goal | measured (ratio to the yardstick, same run) | verdict |")
    out.append("|---|---|---|")
    for goal, measured, ok in goals:
        out.append(f"| {goal} | {measured} | {ok} |")
    out.append("")
    out.extend(body)
    return "\n".join(out).rstrip() + "\n"


def _shim_rows(body: List[str], res: Dict[str, Any]) -> None:
    con = res["contenders"]
    base = con.get("none", {}).get("cpu_ms")
    hand = con.get("hand", {}).get("cpu_ms")
    for kind in ("none", "hand", "shim"):
        c = con.get(kind)
        if c is None:
            continue
        if "error" in c:
            body.append(f"| {res['mode']} | {res['vars']} | {res['width']} × {res['batch']} | {kind} | "
                        f"unavailable: {c['error'][:90]} | | | | | |")
            continue
        over = fmt(c["cpu_ms"] / base, 3) if base else "n/a"
        vs_hand = fmt(c["cpu_ms"] / hand, 3) if hand else "n/a"
        body.append(f"| {res['mode']} | {res['vars']} | {res['width']} × {res['batch']} | {kind} | "
                    f"{fmt(c['wall_ms'])} | {fmt(c['wall_min_ms'])} | {fmt(c['cpu_ms'])} | {over} | {vs_hand} | "
                    f"{c['moved']:.2e} |")


def _jsonable(sections: Dict[str, Any]) -> Dict[str, Any]:
    clean: Dict[str, Any] = {}
    for name, data in sections.items():
        clean[name] = {k: v for k, v in data.items() if k != "series"}
        if name == "tree":
            clean[name]["scale"] = [(c, s.as_json()) for c, s in data["scale"]]
    return clean


# --------------------------------------------------------------------------------------------


SECTIONS = ("tree", "latency", "shim", "varscale")


def main(argv: Optional[List[str]] = None) -> int:
    """Run the selected sections, print the markdown report and write it to ``benchmarks/out/``."""
    parser = argparse.ArgumentParser(description="tfclip-compat benchmarks (see the module docstring)")
    parser.add_argument("--quick", action="store_true", help="smoke run: small samples, few rounds")
    parser.add_argument("--only", default=",".join(SECTIONS),
                        help=f"comma-separated sections to run (default: all of {', '.join(SECTIONS)})")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="directory for results.md/.json")
    args = parser.parse_args(argv)
    chosen = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = sorted(set(chosen) - set(SECTIONS))
    if unknown or not chosen:
        parser.error(f"--only: unknown section(s) {unknown}; choose from {', '.join(SECTIONS)}")
    settings = QUICK if args.quick else FULL

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    started = time.perf_counter()
    info = machine_info()
    log(f"benchmarks ({'quick' if settings.quick else 'full'}): {', '.join(chosen)}")
    sections: Dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="tfclip-bench-") as tmp:
        work = Path(tmp)
        if "tree" in chosen:
            log("tree migration")
            sections["tree"] = section_tree(settings, info, work, log)
        if "latency" in chosen:
            log("one-file latency")
            sections["latency"] = section_latency(settings, work, log)
    if "shim" in chosen:
        log("shim overhead")
        sections["shim"] = section_shim(settings, log)
        if settings.quick:
            # One TensorFlow process served both sections; split its results.
            everything = sections["shim"]["results"]
            sections["shim"]["results"] = [r for r in everything if r["vars"] == settings.shim_vars]
            if "varscale" in chosen:
                sections["varscale"] = {"errors": [], "results": [
                    r for r in everything if r["mode"] == "graph" and r["vars"] in settings.var_sizes]}
    if "varscale" in chosen and "varscale" not in sections:
        log("scaling with the number of variables")
        sections["varscale"] = section_varscale(settings, log)
    info["load_end"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    info["elapsed"] = time.perf_counter() - started
    report = render(info, settings, sections)
    print(report)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.md").write_text(report, encoding="utf-8")
    (args.out / "results.json").write_text(
        json.dumps({"machine": info, "settings": settings.__dict__, "sections": _jsonable(sections)},
                   indent=1, default=str), encoding="utf-8")
    log(f"written {args.out / 'results.md'} in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
