"""Write the eager TF 2 program for a :class:`~codemods.rules.eager.model.Program` (TensorFlow's
"model mapping" recipe):

* ``TF_USE_LEGACY_KERAS=1`` set before TensorFlow is imported (``tf.compat.v1.layers`` and
  ``track_tf1_style_variables`` live in tf-keras on TF 2.16+);
* the forward pass in a Keras layer whose ``call`` is decorated with
  ``tf.compat.v1.keras.utils.track_tf1_style_variables`` (``get_variable``/``variable_scope``
  keep their TF 1 names and reuse); placeholders become ``call``'s arguments; the layer lists its
  variables in TF 1's creation order (``tf1_variables``), which is ``tf.trainable_variables()``'s
  order, so gradient lists and global norms are summed in the same order;
* TF 1's default initializers written out (``glorot_uniform`` kernels, ``zeros`` biases);
* the ``tf.compat.v1.train`` optimizers kept (Keras optimizers round differently);
* one ``tf.function`` per distinct ``sess.run``: ``tf.compat.v1.gradients`` (TF 1's algorithm, so
  a tensor's gradients from several uses are summed in TF 1's order; a tape sums three or more in
  another order, a few ulps apart), the program's own gradient processing, ``apply_gradients``;
  the other fetches returned, and a tensor returned by a step that fetches only training ops
  (grappler's constant folding runs its rewrites only on a function with a result, as TF 1's
  session ran them on the graph whose fetch is the training op); the initializer runs removed;
* every ``tf.<name>`` spelled ``tf.compat.v1.<name>`` unless TF 2 exports the same function.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

import libcst as cst

from codemods.rules.eager import tfnames
from codemods.rules.eager.model import Program, Reader, RunSite, mnist_loader_import
from codemods.rules.eager.syntax import dotted, nodes_of

LEGACY_KERAS_COMMENT = "# tf.compat.v1.layers and track_tf1_style_variables need tf-keras (TF 2.16+)"


class _Rename(cst.CSTTransformer):
    """``tf.<path>`` -> ``tf.compat.v1.<path>`` (or ``tf.<path>`` when TF 2 has the same function);
    TF 1's default initializers written out."""

    def __init__(self, program: Program, reader: Reader) -> None:
        self.program = program
        self.reader = reader
        self.alias = program.alias
        # id -> (the attribute node, its replacement): the node is kept so that its id cannot be
        # reused by a node parsed later (a stale id once renamed a fresh `tape.gradient` attribute)
        self.replace: Dict[int, Tuple[cst.CSTNode, cst.BaseExpression]] = {}
        self.uses_shim = False

    def _expr(self, path: str) -> cst.BaseExpression:
        if path == tfnames.CONTRIB_CLIP:
            self.uses_shim = True
            return cst.parse_expression("tfclip_compat.clip_gradients_by_norm")
        if path in tfnames.SAME_IN_TF2:
            return cst.parse_expression(f"{self.alias}.{path}")
        return cst.parse_expression(f"{self.alias}.compat.v1.{path}")

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        path = self.reader.path(node)
        if path is not None:
            self.replace[id(node)] = (node, self._expr(path))
            return False
        return True

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        entry = self.replace.get(id(original))
        return entry[1] if entry is not None and entry[0] is original else updated

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if id(original) in self.program.variable_rewrites:
            return cst.parse_expression(self.program.variable_rewrites[id(original)])
        if id(original) in self.program.collection_scopes:
            index, scope = self.program.trainable_calls[id(original)], self.program.collection_scopes[id(original)]
            return cst.parse_expression(f"[v for v in self.trainable_so_far({index}) if v.name.startswith({scope!r})]")
        if id(original) in self.program.trainable_calls:
            return cst.parse_expression(f"self.trainable_so_far({self.program.trainable_calls[id(original)]})")
        path = self.reader.path(original.func)
        positional = [a for a in original.args if a.keyword is None]
        keywords = {a.keyword.value for a in original.args if a.keyword is not None}
        init = f"{self.alias}.compat.v1"
        if path in tfnames.RENAMED_INITIALIZERS:
            # contrib's xavier initializer: the same draw as glorot_uniform (uniform=True checked)
            args = []
            for i, arg in enumerate(updated.args):
                key = arg.keyword.value if arg.keyword is not None else ("uniform", "seed", "dtype")[i]
                if key != "uniform":
                    args.append(arg.with_changes(keyword=cst.Name(key), equal=cst.AssignEqual(
                        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))))
            if args:
                args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return cst.Call(func=cst.parse_expression(f"{init}.{tfnames.RENAMED_INITIALIZERS[path]}"), args=args)
        if path == "get_variable":
            dtype = next((a.value for a in original.args if a.keyword is not None and a.keyword.value == "dtype"),
                         positional[2].value if len(positional) > 2 else None)
            dtype_path = self.reader.path(dtype) if dtype is not None else "float32"
            if "initializer" not in keywords and len(positional) < 4 and dtype_path in tfnames.FLOAT_DTYPES:
                return _add_kw(updated, "initializer", f"{init}.glorot_uniform_initializer()")
        if path in tfnames.LAYERS_WITH_KERNEL:
            kernel_at, bias_at = tfnames.LAYERS_WITH_KERNEL[path]
            if "kernel_initializer" not in keywords and len(positional) <= kernel_at:
                updated = _add_kw(updated, "kernel_initializer", f"{init}.glorot_uniform_initializer()")
            if "bias_initializer" not in keywords and len(positional) <= bias_at:
                updated = _add_kw(updated, "bias_initializer", f"{init}.zeros_initializer()")
        return updated


def _add_kw(call: cst.Call, keyword: str, value: str) -> cst.Call:
    args = list(call.args)
    if args and args[-1].comma is cst.MaybeSentinel.DEFAULT:
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    elif args:
        last = args[-1]
        if isinstance(last.comma, cst.Comma):
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    args.append(cst.Arg(keyword=cst.Name(keyword), value=cst.parse_expression(value),
                        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                              whitespace_after=cst.SimpleWhitespace(""))))
    return call.with_changes(args=args)


class _Session(cst.CSTTransformer):
    """The session block's statements with each ``run`` replaced and the initializer runs removed."""

    def __init__(self, replace: Dict[int, cst.BaseExpression], drop: List[cst.Call],
                 statements: Dict[int, cst.BaseStatement], moved: List[cst.SimpleStatementLine]) -> None:
        self.replace = replace
        self.drop = {id(c) for c in drop}
        self.statements = statements
        self.moved = {id(s) for s in moved}  # statements now computed by the model

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        return self.replace.get(id(original), updated)

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        if (len(original.body) == 1 and isinstance(original.body[0], cst.Expr)
                and id(original.body[0].value) in self.drop) or id(original) in self.moved:
            return cst.RemovalSentinel.REMOVE
        return self.statements.get(id(original), updated)

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        if not updated.body:
            return updated.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])
        return updated


def emit(program: Program, reader: Reader) -> str:
    alias = program.alias
    rename = _Rename(program, reader)
    fresh = reader.fresh
    model_cls, model = fresh("Model"), fresh("model")
    outputs, trainable = fresh("outputs"), fresh("trainable")

    # the forward pass, in program order, with the lifted losses where their train op was
    forward: List[cst.BaseStatement] = []
    first = True
    for kind, stmt in program.items:
        original = stmt
        if kind == "forward":
            if first:  # no blank line at the top of the block
                lines = list(stmt.leading_lines)
                while lines and lines[0].comment is None:
                    lines.pop(0)
                stmt = stmt.with_changes(leading_lines=lines)
                first = False
            # blank lines stay blank inside the model's `call` (not indented whitespace)
            stmt = stmt.with_changes(leading_lines=[line.with_changes(indent=False) if line.comment is None else line
                                                    for line in stmt.leading_lines])
            forward.append(_guard(stmt.visit(rename), program.guarded.get(id(original))))
        for name, expr in program.lifted.get(id(original), []):
            assign = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))], expr)])
            forward.append(_guard(assign.visit(rename), program.guarded.get(id(expr))))

    # evaluation tensors the session block built: computed after the forward pass
    for stmt in program.late_forward:
        lines = [line.with_changes(indent=False) if line.comment is None else line for line in stmt.leading_lines]
        forward.append(_guard(stmt.with_changes(leading_lines=lines).visit(rename), program.guarded.get(id(stmt))))

    # the steps: one per distinct fetch list
    steps: Dict[tuple, str] = {}
    step_defs: List[cst.BaseStatement] = []
    needed: List[str] = []
    call_replace: Dict[int, cst.BaseExpression] = {}
    uses_fetched = False
    fetched = fresh("fetched")
    # ids of the values expression statements discard (``sess.run(train)`` on a line of its own)
    discarded = {id(e.value) for e in nodes_of(program.module, cst.Expr)}
    for key, fetch in program.eager_fetches.items():
        # ``sess.run(tf.argmax(labels, 1))`` of no graph tensor: the same ops, eagerly
        value = fetch.visit(rename)
        if not isinstance(value, (cst.Call, cst.Name, cst.Attribute, cst.Subscript)):
            value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        call_replace[key] = cst.Call(func=cst.Attribute(value, cst.Name("numpy")))
    for run in program.runs:
        if run.only_global_steps:  # the variable itself, read (``sess.run`` returns a numpy scalar)
            reads = [f"{n}.numpy()" for n in run.names]
            if run.container is None:
                text = reads[0]
            elif run.container == "dict":
                text = "{" + ", ".join(f"{reader.module.code_for_node(k)}: {r}" for k, r in zip(run.keys, reads)) + "}"
            else:
                text = f"[{', '.join(reads)}]" if run.container == "list" else f"({', '.join(reads)},)"
            call_replace[id(run.call)] = cst.parse_expression(text)
            continue
        key = (tuple(run.names), tuple(run.optimizer_feeds), tuple(run.unfed))
        if key not in steps:
            trains = [n for n in run.names if n in program.train_ops]
            steps[key] = fresh("train_step" if trains else "evaluate")
            step_defs.extend(_step(program, rename, run, steps[key], model, outputs, trainable, needed))
        values = ", ".join(reader.module.code_for_node(run.feeds[p.name]) for p in _step_placeholders(program, run))
        call = f"{steps[key]}({values})"
        if all(n in program.train_ops for n in run.names):
            # the step returns a tensor only for grappler's sake: what Session.run returned is Nones
            nones = ", ".join("None" for _ in run.names)
            returned = {None: "None", "list": f"[{nones}]", "tuple": f"({nones},)"}.get(run.container) or (
                "{" + ", ".join(f"{reader.module.code_for_node(k)}: None" for k in run.keys) + "}")
            text = call if id(run.call) in discarded else f"({call}, {returned})[1]"
        elif run.container is None:
            text = call if run.names[0] in program.train_ops else f"{call}.numpy()"
        else:
            uses_fetched = True
            if run.container == "list":
                text = f"{fetched}({call})"
            elif run.container == "tuple":
                text = f"tuple({fetched}({call}))"
            else:  # Session.run returns a dict with the fetch's keys, in its order
                keys = ", ".join(reader.module.code_for_node(k) for k in run.keys)
                text = f"dict(zip([{keys}], {fetched}({call})))"
        call_replace[id(run.call)] = cst.parse_expression(text)

    returns = ", ".join(f'"{n}": {_when_fed(n, program.name_needs[n])}' if n in program.name_needs else f'"{n}": {n}'
                        for n in needed)
    inputs = [p.name for p in program.placeholders if not p.optimizer_only]
    # a Keras layer is called with at least one argument: a model fed by nothing takes a None
    signature = ", ".join(["self"] + (inputs or [f"{fresh('unused_input')}=None"]))
    class_src = (
        f"class {model_cls}({alias}.keras.layers.Layer):\n"
        f'    """The TF 1 forward pass; ``tf1_variables``: its variables in TF 1\'s creation order."""\n\n'
        f"    def __init__(self):\n"
        f"        super().__init__()\n"
        f"        self.tf1_variables = []\n"
        + ("        self.tf1_counts = {}\n" if program.trainable_calls else "") + "\n"
        "    def _record(self, next_creator, **kwargs):\n"
        "        variable = next_creator(**kwargs)\n"
        "        self.tf1_variables.append(variable)\n"
        "        return variable\n\n"
        + ("    def trainable_so_far(self, index):\n"
           '        """``tf.trainable_variables()`` where the TF 1 graph called it: the trainable variables created\n'
           '        before that point (counted on the first call, when they are created)."""\n'
           "        count = self.tf1_counts.setdefault(index, len(self.tf1_variables))\n"
           "        return [v for v in self.tf1_variables[:count] if v.trainable]\n\n"
           if program.trainable_calls else "") +
        f"    @{alias}.compat.v1.keras.utils.track_tf1_style_variables\n"
        f"    def call({signature}):\n"
        f"        # Re-entering the current variable scope makes the layer names (dense, dense_1...) the same\n"
        f"        # on every call, as in the TF 1 graph.\n"
        f"        with {alias}.variable_creator_scope(self._record), {alias}.compat.v1.variable_scope(\n"
        f"                {alias}.compat.v1.get_variable_scope()):\n"
        f"            pass\n"
        f"        return {{{returns}}}\n"
    )
    class_module = cst.parse_module(class_src)
    class_module = class_module.visit(_FillPass(forward))
    model_stmts: List[cst.BaseStatement] = list(class_module.body)
    model_stmts.append(cst.parse_statement(f"{model} = {model_cls}()"))
    model_stmts[0] = model_stmts[0].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
    model_stmts[1] = model_stmts[1].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])

    helper_stmts: List[cst.BaseStatement] = []
    if uses_fetched:
        helper_stmts.append(cst.parse_statement(
            f"def {fetched}(values):\n"
            f'    """What ``Session.run`` returned: numpy values, and None for the training ops."""\n'
            f"    return [None if value is None else value.numpy() for value in values]\n"
        ).with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()]))
    for i, stmt in enumerate(step_defs):
        step_defs[i] = stmt.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
    before_session = helper_stmts + step_defs

    # assemble
    body: List[cst.BaseStatement] = []
    placed_env = placed_model = False
    call_replace.update(program.saver_calls)  # `saver.save(sess, ...)` -> `saver.save(None, ...)`
    session_t = _Session(call_replace, program.dropped_runs, program.feed_statements, program.late_forward)
    for kind, stmt in program.items:
        if kind == "import":
            if not placed_env and not _is_future_import(stmt):  # `from __future__` stays first
                body.append(cst.parse_statement("import os").with_changes(leading_lines=stmt.leading_lines))
                body.append(cst.parse_statement(f'os.environ["TF_USE_LEGACY_KERAS"] = "1"  {LEGACY_KERAS_COMMENT}')
                            .with_changes(leading_lines=[cst.EmptyLine()]))
                stmt = stmt.with_changes(leading_lines=[cst.EmptyLine()])
                placed_env = True
            body.extend(_imports(stmt, program))
            continue
        if kind in ("forward", "trainop") and not placed_model:
            body.extend(model_stmts)
            placed_model = True
        if kind == "holder":
            p = next(p for p in program.placeholders if p.node is stmt)
            assert p.shape is not None
            shape = program.module.code_for_node(p.shape)
            comment = cst.EmptyLine(comment=cst.Comment(
                "# A placeholder fed to the optimizer: each training step assigns the value it was fed."))
            body.append(cst.parse_statement(
                f"{p.name} = {alias}.Variable({alias}.zeros({shape}, {alias}.{p.dtype}), trainable=False, "
                f"name=\"{p.name}_feed\")\n"
            ).with_changes(leading_lines=list(stmt.leading_lines) + [comment]))
        elif kind == "keep":
            body.append(stmt.visit(rename))
        elif kind == "saver":
            body.append(_saver(stmt, program, model))
        elif kind == "drop" or kind == "forward":
            pass
        elif kind == "trainop":
            for name, expr in program.generated_optimizers.get(id(stmt), []):
                assign = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))], expr)],
                                                 leading_lines=stmt.leading_lines)
                body.append(assign.visit(rename))
        elif kind == "session":
            body.extend(before_session)
            unwrapped = _unwrap(stmt, program.session, session_t)
            if before_session and unwrapped:
                unwrapped[0] = unwrapped[0].with_changes(
                    leading_lines=[cst.EmptyLine(), cst.EmptyLine()] + [
                        line for line in unwrapped[0].leading_lines if line.comment is not None])
            before_session = []
            body.extend(unwrapped)
        elif kind == "main":
            body.extend(before_session)
            if before_session:
                stmt = stmt.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()] + [
                    line for line in stmt.leading_lines if line.comment is not None])
            before_session = []
            assert isinstance(stmt, cst.If) and isinstance(stmt.body, cst.IndentedBlock)
            inner: List[cst.BaseStatement] = []
            for s in stmt.body.body:
                inner.extend(_unwrap(s, program.session, session_t))
            body.append(stmt.with_changes(body=stmt.body.with_changes(body=inner)))
    if rename.uses_shim:
        body = _add_shim_import(body, alias)
    if program.savers:
        body = _add_shim_import(body, alias, "tfclip_compat.checkpoints")
    return program.module.with_changes(body=body).code


def _is_future_import(stmt: cst.BaseStatement) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine)
            and any(isinstance(small, cst.ImportFrom) and isinstance(small.module, cst.Name)
                    and small.module.value == "__future__" for small in stmt.body))


def _unwrap(stmt: cst.BaseStatement, session: cst.With, transformer: _Session) -> List[cst.BaseStatement]:
    if stmt is not session:
        return [stmt]
    assert isinstance(session.body, cst.IndentedBlock)
    inner = list(session.body.with_changes(header=session.body.header).visit(transformer).body)  # type: ignore[union-attr]
    if not inner:
        return []
    inner[0] = inner[0].with_changes(leading_lines=list(session.leading_lines) + list(inner[0].leading_lines))
    return inner


def _bare_training_op(stmt: cst.BaseStatement, name: str) -> cst.BaseStatement:
    """``train_op = opt.apply_gradients(...)`` -> ``opt.apply_gradients(...)``: the step returns None
    for the training op, so its TF 1 name would be an unused local (pyflakes F841)."""
    assign = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    if (isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name)
            and assign.targets[0].target.value == name and isinstance(assign.value, cst.Call)):
        return stmt.with_changes(body=[cst.Expr(assign.value)])
    return stmt


def _imports(stmt: cst.SimpleStatementLine, program: Program) -> List[cst.BaseStatement]:
    # ``from tensorflow.python.framework import ops``: the model followed ``ops`` only in the
    # ``ops.reset_default_graph()`` statements it dropped, so the import goes too
    kept = [small for small in stmt.body
            if not (isinstance(small, cst.ImportFrom) and small.module is not None
                    and dotted(small.module) == ["tensorflow", "python", "framework"])]
    if not kept:
        return []
    if len(kept) != len(stmt.body):
        kept[-1] = kept[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
        stmt = stmt.with_changes(body=kept)
    # TF 1's MNIST tutorial loader -> tfclip_compat.mnist (TF 2 does not ship it)
    stmt = stmt.with_changes(body=[mnist_loader_import(small) or small for small in stmt.body])
    if program.prefix != "compat.v1.":
        return [stmt]
    body = []
    for small in stmt.body:
        if isinstance(small, cst.Import):
            names = []
            for alias in small.names:
                if dotted(alias.name) == ["tensorflow", "compat", "v1"]:
                    alias = alias.with_changes(name=cst.Name("tensorflow"))
                names.append(alias)
            small = small.with_changes(names=names)
        body.append(small)
    return [stmt.with_changes(body=body)]


def _add_shim_import(body: List[cst.BaseStatement], alias: str, module: str = "tfclip_compat") -> List[cst.BaseStatement]:
    for i, stmt in enumerate(body):
        if isinstance(stmt, cst.SimpleStatementLine) and any(
                isinstance(s, cst.Import) and any(dotted(a.name) == ["tensorflow"] for a in s.names) for s in stmt.body):
            return body[:i + 1] + [cst.parse_statement(f"import {module}")] + body[i + 1:]
    return [cst.parse_statement(f"import {module}")] + body


def _saver(stmt: cst.BaseStatement, program: Program, model: str) -> cst.BaseStatement:
    """``saver = tf.train.Saver(...)`` -> ``tfclip_compat.checkpoints.Saver(lambda: <every variable
    of the TF 1 graph>, ...)``: the model's variables, each optimizer's (slots, beta powers) and the
    global steps, built into a ``tf.compat.v1.train.Saver`` at the first save (they exist by then:
    the model checked that every training op has run before each save)."""
    assert isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Assign)
    assign = stmt.body[0]
    call = assign.value
    assert isinstance(call, cst.Call)
    # in the order TF 1 built them (their non-slot variables, `beta1_power`..., were named so)
    optimizers = list(dict.fromkeys(t.optimizer for t in program.train_ops.values()))
    parts = [f"{model}.tf1_variables"]
    if optimizers:
        parts.append(f"[v for optimizer in ({', '.join(optimizers)},) for v in optimizer.variables()]")
    if program.global_steps:
        parts.append(f"[{', '.join(sorted(program.global_steps))}]")
    variables = cst.parse_expression(f"lambda: {' + '.join(parts)}")
    new = cst.Call(func=cst.parse_expression("tfclip_compat.checkpoints.Saver"),
                   args=[cst.Arg(variables)] + [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in call.args])
    comment = cst.EmptyLine(comment=cst.Comment(
        "# TF 1's Saver of every graph variable, built at the first save (the eager variables exist by then)"))
    return stmt.with_changes(body=[assign.with_changes(value=new)], leading_lines=list(stmt.leading_lines) + [comment])


class _FillPass(cst.CSTTransformer):
    """Replace the template's ``pass`` line by ``statements`` (removed when there are none)."""

    def __init__(self, statements: List[cst.BaseStatement]) -> None:
        self.statements = statements

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        body: List[cst.BaseStatement] = []
        for stmt in updated.body:
            if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Pass):
                body.extend(self.statements)
            else:
                body.append(stmt)
        return updated.with_changes(body=body or [cst.SimpleStatementLine([cst.Pass()])])


def _fed(needs) -> str:
    """``x is not None and y is not None``: the placeholders ``needs`` were fed (a run that leaves
    one unfed passes None)."""
    return " and ".join(f"{n} is not None" for n in needs)


def _guard(stmt: cst.BaseStatement, needs) -> cst.BaseStatement:
    """``stmt`` under ``if y is not None:`` when it needs placeholders a run leaves unfed (None)."""
    if not needs:
        return stmt
    inner = stmt.with_changes(leading_lines=[])
    return cst.If(test=cst.parse_expression(_fed(needs)), body=cst.IndentedBlock([inner]), leading_lines=stmt.leading_lines)


def _when_fed(name: str, needs) -> str:
    """A model output that needs placeholders some run leaves unfed: None in that run."""
    return f"{name} if {_fed(needs)} else None"


def _step_placeholders(program: Program, run: RunSite) -> list:
    """What a step takes: the model's placeholders this run feeds, then the optimizer-only ones it feeds."""
    return ([p for p in program.placeholders if not p.optimizer_only and p.name not in run.unfed]
            + [p for p in program.placeholders if p.optimizer_only and p.name in run.optimizer_feeds])


def _step(program: Program, rename: _Rename, run: RunSite, name: str, model: str,
          outputs: str, trainable: str, needed: List[str]) -> List[cst.BaseStatement]:
    alias = program.alias
    reader_code = program.module.code_for_node
    params = _step_placeholders(program, run)
    specs = ", ".join(
        f"{alias}.TensorSpec({reader_code(p.shape) if p.shape is not None else 'None'}, {alias}.{p.dtype})"
        for p in params)
    decorator = f"@{alias}.function(input_signature=[{specs}])" if params else f"@{alias}.function"
    args = ", ".join("None" if p.name in run.unfed else p.name for p in program.placeholders if not p.optimizer_only)
    args = args or "None"  # the model of a program fed by nothing (its `call` takes one unused argument)
    step_args = ", ".join(p.param if p.optimizer_only else p.name for p in params)
    trains = [program.train_ops[n] for n in run.names if n in program.train_ops]
    # train ops in program order (the order their statements were built)
    order = {n: i for i, n in enumerate(program.train_ops)}
    trains.sort(key=lambda t: order[t.name])
    lines = [decorator, f"def {name}({step_args}):"]
    func = run.call.func
    if isinstance(func, cst.Attribute) and (func.attr.value == "eval" or (
            func.attr.value == "run" and isinstance(func.value, cst.Name) and func.value.value in program.train_ops)):
        doc = f"``{reader_code(func.value)}.{func.attr.value}()``"
    else:
        doc = f"``sess.run({reader_code(run.call.args[0].value)})``"
    lines.append(f'    """{doc} as one eager step."""')
    lines.append(f"    {outputs} = {model}({args})")
    if trains:
        lines.append(f"    {trainable} = [v for v in {model}.tf1_variables if v.trainable]")
    used = [n for n in run.names if n in program.forward_names]
    for t in trains:
        for n in [t.loss] + (t.var_list or []) + t.var_reads:
            if n not in used:
                used.append(n)
    for n in used:
        if n not in needed:
            needed.append(n)
        lines.append(f'    {n} = {outputs}["{n}"]')
    lines.append("    pass")
    results = []
    for n in run.names:
        if n in program.train_ops:
            results.append("None")
        elif n in program.global_steps:
            results.append(f"{alias}.identity({n})")
        else:
            results.append(n)
    if all(r == "None" for r in results):
        lines.append("    # A tensor result: grappler's constant folding skips its rewrites in a function with none,")
        lines.append("    # and TF 1's session ran them on this graph (measured). The caller drops it.")
        lines.append(f"    return {alias}.constant(0)")
    elif run.container is None:
        lines.append(f"    return {results[0]}")
    else:
        lines.append(f"    return [{', '.join(results)}]")
    func = cst.parse_statement("\n".join(lines) + "\n")
    block: List[cst.BaseStatement] = []
    by_name = {p.name: p for p in program.placeholders}
    for t in trains:
        for fed in program.optimizer_feeds.get(t.optimizer, []):
            holder = by_name[fed]
            block.append(cst.parse_statement(f"{holder.name}.assign({holder.param})"))
        if t.compute_call is not None:
            wrt = f"[{', '.join(t.var_list)}]" if t.var_list is not None else (t.var_list_name or trainable)
            replacement = cst.parse_expression(f"list(zip({alias}.compat.v1.gradients({t.loss}, {wrt}), {wrt}))")
            if t.symbolic:
                # ``tf.gradients(loss, tvars)``: a list of gradients
                replacement = cst.parse_expression(f"{alias}.compat.v1.gradients({t.loss}, {t.var_reads[0]})")
            for stmt in t.block:
                if stmt is t.block[0]:
                    stmt = stmt.deep_replace(t.compute_call, replacement)
                stmt = _bare_training_op(stmt, t.name)
                block.append(stmt.visit(rename))
        else:
            step = f", global_step={t.global_step}" if t.global_step else ""
            wrt = f"[{', '.join(t.var_list)}]" if t.var_list is not None else (t.var_list_name or trainable)
            # a bare call: the step returns None for the training op, so its TF 1 name would be an
            # unused local (pyflakes F841) in the user's code
            block.append(cst.parse_statement(
                f"{t.optimizer}.apply_gradients(zip({alias}.compat.v1.gradients({t.loss}, {wrt}), {wrt}){step})"))
    func = func.visit(_FillPass(block))
    return [func]
