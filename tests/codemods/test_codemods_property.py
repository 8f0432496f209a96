"""Property tests: on arbitrary programs the engine never crashes, never emits unparsable
code, and is idempotent.

Two generators:

* ``hypothesmith.from_node()`` (random libcst-valid Python) with a legacy clipping snippet
  spliced in at module level, so the rules actually run on strange surroundings;
* a generator of our own that nests legacy snippets (every shape the rules recognise, in
  every import form, plus look-alikes) inside random functions, classes, ``if``/``with``/
  ``for``/``try`` blocks, comments and blank lines.

Bounded: few examples, no deadline (libcst metadata is slow on big trees), so the module
runs in well under 30 seconds.
"""

from __future__ import annotations

import textwrap

import hypothesmith
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from codemods.api import Options, SourceError, migrate_source

IMPORTS = [
    "import tensorflow as tf",
    "import tensorflow.compat.v1 as tf",
    "from tensorflow import contrib",
    "from tensorflow.contrib import training as ct",
    "from tensorflow.contrib import layers",
    "from tensorflow.contrib.estimator import clip_gradients_by_norm",
    "from tensorflow.contrib.training import create_train_op, clip_gradient_norms_fn",
    "import tensorflow.contrib.training",
    "import tfclip_compat",
]

# Legacy sites (and look-alikes): each is a complete statement block at any indentation.
SNIPPETS = [
    "opt = tf.contrib.estimator.clip_gradients_by_norm(tf.train.AdamOptimizer(0.1), clip_norm=5.0)",
    "opt = clip_gradients_by_norm(opt, 1.0)",
    "opt = contrib.estimator.clip_gradients_by_norm(opt, 1.0)",
    "train_op = ct.create_train_op(loss, opt, transform_grads_fn=ct.clip_gradient_norms_fn(1.0))",
    "train_op = create_train_op(loss, opt, transform_grads_fn=clip_gradient_norms_fn(3.0))",
    "train_op = tensorflow.contrib.training.create_train_op(loss, opt)",
    "gv = tf.contrib.training.clip_gradient_norms(gv, 2.0)",
    "op = layers.optimize_loss(loss, gs, 0.1, 'Adam', clip_gradients=5.0)",
    "op = tf.contrib.layers.optimize_loss(loss, gs, 0.1, 'SGD', gradient_noise_scale=0.1)",
    "op = tf.contrib.training.create_train_op(*args, **kwargs)",
    "fn = getattr(tf.contrib.training, name)",
    "c = tf.clip_by_average_norm(t, 1.0)",
    "c = tf.compat.v1.clip_by_average_norm(t, 1.0, name='avg')",
    "activations = tf.clip_by_value(activations, -1, 1, name=None)",
    "train_op = opt.minimize(loss)  # noqa: TFC103",
    "optimizer = tf.train.AdamOptimizer(1e-3)\n"
    "gradients, variables = zip(*optimizer.compute_gradients(loss))\n"
    "gradients, _ = tf.clip_by_global_norm(gradients, 5.0)\n"
    "optimize = optimizer.apply_gradients(zip(gradients, variables))",
    "optimizer = tf.train.AdamOptimizer(learning_rate=0.01)\n"
    "gvs = optimizer.compute_gradients(cost)\n"
    "capped_gvs = [(tf.clip_by_value(grad, -1., 1.), var) for grad, var in gvs]\n"
    "train_op = optimizer.apply_gradients(capped_gvs)",
    "tvars = tf.trainable_variables()\n"
    "grads = tf.gradients(loss, tvars)\n"
    "(grads, _) = tf.clip_by_global_norm(grads, clip_norm=1.0)\n"
    "train_op = optimizer.apply_gradients(zip(grads, tvars), global_step=global_step)",
    "w = tf.Variable(1.0)\n"
    "loss = (w * 3.0 - 1.0) ** 2\n"
    "train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)",
]

FILLERS = [
    "x = 1",
    "pass",
    "# a comment about tf.contrib",
    "y = [i for i in range(3)]",
    "print('tf.contrib.estimator.clip_gradients_by_norm')",
    "tfclip = None",
    "loss = compute_loss()",
    "del x",
]

HEADERS = [
    "def f(loss, opt, gv, t):",
    "async def g():",
    "class Model(object):",
    "if True:",
    "with tf.Graph().as_default():",
    "for step in range(10):",
    "while False:",
    "try:",
    "@decorator\ndef h(*args, **kwargs):",
]


def _block(depth: int):
    """A strategy for a list of lines forming a valid block (nested up to ``depth``)."""
    leaf = st.sampled_from(SNIPPETS + FILLERS).map(lambda s: s.split("\n"))
    if depth == 0:
        return st.lists(leaf, min_size=1, max_size=3).map(lambda ls: [ln for part in ls for ln in part])

    def nest(args):
        header, body = args
        if all(ln.lstrip().startswith("#") for ln in body):
            body = body + ["pass"]  # a block of comments alone is not a block
        lines = header.split("\n") + ["    " + ln for ln in body]
        if header == "try:":
            lines += ["except Exception:", "    raise"]
        return lines

    compound = st.tuples(st.sampled_from(HEADERS), _block(depth - 1)).map(nest)
    return st.lists(st.one_of(leaf, compound), min_size=1, max_size=3).map(
        lambda ls: [ln for part in ls for ln in part]
    )


@st.composite
def legacy_programs(draw) -> str:
    """A random module: some import forms, then nested blocks of legacy sites and filler."""
    imports = draw(st.lists(st.sampled_from(IMPORTS), min_size=1, max_size=4, unique=True))
    body = draw(_block(2))
    blank = draw(st.sampled_from(["\n", "\n\n"]))
    return "\n".join(imports) + blank + "\n".join(body) + "\n"


def _check(source: str, options: Options) -> None:
    try:
        first = migrate_source(source, options, path="gen.py")
    except SourceError:
        return  # refused cleanly: left untouched by contract
    compile(first.code, "gen.py", "exec")
    second = migrate_source(first.code, options, path="gen.py")
    assert second.code == first.code, "second run changed the output"
    assert not second.changed


OPTIONS = st.sampled_from(
    [Options(), Options(unsafe_fixes=True), Options(add_clip_norm=5.0), Options(apply_fixes=False)]
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=legacy_programs(), options=OPTIONS)
def test_engine_on_generated_legacy_programs(source: str, options: Options) -> None:
    """Nested legacy snippets in random blocks: no crash, parsable output, idempotent."""
    compile(source, "gen.py", "exec")  # the generator itself only makes valid programs
    _check(source, options)


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)
@given(
    program=hypothesmith.from_node(),
    snippet=st.sampled_from(SNIPPETS),
    imports=st.sampled_from(IMPORTS),
    options=OPTIONS,
)
def test_engine_on_hypothesmith_programs(program: str, snippet: str, imports: str, options: Options) -> None:
    """Arbitrary libcst-valid programs with a legacy snippet spliced in: no crash, parsable, idempotent."""
    source = imports + "\n" + program
    if not source.endswith("\n"):
        source += "\n"
    source += textwrap.dedent(snippet) + "\n"
    try:
        compile(source, "gen.py", "exec")
    except (SyntaxError, ValueError):
        assume(False)  # hypothesmith produced code this Python rejects
    _check(source, options)


def test_form_feed_indentation_is_refused_not_a_crash():
    """A module whose first indentation starts with a form feed (found by hypothesmith): libcst
    cannot build an added import for it, so ``fix`` leaves the file unchanged and says why
    (TFC900) instead of raising, and the finding is still reported."""
    source = ("import tensorflow as tf\nclass A:\n\x0c pass\n"
              "opt = tf.contrib.estimator.clip_gradients_by_norm(tf.train.AdamOptimizer(0.1), clip_norm=5.0)\n")
    result = migrate_source(source, Options(), path="gen.py")
    assert result.code == source and not result.changed
    assert [d.code for d in result.diagnostics] == ["TFC900", "TFC001"]
