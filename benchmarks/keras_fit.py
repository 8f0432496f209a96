"""Benchmark and comparison: tfclip_compat's Keras wrapper inside ``model.fit``.

Usage::

    python benchmarks/keras_fit.py              # overhead: CPU time per training step
    python benchmarks/keras_fit.py --compare    # 1 device vs 2 replicas, Keras' clipping vs ours
    python benchmarks/keras_fit.py --quick      # smoke run (both, few rounds)
    python benchmarks/keras_fit.py --json out.json

``--compare`` trains the same model on the same GLOBAL batches (32 examples, batch 8,
3 epochs) on one device and under ``MirroredStrategy`` over 2 logical CPUs, and prints the
largest absolute difference of the trained weights, for Keras' ``global_clipnorm`` /
``clipnorm`` and for the tfclip_compat equivalents (and for no clipping, the floor).

The overhead run times ``model.fit`` steps of an MLP (4 x Dense(256), 200k parameters,
batch 64) and of a tiny model (Dense(8) -> Dense(1)): no clipping (yardstick), Keras'
``global_clipnorm``, and ``tfclip_compat.clip_gradients_by_norm`` (and AutoClip, a
stateful transform, and the fallback used for optimizer classes whose all-reduce cannot be
switched off: a second all-reduce per step), each optimizer SGD, on one device and under
MirroredStrategy (2 replicas). Contenders run interleaved, one ``fit`` of ``--steps`` steps each per round;
figures are medians over rounds of process CPU time per step (user + system, all threads);
wall time is printed too. Nothing here asserts a timing.
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
from typing import Any, Callable, Dict, List, Optional, Sequence

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

_CPUS = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(
    _CPUS[0], [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()]
)

import keras  # noqa: E402

import tfclip_compat as tfc  # noqa: E402

CLIP = 1.0


def _strategy() -> tf.distribute.Strategy:
    devices = tf.config.list_logical_devices("CPU")[:2]
    return tf.distribute.MirroredStrategy([d.name for d in devices])


# ----------------------------------------------------------------------------- compare
def _compare_data() -> Any:
    rng = np.random.RandomState(0)
    x = rng.randn(32, 6).astype(np.float32)
    y = (x @ rng.randn(6, 1) * 3 + rng.randn(32, 1)).astype(np.float32)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(8)


def _compare_model(dtype: Optional[str] = None) -> keras.Model:
    keras.utils.set_random_seed(1)
    return keras.Sequential([
        keras.Input((6,)),
        keras.layers.Dense(8, activation="tanh", dtype=dtype),
        keras.layers.Dense(1, dtype="float32" if dtype else None),
    ])


def _fit_weights(make_opt: Callable[[], Any], strategy: Optional[Any], dtype: Optional[str] = None) -> np.ndarray:
    scope = strategy.scope() if strategy is not None else tf.name_scope("one_device")
    with scope:
        model = _compare_model(dtype)
        model.compile(optimizer=make_opt(), loss="mse")
    model.fit(_compare_data(), epochs=3, verbose=0)
    return np.concatenate([w.ravel() for w in model.get_weights()])


def _lso(opt: Any) -> Any:
    return keras.optimizers.LossScaleOptimizer(opt, initial_scale=2.0 ** 10)


COMPARE_ROWS = [
    # (optimizer, clipping, Keras' own, ours, dtype policy)
    ("SGD(0.1)", "none", lambda: keras.optimizers.SGD(0.1), None, None),
    ("SGD(0.1)", "global norm 1.0", lambda: keras.optimizers.SGD(0.1, global_clipnorm=CLIP),
     lambda: tfc.clip_gradients_by_norm(keras.optimizers.SGD(0.1), CLIP), None),
    ("SGD(0.1)", "per-tensor norm 1.0", lambda: keras.optimizers.SGD(0.1, clipnorm=CLIP),
     lambda: tfc.wrap_optimizer(keras.optimizers.SGD(0.1), tfc.ClipByNorm(CLIP)), None),
    ("Adam(0.05)", "global norm 1.0", lambda: keras.optimizers.Adam(0.05, global_clipnorm=CLIP),
     lambda: tfc.clip_gradients_by_norm(keras.optimizers.Adam(0.05), CLIP), None),
    ("SGD(0.05), mixed_float16", "none", lambda: _lso(keras.optimizers.SGD(0.05)), None, "mixed_float16"),
    ("SGD(0.05), mixed_float16", "global norm 1.0", lambda: _lso(keras.optimizers.SGD(0.05, global_clipnorm=CLIP)),
     lambda: _lso(tfc.clip_gradients_by_norm(keras.optimizers.SGD(0.05), CLIP)), "mixed_float16"),
]


def compare() -> List[Dict[str, Any]]:
    """Max |w(2 replicas) - w(1 device)| for every row, Keras' clipping and ours."""
    two = _strategy()
    rows = []
    for opt_name, clipping, theirs, ours, dtype in COMPARE_ROWS:
        keras.config.set_dtype_policy(dtype or "float32")
        row: Dict[str, Any] = {"optimizer": opt_name, "clipping": clipping}
        for who, make in (("keras", theirs), ("ours", ours)):
            if make is None:
                continue
            one = _fit_weights(make, None, dtype)
            row[who] = float(np.max(np.abs(_fit_weights(make, two, dtype) - one)))
            row[who + "_one_device"] = one
        if "ours_one_device" in row:
            row["ours_vs_keras_one_device"] = float(np.max(np.abs(row["ours_one_device"] - row["keras_one_device"])))
        row.pop("ours_one_device", None)
        row.pop("keras_one_device", None)
        rows.append(row)
        print(f"  compared {opt_name}: {clipping}", file=sys.stderr)
    keras.config.set_dtype_policy("float32")
    return rows


def compare_table(rows: Sequence[Dict[str, Any]]) -> str:
    """Markdown table of :func:`compare`'s rows."""
    lines = [
        "| optimizer | clipping | Keras' own: max abs diff 2 replicas vs 1 device | tfclip_compat: same | "
        "tfclip_compat vs Keras on 1 device |",
        "|---|---|---:|---:|---:|",
    ]
    for r in rows:
        ours = f"{r['ours']:.2g}" if "ours" in r else "–"
        same = f"{r['ours_vs_keras_one_device']:.2g}" if "ours_vs_keras_one_device" in r else "–"
        lines.append(f"| {r['optimizer']} | {r['clipping']} | {r['keras']:.3g} | {ours} | {same} |")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- overhead
MODELS = {
    "MLP 4x256 (200k params), batch 64": (32, [256, 256, 256, 256], 64),
    "tiny Dense(8)->Dense(1), batch 8": (6, [8], 8),
}
class _SGDOwnApply(keras.optimizers.SGD):
    """SGD whose class overrides ``apply``: the wrapper cannot switch its all-reduce off and
    falls back to replica 0 passing the result, the others zeros (a second all-reduce)."""

    def apply(self, grads: Any, trainable_variables: Any = None) -> Any:
        return super().apply(grads, trainable_variables)


CONTENDERS: Dict[str, Callable[[], Any]] = {
    "no clipping": lambda: keras.optimizers.SGD(0.01),
    "Keras global_clipnorm": lambda: keras.optimizers.SGD(0.01, global_clipnorm=CLIP),
    "tfclip_compat clip_gradients_by_norm": lambda: tfc.clip_gradients_by_norm(keras.optimizers.SGD(0.01), CLIP),
    "tfclip_compat AutoClip": lambda: tfc.wrap_optimizer(keras.optimizers.SGD(0.01), tfc.AutoClip(history_size=1000)),
    "tfclip_compat, fallback (2 all-reduces)": lambda: tfc.clip_gradients_by_norm(
        _SGDOwnApply(0.01, name="sgd_own_apply"), CLIP),
}


def _overhead_model(inputs: int, hidden: Sequence[int]) -> keras.Model:
    keras.utils.set_random_seed(0)
    layers = [keras.Input((inputs,))] + [keras.layers.Dense(h, activation="relu") for h in hidden]
    return keras.Sequential(layers + [keras.layers.Dense(1)])


def _fit_runner(spec: Any, make_opt: Callable[[], Any], strategy: Optional[Any], steps: int) -> Callable[[], None]:
    inputs, hidden, batch = spec
    rng = np.random.RandomState(0)
    x = rng.randn(batch * 4, inputs).astype(np.float32)
    y = rng.randn(batch * 4, 1).astype(np.float32) * 10
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(batch).repeat()
    scope = strategy.scope() if strategy is not None else tf.name_scope("one_device")
    with scope:
        model = _overhead_model(inputs, hidden)
        model.compile(optimizer=make_opt(), loss="mse")

    def run() -> None:
        model.fit(ds, epochs=1, steps_per_epoch=steps, verbose=0)

    return run


def overhead(rounds: int, steps: int, quick: bool) -> List[Dict[str, Any]]:
    """Median CPU and wall seconds per step for every (model, strategy, contender)."""
    rows = []
    layouts = [("1 device", None), ("MirroredStrategy, 2 replicas", _strategy())]
    for model_name, spec in MODELS.items():
        for layout, strategy in layouts:
            runners = {name: _fit_runner(spec, make, strategy, steps) for name, make in CONTENDERS.items()}
            for run in runners.values():  # trace and warm up
                run()
            cpu: Dict[str, List[float]] = {k: [] for k in runners}
            wall: Dict[str, List[float]] = {k: [] for k in runners}
            names = list(runners)
            for r in range(rounds):
                for name in names if r % 2 == 0 else list(reversed(names)):
                    c0, w0 = time.process_time(), time.perf_counter()
                    runners[name]()
                    cpu[name].append((time.process_time() - c0) / steps)
                    wall[name].append((time.perf_counter() - w0) / steps)
            rows.append({
                "model": model_name, "layout": layout,
                "cpu_s": {k: statistics.median(v) for k, v in cpu.items()},
                "wall_s": {k: statistics.median(v) for k, v in wall.items()},
            })
            print(f"  measured {model_name} / {layout}", file=sys.stderr)
        if quick:
            break
    return rows


def overhead_table(rows: Sequence[Dict[str, Any]]) -> str:
    """Markdown table of :func:`overhead`'s rows: ms per step and ratios."""
    names = list(CONTENDERS)
    head = " | ".join(f"{n} CPU ms/step" for n in names)
    lines = [
        f"| model | layout | {head} | ours / Keras global_clipnorm (CPU) | ours / no clipping (CPU) | "
        "ours / Keras (wall) |",
        "|---|---|" + "---:|" * (len(names) + 3),
    ]
    ours, keras_clip, none = names[2], names[1], names[0]
    for r in rows:
        c, w = r["cpu_s"], r["wall_s"]
        cells = " | ".join(f"{c[n] * 1e3:.2f}" for n in names)
        lines.append(
            f"| {r['model']} | {r['layout']} | {cells} | {c[ours] / c[keras_clip]:.2f}× | "
            f"{c[ours] / c[none]:.2f}× | {w[ours] / w[keras_clip]:.2f}× |"
        )
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the comparison and/or the overhead benchmark and print markdown tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", action="store_true", help="only the 1-device vs 2-replica comparison")
    parser.add_argument("--quick", action="store_true", help="smoke run: few rounds, first model only")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 9, quick 2)")
    parser.add_argument("--steps", type=int, default=None, help="fit steps per measurement (default 40)")
    parser.add_argument("--json", default=None, help="also write the raw figures to this file")
    args = parser.parse_args(argv)
    header = (
        f"TensorFlow {tf.__version__}, Keras {keras.__version__}, {platform.machine()}, "
        f"{os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    print(header + "\n")
    result: Dict[str, Any] = {"header": header}
    if args.compare or args.quick:
        result["compare"] = compare()
        print("Same model, data and global batch (32 examples, batch 8, 3 epochs); 2 replicas = "
              "MirroredStrategy over 2 logical CPUs; mixed_float16 rows use a LossScaleOptimizer "
              "with initial scale 2**10 (no overflow on either layout).\n")
        print(compare_table(result["compare"]) + "\n")
    if not args.compare:
        rounds = args.rounds or (2 if args.quick else 9)
        steps = args.steps or (10 if args.quick else 40)
        result["overhead"] = overhead(rounds, steps, args.quick)
        print(f"model.fit, SGD, median of {rounds} interleaved rounds × {steps} steps; CPU = process "
              "user+system time (all threads) per step.\n")
        print(overhead_table(result["overhead"]))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2, default=float), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
