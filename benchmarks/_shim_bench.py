"""Per-step cost of gradient clipping on CPU: the shim vs hand-written ``tf.clip_by_global_norm``.

Run by ``benchmarks/run.py`` in a fresh subprocess per mode (TensorFlow start-up and, for
``mirrored``, the logical-device split must happen in a process of its own)::

    python benchmarks/_shim_bench.py MODE[,MODE...] [--vars N[,N...]] [--width W] [--batch B] [--steps S] ...

Modes (the last stdout line is JSON with per-contender step times per mode and size):

* ``graph``    -- ``tf.compat.v1`` graph + Session, ``GradientDescentOptimizer``. Contenders:
  ``none`` (``minimize``), ``hand`` (``compute_gradients`` + ``tf.clip_by_global_norm`` +
  ``apply_gradients``), ``shim`` (``tfclip_compat.clip_gradients_by_norm(opt, c).minimize``).
* ``function`` -- Keras 3 ``Sequential`` + ``tf.GradientTape`` in a ``tf.function``, Keras SGD.
  ``none`` / ``hand`` (tape + ``tf.clip_by_global_norm``) / ``shim`` (wrapped ``apply_gradients``).
* ``mirrored`` -- ``function`` inside ``tf.distribute.MirroredStrategy`` over two logical CPU
  devices configured here; the step is ``strategy.run``. ``hand`` clips each replica's part (the
  known defect); ``shim`` clips the aggregated gradient.

The model is a stack of ``vars // 2`` tanh dense layers (kernel + bias = 2 variables each) of
width ``W`` on a constant batch (no input pipeline in the timing). Contenders are built
side by side and timed in interleaved rounds (rotating order); medians and minima are reported
for wall time (``time.perf_counter``) and process CPU time (``time.process_time``, all threads).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Tuple

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

CLIP_NORM = 1e-3  # far below the gradient norm: clipping is active on every step
LEARNING_RATE = 0.1


def _shim() -> Any:
    """Return ``tfclip_compat.clip_gradients_by_norm`` or raise ImportError/AttributeError."""
    import tfclip_compat

    return tfclip_compat.clip_gradients_by_norm


Contender = Tuple[Callable[[], None], Callable[[], List[Any]]]


def build_graph(tf: Any, kind: str, args: argparse.Namespace) -> Contender:
    """Build a ``tf.compat.v1`` graph for one contender; return (run one step, read variables)."""
    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(0)
        x = tf.constant(_batch(args), dtype=tf.float32)
        h = x
        for i in range(args.vars // 2):
            w = v1.get_variable(f"w{i}", [args.width, args.width],
                                initializer=v1.glorot_uniform_initializer())
            b = v1.get_variable(f"b{i}", [args.width], initializer=v1.zeros_initializer())
            h = tf.tanh(tf.matmul(h, w) + b)
        loss = tf.reduce_mean(tf.square(h))
        opt = v1.train.GradientDescentOptimizer(LEARNING_RATE)
        if kind == "none":
            train_op = opt.minimize(loss)
        elif kind == "hand":
            grads, variables = zip(*opt.compute_gradients(loss))
            clipped, _ = tf.clip_by_global_norm(grads, CLIP_NORM)
            train_op = opt.apply_gradients(zip(clipped, variables))
        elif kind == "shim":
            train_op = _shim()(opt, CLIP_NORM).minimize(loss)
        else:
            raise ValueError(f"unknown contender {kind!r}")
        init = v1.global_variables_initializer()
        trainable = v1.trainable_variables()
    session = v1.Session(graph=graph)
    session.run(init)
    run = session.make_callable(train_op)
    return run, lambda: session.run(trainable)


def _batch(args: argparse.Namespace) -> Any:
    import numpy as np

    return np.random.default_rng(0).standard_normal((args.batch, args.width)).astype("float32")


def build_function(tf: Any, kind: str, args: argparse.Namespace, strategy: Any = None) -> Contender:
    """Build a Keras model + ``tf.function`` step for one contender (optionally distributed)."""
    import keras

    def make() -> Any:
        keras.utils.set_random_seed(0)
        layers = [keras.Input((args.width,))]
        layers += [keras.layers.Dense(args.width, activation="tanh") for _ in range(args.vars // 2)]
        model = keras.Sequential(layers)
        optimizer = keras.optimizers.SGD(LEARNING_RATE)
        optimizer.build(model.trainable_variables)
        applier = _shim()(optimizer, CLIP_NORM) if kind == "shim" else optimizer
        return model, optimizer, applier

    if strategy is None:
        model, optimizer, applier = make()
    else:
        with strategy.scope():
            model, optimizer, applier = make()
    x = tf.constant(_batch(args))

    def replica_step(inputs: Any) -> Any:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(inputs, training=True)))
        variables = model.trainable_variables
        grads = tape.gradient(loss, variables)
        if kind == "hand":
            grads, _ = tf.clip_by_global_norm(grads, CLIP_NORM)
        elif kind not in ("none", "shim"):
            raise ValueError(f"unknown contender {kind!r}")
        applier.apply_gradients(zip(grads, variables))
        return loss

    if strategy is None:
        step = tf.function(lambda: replica_step(x))
    else:
        # Each replica gets half of the batch: the same global batch as one device.
        dataset = tf.data.Dataset.from_tensors(x).unbatch().batch(args.batch)
        dist = strategy.experimental_distribute_dataset(dataset)
        per_replica = next(iter(dist))
        step = tf.function(lambda: strategy.run(replica_step, args=(per_replica,)))

    def run() -> None:
        step()

    return run, lambda: [v.numpy() for v in model.trainable_variables]


def time_contenders(builders: Dict[str, Callable[[], Contender]],
                    args: argparse.Namespace) -> Dict[str, Any]:
    """Build every contender, warm it up, then time interleaved rounds; return per-step stats.

    Every contender runs the same number of steps from the same initial values, so afterwards
    ``moved`` (largest change of any variable) shows each step really trained, and the shim's
    variables can be compared with the hand-written ones (equal outside a distribution strategy).
    """
    import numpy as np

    runs: Dict[str, Callable[[], None]] = {}
    readers: Dict[str, Callable[[], List[Any]]] = {}
    initial: Dict[str, List[Any]] = {}
    result: Dict[str, Any] = {}
    for name, builder in builders.items():
        start = time.perf_counter()
        try:
            runs[name], readers[name] = builder()
            initial[name] = readers[name]()
            for _ in range(args.warmup):
                runs[name]()
        except (ImportError, AttributeError, NotImplementedError) as exc:
            result[name] = {"error": f"{type(exc).__name__}: {exc}"[:200]}
            continue
        result[name] = {"build_s": time.perf_counter() - start}
    names = list(runs)
    # Building a later contender disturbs the earlier ones' first steps (measured: one slow round
    # for every contender but the last built), so warm all of them again once all exist.
    for name in names:
        for _ in range(args.warmup):
            runs[name]()
    gc.collect()
    walls: Dict[str, List[float]] = {n: [] for n in names}
    cpus: Dict[str, List[float]] = {n: [] for n in names}
    for round_index in range(args.rounds):
        shift = round_index % max(1, len(names))
        for name in names[shift:] + names[:shift]:
            run = runs[name]
            c0, w0 = time.process_time(), time.perf_counter()
            for _ in range(args.steps):
                run()
            walls[name].append((time.perf_counter() - w0) / args.steps)
            cpus[name].append((time.process_time() - c0) / args.steps)
    final = {name: readers[name]() for name in names}
    for name in names:
        result[name]["moved"] = float(max(np.max(np.abs(a - b)) for a, b in zip(final[name], initial[name])))
    if "hand" in final and "shim" in final:
        result["shim_vs_hand_max_abs_diff"] = float(
            max(np.max(np.abs(a - b)) for a, b in zip(final["shim"], final["hand"])))
    for name in names:
        result[name].update({
            "wall_ms": 1e3 * statistics.median(walls[name]),
            "wall_min_ms": 1e3 * min(walls[name]),
            "cpu_ms": 1e3 * statistics.median(cpus[name]),
            "cpu_min_ms": 1e3 * min(cpus[name]),
        })
    return result


def main(argv: List[str] | None = None) -> int:
    """Run the requested modes and sizes; print one JSON object (``{"results": [...]}``) last."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modes", help="comma-separated: graph, function, mirrored")
    parser.add_argument("--vars", default="200", help="comma-separated variable counts (even)")
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=10, help="steps per timed round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--contenders", default="none,hand,shim")
    args = parser.parse_args(argv)
    modes = args.modes.split(",")
    unknown = sorted(set(modes) - {"graph", "function", "mirrored"})
    if unknown:
        parser.error(f"unknown mode(s) {unknown}: use graph, function, mirrored")
    try:
        sizes = [int(v) for v in args.vars.split(",")]
    except ValueError:
        parser.error(f"--vars must be comma-separated integers, got {args.vars!r}")
    if any(v < 2 or v % 2 for v in sizes):
        parser.error("--vars values must be even numbers >= 2 (kernel + bias per layer)")

    import tensorflow as tf

    strategy = None
    if "mirrored" in modes:
        # Must happen before the runtime initialises, hence in this fresh process.
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])
        strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    results = []
    for mode in modes:
        for size in sizes:
            sized = argparse.Namespace(**{**vars(args), "vars": size})
            mode_strategy = strategy if mode == "mirrored" else None
            builders: Dict[str, Callable[[], Contender]] = {}
            for kind in args.contenders.split(","):
                if mode == "graph":
                    builders[kind] = lambda kind=kind, a=sized: build_graph(tf, kind, a)
                else:
                    builders[kind] = lambda kind=kind, a=sized, s=mode_strategy: build_function(
                        tf, kind, a, s)
            results.append({
                "mode": mode, "vars": size, "width": args.width, "batch": args.batch,
                "steps": args.steps, "rounds": args.rounds,
                "replicas": mode_strategy.num_replicas_in_sync if mode_strategy else 1,
                "contenders": time_contenders(builders, sized),
            })
    print(json.dumps({"results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
