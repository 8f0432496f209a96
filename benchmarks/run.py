"""Benchmarks for tfclip-compat: migration speed and shim overhead, as ratios against yardsticks.

Usage::

    python benchmarks/run.py --corpus /work/corpus   # full run; writes benchmarks/README.md
    python benchmarks/run.py --quick                 # smoke run (about a minute once the caches exist)
    python benchmarks/run.py --only tree,latency     # a subset of the sections below

Prints a markdown report (machine, date, load, the goals table, one table per measurement) and
writes it to ``benchmarks/out/results.md`` (raw numbers in ``results.json``); a full run also
writes ``benchmarks/README.md``. Every contender runs in a fresh subprocess measured by
``_measure.py`` (wall, children's CPU time, peak RSS); the contenders of one measurement are
interleaved round by round, so a busy machine slows all of them alike; figures are medians (and
minima) of the rounds, and every verdict is a ratio to the yardstick measured in the same run.
Nothing here asserts a timing.

Sections:

1. ``tree``        -- TensorFlow's own sources: ``tfclip-migrate fix`` cold (1 job, all cores) vs
   ``tf_upgrade_v2`` on the files it survives; ``check`` with a warm cache vs the I/O floor.
2. ``corpus``      -- the same on a corpus of public TF1 repositories (``--corpus DIR`` or
   ``$TFCLIP_BENCH_CORPUS``; skipped when absent, e.g. in CI).
3. ``latency``     -- one-file ``check`` (training sites; no candidates) vs ``import libcst``.
4. ``scaling``     -- 10 / 100 / 1,000 / 10,000 files replicating the same corpus files: time, memory.
5. ``equivalence`` -- every corpus file (TF's sources without a corpus) with the fast path and
   without it: same output, ``check`` and ``fix``.
6. ``shim``, ``varscale`` -- the runtime shim's overhead per training step (``_shim_section.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _migration  # noqa: E402 - benchmarks/ is not a package
import _migration_report  # noqa: E402
import _shim_section  # noqa: E402
from _common import FULL, HERE, OUT_DIR, QUICK, Series, Settings, fmt, load_now, machine_info  # noqa: E402

SECTIONS = ("tree", "corpus", "latency", "scaling", "equivalence", "shim", "varscale")
CORPUS_ENV = "TFCLIP_BENCH_CORPUS"
README = HERE / "README.md"

INTRO = """# Benchmarks

Written by `python benchmarks/run.py --corpus DIR` (do not edit by hand: rerun it). Each goal of
issue 12 is a ratio to a yardstick measured in the same run: contenders interleaved round by
round, medians of the rounds, CPU time beside wall time (the machine is shared, so wall time is
noisy). `--quick` is the smoke run the test suite uses (`tests/codemods/test_benchmarks_smoke.py`); its
figures are not for publication. How each number is obtained is said above its table; the
scripts are `run.py` (sections, this file), `_migration.py` / `_migration_report.py` (our tool),
`_shim_section.py` / `_shim_bench.py` (the runtime shim), `_equivalence.py` (fast path vs
reference), `_measure.py` (one measured process), `_io_floor.py` (the I/O floor) and
`_tfup_survivors.py` (which files `tf_upgrade_v2` survives).

"""


def render(info: Dict[str, Any], settings: Settings, sections: Dict[str, Any]) -> str:
    """The markdown report: header, the goals table, then one table per section."""
    mode = "quick (smoke: small samples, few rounds; not for publication)" if settings.quick else "full"
    out = ["# tfclip-compat benchmarks", "",
           f"- Date: {info['date']}; mode: {mode}; commit {info['commit']}",
           f"- Machine: {info['cpu']}, {info['cores']} cores, {info['os']}; load average {fmt(info['load_start'])} "
           f"at start, {fmt(info.get('load_end', float('nan')))} at end",
           f"- Python {info['python']}, TensorFlow {info['tensorflow']}, Keras {info['keras']}, libcst {info['libcst']}",
           f"- Wall time for the whole run: {fmt(info.get('elapsed', float('nan')), 0)} s", ""]
    goals: List[Tuple[str, str, str]] = []
    body: List[str] = []
    number = 0

    def next_number() -> str:
        nonlocal number
        number += 1
        return str(number)

    for kind in ("tree", "corpus"):
        data = sections.get(kind)
        if data and data.get("skipped"):
            body.append(f"## {next_number()}. Tree migration: {_migration_report.TITLES['corpus']}")
            body.append("")
            body.append(f"Not run: {data['skipped']}")
            body.append("")
            goals.append(("Cold tree, real TF1 training code: ≥10× faster than tf_upgrade_v2", "corpus absent", "n/a"))
        elif data:
            _migration_report.render_tree(data, info, goals, body, next_number())
    if "latency" in sections:
        _migration_report.render_latency(sections["latency"], goals, body, next_number())
    if "scaling" in sections:
        _migration_report.render_scaling(sections["scaling"], goals, body, next_number())
    if "equivalence" in sections:
        _migration_report.render_equivalence(sections["equivalence"], goals, body, next_number())
    if "shim" in sections:
        _shim_section.render_shim(sections["shim"], goals, body)
    if "varscale" in sections:
        _shim_section.render_varscale(sections["varscale"], goals, body)
    out += ["## Goals", "", "| goal | measured (ratio to the yardstick, same run) | verdict |", "|---|---|---|"]
    out += [f"| {goal} | {measured} | {ok} |" for goal, measured, ok in goals]
    out.append("")
    out.extend(body)
    return "\n".join(out).rstrip() + "\n"


def _jsonable(value: Any) -> Any:
    if isinstance(value, Series):
        return value.as_json()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def main(argv: Optional[List[str]] = None) -> int:
    """Run the selected sections, print the markdown report and write it out."""
    parser = argparse.ArgumentParser(description="tfclip-compat benchmarks (see the module docstring)")
    parser.add_argument("--quick", action="store_true", help="smoke run: small samples, few rounds")
    parser.add_argument("--only", default=",".join(SECTIONS),
                        help=f"comma-separated sections to run (default: all of {', '.join(SECTIONS)})")
    parser.add_argument("--corpus", type=Path, default=os.environ.get(CORPUS_ENV) or None,
                        help=f"directory of the TF1 corpus (owner__name/ subdirectories; default ${CORPUS_ENV})")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="directory for results.md/.json")
    parser.add_argument("--readme", type=Path, default=None,
                        help="where to write the README (default: benchmarks/README.md on a full run, none on --quick)")
    args = parser.parse_args(argv)
    chosen = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = sorted(set(chosen) - set(SECTIONS))
    if unknown or not chosen:
        parser.error(f"--only: unknown section(s) {unknown}; choose from {', '.join(SECTIONS)}")
    if args.corpus is not None and not args.corpus.is_dir():
        parser.error(f"--corpus: {args.corpus} is not a directory (see docs/corpus.md to build it)")
    settings = QUICK if args.quick else FULL
    readme = args.readme if args.readme is not None else (None if args.quick else README)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    started = time.perf_counter()
    info = machine_info()
    log(f"benchmarks ({'quick' if settings.quick else 'full'}): {', '.join(chosen)}")
    sections: Dict[str, Any] = {}
    tf_pairs = _migration.tf_inputs() if {"tree", "equivalence", "scaling"} & set(chosen) else []
    corpus_pairs = _migration.corpus_inputs(args.corpus)
    with tempfile.TemporaryDirectory(prefix="tfclip-bench-") as tmp:
        work = Path(tmp)
        if "tree" in chosen:
            log("tree migration: TensorFlow's sources")
            sections["tree"] = _migration.section_tree("tf", tf_pairs, settings, info, work, log)
        if "corpus" in chosen:
            if corpus_pairs is None:
                sections["corpus"] = {"skipped": "no corpus (pass --corpus DIR or set $" + CORPUS_ENV + ")."}
                log("corpus: skipped (no corpus)")
            else:
                log(f"tree migration: the corpus ({len(corpus_pairs)} .py files)")
                sections["corpus"] = _migration.section_tree("corpus", corpus_pairs, settings, info, work, log)
        if "latency" in chosen:
            log("one-file latency")
            sections["latency"] = _migration.section_latency(settings, work, log)
        if "scaling" in chosen:
            log("scaling with the number of files")
            source = "corpus" if corpus_pairs else "TensorFlow sources (no corpus)"
            sections["scaling"] = _migration.section_scaling(corpus_pairs or tf_pairs, source, settings, work, log)
        if "equivalence" in chosen and settings.equivalence:
            trees = {"corpus": corpus_pairs} if corpus_pairs else {"tf": tf_pairs}  # (hours: one tree)
            sections["equivalence"] = _migration.section_equivalence(trees, info, work, log)
    if "shim" in chosen:
        log("shim overhead")
        sections["shim"] = _shim_section.section_shim(settings, log)
        if settings.quick:
            # One TensorFlow process served both sections; split its results.
            everything = sections["shim"]["results"]
            sections["shim"]["results"] = [r for r in everything if r["vars"] == settings.shim_vars]
            if "varscale" in chosen:
                sections["varscale"] = {"errors": [], "results": [
                    r for r in everything if r["mode"] == "graph" and r["vars"] in settings.var_sizes]}
    if "varscale" in chosen and "varscale" not in sections:
        log("scaling with the number of variables")
        sections["varscale"] = _shim_section.section_varscale(settings, log)
    info["load_end"] = load_now()
    info["elapsed"] = time.perf_counter() - started
    report = render(info, settings, sections)
    print(report)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.md").write_text(report, encoding="utf-8")
    (args.out / "results.json").write_text(
        json.dumps({"machine": info, "settings": settings.__dict__, "sections": _jsonable(sections)},
                   indent=1, default=str), encoding="utf-8")
    if readme is not None:
        readme.write_text(INTRO + report.split("\n", 1)[1].lstrip("\n"), encoding="utf-8")
        log(f"written {readme}")
    log(f"written {args.out / 'results.md'} in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
