"""Round 7's productions (issue 25): names rebound later in the same block, so that the fuzzer
runs the backward slice's rule that a definite rebinding ends a name's history
(``codemods/rules/tape/slicing.py``, ``_definite_rebinds``) -- inside the rule and just outside it.

One graph block ``rebinding_block(g, h, width) -> (lines, out, out_width)`` (``_blocks``' contract):

* ``definite``: ``t = tf.matmul(h, w1)``, maybe a gradient computation that reads the first ``t``
  (``tf.gradients`` for a penalty nobody uses), then ``t = tf.tanh(tf.matmul(h, w2))`` read by the
  loss: the first two statements may stay outside the tape;
* ``alias_kept``: the first ``t`` is kept under another name the loss reads (``keep = t``);
* ``rebuilt_list``: a list rebound from itself (``parts = list(parts) + [...]``) after an append;
* ``conditional``: the rebinding sits under an ``if`` (not definite: the first ``t`` may reach the
  loss);
* ``alias_mutated``: a list rebound while an alias of the old list is appended to and read.

Every choice draws from the fifth stream ``g.r5`` (``"seed:index:round7"``), so a program these
productions leave alone is byte-identical to the fourth round's.
"""

from __future__ import annotations

from tests.fuzz._precision import weight

# The share of model bodies that contain this block.
GRAPH_SHARE = 0.15


def rebinding_block(g, h: str, width: int):
    g.tag("rebinding")
    lines, w1 = weight(g, (width, width), "w_rb", g.r5)
    more, w2 = weight(g, (width, width), "w_rb", g.r5)
    lines += more
    t, out = g.new("t_rb"), g.new("h")
    choice = g.r5.randrange(5)
    if choice == 0:
        g.tag("rebinding_definite")
        lines.append(f"{t} = tf.matmul({h}, {w1})")
        if g.r5.random() < 0.5:
            g.tag("rebinding_definite_gradient")
            aux = g.new("aux_grad")
            lines.append(f"{aux} = tf.gradients(tf.reduce_sum(tf.square({t})), [{w1}])[0]")
        # (the new value reads `w1` too: every weight keeps a gradient, or a clip of a None gradient
        # would make the TF 1 program itself invalid)
        lines += [f"{t} = tf.tanh(tf.matmul({h}, {w2}) + 0.1 * tf.matmul({h}, {w1}))", f"{out} = {t} * 1.0"]
    elif choice == 1:
        g.tag("rebinding_alias_kept")
        keep = g.new("keep_rb")
        lines += [f"{t} = tf.matmul({h}, {w1})", f"{keep} = {t}", f"{t} = tf.tanh(tf.matmul({h}, {w2}))",
                  f"{out} = {t} + 0.5 * {keep}"]
    elif choice == 2:
        g.tag("rebinding_rebuilt_list")
        parts = g.new("parts_rb")
        lines += [f"{parts} = [tf.matmul({h}, {w1})]", f"{parts}.append(tf.tanh(tf.matmul({h}, {w2})))",
                  f"{parts} = list({parts}) + [0.5 * {h}]", f"{out} = tf.add_n({parts})"]
    elif choice == 3:
        g.tag("rebinding_conditional")
        flag = g.r5.choice(["True", "False"])
        lines += [f"{t} = tf.matmul({h}, {w1})", f"if {flag}:", f"    {t} = tf.tanh(tf.matmul({h}, {w2}) + 0.1 * tf.matmul({h}, {w1}))",
                  f"{out} = {t} + 0.01 * tf.reduce_mean({w2})"]
    else:
        g.tag("rebinding_alias_mutated")
        store, view = g.new("store_rb"), g.new("view_rb")
        lines += [f"{store} = [tf.matmul({h}, {w1})]", f"{view} = {store}",
                  f"{store} = [tf.tanh(tf.matmul({h}, {w2}))]", f"{view}.append(0.5 * {store}[0])",
                  f"{out} = tf.add_n({view}) + {store}[0]"]
    return lines, out, width


REBINDING_TAGS = frozenset({
    "rebinding", "rebinding_definite", "rebinding_definite_gradient", "rebinding_alias_kept",
    "rebinding_rebuilt_list", "rebinding_conditional", "rebinding_alias_mutated",
})
