"""The training half of the fuzz grammar: optimizers, learning rates, ``global_step`` forms,
every training-site shape the rules know (and look-alikes), their contexts, gradient summaries
and GAN programs (the other program kinds: ``_programs.py``). See ``generator.py`` for the whole grammar."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

# class -> (constructor template, a learning rate that trains visibly in 3 steps)
OPTIMIZERS = {
    "GradientDescent": ("tf.train.GradientDescentOptimizer({lr})", 0.1),
    "Momentum": ("tf.train.MomentumOptimizer({lr}, momentum=0.9)", 0.05),
    "Nesterov": ("tf.train.MomentumOptimizer({lr}, momentum=0.9, use_nesterov=True)", 0.05),
    "Adam": ("tf.train.AdamOptimizer({lr})", 0.05),
    "Adagrad": ("tf.train.AdagradOptimizer({lr})", 0.1),
    "Adadelta": ("tf.train.AdadeltaOptimizer({lr})", 1.0),
    "RMSProp": ("tf.train.RMSPropOptimizer({lr})", 0.01),
    "Ftrl": ("tf.train.FtrlOptimizer({lr})", 0.1),
}

SITES = {  # shape -> weight (the planner's favourite shapes come most often)
    "minimize": 3.0,
    "compute_clip": 3.0,
    "zip_global_norm": 2.0,
    "gv_index": 0.7,
    "compute_bare": 0.4,
    "tf_gradients": 1.5,
    "contrib_clip_gradients_by_norm": 1.2,
    "contrib_create_train_op": 0.8,
    "contrib_optimize_loss": 0.8,
}

SITE_BLOCKS = frozenset(
    {"site_" + s for s in SITES}
    | {"clip_by_value", "clip_by_norm", "clip_by_average_norm", "none_guard_filter", "none_guard_ternary",
       "gs_absent", "gs_present", "gs_none", "lr_literal", "lr_variable", "lr_placeholder", "lr_decay",
       "var_list_subset", "loss_parameter", "update_ops_control_deps", "minimize_control_deps",
       "name_scope_site", "minimize_in_cond", "grad_summaries", "contrib_from_import",
       "eager_minimize_function", "eager_minimize_lambda", "eager_loop", "eager_growing_var_list",
       "eager_lr_variable", "eager_clip_wrapper", "eager_keras_layer", "eager_no_var_list",
       "gan_var_list_field", "gan_var_list_field_changed", "gan_var_list_dict", "gan_class_shared_with",
       "gan_class_loss_changed",
       "eager_local_optimizer", "contrib_compute_apply", "contrib_wrapper_rebinds_name",
       "eager_wrapper_rebinds_name", "eager_wrapper_separate", "eager_while_loop", "eager_minimize_in_helper"}
)


def _lit(value: float) -> str:
    return repr(float(value))


def optimizer(g, lr: str, name: Optional[str] = None) -> str:
    """An optimizer constructor call with learning rate ``lr`` (tags the class)."""
    cls = name or g.rng.choice(list(OPTIMIZERS))
    g.tag("optimizer_" + cls)
    text = OPTIMIZERS[cls][0].format(lr=lr)
    if g.chance(0.3):
        text = text.replace("(" + lr, "(learning_rate=" + lr, 1)
    return text


def global_step(g, lines: List[str], *, force: bool = False) -> Tuple[str, Optional[str]]:
    """Maybe create a global step: (keyword text for the site, the step's name or None)."""
    roll = g.rng.random()
    if roll < 0.3 and not force:
        g.tag("gs_absent")
        return "", None
    if roll < 0.42 and not force:
        g.tag("gs_none")
        return ", global_step=None", None
    g.tag("gs_present")
    lines.append(g.rng.choice([
        "global_step = tf.train.get_or_create_global_step()",
        "global_step = tf.train.create_global_step()",
    ]))
    return ", global_step=global_step", "global_step"


def learning_rate(g, cls: str, lines: List[str], gs: Optional[str]) -> str:
    base = OPTIMIZERS[cls][1]
    roll = g.rng.random()
    if roll < 0.5:
        g.tag("lr_literal")
        return _lit(base)
    if roll < 0.65:
        g.tag("lr_variable")
        lines.append(f'learning_rate = tf.Variable({_lit(base)}, trainable=False, name="learning_rate")')
    elif roll < 0.77:
        g.tag("lr_placeholder")
        lines.append('learning_rate = tf.placeholder(tf.float32, [], name="learning_rate")')
        g.feeds["learning_rate"] = _lit(base)
    else:
        g.tag("lr_decay")
        step = gs or "tf.train.get_or_create_global_step()"
        lines.append(g.rng.choice([
            f"learning_rate = tf.train.exponential_decay({_lit(base)}, {step}, 2, 0.5)",
            f"learning_rate = tf.train.polynomial_decay({_lit(base)}, {step}, 10, end_learning_rate={_lit(base / 10)})",
            f"learning_rate = tf.train.piecewise_constant({step}, [1], [{_lit(base)}, {_lit(base / 2)}])",
        ]))
    return "learning_rate"


def _clip_comprehension(g, gvs: str, out: str) -> str:
    fn = g.rng.choice(["clip_by_value", "clip_by_norm", "clip_by_average_norm"])
    g.tag(fn)
    call = {"clip_by_value": "tf.clip_by_value(grad, -0.5, 0.5)", "clip_by_norm": "tf.clip_by_norm(grad, 0.5)",
            "clip_by_average_norm": "tf.clip_by_average_norm(grad, 0.2)"}[fn]
    guard = g.rng.random()
    if guard < 0.25:
        g.tag("none_guard_filter")
        return f"{out} = [({call}, var) for grad, var in {gvs} if grad is not None]"
    if guard < 0.45:
        g.tag("none_guard_ternary")
        return f"{out} = [(None if grad is None else {call}, var) for grad, var in {gvs}]"
    return f"{out} = [({call}, var) for grad, var in {gvs}]"


def _var_list(g) -> str:
    if not g.chance(0.2):
        return ""
    g.tag("var_list_subset")
    return ", var_list=" + g.rng.choice(["tf.trainable_variables()[:2]", "tf.trainable_variables()[-2:]",
                                         "tf.trainable_variables()[:1]"])


def site(g, shape: str, loss: str, opt: str, gs_kw: str, gs: Optional[str], var_list: str = "",
         out: str = "train_op", lr: str = "0.1") -> Tuple[List[str], Optional[str]]:
    """Statements of one training site: (lines, name of the (grad, var) list or None)."""
    g.tag("site_" + shape)
    if shape == "minimize":
        return [f"{out} = {opt}.minimize({loss}{gs_kw}{var_list})"], None
    if shape in ("compute_clip", "gv_index", "compute_bare"):
        gvs = g.rng.choice(["gvs", "grads_and_vars"])
        lines = [f"{gvs} = {opt}.compute_gradients({loss}{var_list})"]
        if shape == "compute_clip":
            capped = g.rng.choice(["capped_gvs", "clipped"])
            lines.append(_clip_comprehension(g, gvs, capped))
        elif shape == "gv_index":
            g.tag("clip_by_value")
            capped = "capped_gvs"
            lines.append(f"{capped} = [(tf.clip_by_value(gv[0], -0.5, 0.5), gv[1]) for gv in {gvs}]")
        else:
            capped = gvs
        lines.append(f"{out} = {opt}.apply_gradients({capped}{gs_kw})")
        return lines, capped
    if shape == "zip_global_norm":
        return [f"gradients, variables = zip(*{opt}.compute_gradients({loss}{var_list}))",
                "gradients, _ = tf.clip_by_global_norm(gradients, 1.0)",
                f"{out} = {opt}.apply_gradients(zip(gradients, variables){gs_kw})"], "zip"
    if shape == "tf_gradients":
        tvars = "tf.trainable_variables()" + (var_list.split("tf.trainable_variables()")[-1] if var_list else "")
        return [f"tvars = {tvars}", f"grads = tf.gradients({loss}, tvars)",
                "(grads, _) = tf.clip_by_global_norm(grads, clip_norm=1.0)",
                f"{out} = {opt}.apply_gradients(zip(grads, tvars){gs_kw})"], "tf_gradients"
    raise ValueError(shape)


def training_site(g, loss: str) -> List[str]:
    """Optimizer, learning rate, global step and one training site for ``loss`` (binds train_op)."""
    lines: List[str] = [""]
    shape = g.pick({k: (None, w) for k, w in SITES.items()})
    gs_kw, gs = global_step(g, lines, force=shape == "contrib_optimize_loss")
    cls = g.rng.choice(list(OPTIMIZERS))
    lr = learning_rate(g, cls, lines, gs)
    if shape == "contrib_optimize_loss" and lines[-1].startswith("learning_rate = tf.Variable"):
        lines.pop()  # optimize_loss takes a float or a 0-d tensor, never a variable (TF 1.15 too)
        lr = _lit(OPTIMIZERS[cls][1])
    opt_ctor = optimizer(g, lr, cls)
    if shape == "contrib_optimize_loss":
        g.tag("site_contrib_optimize_loss")
        name = g.rng.choice(['"SGD"', '"Adam"', '"Adagrad"', '"RMSProp"', '"Ftrl"', "opt"])
        if name == "opt":
            lines.append(f"opt = {opt_ctor}")
        lines.append(f"train_op = tf.contrib.layers.optimize_loss({loss}, global_step, {lr}, {name}, "
                     f"clip_gradients={g.rng.choice(['1.0', '0.5', '5.0'])})")
        return lines
    if shape == "contrib_create_train_op":
        g.tag("site_contrib_create_train_op")
        lines.append(f"opt = {opt_ctor}")
        fn = g.rng.choice(["tf.contrib.training.clip_gradient_norms_fn(1.0)", "None"])
        step = gs_kw.replace(", ", ", ", 1)
        lines.append(f"train_op = tf.contrib.training.create_train_op({loss}, opt{step}, transform_grads_fn={fn})")
        return lines
    opt = g.rng.choice(["optimizer", "opt"])
    if shape == "contrib_clip_gradients_by_norm":
        g.tag("site_contrib_clip_gradients_by_norm")
        if g.chance(0.4):
            g.tag("contrib_from_import")
            g.imports.append("from tensorflow.contrib.estimator import clip_gradients_by_norm")
            wrap = "clip_gradients_by_norm"
        else:
            wrap = "tf.contrib.estimator.clip_gradients_by_norm"
        if g.alt.random() < 0.45:  # the wrapper rebinds the optimizer's own name (TFC001 keeps it)
            g.tag("contrib_wrapper_rebinds_name")
            lines += [f"{opt} = {opt_ctor}", f"{opt} = {wrap}({opt}, clip_norm=1.0)"]
        else:
            lines += [f"base_optimizer = {opt_ctor}", f"{opt} = {wrap}(base_optimizer, clip_norm=1.0)"]
        shape = g.rng.choice(["minimize", "minimize", "compute_bare"])
        if shape == "compute_bare":
            g.tag("contrib_compute_apply")  # compute/apply on the wrapper: the compat form (TFC001)
    else:
        lines.append(f"{opt} = {opt_ctor}")
    body, gvs = _context(g, shape, loss, opt, gs_kw, gs)
    lines += body
    if gvs and g.chance(0.3):
        lines += _summaries(g, gvs)
    return lines


def _context(g, shape: str, loss: str, opt: str, gs_kw: str, gs: Optional[str]):
    """The site, maybe inside a function taking the loss, control_dependencies, name_scope, cond."""
    var_list = _var_list(g)
    if shape == "minimize" and g.chance(0.07):
        g.tag("minimize_in_cond")
        return [f"train_op = tf.cond(tf.constant(True), lambda: {opt}.minimize({loss}{gs_kw}{var_list}), "
                "lambda: tf.no_op())"], None
    in_function = g.chance(0.25)
    param = g.rng.choice(["total_loss", "cost", "loss_t"]) if in_function else loss
    body, gvs = site(g, shape, param, opt, gs_kw, gs, var_list)
    wrappers: List[str] = []
    if g.has_update_ops and g.chance(0.8):
        g.tag("update_ops_control_deps")
        body = ["update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)",
                "with tf.control_dependencies(update_ops):"] + ["    " + ln for ln in body]
    elif g.chance(0.05):
        g.tag("minimize_control_deps")
        body = ['with tf.control_dependencies([tf.print("step")]):'] + ["    " + ln for ln in body]
    if g.chance(0.1):
        g.tag("name_scope_site")
        body = ['with tf.name_scope("train"):'] + ["    " + ln for ln in body]
    if in_function:
        g.tag("loss_parameter")
        fn_body = body + ([f"return train_op, {gvs}"] if gvs not in (None, "zip", "tf_gradients") else
                          ["return train_op"])
        wrappers = [f"def build_train({param}, {opt}):"] + ["    " + ln if ln else "" for ln in fn_body] + ["", ""]
        if gvs not in (None, "zip", "tf_gradients"):
            wrappers.append(f"train_op, {gvs} = build_train({loss}, {opt})")
        else:
            wrappers.append(f"train_op = build_train({loss}, {opt})")
            gvs = None
        return ["", ""] + wrappers, gvs
    return body, gvs


def _summaries(g, gvs: str) -> List[str]:
    """Summaries that read the gradients after the apply (failure class 5)."""
    g.tag("grad_summaries")
    if gvs == "zip":
        return ['tf.summary.scalar("gradient_norm", tf.global_norm(gradients))']
    if gvs == "tf_gradients":
        return ['tf.summary.scalar("gradient_norm", tf.global_norm(grads))']
    return [f"for grad, var in {gvs}:", "    if grad is not None:",
            '        tf.summary.histogram(var.op.name + "/gradient", grad)',
            f'grad_norm = tf.global_norm([g for g, _ in {gvs} if g is not None])',
            'tf.summary.scalar("grad_norm", grad_norm)', "summary_op = tf.summary.merge_all()"]


def gan_program(g) -> str:
    """Two optimizers on two losses (generator / discriminator var_lists by scope)."""
    from tests.fuzz import _blocks

    width = g.rng.choice([3, 4])
    lines = ["", f"rng = np.random.RandomState({g.rng.randint(0, 999)})",
             f"X_DATA = rng.randn(3, 8, {width}).astype(np.float32)",
             "Z_DATA = rng.randn(3, 8, 2).astype(np.float32)", "", "",
             "def feeds(step):", '    return {"x": X_DATA[step % 3], "z": Z_DATA[step % 3]}', "", "",
             f'x = tf.placeholder(tf.float32, [None, {width}], name="x")',
             'z = tf.placeholder(tf.float32, [None, 2], name="z")', "", ""]
    body: List[str] = []
    h, w_in = "noise", 2
    for _ in range(g.rng.choice([1, 2])):
        block = g.rng.choice([_blocks.raw_matmul, _blocks.layers_dense])
        part, h, w_in = block(g, h, w_in)
        body += part
    body.append(f'out = tf.get_variable("out", [{w_in}, {width}], {_blocks.initializer(g)})')
    lines += ["def generator(noise):", '    with tf.variable_scope("gen"):'] + ["        " + ln for ln in body]
    lines += [f"        return tf.matmul({h}, out)", "", "",
              "def discriminator(inp):", '    with tf.variable_scope("disc", reuse=tf.AUTO_REUSE):',
              f'        w = tf.get_variable("w", [{width}, 1], {_blocks.initializer(g)})',
              '        b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())',
              "        return tf.matmul(tf.tanh(inp), w) + b", "", "",
              "fake = generator(z)",
              "d_loss = tf.reduce_mean(tf.square(discriminator(x) - 1.0)) + tf.reduce_mean(tf.square(discriminator(fake)))",
              "g_loss = tf.reduce_mean(tf.square(discriminator(fake) - 1.0))",
              'd_vars = tf.trainable_variables(scope="disc")',
              'g_vars = [v for v in tf.trainable_variables() if v.name.startswith("gen/")]']
    # (round 7, fifth stream) the discriminator's var_list kept in a field of an object: proven
    # trainable when every store of the field is; a non-trainable variable appended to it (one the
    # loss reads: TF 1's minimize trains it, a tape would not) must keep the site declined
    d_list = "d_vars"
    form = g.r5.random()
    if form < 0.3:
        g.tag("gan_var_list_field")
        d_list = "var_sets.d_vars"
        lines += ["", "", "class VarSets(object):", "    pass", "", "", "var_sets = VarSets()",
                  'var_sets.d_vars = [v for v in tf.trainable_variables() if v.name.startswith("disc/")]']
        if form < 0.12:
            g.tag("gan_var_list_field_changed")
            lines += ['d_temperature = tf.Variable(1.0, trainable=False, name="d_temperature")',
                      "var_sets.d_vars.append(d_temperature)", "d_loss = d_loss * d_temperature"]
    elif form < 0.5:
        # the discriminator's weights in a dict of tf.Variable, its var_list the dict's items
        # (aymericdamien's GAN): both minimize calls read the lists, neither changes them
        g.tag("gan_var_list_dict")
        at = lines.index("def discriminator(inp):")
        seed = g.r5.randint(1, 99)
        lines[at:at + 5] = [
            f'd_weights = {{"w": tf.Variable(tf.random_uniform([{width}, 1], -0.5, 0.5, seed={seed}), name="disc/w"),',
            '             "b": tf.Variable(tf.zeros([1]), name="disc/b")}', "", "",
            "def discriminator(inp):",
            '    return tf.matmul(tf.tanh(inp), d_weights["w"]) + d_weights["b"]']
        lines[lines.index('d_vars = tf.trainable_variables(scope="disc")')] = 'd_vars = [d_weights["w"], d_weights["b"]]'
    # (round 13, sixth stream) the model in a class, both `minimize` calls in one
    # `control_dependencies` block reading `self.d_loss` / `self.g_loss` (hwalsuklee's GAN zoo): one
    # `with` of two tapes around the shared forward pass; in a third of them the generator's loss is
    # changed between the two calls (then the second site may not be lifted out of the block)
    class_form = d_list == "d_vars" and g.r6.random() < 0.45
    model_at = lines.index("fake = generator(z)")
    gs_kw, gs = global_step(g, lines)
    outs = []
    opt_lines: List[str] = []
    for role in ("d", "g"):
        cls = g.rng.choice(list(OPTIMIZERS))
        lines.append(f"{role}_opt = {optimizer(g, _lit(OPTIMIZERS[cls][1]), cls)}")
        opt_lines.append(lines[-1])
        shape = g.rng.choice(["minimize", "compute_clip", "zip_global_norm"])
        kw = gs_kw if role == "g" else ""
        part, _ = site(g, shape, f"{role}_loss", f"{role}_opt", kw, gs,
                       f", var_list={d_list if role == 'd' else 'g_vars'}",
                       out=f"{role}_train")
        for word, new in (("gvs", "gvs"), ("grads_and_vars", "gvs"), ("capped_gvs", "capped"), ("clipped", "capped"),
                          ("gradients", "grads"), ("variables", "vars_")):
            part = [re.sub(rf"\b{word}\b", f"{role}_{new}", ln) for ln in part]
        lines += part
    # Two ops run one after the other each step, as GAN code calls sess.run(d_train) then
    # sess.run(g_train): in one tf.group the updates race (either may read the other's variables
    # first), so TF1 itself trained nondeterministically and a rewrite that merely reorders the
    # graph would "differ" (seen in the first 2,000-program run).
    if class_form:
        g.tag("gan_class_shared_with")
        model = lines[model_at:model_at + 5]
        between = lines[model_at + 5:lines.index(opt_lines[0])]  # the global step, if any
        changed = g.r6.random() < 1 / 3
        body = [model[0], "self." + model[1], "self." + model[2], model[3], model[4]]
        body = [re.sub(r"(?<![.\w])([dg]_loss)\b", r"self.\1", ln) if i > 0 else ln for i, ln in enumerate(body)]
        body[1] = body[1].replace("self.self.", "self.")
        body[2] = body[2].replace("self.self.", "self.")
        # the input width comes from the caller (through a dict of classes: callers unknown), read
        # only as a shape
        body[1] = body[1].replace("discriminator(x)", "discriminator(x * self.x_scale)")
        body.insert(0, "self.x_scale = tf.placeholder_with_default(tf.ones([width]), [width])")
        body += ["with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):",
                 "    self.d_train = d_opt.minimize(self.d_loss, var_list=d_vars)"]
        if changed:
            g.tag("gan_class_loss_changed")
            body.append("    self.g_loss = self.g_loss * 1.5")
        body.append(f"    self.g_train = g_opt.minimize(self.g_loss, var_list=g_vars{gs_kw})")
        lines = lines[:model_at] + between + opt_lines + [
            "", "", "class GANModel(object):", "    def __init__(self, width):"] + ["        " + ln for ln in body] + [
            "", "", 'model_classes = {"gan": GANModel}', f'model = model_classes["gan"]({width})',
            "d_train, g_train = model.d_train, model.g_train",
            "d_loss, g_loss = model.d_loss, model.g_loss"]
    lines += ["train_op = [d_train, g_train]", "loss = d_loss + g_loss"]
    outs.append("")
    return "\n".join(g.imports + lines) + "\n"
