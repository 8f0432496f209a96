"""Command line of the differential fuzzer (``python benchmarks/fuzz.py`` = ``python -m tests.fuzz``).

Long mode (figures, written to ``benchmarks/out/fuzz.md`` + ``fuzz.json``)::

    python benchmarks/fuzz.py --programs 10000 --seed 7 --jobs 2

One program (in this process: its source, both rewrites as diffs, the diagnostics, the verdicts)::

    python benchmarks/fuzz.py --seed 0 --index 17 --show
    python benchmarks/fuzz.py --seed 0 --index 17 --minimize   # delta-debug a failing one

Checkpoint compatibility on a sample (``checkpoint.py``)::

    python benchmarks/fuzz.py --checkpoint --programs 40 --seed 0

Exit status: 0 when no safe fix failed, 1 otherwise, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from typing import List, Optional

from tests.fuzz import runner

ROOT = runner.ROOT


def _in_process() -> None:
    """Set up this process like a worker (TF imported, stand-ins installed)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    for path in (os.path.join(ROOT, "tests"), ROOT):
        if path not in sys.path:
            sys.path.insert(0, path)
    from tests.fuzz import oracle

    oracle.install_world()


def show(seed: int, index: int, checkpoint: bool) -> int:
    _in_process()
    from tests.fuzz import oracle

    if checkpoint:
        from tests.fuzz import checkpoint as ckpt

        result = ckpt.check(seed, index)
        print(result["source"])
        print(json.dumps({k: v for k, v in result.items() if k != "source"}, indent=1, default=str))
        return 0 if result.get("verdict") in ("ok", "unchanged", "before-invalid") else 1
    result = oracle.check(seed, index, exact_unsafe=True)
    print(f"# seed {seed} index {index}: {result['kind']} program; blocks: {', '.join(result['blocks'])}")
    print(result["source"])
    if result["verdict"] != "ok":
        print(f"# {result['verdict']}: {result['detail']}")
        return 1
    failed = False
    for mode in ("safe", "unsafe"):
        entry = result[mode]
        print(f"# --- {mode} fixes: {entry['verdict']}" + (f" -- {entry['detail']}" if entry.get("detail") else ""))
        for d in entry.get("diagnostics", []):
            print(f"#   {d['line']}: {d['code']}{' (applied)' if d['applied'] else ''} {d['message']}")
        if entry.get("code"):
            print(runner.format_failure(result, mode).split("--- diff", 1)[-1])
        failed |= mode == "safe" and entry["verdict"] in runner.SAFE_FAILURES
    return 1 if failed else 0


def report_markdown(summary: dict, args: argparse.Namespace, failing: List[dict]) -> str:
    import importlib.metadata

    import tensorflow as tf  # noqa: F401 - version only

    s = summary
    lines = [
        "# Differential fuzzer: long run",
        "",
        f"- Command: `python benchmarks/fuzz.py --programs {args.programs} --seed {args.seed} --jobs {args.jobs}`",
        f"- Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"TensorFlow {tf.__version__}, libcst {importlib.metadata.version('libcst')}; {time.strftime('%Y-%m-%d %H:%M')}",
        f"- Time: {s['seconds']} s wall ({s['seconds'] / max(1, s['programs']):.2f} s a program, {args.jobs} workers)",
        "",
        "| figure | value |",
        "|---|---|",
        f"| programs | {s['programs']} |",
        f"| program verdicts | {', '.join(f'{k}: {v}' for k, v in sorted(s['program_verdicts'].items()))} |",
    ]
    for mode in ("safe", "unsafe"):
        m = s[mode]
        lines.append(f"| rewritten ({mode} fixes) | {m['rewritten']} ({m['rewritten_pct']} %) |")
        lines.append(f"| verdicts ({mode} fixes) | {', '.join(f'{k}: {v}' for k, v in sorted(m['verdicts'].items()))} |")
    lines.append(f"| **safe-fix failures** (differs + crashes + unparsable + engine-error) | **{s['safe']['failures']}** |")
    lines.append(f"| unsafe-fix failures where the unsafe output differs from the safe one (reported, not "
                 f"failures) | {s['unsafe_only_failures']} |")
    lines.append(f"| programs with a TFC202 decline (some also got a fix elsewhere) | {s['declined']} "
                 f"({s['declined_pct']} %) |")
    lines.append(f"| programs left unchanged with a TFC202 decline | {s['declined_unchanged']} |")
    lines += ["", "## Decline reasons (names and numbers normalised out), by frequency", "",
              "| programs | reason |", "|---:|---|"]
    lines += [f"| {count} | {reason} |" for reason, count in s["decline_reasons"]]
    if failing:
        lines += ["", f"## Failing programs ({len(failing)})", ""]
        lines += [f"- index {r['index']}: "
                  f"{r['verdict'] if r['verdict'] != 'ok' else r['safe']['verdict']} -- "
                  f"{' '.join((r.get('detail') if r['verdict'] != 'ok' else r['safe']['detail']).split())[:160]}"
                  for r in failing]
    return "\n".join(lines) + "\n"


def long_run(args: argparse.Namespace) -> int:
    done = [0]
    start = time.perf_counter()
    os.makedirs(args.out, exist_ok=True)
    name = "fuzz_checkpoint" if args.checkpoint else "fuzz"
    stream = open(os.path.join(args.out, name + ".partial.jsonl"), "w")  # survives a crash of this process

    def progress(result: dict) -> None:
        stream.write(json.dumps(result, default=str) + "\n")
        stream.flush()
        done[0] += 1
        if done[0] % 100 == 0:
            rate = done[0] / (time.perf_counter() - start)
            print(f"... {done[0]}/{args.programs} ({rate:.2f} programs/s)", file=sys.stderr, flush=True)

    mode = "checkpoint" if args.checkpoint else "diff"
    results, seconds = runner.timed_run(args.seed, range(args.start, args.start + args.programs), jobs=args.jobs,
                                        mode=mode, exact_unsafe=args.exact_unsafe, progress=progress)
    stream.close()
    with open(os.path.join(args.out, name + ".json"), "w") as fh:
        json.dump({"results": results}, fh, default=str)
    if args.checkpoint:
        from tests.fuzz.checkpoint import summarise as ck_summarise

        summary = ck_summarise(results, seconds)
        text = json.dumps(summary, indent=1)
        failing = [r for r in results if r.get("verdict") == "fails"]
    else:
        summary = runner.summarise(results, seconds)
        failing = runner.failures(results)
        text = report_markdown(summary, args, failing)
    with open(os.path.join(args.out, name + ".json"), "w") as fh:
        json.dump({"summary": summary, "results": results}, fh, default=str)
    os.remove(os.path.join(args.out, name + ".partial.jsonl"))
    with open(os.path.join(args.out, name + ".md"), "w") as fh:
        fh.write(text)
    print(text)
    return 1 if failing else 0


def report_only(args: argparse.Namespace) -> int:
    """The long mode's report for results saved earlier (time: the span of the saved run unknown -> 0)."""
    with open(args.report) as fh:
        if args.report.endswith(".jsonl"):
            results = sorted((json.loads(line) for line in fh if line.strip()), key=lambda r: r["index"])
        else:
            data = json.load(fh)
            results = data["results"]
    seconds = float((data.get("summary") or {}).get("seconds", 0.0)) if not args.report.endswith(".jsonl") else 0.0
    args.programs = len(results)
    summary = runner.summarise(results, seconds)
    print(report_markdown(summary, args, runner.failures(results)))
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/fuzz.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--programs", type=int, default=300, help="how many programs (long mode)")
    parser.add_argument("--start", type=int, default=0, help="first index (long mode)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--index", type=int, help="one program: its index")
    parser.add_argument("--show", action="store_true", help="print the program, its rewrites and verdicts")
    parser.add_argument("--minimize", action="store_true", help="delta-debug the failing program --index")
    parser.add_argument("--checkpoint", action="store_true", help="checkpoint-compatibility mode")
    parser.add_argument("--exact-unsafe", action="store_true", help="always run the unsafe-fix engine pass")
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "out"))
    parser.add_argument("--report", metavar="RESULTS",
                        help="only print the figures of saved results (fuzz.json, or the fuzz.partial.jsonl "
                             "of an interrupted run)")
    args = parser.parse_args(argv)
    if (args.show or args.minimize) and args.index is None:
        parser.error("--show and --minimize need --index I (and --seed S)")
    if args.programs < 1 or args.jobs < 1:
        parser.error("--programs and --jobs must be at least 1")
    if args.report:
        return report_only(args)
    if args.minimize:
        _in_process()
        from tests.fuzz.minimize import minimize_program

        return minimize_program(args.seed, args.index)
    if args.index is not None:
        return show(args.seed, args.index, args.checkpoint)
    return long_run(args)
