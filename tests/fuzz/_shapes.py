"""Round 13's productions (issue 25, precision): values read as shapes, and library calls that
read their arguments, so that the fuzzer runs the rules that let them stand outside the tape
(``codemods/rules/tape/tfapi.py``'s ``NON_DIFFERENTIABLE_ARGS``; ``mutations.py``'s
``leaves_arguments``) -- inside those rules and just outside them.

One graph block ``shape_block(g, h, width, form) -> (lines, out, out_width)`` (``_blocks``'
contract; ``form`` from :func:`draw`).
Each builds a small holder object through a dict of classes (so that the planner cannot see its
callers, as with a DQN class constructed in another file) and then reads its field:

* ``tensor_shape``: the field holds an int tensor computed from the model's activations
  (``tf.shape(h)[1]``) and is read only as ``tf.reshape``'s shape;
* ``int_shape``: the field holds a Python int, read as the shape of a ``get_variable``, of
  ``tf.reshape``, as a reduction axis, and by NumPy and ``str.format`` calls outside the model;
* ``value``: the field holds a tensor computed from a variable of the block and is multiplied
  into the model (a real gradient path: no safe fix may leave it outside the tape);
* ``bystander`` (no holder): a monitoring tensor computed from its own variable first, then read
  by a statement that sits among the loss's statements without being one of them
  (``codemods/rules/tape/slicing.py`` checks only the slice's reads): the tape records it, and
  nothing of the loss's gradient changes.

Every choice draws from the sixth stream ``g.r6`` (``"seed:index:round13"``), so a program these
productions leave alone is byte-identical to the fifth round's.
"""

from __future__ import annotations

from tests.fuzz._precision import weight

# The share of model bodies that contain this block.
GRAPH_SHARE = 0.15


BYSTANDER = 3


def draw(g):
    """The form of this model body's block (None: no block), drawn before any other block: the
    ``bystander`` form is placed first in the body (its monitoring tensor then precedes every
    statement of the loss's slice), the others where :func:`shape_block`'s caller puts them."""
    if g.r6.random() >= GRAPH_SHARE:
        return None
    return g.r6.randrange(4)


def shape_block(g, h: str, width: int, form: int):
    g.tag("shapes")
    cls, makers, dims, out = g.new("Dims"), g.new("dims_makers"), g.new("dims"), g.new("h")
    lines = [f"class {cls}(object):",
             "    def __init__(self, cols, gain=1.0):",
             "        self.cols = cols",
             "        self.gain = gain",
             f'{makers} = {{"dims": {cls}}}']
    if form == BYSTANDER:
        # a tensor computed first (before every statement of the loss's slice), read by a
        # statement that sits between the slice's statements but is not one of them
        g.tag("shapes_bystander")
        more, w = weight(g, (width, 1), "w_monitor", g.r6)
        more = [more[0][:-1] + ", trainable=False)"]  # (trainable, TF 1's clipping would meet its None gradient)
        weights, w_b = weight(g, (width, width), "w_b", g.r6)
        monitor, scaled, out = g.new("monitor"), g.new("monitor_scaled"), g.new("h")
        return more + weights + [f"{monitor} = tf.reduce_mean(tf.matmul({h}, {w}))",
                                 f"{out} = tf.tanh(tf.matmul({h}, {w_b}))",
                       f"{scaled} = {monitor} * 2.0 + tf.reduce_sum({out}) * 0.0"], out, width
    if form == 0:
        g.tag("shapes_tensor_shape")
        lines += [f'{dims} = {makers}["dims"](tf.shape({h})[1])',
                  f"{out} = tf.tanh(tf.reshape({h} * 1.5, [-1, {dims}.cols]))"]
    elif form == 1:
        g.tag("shapes_int_shape")
        more, w = weight(g, (width, width), "w_dims", g.r6)
        pick = g.new("pick")
        lines += [f'{dims} = {makers}["dims"]({width})',
                  f"{pick} = np.random.RandomState({g.r6.randint(1, 99)}).randint(0, {dims}.cols)",
                  f'{dims}_label = "dims_{{}}_{{}}".format({dims}.cols, {pick})']
        lines += [ln.replace(f"[{width}, {width}]", f"[{dims}.cols, {width}]", 1) for ln in more]
        lines.append(f"{out} = tf.tanh(tf.matmul(tf.reshape({h}, [-1, {dims}.cols]), {w}) "
                     f"+ 0.1 * tf.reduce_sum({h}, axis={dims}.cols - {width - 1}, keepdims=True))")
    else:
        g.tag("shapes_value")
        more, w = weight(g, (width, width), "w_gain", g.r6)
        lines += more + [f'{dims} = {makers}["dims"]({width}, tf.reduce_mean(tf.abs({w})) + 0.5)',
                         f"{out} = tf.tanh({h} * {dims}.gain)"]
    return lines, out, width


SHAPE_TAGS = frozenset({"shapes", "shapes_tensor_shape", "shapes_int_shape", "shapes_value", "shapes_bystander"})
