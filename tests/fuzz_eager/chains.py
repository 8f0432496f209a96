"""Arithmetic chains trained the TF 1 way and the TFC301 way, at the last bit.

``session_and_eager`` trains a loss expression 3 steps as a TF 1 session runs it and as TFC301's
eager step does (a ``tf.function`` over the placeholders' shapes, ``tf.compat.v1.gradients``, a
tensor result), from the same initial values, and returns the final bytes of every variable.
``python -m tests.fuzz_eager.chains --seed S --count N`` draws random chains of ``+ - * /`` over
tensors (matmuls, activations, slices, placeholders, variables) and constants (literals, numpy
data), in the families below, measures each on three seeds and writes ``<differing seeds> <chain>``
lines: ``probes/chains.txt`` is such a run, and ``test_probes.py`` checks that TFC301's chain check
(``Reader.check_arithmetic_chains``) declines every chain there that trained differently."""

from __future__ import annotations

import argparse
import operator
import random
import sys

import numpy as np

TENSORS = ["tf.matmul(x, W)", "b", "y", "tf.sigmoid(tf.matmul(x, W))", "x[:, :1]", "W[0]", "(x[:, :1] * W[0])",
           "tf.tanh(tf.matmul(x, W2))[:, :1]", "tf.matmul(x, W2)[:, 1:2]"]
CONSTANTS = ["1.0", "0.3", "1e-7", "YC", "XC[:, :1]", "2.0", "0.5", "3.0"]
SCALARS = ["tf.reduce_mean(tf.square(tf.matmul(x, W) + b - y))", "tf.nn.l2_loss(W)", "tf.nn.l2_loss(W2)",
           "tf.reduce_sum(tf.abs(W2))", "tf.reduce_sum(b * b)", "tf.reduce_mean(tf.tanh(tf.matmul(x, W2)))",
           "tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=tf.matmul(x, W) + b))"]
FAMILIES = ("mixed", "one_tensor", "tensors", "three", "scalars")


def session_and_eager(seed, expression, *, rows=None, gradients="tf", result=True, rewrites=True):
    """A loss ``expression`` of ``x`` [rows, 3], ``y`` [rows, 1] (fed), ``W`` [3, 1], ``b`` [1],
    ``W2`` [3, 3] and the numpy constants ``XC``, ``YC``, trained 3 steps by plain gradient descent
    as a TF 1 session runs it (grappler's rewrites on or, ``rewrites=False``, arithmetic
    optimization and constant folding off) and as TFC301's eager step does (a ``tf.function``
    over the placeholders' shapes; ``gradients="tf"``: ``tf.compat.v1.gradients``, ``"tape"``: a tape;
    ``result``: the step returns a tensor). The final bytes of every variable, for each side."""
    import contextlib

    import tensorflow as tf
    from tensorflow.core.protobuf import rewriter_config_pb2

    rng = np.random.RandomState(seed)
    values = [rng.uniform(-1, 1, shape).astype(np.float32) for shape in ([3, 1], [1], [3, 3])]
    XS, YS = rng.randn(4, 3).astype(np.float32), rng.rand(4, 1).astype(np.float32)
    out = []
    for graph in (tf.Graph(), None):
        with graph.as_default() if graph is not None else contextlib.nullcontext():
            variables = [tf.Variable(v) for v in values]
            opt = tf.compat.v1.train.GradientDescentOptimizer(0.1)

            def loss(x, y):
                scope = dict(zip(["W", "b", "W2"], variables), x=x, y=y, XC=XS, YC=YS, tf=tf)
                return eval(expression, {}, scope)

            if graph is not None:
                x, y = tf.compat.v1.placeholder(tf.float32, [rows, 3]), tf.compat.v1.placeholder(tf.float32, [rows, 1])
                train = opt.minimize(loss(x, y))
                config = tf.compat.v1.ConfigProto()
                if not rewrites:
                    options = config.graph_options.rewrite_options
                    options.arithmetic_optimization = options.constant_folding = rewriter_config_pb2.RewriterConfig.OFF
                with tf.compat.v1.Session(graph=graph, config=config) as sess:
                    sess.run(tf.compat.v1.global_variables_initializer())
                    for _ in range(3):
                        sess.run(train, {x: XS, y: YS})
                    out.append([v.tobytes() for v in sess.run(variables)])
            else:
                @tf.function(input_signature=[tf.TensorSpec([rows, 3], tf.float32), tf.TensorSpec([rows, 1], tf.float32)])
                def step(x, y):
                    if gradients == "tape":
                        with tf.GradientTape() as tape:
                            value = loss(x, y)
                        grads = tape.gradient(value, variables)
                    else:
                        value = loss(x, y)
                        grads = tf.compat.v1.gradients(value, variables)
                    opt.apply_gradients([(g, v) for g, v in zip(grads, variables) if g is not None])
                    if result:
                        return tf.constant(0)

                for _ in range(3):
                    step(XS, YS)
                out.append([v.numpy().tobytes() for v in variables])
    return out


def differing(expression, seeds=range(6), **options):
    """The seeds on which the two sides end with different bytes."""
    return [seed for seed in seeds if operator.ne(*session_and_eager(seed, expression, **options))]


def chain(r: random.Random, family: str) -> str:
    """One random chain of ``family``."""
    def tree(leaves, ops=("+", "-")):
        if len(leaves) == 1:
            return leaves[0]
        k = r.randint(1, len(leaves) - 1)
        op = r.choice(["+", "-", "*", "/"] if r.random() < 0.3 else list(ops))
        return f"({tree(leaves[:k], ops)} {op} {tree(leaves[k:], ops)})"

    if family == "mixed":  # tensors and constants
        leaves = [r.choice(TENSORS) if r.random() < 0.6 else r.choice(CONSTANTS) for _ in range(r.randint(3, 5))]
    elif family == "one_tensor":
        leaves = [r.choice(TENSORS[:6])] + [r.choice(CONSTANTS) for _ in range(r.randint(1, 3))]
    elif family == "tensors":
        leaves = [r.choice(TENSORS) for _ in range(r.randint(3, 5))]
    elif family == "three":  # every arrangement of three tensors
        a, b, c = r.sample(TENSORS, 3)
        return r.choice([f"(({a} + {b}) - {c})", f"({a} - ({b} + {c}))", f"(({a} - {b}) - {c})",
                         f"(({a} + {b}) + {c})", f"(({a} - {b}) + {c})", f"({a} + ({b} - {c}))",
                         f"({a} - ({b} - {c}))"])
    else:  # sums of scalar reductions, some scaled, some with a constant
        terms = [f"{r.choice(CONSTANTS[:3])} * {t}" if r.random() < 0.5 else t
                 for t in (r.choice(SCALARS) for _ in range(r.randint(3, 5)))]
        text = tree(terms, ("+", "+", "-"))
        return f"({text} + 0.5)" if r.random() < 0.2 else text
    if not any("W" in leaf or leaf == "b" for leaf in leaves):
        leaves[0] = "b"
    r.shuffle(leaves)
    return tree(leaves)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz_eager.chains", description=__doc__)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=50, help="chains per family")
    args = parser.parse_args(argv)
    r = random.Random(args.seed)
    for family in FAMILIES:
        for _ in range(args.count):
            text = chain(r, family)
            expression = text if family == "scalars" else f"tf.reduce_mean(tf.square({text}))"
            try:
                seeds = differing(expression, range(3), rows=4)
            except Exception as exc:  # a chain of mismatched shapes: not a program
                print(f"# {type(exc).__name__}: {text}", flush=True)
                continue
            print(f"{len(seeds)} {family} {expression}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
