"""TFC301: a TF 1 session script -> an eager TF 2 program that trains the same."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from codemods.rules import FixSafety, Phase, TfcCodemod, all_of, any_of, method_calls, names


class SessionScriptEager(TfcCodemod):
    '''## What it does
    Migrates a whole TF 1 training script -- placeholders, a graph built at module level (or in
    helpers it calls), `tf.train` optimizers, and a `with tf.Session() as sess:` loop of
    `sess.run(fetches, feed_dict)` -- into an eager TF 2 program, following TensorFlow's "model
    mapping" recipe: the forward pass moves into a Keras layer whose `call` is decorated with
    `tf.compat.v1.keras.utils.track_tf1_style_variables` (`get_variable`, `variable_scope` and
    `tf.compat.v1.layers` keep their TF 1 names and reuse); placeholders become arguments; each
    distinct `sess.run` becomes a `tf.function` step (`tf.compat.v1.gradients`, the program's own
    gradient processing kept exactly, `apply_gradients`); initializer runs disappear (each variable is
    initialized once, when the model is built: an initializer run after training, or inside a loop,
    branch or `with` of the session block, would reset trained weights in TF 1, and is declined). The
    `tf.compat.v1.train` optimizers are kept (a Keras optimizer rounds differently), TF 1's default
    initializers are written out, and the output sets `TF_USE_LEGACY_KERAS=1` before importing
    TensorFlow (it needs the `tf-keras` package on TF 2.16+).
    `tf.contrib.estimator.clip_gradients_by_norm` becomes `tfclip_compat.clip_gradients_by_norm`.

    Notebooks too: the code cells run in order in one namespace, so the eager program is cut into
    the same cells between its top-level statements (every cut runs the same program). A cell whose
    statements stay keeps them; the model and its steps go in the first cell whose graph code they
    replace; a cell left with no code says so in a comment. A program fed by nothing (the model
    reads only Python values and its variables) gets a `call` with one unused argument.

    In the class besides: placeholders shaped by module constants (`[None, n_steps, n_input]`), or
    typed by a dtype string (`tf.placeholder("float", ...)`);
    `tf.placeholder_with_default(<literal>, [])` (a run that does not feed it passes the default);
    fetches as a name, a list/tuple or a dict of string keys; a feed dict bound to a name in the
    session block (`feed = {x: ..., y: ...}`); `tensor.eval(feed_dict=...)`, `init.run()` and
    `sess.run(global_step)` without feeds; `compute_gradients(loss, [w, b])`,
    `minimize(loss, var_list=...)` and `tf.gradients(loss, tvars)` with lists of variables
    from `tf.trainable_variables()`, `tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES,
    scope=...)` or a name filter over them (each is the trainable variables created *before*
    that point of the TF 1 graph, so weight decay over `tf.trainable_variables()` sums what TF 1
    summed); a fed scalar placeholder read only by optimizers (a fed learning rate) becomes a
    `tf.Variable` that each training step assigns; `tf.train.exponential_decay(...,
    global_step, ...)` learning rates (a callable eagerly, read before the step's increment as
    in TF 1); a global step made by `tf.Variable(0, trainable=False)`; TF 1 RNN cells
    (`BasicLSTMCell`, `LSTMCell`, `GRUCell`, `BasicRNNCell`, `MultiRNNCell`) with `dynamic_rnn`,
    `static_rnn` over `tf.unstack`ed steps, `static_bidirectional_rnn` and
    `bidirectional_dynamic_rnn` (`sequence_length=` too), each called only with the arguments
    measured to compute the same (`LSTMCell(use_peepholes=True)` is declined: its forget gate's
    chain with `forget_bias` is regrouped by grappler, measured), spelled `tf.nn.rnn_cell.X`,
    `tf.contrib.rnn.X` or `rnn.X` after `from tensorflow.contrib import rnn` (TF 1.15's
    `contrib.rnn` re-exports those very cells and static RNNs; the alias must be bound by that
    import alone and read only as `rnn.<name>`, and contrib's own cells and `DropoutWrapper` stay
    declined); convolutional networks
    (`tf.nn.conv2d`, `tf.nn.max_pool`/`avg_pool`, `tf.layers.conv2d`/`max_pooling2d`/
    `average_pooling2d`, TF 1's default initializers written out); `tf.nn.dropout` and
    `tf.layers.dropout` (a `keep_prob` or `is_training` placeholder becomes an argument, so an
    evaluation run's `1.0` or `False` stays so); random initializers passed
    as `initializer=` arguments; a module-level `tf.Variable(tf.truncated_normal(...)/zeros(...),
    name=...)` run once under variable scopes entered once (it becomes `get_variable` with the same
    name and distribution), also without `name=` (it gets the name TF 1's graph gave it,
    `Variable`, `Variable_1`..., when every unnamed `tf.Variable` of the file is assigned once at
    module level and no name string mentions `variable`), with a float literal value
    (`tf.Variable(5.0)`, `tf.Variable([0.1, 0.2])`: a `constant_initializer` of it), and as the
    values of a dict display (`weights = {"h1": tf.Variable(...), ...}`), and named in a helper
    the module calls once at module level (`logits = build_model(x)`: it runs once, so its name
    is the call site's scopes, then the helper's, then `name=`), and made by a variable factory
    (Deep MNIST's `def weight_variable(shape): initial = tf.truncated_normal(shape, stddev=0.1);
    return tf.Variable(initial)`, also `tf.constant(0.1, shape=shape)` and a `name` parameter)
    called only in straight-line module code: each call becomes the `get_variable` its
    `tf.Variable` would be there, named as TF 1 counted it; a helper function that
    reads module-level tensors (a `keep_prob` placeholder, such a dict of weights) moves into the
    model's `call`, where it reads them as it read the globals, when nothing outside the forward
    pass uses it, and so does a class (bases: `object`) whose methods build the forward pass
    (`model = Classifier(x, ...)`, then `model.logits`); `tf.layers.batch_normalization` (tf-keras'
    legacy layer, whose moving variance is TF 1's), when every training op is built under
    `tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS))` and every run without a
    training op feeds its `training=` placeholder `False` (traced through helper parameters and
    `self.` fields): TF 1 updates the moving statistics in the training runs, the eager model in
    its training-mode calls; `tf.reset_default_graph()`, or `ops.reset_default_graph()` through
    `from tensorflow.python.framework import ops` (the same function), at module level before
    TensorFlow is first used (dropped, with that import). A session object, `sess = tf.Session()`
    at module level (or under `if __name__ == "__main__":`), possibly before the graph is built,
    used by the statements after it and maybe closed by `sess.close()`, is read as the `with`
    block it runs like: from the first statement that uses it to the end of the block (creating
    a session builds nothing in the graph). TF 1's MNIST tutorial loader, which TF 2 does not
    ship (`from tensorflow.examples.tutorials.mnist import input_data`, or `read_data_sets`
    imported from `...mnist.input_data`), becomes `tfclip_compat.mnist`: TF 1's loader, the same
    files, batches and shuffles (its `DataSet` seeds NumPy from the graph seed, eagerly too).
    `tf.contrib.layers.xavier_initializer()` (uniform, the default) becomes
    `tf.compat.v1.glorot_uniform_initializer()`: the same draw, bit for bit. An evaluation tensor
    built in the session block after training (`accuracy = tf.reduce_mean(...)`, assigned once,
    outside loops and branches, from the forward pass, with no variables or random ops) is
    computed by the model after the forward pass, and runs fetch it as any forward tensor; so is
    a fetch that builds stateless ops of forward tensors (`sess.run(tf.argmax(logits, 1), ...)`),
    and one of no graph tensor at all (`tf.argmax(labels[r:r + 1], 1)`) is computed eagerly in
    its place. An evaluation run may leave placeholders unfed (`sess.run(prediction, {x: ...})`):
    the model gets None for them and skips the plain assignments of stateless ops that need them
    (`if y is not None:`), which is what TF 1's pruned graph did; a training run may do so too
    when its loss and gradient processing do not need the placeholder (the cookbook SVMs'
    `prediction_grid`). Checkpoints: `saver = tf.train.Saver([max_to_keep=...])` built after the
    graph, and `saver.save(sess, path[, global_step=...])` after every training op has run
    (each time the save runs: a run in a block around it, or in a `for` loop over a `range` of
    at least one step), become `tfclip_compat.checkpoints.Saver`: the same files, keys and
    tensors (weights, slots, beta powers, global step; the `max_to_keep` rotation and the
    `checkpoint` file; two Adams' `beta1_power` and `beta1_power_1` named as the graph named
    them), which TF 1 code restores; eagerly there is no graph, so no `.meta` file.
    Two Adam optimizers must first train in the order they were built
    (their `beta1_power` variables are named in that order in both worlds).

    Declined, with the cause named and the file left to the per-site rules: Estimator
    `model_fn`s, MonitoredSession/Supervisor and hooks, queue runners, `tf.device` towers,
    tensors fetched by name, `partial_run`, other ops built inside the session block (for a
    session object: after its first use; in a loop, in a fetch, or making variables), a session object bound twice, used in a function, used after
    `close()` or opened with arguments, more than one session, an `InteractiveSession` (TF 1 runs
    it with other graph options, which rounds some programs differently: measured), `tf.Variable` in loops or in helpers called other than once (a variable factory only in
    straight-line module code), a helper that reads module-level tensors and is used outside
    the forward pass, forward code or helpers that change a module-level Python object
    (`weights.append(w)`: the eager step would change it at every trace), a module-level object the
    graph read and the program changes in place afterwards (`hparams["scale"] = 7.0` or
    `np.random.shuffle(x_data)` in the session block, also through another name that may hold the
    same object: `alias = hparams`, `view = x_data[:]`, `cfg = Config()`; the eager step reads it
    when first called), a helper the graph called and the module defines again, a name a function
    rebinds through `global`, a method of a graph tensor or variable other than `get_shape()`, a
    shape's `as_list()` and those of its `name`, `shape` and `dtype` (`W.assign(...)` would run at
    every call of the model), random ops other than dropout in the forward pass (noise,
    sampling), batch normalization whose training ops are not all under
    UPDATE_OPS or that a run without a training op may put in training mode (TF 1 would not update its
    statistics there; the eager model would: measured), Keras layers, classes that build optimizers or training ops, derive from another class or are
    used outside the forward pass, a training run that leaves unfed a placeholder its loss or
    gradient processing needs (or one an optimizer reads), an evaluation
    run that leaves one unfed when a fetched tensor, or a layer, variable, random op, helper or
    compound statement, needs it, other learning-rate schedules,
    `from tensorflow import ...` (other than the MNIST loader above), the tutorial's other
    modules (`tensorflow.examples.tutorials.mnist.mnist`), `xavier_initializer(uniform=False)`
    (contrib's truncated normal, which no TF 2 initializer draws), a `tf.train.Saver` built before
    the graph is complete, given a `var_list` or other options, restored (restoring is not
    migrated: the eager optimizer's slots exist only after its first step) or used other than by
    `save`, a save that may run before a training op has, TensorBoard summaries (`tf.summary.*`),
    a chain of `+`/`-` (or `*`/`/`) that grappler
    regroups (see below), a `reset_default_graph()` after TensorFlow was
    first used (it discards the seed and graph built so far), any TF name outside the rule's tables, a notebook line of IPython
    that may touch the program (a magic other than `%matplotlib`, `%config`, `%pip` and help, or a
    shell escape that expands a Python name: `!ls $path`), a session opened inside a function (not reported: not a
    session script), and anything else the program model cannot follow.

    ## Why is this bad?
    A TF 1 session script does not run on TF 2 without `disable_eager_execution()`; rewriting
    only its gradient calls still leaves sessions, placeholders and feed dicts.

    ## Example
    ```python
    import numpy as np
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.placeholder(tf.float32, [None, 1])
    w = tf.get_variable("w", [3, 1])
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(3):
            _, loss_value = sess.run([train_op, loss], {x: np.ones((4, 3)), y: np.ones((4, 1))})
            print(loss_value)
    ```

    ## Use instead
    ```python
    import os

    os.environ["TF_USE_LEGACY_KERAS"] = "1"  # tf.compat.v1.layers and track_tf1_style_variables need tf-keras (TF 2.16+)

    import numpy as np
    import tensorflow as tf


    class Model(tf.keras.layers.Layer):
        """The TF 1 forward pass; ``tf1_variables``: its variables in TF 1's creation order."""

        def __init__(self):
            super().__init__()
            self.tf1_variables = []

        def _record(self, next_creator, **kwargs):
            variable = next_creator(**kwargs)
            self.tf1_variables.append(variable)
            return variable

        @tf.compat.v1.keras.utils.track_tf1_style_variables
        def call(self, x, y):
            # Re-entering the current variable scope makes the layer names (dense, dense_1...) the same
            # on every call, as in the TF 1 graph.
            with tf.variable_creator_scope(self._record), tf.compat.v1.variable_scope(
                    tf.compat.v1.get_variable_scope()):
                w = tf.compat.v1.get_variable("w", [3, 1], initializer=tf.compat.v1.glorot_uniform_initializer())
                loss = tf.compat.v1.reduce_mean(tf.square(tf.matmul(x, w) - y))
            return {"loss": loss}


    model = Model()
    train_op_optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)


    def fetched(values):
        """What ``Session.run`` returned: numpy values, and None for the training ops."""
        return [None if value is None else value.numpy() for value in values]


    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([None, 1], tf.float32)])
    def train_step(x, y):
        """``sess.run([train_op, loss])`` as one eager step."""
        outputs = model(x, y)
        trainable = [v for v in model.tf1_variables if v.trainable]
        loss = outputs["loss"]
        train_op_optimizer.apply_gradients(zip(tf.compat.v1.gradients(loss, trainable), trainable))
        return [None, loss]


    for step in range(3):
        _, loss_value = fetched(train_step(np.ones((4, 3)), np.ones((4, 1))))
        print(loss_value)
    ```

    ## Fix safety
    Safe: from the same initial variable values (by TF 1 name) and the same feeds, the eager
    program computes the same losses and the same variables, optimizer slots included, after
    every step (`tests/proofs/test_eager_migration.py` runs both). Initializers keep TF 1's
    distributions; a graph seed need not draw the same numbers eagerly. Likewise dropout
    draws a fresh mask in every run, eagerly as in the session, but not the same numbers (an
    unseeded op's seed is the graph's op count, and a session's op advances in evaluation runs
    too); the proofs align the masks (`tests/_aligned_dropout.py`) and compare everything else. Several training ops in
    one `run` are applied after every fetched value and gradient is computed from the step's
    starting values (what TF 1's executor does when the reads feed the updates; two training ops
    of one optimizer in one `run` are declined).

    Two choices keep the numbers bit for bit (measured, round 11: `tests/fuzz_eager/test_probes.py`).
    The steps differentiate with `tf.compat.v1.gradients` -- TF 1's algorithm, valid in a
    `tf.function` -- not a tape: a tensor used three or more times (a weight of a recurrence unrolled by hand) gets
    three gradients, which a `GradientTape` adds in another order than TF 1, a few ulps apart. And
    a step that fetches only training ops returns a tensor (`tf.constant(0)`, dropped by the
    caller): grappler's constant folding runs its push-down rewrites only on a graph with a
    fetch, which the session's graph has (the training op) and a function with no result does not
    (`tf.log(1 - p + 1e-7)` trained a few ulps apart).

    One measured limit: grappler regroups some chains of arithmetic differently in the session
    (optimized as a whole) and in the step's function, and the two then train a few ulps apart
    even so. Such chains are declined: a sum of three or more tensors (`a + b + c`: the
    arithmetic optimizer's `AddN` grouping), a constant in a chain of `+`/`-` or `*`/`/` with two
    or more tensors (`x * W + b - y_data` with the data written into the graph: constant
    folding's push-down), and the same tensor twice in a `+`/`-` chain of three or more. A
    difference of a sum (`tf.matmul(x, W) + b - y`) and a chain of one tensor and constants
    (`1 - p + 1e-7`) train the same (every three-operand arrangement measured on generated
    chains: 0 of 180 with a subtraction differed, 15 of 30 sums of three did). A chain of
    integers (`tf.range(0, batch_size) * seq_max_len + (seqlen - 1)`, TensorFlow-Examples' way
    to pick each sequence's last output: `tf.shape`, `tf.range`, `argmax`, integer placeholders,
    casts to integers and integer literals) is exact however it is grouped, and is kept.
    '''

    CODE: ClassVar[str] = "TFC301"
    NAME: ClassVar[str] = "session-script-eager"
    SUMMARY: ClassVar[str] = "TF 1 session script -> eager TF 2 program (model mapping)"
    PHASE: ClassVar[Phase] = Phase.PROGRAM
    SITES: ClassVar = all_of(any_of(names("Session", "InteractiveSession", "MonitoredTrainingSession",
                                          "MonitoredSession", "Supervisor")), method_calls("run"))

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        from codemods.rules.eager.contrib_rnn import contrib_rnn_as_tf
        from codemods.rules.eager.emit import emit
        from codemods.rules.eager.model import Decline, Reader, is_session_script, session_object_as_with

        if not is_session_script(tree):
            return tree  # a session inside a function or class: not a session script, nothing to say
        notebook = (self.context.filename or "").lower().endswith(".ipynb")
        if notebook:
            magic = _ipython_line(tree)
            if magic is not None:
                self.report(magic, "session script not migrated to eager TF 2: an IPython line the rule does not "
                            "follow (only `%matplotlib`, `%config`, `%pip`, help and shell escapes that expand no "
                            "Python name leave the program alone) (manual edit required)", fix=FixSafety.NONE)
                return tree
        # `from tensorflow.contrib import rnn` ... `rnn.static_rnn(...)`: read as `tf.contrib.rnn`
        respelled, rnn_origin, why = contrib_rnn_as_tf(tree)
        # `sess = tf.Session()` ... `sess.run(...)`: read as the `with` block it runs like
        read_tree, origin, session_why = session_object_as_with(respelled)
        why.update({id(rnn_origin[key]) if key in rnn_origin else key: reason for key, reason in session_why.items()})
        for key, node in list(origin.items()):
            origin[key] = rnn_origin.get(id(node), node)
        for key, node in rnn_origin.items():
            origin.setdefault(key, node)
        reader = Reader(read_tree, session_object=bool(origin))
        try:
            program = reader.read()
            code = emit(program, reader)
            if notebook:  # the cells run in order in one namespace: any cut between statements runs the same
                from codemods.notebooks.recut import cell_texts, recut

                moved = _moved_ipython_line(tree, code)
                if moved is not None:
                    raise Decline(moved, "this IPython line stands among the statements that move into the model "
                                  "or a step, and cannot move with them (give it a cell of its own)")
                code = recut(tree.code, code, _MOVED_NOTE)
            # it must compile (`from __future__` still first): a notebook's cells, each on its own
            for piece in (cell_texts(code) if notebook else [code]):
                compile(piece, "<the eager program>", "exec", dont_inherit=True)
            new = cst.parse_module(code)
        except Decline as decline:
            node = decline.node if not isinstance(decline.node, cst.Module) else None
            node = origin.get(id(node), node)
            reason = why.get(id(node), decline.reason)
            if node is not None and not self.locatable(node):  # a copy the reader made: say it, not crash
                node = tree.body[0] if tree.body else None
            if node is not None:
                self.report(node, f"session script not migrated to eager TF 2: {reason} "
                                  "(manual edit required)", fix=FixSafety.NONE)
            return tree
        except (ValueError, TypeError, KeyError, AttributeError, AssertionError, IndexError, SyntaxError,
                cst.ParserSyntaxError) as error:  # a shape the model has no case for: unknown means decline
            self.report(tree.body[0] if tree.body else tree, "session script not migrated to eager TF 2: the "
                        f"program model cannot follow it ({type(error).__name__}) (manual edit required)",
                        fix=FixSafety.NONE)
            return tree
        session = origin.get(id(program.session), program.session)
        applied = self.may_fix(session, FixSafety.SAFE)
        self.report(session, "TF 1 session script -> eager TF 2 program (model mapping)",
                    fix=FixSafety.SAFE, applied=applied)
        return new if applied else tree


_MOVED_NOTE = "# (tfclip-migrate TFC301: this cell's TF 1 graph code is now part of the eager program)"


def _ipython_line(tree: cst.Module):
    """The first statement standing for an IPython line that may touch the program (a magic that
    runs or binds Python code, a shell escape expanding a Python name), or None."""
    from codemods.notebooks.cells import ipython_placeholder

    return _placeholder_statement(tree, lambda comment: ipython_placeholder(comment) is False)


def _moved_ipython_line(tree: cst.Module, code: str):
    """The statement of ``tree`` standing for an IPython line that the rewrite ``code`` put inside a
    block (where the line cannot be put back), or None."""
    from codemods.notebooks.cells import ipython_placeholder

    indented = {line.strip().partition("  ")[2] for line in code.splitlines()
                if line[:1] in (" ", "\t") and ipython_placeholder(line) is not None}
    if not indented:
        return None
    return _placeholder_statement(tree, indented.__contains__) or tree.body[0]


def _placeholder_statement(tree: cst.Module, wanted):
    """The first statement of ``tree`` whose trailing comment satisfies ``wanted``, or None."""

    class Find(cst.CSTVisitor):
        found = None

        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
            comment = node.trailing_whitespace.comment
            if self.found is None and comment is not None and wanted(comment.value):
                self.found = node
            return False

    finder = Find()
    tree.visit(finder)
    return finder.found
