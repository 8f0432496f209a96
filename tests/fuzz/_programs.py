"""Program kinds added for the second planner round (issue 10): the shapes the planner learned then.

* **actor-critic** (DDPG's actor update): ``tf.gradients(action, actor_vars, grad_ys=-action_grads)``
  where the action gradients come from the critic's ``tf.gradients(q, action)`` or from a fed
  placeholder, with or without ``tf.clip_by_global_norm``, then
  ``apply_gradients(zip(...))``; optionally the critic's own ``minimize`` on its ``var_list``.
* **eager** programs (moved here from ``_sites.py``): ``tf.enable_eager_execution()`` and
  ``opt.minimize(callable)`` per step; the second round added the ``clip_gradients_by_norm`` wrapper
  bound in two statements (rebinding the optimizer's own name, or a separate ``base_optimizer``), the
  wrapped optimizer minimised in a loop (issue 10 item 1), ``while`` loops, and the call one helper
  function further down.
* **sections** (one optimizer per notebook-like section): the name ``optimizer`` rebound in
  straight-line code, each section trained through it (``minimize``, compute/clip/apply,
  ``tf.gradients``), and the variants the planner must decline: the rebinding inside a ``for``
  loop, inside a branch, or between two calls of a function that reads the name.

The graph programs follow the contract of ``tests/_equivalence.py`` (``train_op`` -- a list of
ops run one after the other, as a notebook runs its sections --, ``loss``, ``feeds(step)``).
Their choices come from ``g.rng`` like every other production; which programs get these kinds is
decided by ``generator.generate`` from a second random stream, so the other programs of a seed
are the same as before they existed.
"""

from __future__ import annotations

from typing import List

from tests.fuzz import _kinds
from tests.fuzz._sites import OPTIMIZERS, _lit, global_step, optimizer, site

# Model blocks whose variables are plain ``get_variable`` / ``tf.Variable`` / ``tf.layers`` ones
# (so a scope or a ``tf.trainable_variables()`` snapshot finds them) and that need no module level.
SIMPLE_BLOCKS = {"raw_matmul", "layers_dense", "keras_activation", "convert_to_tensor", "keras_backend_dot",
                 "stop_gradient", "dropout", "batch_norm"}

PROGRAM_BLOCKS = frozenset({
    "actor_critic", "grad_ys_from_critic", "grad_ys_placeholder", "grad_ys_keyword", "grad_ys_positional",
    "grad_ys_list", "grad_ys_clip_global_norm", "grad_ys_no_clip", "actor_critic_trains_critic",
    "actor_vars_snapshot", "actor_vars_scope",
    "sections", "sections_straight_line", "sections_three", "sections_in_name_scopes", "sections_rebound_in_loop",
    "sections_rebound_in_branch", "sections_rebound_in_if_else", "sections_rebound_between_calls",
})


def _data(g, width: int, extra: dict) -> List[str]:
    """Random data, ``feeds(step)`` and the placeholders ``x`` [None, width], ``y`` [None, 1]."""
    lines = ["", f"rng = np.random.RandomState({g.rng.randint(0, 999)})",
             f"X_DATA = rng.randn(3, 8, {width}).astype(np.float32)",
             "Y_DATA = (2.0 * rng.randn(3, 8, 1)).astype(np.float32)"]
    for name, shape in extra.items():
        lines.append(f"{name.upper()}_DATA = rng.randn(3, 8, {shape}).astype(np.float32)")
    lines += ["", "", "def feeds(step):",
              '    return {"x": X_DATA[step % 3], "y": Y_DATA[step % 3]' +
              "".join(f', "{n}": {n.upper()}_DATA[step % 3]' for n in extra) + "}", "", "",
              f'x = tf.placeholder(tf.float32, [None, {width}], name="x")',
              'y = tf.placeholder(tf.float32, [None, 1], name="y")']
    for name, shape in extra.items():
        lines.append(f'{name} = tf.placeholder(tf.float32, [None, {shape}], name="{name}")')
    return lines


def actor_critic_program(g) -> str:
    """DDPG: the critic's action gradients seed the actor's backward pass (``grad_ys``)."""
    from tests.fuzz.generator import _model_body, indent

    g.tag("actor_critic")
    width, act_width = g.rng.choice([3, 4]), g.rng.choice([1, 2])
    fed = g.chance(0.35)
    g.tag("grad_ys_placeholder" if fed else "grad_ys_from_critic")
    lines = _data(g, width, {"action_grads": act_width} if fed else {})
    body, pred = _model_body(g, "x", width, act_width, allow=SIMPLE_BLOCKS)
    lines += ["", 'with tf.variable_scope("actor"):'] + indent(body + [f"action = tf.tanh({pred})"])
    if g.chance(0.6):
        g.tag("actor_vars_snapshot")
        lines.append("actor_vars = tf.trainable_variables()")
    else:
        g.tag("actor_vars_scope")
        lines.append('actor_vars = tf.trainable_variables(scope="actor")')
    hidden = g.rng.choice([3, 4])
    seed1, seed2 = g.rng.randint(1, 99), g.rng.randint(1, 99)
    act = g.rng.choice(["tf.nn.relu", "tf.tanh", "tf.nn.softplus"])
    lines += ['with tf.variable_scope("critic"):',
              f'    c_w1 = tf.get_variable("w1", [{width + act_width}, {hidden}], '
              f"initializer=tf.glorot_uniform_initializer(seed={seed1}))",
              f'    c_w2 = tf.get_variable("w2", [{hidden}, 1], initializer=tf.glorot_uniform_initializer(seed={seed2}))',
              f"    q = tf.matmul({act}(tf.matmul(tf.concat([x, action], axis=1), c_w1)), c_w2)",
              'critic_vars = tf.trainable_variables(scope="critic")',
              "critic_loss = 5.0 * tf.reduce_mean(tf.square(q - y))"]
    if not fed:
        lines.append("action_grads = tf.gradients(q, action)[0]")
    gs_kw, _ = global_step(g, lines)
    cls = g.rng.choice(list(OPTIMIZERS))
    lines.append(f"actor_opt = {optimizer(g, _lit(OPTIMIZERS[cls][1]), cls)}")
    seed = g.rng.choice(["-action_grads", "tf.negative(action_grads)", "-1.0 * action_grads"])
    form = g.rng.random()
    if form < 0.45:
        g.tag("grad_ys_keyword")
        call = f"tf.gradients(action, actor_vars, grad_ys={seed})"
    elif form < 0.7:
        g.tag("grad_ys_keyword")
        call = f"tf.gradients(ys=action, xs=actor_vars, grad_ys={seed})"
    elif form < 0.85:
        g.tag("grad_ys_positional")
        call = f"tf.gradients(action, actor_vars, {seed})"
    else:
        g.tag("grad_ys_list")
        call = f"tf.gradients([action], actor_vars, grad_ys=[{seed}])"
    lines.append(f"actor_grads = {call}")
    if g.chance(0.5):
        g.tag("grad_ys_clip_global_norm")
        lines.append(g.rng.choice(["actor_grads, _ = tf.clip_by_global_norm(actor_grads, 1.0)",
                                   "(actor_grads, _) = tf.clip_by_global_norm(actor_grads, clip_norm=0.5)"]))
    else:
        g.tag("grad_ys_no_clip")
    lines.append(f"actor_train = actor_opt.apply_gradients(zip(actor_grads, actor_vars){gs_kw})")
    if g.chance(0.5):
        g.tag("actor_critic_trains_critic")
        cls = g.rng.choice(list(OPTIMIZERS))
        lines += [f"critic_opt = {optimizer(g, _lit(OPTIMIZERS[cls][1]), cls)}",
                  "critic_train = critic_opt.minimize(critic_loss, var_list=critic_vars)",
                  "train_op = [critic_train, actor_train]"]
    else:
        lines.append("train_op = actor_train")
    lines.append("loss = critic_loss" if g.chance(0.5) else "loss = -tf.reduce_mean(q)")
    return "\n".join(g.imports + lines) + "\n"


def _section_model(g, i: int, width: int) -> List[str]:
    """Section ``i``'s model and its loss ``loss{i}`` (maybe under its own variable scope)."""
    from tests.fuzz.generator import _model_body, indent

    body, pred = _model_body(g, "x", width, 1, allow=SIMPLE_BLOCKS)
    body.append(f"loss{i} = 5.0 * tf.reduce_mean(tf.square({pred} - y))")
    if g.chance(0.5):
        return ["", f'with tf.variable_scope("section{i}"):'] + indent(body)
    return [""] + body


def _ctor(g) -> str:
    cls = g.rng.choice(list(OPTIMIZERS))
    return optimizer(g, _lit(OPTIMIZERS[cls][1]), cls)


def sections_program(g) -> str:
    """One optimizer per notebook section, all bound to the name ``optimizer``."""
    g.tag("sections")
    width = g.rng.choice([3, 4])
    lines = _data(g, width, {})
    form = g.rng.random()
    n = 3 if form < 0.55 and g.chance(0.45) else 2
    losses = [f"loss{i}" for i in range(n)]
    tail = [f"loss = {' + '.join(losses)}"]
    if form < 0.55:
        # Each section builds its model, then trains it: a later section's default var_list holds
        # the earlier sections' variables too, with None gradients, so the unguarded clip
        # comprehension (which TF1 rejects on None) only trains the first section.
        g.tag("sections_straight_line")
        if n == 3:
            g.tag("sections_three")
        gs_kw, gs = global_step(g, lines)
        # (round 13, sixth stream) ageron's notebooks: each section's optimizer and site inside
        # `with tf.name_scope(...)`, the name `optimizer` bound just above its use in that block
        scoped = g.r6.random() < 0.4
        if scoped:
            g.tag("sections_in_name_scopes")
        for i in range(n):
            lines += _section_model(g, i, width)
            shapes = ["minimize", "minimize", "zip_global_norm", "tf_gradients"] + (["compute_clip"] if i == 0 else [])
            shape = g.rng.choice(shapes)
            section = [f"optimizer = {_ctor(g)}"]
            part, _ = site(g, shape, f"loss{i}", "optimizer", gs_kw if i == n - 1 else "", gs, out=f"train{i}")
            section += part
            if scoped:
                section = [f'with tf.name_scope("train{i}"):'] + ["    " + ln if ln else ln for ln in section]
            lines += [""] + section
        return "\n".join(g.imports + lines + ["", f"train_op = [{', '.join(f'train{i}' for i in range(n))}]"]
                         + tail) + "\n"
    for i in range(n):
        lines += _section_model(g, i, width)
    g.tag("site_minimize")
    if form < 0.67:
        g.tag("sections_rebound_in_loop")
        lines += ["", f"optimizer = {_ctor(g)}", "train_ops = []",
                  f"for section_loss in [{', '.join(losses)}]:",
                  "    train_ops.append(optimizer.minimize(section_loss))",
                  f"    optimizer = {_ctor(g)}", "train_op = train_ops"]
    elif form < 0.78:
        g.tag("sections_rebound_in_branch")
        flag = g.rng.choice(["True", "False"])
        lines += ["", f"USE_SECOND_OPTIMIZER = {flag}", f"optimizer = {_ctor(g)}", "train0 = optimizer.minimize(loss0)",
                  "if USE_SECOND_OPTIMIZER:", f"    optimizer = {_ctor(g)}", "train1 = optimizer.minimize(loss1)",
                  "train_op = [train0, train1]"]
    elif form < 0.89:
        g.tag("sections_rebound_in_if_else")
        flag = g.rng.choice(["True", "False"])
        lines += ["", f"optimizer = {_ctor(g)}", "train0 = optimizer.minimize(loss0)", f"if {flag}:",
                  f"    optimizer = {_ctor(g)}", "else:", f"    optimizer = {_ctor(g)}",
                  "train1 = optimizer.minimize(loss1)", "train_op = [train0, train1]"]
    else:
        g.tag("sections_rebound_between_calls")
        lines += ["", f"optimizer = {_ctor(g)}", "", "", "def build_train(section_loss):",
                  "    return optimizer.minimize(section_loss)", "", "", "train0 = build_train(loss0)",
                  f"optimizer = {_ctor(g)}", "train1 = build_train(loss1)", "train_op = [train0, train1]"]
    return "\n".join(g.imports + lines + tail) + "\n"


def eager_program(g) -> str:
    """TF1 eager code: ``tf.enable_eager_execution()`` and ``opt.minimize(callable)`` per step."""
    width, out_width = g.rng.choice([3, 4]), g.rng.choice([1, 2])
    lines = ["", "tf.enable_eager_execution()", "",
             f"rng = np.random.RandomState({g.rng.randint(0, 999)})",
             f"X_DATA = rng.randn(3, 8, {width}).astype(np.float32)",
             f"Y_DATA = (2.0 * rng.randn(3, 8, {out_width})).astype(np.float32)",
             f'w = tf.Variable(rng.uniform(-0.5, 0.5, ({width}, {out_width})).astype(np.float32), name="w")',
             f'b = tf.Variable(np.zeros({out_width}, np.float32), name="b")']
    keras = g.chance(0.25)
    if keras:
        g.tag("eager_keras_layer")
        lines.append(f"dense = tf.keras.layers.Dense({out_width}, kernel_initializer=tf.keras.initializers.GlorotUniform(seed=3))")
    roll = g.rng.random()
    gs_kw = ""
    if roll < 0.5:
        g.tag("gs_present")
        lines.append(g.rng.choice(['global_step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")',
                                   "global_step = tf.train.get_or_create_global_step()"]))
        gs_kw = ", global_step=global_step"
    else:
        g.tag("gs_absent")
    cls = g.rng.choice(list(OPTIMIZERS))
    lr = _lit(OPTIMIZERS[cls][1])
    decay = g.chance(0.25)
    if decay:
        g.tag("eager_lr_variable")
        lines.append(f'learning_rate = tf.Variable({lr}, trainable=False, name="learning_rate")')
        lr = "learning_rate"
    opt = optimizer(g, lr, cls)
    bind = [f"optimizer = {opt}"]
    wrapped = g.chance(0.25) or g.alt.random() < 0.15  # (the second round's share)
    if wrapped:
        g.tag("eager_clip_wrapper")
        wrap = "tf.contrib.estimator.clip_gradients_by_norm"
        form = g.alt.random()
        if form < 0.35:
            g.tag("eager_wrapper_rebinds_name")
            bind = [f"optimizer = {opt}", f"optimizer = {wrap}(optimizer, clip_norm=1.0)"]
        elif form < 0.6:
            g.tag("eager_wrapper_separate")
            bind = [f"base_optimizer = {opt}", f"optimizer = {wrap}(base_optimizer, clip_norm=1.0)"]
        else:
            bind = [f"optimizer = {wrap}({opt}, clip_norm=1.0)"]
    # The optimizer at module level, or local to a function that builds the step (TFC104 converts
    # only a local one: another module could checkpoint a module-level optimizer).
    local = g.chance(0.35)
    if local:
        g.tag("eager_local_optimizer")
    else:
        lines += bind
    kinds_module: List[str] = []
    kinds_loss: List[str] = []
    if g.r3.random() < _kinds.EAGER_SHARE:  # (issue 25: value kinds, from the third stream)
        kinds_module, kinds_loss = _kinds.eager_kinds(g, width, out_width)
    lines += kinds_module
    lines += ['state = {"step": 0}', "", "",
              "def compute_loss():", '    i = state["step"] % 3',
              "    pred = tf.matmul(X_DATA[i], w) + b" + (" + dense(X_DATA[i])" if keras else "")] + kinds_loss + [
              "    return 5.0 * tf.reduce_mean(tf.square(pred - Y_DATA[i]))", "", ""]
    all_vars = "[w, b]"
    form = g.rng.random()
    if form < 0.3 or keras:  # Keras 3 variables are not tf.Variables: a TF1 optimizer rejects them
        g.tag("eager_no_var_list")
        var_list = ""
    else:
        var_list = f", var_list={all_vars}"
    callable_text = "compute_loss"
    if g.chance(0.35):
        g.tag("eager_minimize_lambda")
        callable_text = "lambda: compute_loss()" if g.chance(0.5) else \
            '(lambda: 5.0 * tf.reduce_mean(tf.square(tf.matmul(X_DATA[state["step"] % 3], w) + b - Y_DATA[state["step"] % 3])))'
        if keras and "dense" not in callable_text:
            callable_text = "lambda: compute_loss()"
    else:
        g.tag("eager_minimize_function")
    call = f"optimizer.minimize({callable_text}{gs_kw}{var_list})"
    helper: List[str] = []
    step = ["def train_step():", "    value = compute_loss()"]
    if g.chance(0.2):
        g.tag("eager_growing_var_list")
        step += ['    if state["step"] < 1:', f"        optimizer.minimize({callable_text}{gs_kw}, var_list=[b])",
                 "    else:", f"        optimizer.minimize({callable_text}{gs_kw}, var_list={all_vars})"]
    elif g.chance(0.3) or wrapped and g.alt.random() < 0.6:  # (issue 10 item 1: the wrapper in a loop)
        g.tag("eager_loop")
        if g.alt.random() < 0.4:
            g.tag("eager_while_loop")
            step += ["    n = 0", "    while n < 2:", "        " + call, "        n += 1"]
        else:
            step += ["    for _ in range(2):", "        " + call]
    elif g.alt.random() < 0.35:  # the call one function further down
        g.tag("eager_minimize_in_helper")
        helper = ["def apply_update():", "    " + call, "", ""]
        step.append("    apply_update()")
    else:
        step.append("    " + call)
    if decay:
        step.append("    learning_rate.assign(learning_rate * 0.9)")
    step += ['    state["step"] += 1', "    return value"]
    if local:
        step = ["def make_trainer():"] + ["    " + ln for ln in bind] + [""] \
            + ["    " + ln if ln else ln for ln in helper + step] \
            + ["", "    return train_step", "", "", "train_step = make_trainer()"]
    else:
        step = helper + step
    return "\n".join(g.imports + lines + step) + "\n"
