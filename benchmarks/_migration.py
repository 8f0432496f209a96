"""The ``tfclip-migrate`` sections of ``run.py``: trees vs ``tf_upgrade_v2`` (TensorFlow's own
sources; a corpus of real TF1 training code), warm re-runs vs the I/O floor, one-file latency vs
``import libcst``, scaling in the number of files, and fast path vs reference output.

Every run of our tool reads its ``--format json`` document (never the human summary). Cold runs
get an empty cache directory of their own; warm runs a cache filled by one unmeasured run whose
output they must reproduce exactly. The markdown for these sections is in
``_migration_report.py``.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from _common import HERE, OUT_DIR, PY, REPO, SUBPROCESS_ENV, Sample, Series, Settings, cli_available, measure, tool

Log = Callable[[str], None]
Pairs = List[Tuple[Path, Path]]  # (source file, path inside the benchmark tree)
MANIFEST = HERE / "corpus_manifest.json"


# --------------------------------------------------------------------------------------------
# inputs


def tf_sources() -> Path:
    """The installed ``tensorflow/python`` directory (found without importing TensorFlow)."""
    import importlib.util

    spec = importlib.util.find_spec("tensorflow")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("benchmarks: TensorFlow is not installed; run pip install -e \".[dev]\" first")
    return Path(list(spec.submodule_search_locations)[0]) / "python"


def _py_files(root: Path) -> List[Path]:
    return sorted(p for p in root.rglob("*.py") if p.is_file() and not p.is_symlink())


def tf_inputs() -> Pairs:
    """TensorFlow's ``tensorflow/python`` plus the project's fixtures."""
    tf_root = tf_sources()
    pairs = [(p, Path("tensorflow_python") / p.relative_to(tf_root)) for p in _py_files(tf_root)]
    fixtures = REPO / "fixtures"
    pairs += [(p, Path("fixtures") / p.relative_to(fixtures)) for p in _py_files(fixtures)]
    return pairs


def corpus_inputs(corpus: Optional[Path]) -> Optional[Pairs]:
    """The corpus's ``.py`` files, or None when there is no corpus. With
    ``benchmarks/corpus_manifest.json`` only the repositories it lists (``owner__name``)."""
    if corpus is None or not corpus.is_dir():
        return None
    roots = sorted(p for p in corpus.iterdir() if p.is_dir())
    if MANIFEST.exists():
        listed = {entry["repo"].replace("/", "__") for entry in json.loads(MANIFEST.read_text())["repos"]}
        roots = [root for root in roots if root.name in listed]
    pairs = [(p, Path(root.name) / p.relative_to(root)) for root in roots for p in _py_files(root)]
    return pairs or None


def spread(items: List[Any], n: Optional[int]) -> List[Any]:
    """``n`` items evenly spread over ``items`` (all of them when ``n`` is None or large)."""
    if n is None or n >= len(items):
        return list(items)
    return [items[(i * len(items)) // n] for i in range(n)]


def build_tree(pairs: Pairs, root: Path) -> Dict[str, int]:
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


def survivors(pairs: Pairs, info: Dict[str, Any], log: Log) -> Tuple[Pairs, Dict[str, Any]]:
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
    missing = sorted({src for src, _ in pairs if digests[src] not in cache})
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
    crashed = [(str(rel), cache[digests[src]]["error"]) for src, rel in pairs if not cache[digests[src]]["ok"]]
    unparsed = sum(1 for src, _ in pairs if cache[digests[src]]["ok"] and not cache[digests[src]]["parsed"])
    return kept, {"crashed": crashed, "unparsed_by_tfup": unparsed}


# --------------------------------------------------------------------------------------------
# running our tool


def fresh_cache(work: Path) -> Dict[str, str]:
    """The environment of a cold run: an empty cache directory of its own."""
    return {"TFCLIP_MIGRATE_CACHE_DIR": tempfile.mkdtemp(prefix="cold-cache-", dir=work)}


def migrate(args: List[str], *, env: Dict[str, str], timeout: Optional[float] = None,
            cwd: Optional[Path] = None) -> Tuple[Sample, Optional[Dict[str, Any]]]:
    """``tfclip-migrate ARGS --format json`` measured; returns the sample and the JSON document."""
    sample = measure([str(tool("tfclip-migrate")), *args, "--format", "json"], keep_output=True, timeout=timeout,
                     env=env, cwd=cwd)
    try:
        document = json.loads(sample.stdout) if sample.stdout.strip() else None
    except ValueError:
        document = None
    sample.stdout = sample.stderr = "" if document is not None else sample.stderr
    return sample, document


def document_numbers(document: Optional[Dict[str, Any]]) -> Dict[str, int]:
    """Files, parsed files, findings (all, fixed) and rewritten files from a JSON document."""
    summary = (document or {}).get("summary") or {}
    found = summary.get("findings_by_code", {})
    return {
        "scanned": summary.get("scanned", 0),
        "parsed": summary.get("parsed", 0),
        "findings": sum(c["found"] for c in found.values()),
        "fixed": sum(c["fixed"] for c in found.values()),
        "rewritten": summary.get("rewritten", 0) + summary.get("would_rewrite", 0),
        "skipped": summary.get("skipped", 0),
    }


def rewritten_files(original: Path, migrated: Path) -> int:
    """How many ``.py`` files differ between the two trees (the proof a run did something)."""
    return sum(1 for path in original.rglob("*.py")
               if not (migrated / path.relative_to(original)).exists()
               or (migrated / path.relative_to(original)).read_bytes() != path.read_bytes())


# --------------------------------------------------------------------------------------------
# section: a tree vs tf_upgrade_v2, cold and warm


def section_tree(kind: str, pairs: Pairs, settings: Settings, info: Dict[str, Any], work: Path,
                 log: Log) -> Dict[str, Any]:
    """One tree (``kind``: ``tf`` or ``corpus``): the I/O floor, our cold ``fix`` (1 job, all
    cores), our warm ``check``, and ``tf_upgrade_v2`` on the files it survives."""
    tfup = tool("tf_upgrade_v2")
    total = len(pairs)
    if settings.quick:  # small files only: the smoke run must stay fast whatever the engine's speed
        small = [p for p in pairs if p[0].stat().st_size <= 8000]
        if kind == "tf":
            pairs = (spread([p for p in small if p[1].parts[0] == "tensorflow_python"], settings.tree_sample)
                     + spread([p for p in small if p[1].parts[0] == "fixtures"], settings.fixture_sample))
        else:
            pairs = spread(small, settings.corpus_sample)
    kept, surv = survivors(pairs, info, log)
    log(f"  {kind}: {len(kept)} of {len(pairs)} files survive tf_upgrade_v2 ({len(surv['crashed'])} crash it)")
    src = work / f"{kind}-src"
    counts = build_tree(kept, src)
    cores = info["cores"]
    series = {
        "floor": Series("plain read of every file (I/O floor)"),
        "cold1": Series("tfclip-migrate fix, cold, --jobs 1"),
        "coldN": Series(f"tfclip-migrate fix, cold, --jobs {cores}"),
        "warm": Series("tfclip-migrate check, warm cache, --jobs 1"),
        "tfup": Series("tf_upgrade_v2 --intree/--outtree"),
    }
    result: Dict[str, Any] = {"kind": kind, "inputs": total, "sampled": len(pairs), "counts": counts,
                              "survivors": surv, "tfup_available": tfup is not None, "series": series,
                              "numbers": {}, "rewritten": {}, "errors": [], "identical": {}}
    errors: List[str] = result["errors"]
    documents: Dict[str, Any] = {}

    # Unmeasured: a cold check (the reference output of the warm runs, and the warm cache).
    warm_env = fresh_cache(work)
    _, reference = migrate(["check", str(src), "--jobs", "1"], env=warm_env)
    if reference is None:
        errors.append("the reference check printed no JSON document")
    result["numbers"]["check"] = document_numbers(reference)

    def run_cold(key: str, jobs: int) -> None:
        dest = work / f"{kind}-fix"
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(src, dest)
        limit = None
        if settings.ours_timeout_factor and series["tfup"].samples:
            limit = max(60.0, settings.ours_timeout_factor * series["tfup"].wall)  # slower decides the goal
        sample, document = migrate(["fix", str(dest), "--jobs", str(jobs)], env=fresh_cache(work), timeout=limit)
        series[key].samples.append(sample)
        if sample.timed_out:
            errors.append(f"{series[key].name}: killed after {sample.wall:.0f} s")
        elif sample.rc not in (0, 1) or document is None:
            errors.append(f"{series[key].name}: exit {sample.rc}: {sample.stderr.strip()[-300:]}")
        else:
            numbers = document_numbers(document)
            if numbers["scanned"] != counts["files"]:
                errors.append(f"{series[key].name}: scanned {numbers['scanned']} of {counts['files']} files")
            result["numbers"][key] = numbers
            result["rewritten"][key] = rewritten_files(src, dest)
            documents.setdefault(key, document)
        shutil.rmtree(dest, ignore_errors=True)

    def run_warm() -> None:
        sample, document = migrate(["check", str(src), "--jobs", "1"], env=warm_env)
        series["warm"].samples.append(sample)
        result["identical"].setdefault("warm = cold check", True)
        if document != reference:
            result["identical"]["warm = cold check"] = False
            errors.append("a warm check printed something else than the cold check")

    def run_floor() -> None:
        series["floor"].samples.append(measure([PY, str(HERE / "_io_floor.py"), str(src)]))

    def run_tfup() -> None:
        if tfup is None:
            return
        dest = work / f"{kind}-tfup"
        shutil.rmtree(dest, ignore_errors=True)
        sample = measure([tfup, "--intree", str(src), "--outtree", str(dest)], cwd=work)
        series["tfup"].samples.append(sample)
        if sample.rc != 0:
            errors.append(f"tf_upgrade_v2: exit {sample.rc}: {sample.stderr.strip()[-300:]}")
        done = sum(1 for _ in dest.rglob("*.py")) if dest.exists() else 0
        if done != counts["files"]:
            errors.append(f"tf_upgrade_v2 wrote {done} of {counts['files']} files")
        result["rewritten"]["tfup"] = rewritten_files(src, dest) if dest.exists() else 0
        shutil.rmtree(dest, ignore_errors=True)

    # tf_upgrade_v2 is the slow yardstick: it runs once, first; the others every round, in rotating
    # order, while the section's budget lasts (a slow engine cannot make the run endless).
    start = time.perf_counter()
    for round_index in range(settings.tree_rounds):
        spent = time.perf_counter() - start
        if round_index and spent > settings.tree_budget_s:
            log(f"  {kind}: budget of {settings.tree_budget_s:.0f} s spent after {round_index} round(s)")
            break
        log(f"  {kind} round {round_index + 1}/{settings.tree_rounds} ({spent:.0f} s so far)")
        jobs: List[Callable[[], None]] = [run_floor, lambda: run_cold("cold1", 1), run_warm]
        if cores > 1:
            jobs.append(lambda: run_cold("coldN", cores))
        shift = round_index % len(jobs)
        order = jobs[shift:] + jobs[:shift]
        for job in ([run_tfup] if round_index == 0 else []) + order:
            job()
    if "cold1" in documents and "coldN" in documents:
        result["identical"][f"--jobs 1 = --jobs {cores}"] = documents["cold1"] == documents["coldN"]
    return result


# --------------------------------------------------------------------------------------------
# section: one-file latency


def section_latency(settings: Settings, work: Path, log: Log) -> Dict[str, Any]:
    """``tfclip-migrate check FILE`` (a training script; a module without candidates) vs
    ``python -c "import libcst"``; each check with an empty cache (pre-commit sees changed files)."""
    sites = work / "legacy_train.py"
    plain = work / "input_pipeline.py"
    shutil.copyfile(HERE / "data" / "legacy_train.py.txt", sites)
    shutil.copyfile(HERE / "data" / "no_candidates.py.txt", plain)
    cli = str(tool("tfclip-migrate"))
    contenders: Dict[str, Tuple[Series, List[str], bool]] = {
        "python": (Series('python -c "pass"'), [PY, "-c", "pass"], False),
        "libcst": (Series('python -c "import libcst"'), [PY, "-c", "import libcst"], False),
    }
    available = cli_available()
    if available:
        contenders["sites"] = (Series("tfclip-migrate check FILE (training sites)"), [cli, "check", str(sites)], True)
        contenders["plain"] = (Series("tfclip-migrate check FILE (no candidates)"), [cli, "check", str(plain)], True)
    findings: Dict[str, List[int]] = {"sites": [], "plain": []}
    names = list(contenders)
    for name in names:  # unmeasured: compile bytecode, warm the disk cache
        measure(contenders[name][1], env=fresh_cache(work))
    for round_index in range(settings.latency_rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            series, cmd, ours = contenders[name]
            sample = measure(cmd, keep_output=ours, env=fresh_cache(work) if ours else None)
            series.samples.append(sample)
            if ours:
                findings[name].append(sum(1 for line in sample.stdout.splitlines() if ": TFC" in line))
                sample.stdout = ""
    log(f"  latency: {settings.latency_rounds} rounds")
    return {"cli_available": available, "lines": sites.read_bytes().count(b"\n"),
            "plain_lines": plain.read_bytes().count(b"\n"), "series": {k: v[0] for k, v in contenders.items()},
            "findings": findings}


# --------------------------------------------------------------------------------------------
# section: scaling in the number of files


def section_scaling(base_pool: Pairs, source: str, settings: Settings, work: Path, log: Log) -> Dict[str, Any]:
    """Cold ``check --jobs 1 --no-cache`` on trees of 10 ... 10,000 files that replicate the same
    ``scale_base`` files, so every tree has the same mix: time should grow linearly, memory not."""
    rng = random.Random(0)
    base = rng.sample(base_pool, min(settings.scale_base, len(base_pool)))
    trees: Dict[int, Path] = {}
    for n in settings.scale_files:
        root = work / f"scale{n}"
        pairs = [(base[i % len(base)][0], Path(f"d{i // 100:04d}") / f"f{i:05d}_{base[i % len(base)][0].name}")
                 for i in range(n)]
        build_tree(pairs, root)
        trees[n] = root
    series = {n: Series(f"{n:,} files") for n in trees}
    numbers: Dict[int, Dict[str, int]] = {}
    errors: List[str] = []

    def run(n: int) -> None:
        sample, document = migrate(["check", str(trees[n]), "--jobs", "1", "--no-cache"], env={})
        series[n].samples.append(sample)
        if document is None or sample.rc not in (0, 1):
            errors.append(f"{n} files: exit {sample.rc}")
        else:
            numbers[n] = document_numbers(document)

    # One untimed run first: the first run after a source change compiles the package's
    # bytecode, which would put the compiler's memory and time into the first sample.
    migrate(["check", str(trees[min(trees)]), "--jobs", "1", "--no-cache"], env={})
    small = [n for n in trees if n <= 1000]
    for round_index in range(settings.scale_rounds):
        shift = round_index % max(1, len(small))
        for n in small[shift:] + small[:shift]:
            run(n)
    for n in trees:
        if n > 1000:
            log(f"  scaling: {n:,} files (one round)")
            run(n)
    log(f"  scaling: {', '.join(f'{n:,}' for n in trees)} files")
    return {"base": [str(rel) for _, rel in base], "source": source, "series": series, "numbers": numbers,
            "errors": errors}


# --------------------------------------------------------------------------------------------
# section: the fast path changes no output


def section_equivalence(trees: Dict[str, Pairs], info: Dict[str, Any], work: Path, log: Log) -> Dict[str, Any]:
    """Every file with the pre-pass and without it (``_equivalence.py``): identical bytes and
    diagnostics, check and fix."""
    out: Dict[str, Any] = {}
    for kind, pairs in trees.items():
        root = work / f"equiv-{kind}"
        build_tree(pairs, root)
        for mode in ("fix", "check"):
            log(f"  equivalence: {kind} ({len(pairs)} files, {mode})")
            cmd = [PY, str(HERE / "_equivalence.py"), "--jobs", str(info["cores"]), str(root)]
            proc = subprocess.run(cmd + (["--check"] if mode == "check" else []), capture_output=True, text=True,
                                  env=SUBPROCESS_ENV)
            try:
                out[f"{kind}/{mode}"] = json.loads(proc.stdout.strip().splitlines()[-1])
            except (ValueError, IndexError):
                out[f"{kind}/{mode}"] = {"error": proc.stderr.strip()[-500:]}
        shutil.rmtree(root, ignore_errors=True)
    return out
