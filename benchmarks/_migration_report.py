"""Markdown for the ``tfclip-migrate`` sections of ``run.py`` (``_migration.py``): one goal row per
goal of issue 12 (a ratio to the yardstick measured in the same run, and a verdict) and one table
per measurement."""

from __future__ import annotations

import statistics
from typing import Any, Dict, List, Tuple

from _common import Series, fit_line, fmt, ratio, verdict

Goals = List[Tuple[str, str, str]]
TITLES = {"tf": "TensorFlow's own sources", "corpus": "real TF1 training code (corpus)"}


def render_tree(tree: Dict[str, Any], info: Dict[str, Any], goals: Goals, body: List[str], number: str) -> None:
    series: Dict[str, Series] = tree["series"]
    floor, cold1, coldn, warm, tfup = (series[k] for k in ("floor", "cold1", "coldN", "warm", "tfup"))
    c, surv, kind = tree["counts"], tree["survivors"], tree["kind"]
    title = TITLES[kind]
    what = (f"TensorFlow {info['tensorflow']}'s `tensorflow/python` plus the project's `fixtures/`" if kind == "tf"
            else "the `.py` files of the corpus of public TF1 repositories (`benchmarks/corpus_manifest.json`)")
    body.append(f"## {number}. Tree migration: {title}")
    body.append("")
    quick = f" (quick: a sample of {tree['sampled']} small files of {tree['inputs']:,})" if tree["sampled"] != tree["inputs"] else ""
    body.append(f"Input: {c['files']:,} files / {c['lines']:,} lines ({c['bytes'] / 1e6:.1f} MB) — {what}{quick}. "
                f"`tf_upgrade_v2` crashes on {len(surv['crashed'])} of the {tree['sampled']:,} input files (any one "
                f"of them aborts its whole `--intree` run), so every contender runs on the {c['files']:,} files it "
                f"survives; it fails to parse {surv['unparsed_by_tfup']} of those. Ours: `fix` on a fresh copy of the "
                "tree with an empty cache (cold), and `check` of the unchanged tree with the cache a first, unmeasured "
                "`check` filled (warm); `--format json` throughout.")
    check = tree["numbers"].get("check", {})
    if check:
        body.append("")
        body.append(f"What our tool found (cold `check`): {check['parsed']:,} files passed the text pre-filter and "
                    f"were parsed by CPython, {check['findings']:,} findings, {check['skipped']:,} files skipped "
                    "(TFC900).")
    if surv["crashed"]:
        body.append("")
        body.append("tf_upgrade_v2 crashes: " + "; ".join(f"`{p}` ({e.split(':')[0]})" for p, e in surv["crashed"][:6])
                    + (" ..." if len(surv["crashed"]) > 6 else ""))
    body.append("")
    body.append("| contender | runs | wall s (median) | wall s (min) | CPU s (median) | files/s | peak RSS MB "
                "| files rewritten | findings (fixed + left) |")
    body.append("|---|---|---|---|---|---|---|---|---|")
    for key, s in (("floor", floor), ("warm", warm), ("cold1", cold1), ("coldN", coldn), ("tfup", tfup)):
        if not s.samples:
            body.append(f"| {s.name} | 0 | not run | | | | | | |")
            continue
        numbers = tree["numbers"].get(key) or (check if key == "warm" else {})
        rewrote = "—" if key in ("floor", "warm") else str(tree["rewritten"].get(key, "—"))
        found = f"{numbers['findings']:,}" if numbers else "—"
        gt = ">" if s.timed_out else ""
        body.append(f"| {s.name} | {len(s.samples)} | {gt}{fmt(s.wall)} | {gt}{fmt(s.wall_min)} | {gt}{fmt(s.cpu)} | "
                    f"{fmt(c['files'] / s.wall, 0)} | {fmt(s.maxrss_mb, 0)} | {rewrote} | {found} |")
    body.append("")
    body.append("Peak RSS is the largest single process (with `--jobs N`, each worker peaks separately). CPU is "
                "user+system of the command and every process it waited for.")
    if tree["errors"]:
        body.append("")
        body.append("Errors: " + " / ".join(f"`{e}`" for e in tree["errors"][:5]))
    body.append("")
    cores = info["cores"]
    if tfup.samples and cold1.samples:
        wall1, cpu1 = ratio(tfup.wall, cold1.wall), ratio(tfup.cpu, cold1.cpu)
        walln = ratio(tfup.wall, coldn.wall)
        lt = "<" if cold1.timed_out else ""
        goals.append((f"Cold tree, {title}: ≥10× faster than tf_upgrade_v2",
                      f"{lt}{fmt(wall1)}× wall, {lt}{fmt(cpu1)}× CPU (1 job); {fmt(walln)}× wall ({cores} jobs)",
                      verdict(min(wall1, cpu1) >= 10 and not cold1.timed_out)))
        goals.append((f"Cold tree, {title}: peak memory ≤ ½ of tf_upgrade_v2",
                      f"{fmt(ratio(cold1.maxrss_mb, tfup.maxrss_mb))}× (1 job)",
                      verdict(ratio(cold1.maxrss_mb, tfup.maxrss_mb) <= 0.5)))
    elif not tree["tfup_available"]:
        goals.append((f"Cold tree, {title}: ≥10× faster than tf_upgrade_v2", "tf_upgrade_v2 not installed", "n/a"))
    if warm.samples and floor.samples:
        over = ratio(warm.wall, floor.wall)
        goals.append((f"Warm check, {title}: ≤3× the I/O floor",
                      f"{fmt(over)}× wall, {fmt(ratio(warm.cpu, floor.cpu))}× CPU", verdict(over <= 3)))
    if tree["identical"]:
        same = all(tree["identical"].values())
        goals.append((f"No change in output, {title}: " + ", ".join(tree["identical"]),
                      "identical" if same else "DIFFERENT: " + ", ".join(k for k, v in tree["identical"].items() if not v),
                      verdict(same)))


def render_latency(lat: Dict[str, Any], goals: Goals, body: List[str], number: str) -> None:
    s: Dict[str, Series] = lat["series"]
    body.append(f"## {number}. One-file latency (the pre-commit case)")
    body.append("")
    body.append(f"`tfclip-migrate check FILE` on a {lat['lines']}-line TF1 training script "
                f"(`benchmarks/data/legacy_train.py.txt`) and on a {lat['plain_lines']}-line input-pipeline module "
                "without candidates (`benchmarks/data/no_candidates.py.txt`), each run a fresh process with an empty "
                "cache (a commit changes the files pre-commit passes).")
    body.append("")
    body.append("| command | runs | wall ms (median) | wall ms (min) | CPU ms (median) | peak RSS MB |")
    body.append("|---|---|---|---|---|---|")
    for series in s.values():
        body.append(f"| {series.name} | {len(series.samples)} | {fmt(1e3 * series.wall, 0)} | "
                    f"{fmt(1e3 * series.wall_min, 0)} | {fmt(1e3 * series.cpu, 0)} | {fmt(series.maxrss_mb, 0)} |")
    body.append("")
    if "sites" not in s:
        goals.append(("Latency: check ≤ 2× `import libcst`", "CLI not installed", "n/a"))
        return
    body.append(f"`check` reported {statistics.median(lat['findings']['sites'])} findings on the training script and "
                f"{statistics.median(lat['findings']['plain'])} on the module.")
    body.append("")
    for key, limit, what in (("sites", 2, "a file with training sites"), ("plain", 1, "a file without candidates")):
        wall, cpu = ratio(s[key].wall, s["libcst"].wall), ratio(s[key].cpu, s["libcst"].cpu)
        goals.append((f"Latency: check of {what} ≤ {limit}× `import libcst`", f"{fmt(wall)}× wall, {fmt(cpu)}× CPU",
                      verdict(wall <= limit)))


def render_scaling(sc: Dict[str, Any], goals: Goals, body: List[str], number: str) -> None:
    series: Dict[int, Series] = sc["series"]
    points = [(n, s) for n, s in sorted(series.items()) if s.samples]
    body.append(f"## {number}. Scaling with the number of files")
    body.append("")
    body.append(f"Cold `check --jobs 1 --no-cache` on trees that replicate the same {len(sc['base'])} files of the "
                f"{sc['source']} (seeded choice: " + ", ".join(f"`{b}`" for b in sc["base"]) + "), so every tree has the same mix and "
                "a per-file cost that does not change means linear time; peak RSS that does not change means flat "
                "memory.")
    body.append("")
    body.append("| files | parsed | findings | runs | wall s (median) | CPU s (median) | CPU ms/file | peak RSS MB |")
    body.append("|---|---|---|---|---|---|---|---|")
    for n, s in points:
        numbers = sc["numbers"].get(n, {})
        body.append(f"| {n:,} | {numbers.get('parsed', 'n/a')} | {numbers.get('findings', 'n/a')} | {len(s.samples)} | "
                    f"{fmt(s.wall)} | {fmt(s.cpu)} | {fmt(1e3 * s.cpu / n)} | {fmt(s.maxrss_mb, 0)} |")
    body.append("")
    if sc["errors"]:
        body.append("Errors: " + " / ".join(f"`{e}`" for e in sc["errors"][:5]))
        body.append("")
    if len(points) < 2:
        return
    xs, ys = [float(n) for n, _ in points], [s.cpu for _, s in points]
    a, b, r2 = fit_line(xs, ys)
    per_file = [s.cpu / n for n, s in points]
    largest, ref = points[-1], next(((n, s) for n, s in points if n >= 1000), points[0])
    drift = ratio(largest[1].cpu / largest[0], ref[1].cpu / ref[0])
    rss = [s.maxrss_mb for _, s in points]
    body.append(f"Least-squares fit of CPU time vs files: {fmt(a, 2)} s fixed + {fmt(b * 1e3, 2)} ms/file, "
                f"R² = {fmt(r2, 4)}. CPU per file at {largest[0]:,} files is {fmt(drift)}× that at {ref[0]:,}; peak RSS "
                f"goes from {fmt(min(rss), 0)} to {fmt(max(rss), 0)} MB.")
    body.append("")
    goals.append(("Scaling: linear time (CPU/file at the largest tree within ±15% of 1,000 files)",
                  f"{fmt(drift)}× ({', '.join(f'{1e3 * p:.1f}' for p in per_file)} ms/file); R² {fmt(r2, 4)}",
                  verdict(abs(drift - 1) <= 0.15)))
    goals.append(("Scaling: flat memory (peak RSS max/min ≤ 1.15)",
                  f"{fmt(max(rss) / min(rss))}× ({', '.join(f'{r:.0f}' for r in rss)} MB)",
                  verdict(max(rss) / min(rss) <= 1.15)))


def render_equivalence(eq: Dict[str, Any], goals: Goals, body: List[str], number: str) -> None:
    body.append(f"## {number}. The fast path changes no output")
    body.append("")
    body.append("Every `.py` file through the engine with the pre-pass (text stage, CPython `ast` stage, only the "
                "rules whose sites occur) and without it (`prefilter=False`: every rule on every file), compared: "
                "rewritten bytes and diagnostics (`benchmarks/_equivalence.py`). *By design* counts the files the "
                "pre-filter never parses (no candidate token) that the reference reports as unparsable (TFC900; "
                "docs/cli.md: such files are not reported). The fixtures are compared by `tests/codemods/test_prefilter.py`.")
    body.append("")
    body.append("| tree / mode | files | identical | by design | mismatches | seconds |")
    body.append("|---|---|---|---|---|---|")
    total = 0
    for key, data in eq.items():
        if "error" in data:
            body.append(f"| {key} | error: `{data['error'][-120:]}` | | | | |")
            total += 1
            continue
        total += len(data["mismatches"])
        body.append(f"| {key} | {data['files']:,} | {data['compared']:,} | {data['by_design']:,} | "
                    f"{len(data['mismatches'])} | {fmt(data['seconds'], 0)} |")
        for mismatch in data["mismatches"][:3]:
            body.append(f"|  mismatch: `{mismatch['path']}` | | | | | |")
    body.append("")
    goals.append(("No change in output: fast path = reference (" + ", ".join(eq) + ")",
                  f"{total} mismatches", verdict(total == 0)))
