"""Benchmark: tfclip_compat's grouped fast global norm / clip vs tf.clip_by_global_norm, on CPU.

Usage::

    python benchmarks/fast_norm.py            # full run (about a minute on 2 busy cores)
    python benchmarks/fast_norm.py --quick    # smoke run
    python benchmarks/fast_norm.py --json out.json

Prints a markdown table (and, with ``--json``, writes the raw medians). For 10 / 100 / 1,000
small variables, in graph mode (``tf.compat.v1.Session.run``) and in ``tf.function``:

* ``step``: read every variable (stand-in for its gradient), clip by the global norm, assign the
  result back — the contenders are ``tf.clip_by_global_norm`` (yardstick),
  ``tfclip_compat.fast_clip_by_global_norm``, and in ``tf.function`` the fast clip compiled with
  XLA (``jit_compile=True``); ``base`` is the same step without clipping (read + assign), so
  ``clip cost = step - base`` is what clipping adds;
* ``norm``: the global norm alone (``tf.linalg.global_norm`` vs ``fast_global_norm``).

Two variable layouts: ``layers`` (4 shapes repeating, as in a stack of identical layers: the
fast path stacks each shape group) and ``distinct`` (every variable a different shape: the
worst case for stacking; every tensor takes the one-op-per-tensor path).

Contenders of one configuration are interleaved call batch by call batch, so a busy machine
slows all of them alike; figures are medians over rounds. Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence, Tuple

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tfclip_compat import _fast_norm  # noqa: E402

V1 = tf.compat.v1
LAYER_SHAPES = [(8, 8), (8,), (4, 8), (2,)]


def shapes_for(n: int, layout: str) -> List[Tuple[int, ...]]:
    """``n`` small shapes: repeating layer shapes, or all distinct."""
    if layout == "layers":
        return [LAYER_SHAPES[i % len(LAYER_SHAPES)] for i in range(n)]
    return [(i % 64 + 1, i // 64 + 1) for i in range(n)]


def _builders(variables: Sequence[Any]) -> Dict[str, Callable[[], Any]]:
    """Graph-building bodies of every contender (called inside a graph or a tf.function)."""

    def step_with(clip: Callable[..., Any]) -> Callable[[], Any]:
        def body() -> Any:
            grads = [v.read_value() for v in variables]
            if clip is None:
                out = grads
            else:
                out, _ = clip(grads, 1.0)
            return tf.group([v.assign(o) for v, o in zip(variables, out)])

        return body

    return {
        "base": step_with(None),
        "tf.clip_by_global_norm": step_with(tf.clip_by_global_norm),
        "fast_clip_by_global_norm": step_with(_fast_norm.fast_clip_by_global_norm),
        "norm: tf.linalg.global_norm": lambda: tf.linalg.global_norm([v.read_value() for v in variables]),
        "norm: fast_global_norm": lambda: _fast_norm.fast_global_norm([v.read_value() for v in variables]),
    }


def _callables_graph(shapes: Sequence[Tuple[int, ...]]) -> Tuple[Dict[str, Callable[[], Any]], Any]:
    graph = tf.Graph()
    with graph.as_default():
        rng = np.random.RandomState(0)
        variables = [tf.Variable(rng.randn(*s).astype(np.float32) * 1e-3) for s in shapes]
        fetches = {name: body() for name, body in _builders(variables).items()}
        sess = V1.Session(graph=graph)
        sess.run(V1.global_variables_initializer())
    calls = {name: (lambda f=f: sess.run(f)) for name, f in fetches.items()}
    return calls, sess


def _callables_function(shapes: Sequence[Tuple[int, ...]], xla: bool) -> Dict[str, Callable[[], Any]]:
    rng = np.random.RandomState(0)
    variables = [tf.Variable(rng.randn(*s).astype(np.float32) * 1e-3) for s in shapes]
    calls: Dict[str, Callable[[], Any]] = {}
    for name, body in _builders(variables).items():

        def fn(body: Callable[[], Any] = body) -> Any:
            out = body()
            return None if isinstance(out, tf.Operation) else out

        calls[name] = tf.function(fn)
    if xla:
        fast = _builders(variables)["fast_clip_by_global_norm"]

        def xla_fn() -> None:
            fast()

        calls["fast_clip_by_global_norm + XLA"] = tf.function(xla_fn, jit_compile=True)
    return calls


def measure(calls: Dict[str, Callable[[], Any]], rounds: int, batch: int) -> Dict[str, float]:
    """Median seconds per call of each contender, interleaved batch by batch."""
    for f in calls.values():  # trace / compile / warm up
        f()
        f()
    samples: Dict[str, List[float]] = {k: [] for k in calls}
    names = list(calls)
    for r in range(rounds):
        order = names if r % 2 == 0 else list(reversed(names))
        for name in order:
            f = calls[name]
            start = time.perf_counter()
            for _ in range(batch):
                f()
            samples[name].append((time.perf_counter() - start) / batch)
    return {k: statistics.median(v) for k, v in samples.items()}


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.0f}"


def run(counts: Sequence[int], layouts: Sequence[str], rounds: int, batch: int, xla: bool) -> List[Dict[str, Any]]:
    """Measure every (layout, mode, n) configuration; return one row dict each."""
    rows = []
    for layout in layouts:
        for mode in ("graph", "tf.function"):
            for n in counts:
                shapes = shapes_for(n, layout)
                if mode == "graph":
                    calls, sess = _callables_graph(shapes)
                    times = measure(calls, rounds, batch)
                    sess.close()
                else:
                    times = measure(_callables_function(shapes, xla), rounds, batch)
                rows.append({"layout": layout, "mode": mode, "n": n, "median_s": times})
                print(f"  measured {layout:8s} {mode:11s} n={n}", file=sys.stderr)
    return rows


def table(rows: Sequence[Dict[str, Any]]) -> str:
    """The markdown report."""
    lines = [
        "| layout | mode | vars | base step µs | tf.clip step µs | fast step µs | fast+XLA step µs "
        "| step speed-up | clip-cost speed-up | tf norm µs | fast norm µs | norm speed-up |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        t = row["median_s"]
        base, ref, fast = t["base"], t["tf.clip_by_global_norm"], t["fast_clip_by_global_norm"]
        xla = t.get("fast_clip_by_global_norm + XLA")
        cost_ref, cost_fast = ref - base, fast - base
        cost = f"{cost_ref / cost_fast:.2f}×" if cost_fast > 0 and cost_ref > 0 else "n/a (noise)"
        nr, nf = t["norm: tf.linalg.global_norm"], t["norm: fast_global_norm"]
        lines.append(
            f"| {row['layout']} | {row['mode']} | {row['n']:,} | {_us(base)} | {_us(ref)} | {_us(fast)} | "
            f"{_us(xla) if xla else '–'} | {ref / fast:.2f}× | {cost} | {_us(nr)} | {_us(nf)} | {nr / nf:.2f}× |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print the markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few rounds, smoke run")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per configuration")
    parser.add_argument("--no-xla", action="store_true", help="skip the XLA contender")
    parser.add_argument("--json", default=None, help="also write raw medians to this file")
    args = parser.parse_args(argv)
    rounds = args.rounds or (3 if args.quick else 15)
    batch = 3 if args.quick else 10
    counts = (10, 100, 1000)
    layouts = ("layers",) if args.quick else ("layers", "distinct")
    rows = run(counts, layouts, rounds, batch, xla=not args.no_xla)
    header = (
        f"fast global norm benchmark — TensorFlow {tf.__version__}, {platform.machine()}, "
        f"{os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"median of {rounds} interleaved rounds × {batch} calls\n"
    )
    print(header)
    print(table(rows))
    print(
        "\nstep speed-up = tf.clip step / fast step (whole step incl. reads and assigns); "
        "clip-cost speed-up = (tf.clip step − base) / (fast step − base); "
        "norm speed-up = tf.linalg.global_norm / fast_global_norm."
    )
    if args.json:
        Path(args.json).write_text(json.dumps({"header": header, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
