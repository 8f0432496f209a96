"""The shim's overhead per training step (sections ``shim`` and ``varscale`` of ``run.py``):
``tfclip_compat.clip_gradients_by_norm`` vs hand-written ``tf.clip_by_global_norm`` vs no clipping,
each mode in a fresh TensorFlow process (``_shim_bench.py``)."""

from __future__ import annotations

import json
import subprocess
from typing import Any, Callable, Dict, List, Tuple

from _common import HERE, PY, SUBPROCESS_ENV, Settings, fmt, loglog_slope, verdict


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


def render_shim(shim: Dict[str, Any], goals: List[Tuple[str, str, str]], body: List[str]) -> None:
    """The shim overhead table and its goals."""
    body.append("## Shim overhead per training step (CPU)")
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


def render_varscale(vs: Dict[str, Any], goals: List[Tuple[str, str, str]], body: List[str]) -> None:
    """The step time vs number of variables table and its goal."""
    body.append("## Shim: scaling with the number of variables (graph mode)")
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
