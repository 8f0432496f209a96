"""Which statements go inside the tape, and the proof that nothing else carries a gradient.

Given a block, the index of the gradient site and what the loss reads, :func:`tape_region`
computes the *backward slice* of the loss: walking back from the site, a statement joins the slice
when it binds a name the slice reads, may change an object the slice reads (method call, attribute
or item store, passed to a function that may change it), or adds tensors to graph collections
while the slice reads collections. A statement that binds a needed name to a gradient-free value
or a variable object (``x = tf.placeholder(...)``, ``w = tf.get_variable(...)``,
``layer = tf.keras.layers.Dense(8)``) stays outside: nothing to record. The tape wraps the
statements from the first to the last of the slice.

Then every value that enters the tape region from outside is checked (:meth:`_Boundary.check`):
names read before the region binds them must be bound, everywhere in scope, to gradient-free
values or variable objects; attributes read off objects made outside must be fields the module
only ever stores gradient-free values or variable objects in; graph collections may only be read
where every writer is visible (module level); statements inside must be movable into a ``with``
block and free of APIs through which a tape differs from ``tf.gradients``. Each failure is a
:class:`~codemods.rules.tape.sites.Reject` naming the dependency; parameters and calls of code from
other modules make the fix unsafe instead (their body or caller is not in this file).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import List, Optional, Sequence, Set

import libcst as cst
from libcst.metadata import Assignment, BuiltinAssignment, ImportAssignment

from codemods.rules.analysis import tape_unsafe_reason
from codemods.rules.tape import tfapi
from codemods.rules.tape.effects import BUILTIN_NAMES, Analyzer, Effects, Kind, root_name
from codemods.rules.tape.kinds import PYTHON_VALUE_BUILTINS
from codemods.rules.tape.facts import MANUAL, ModuleFacts
from codemods.rules.tape.sites import Reject


@dataclass
class Region:
    """Statements ``[start, end)`` of the block go inside the tape."""

    start: int
    end: int
    unsafe: List[str]  # reasons the fix is only unsafe


def tape_region(analyzer: Analyzer, block_body: Sequence[cst.BaseStatement], index: int,
                loss: cst.BaseExpression, *, loss_is_name: bool, in_loop: bool,
                at_module_level: bool, function_name: Optional[str],
                site_node: Optional[cst.CSTNode] = None) -> Region:
    """The tape region for a site at ``block_body[index]`` whose loss is ``loss``
    (``site_node``: the site's own statement when ``block_body[index]`` is a ``with`` around it)."""
    facts = analyzer.facts
    site_stmt = site_node if site_node is not None else block_body[index]
    loss_effects = analyzer.expression_effects(loss, site_stmt)
    needed: Set[str] = set(loss_effects.reads)  # every name the slice reads (for the boundary checks)
    live: Set[str] = set(needed)  # names whose value here still reaches the loss
    needs_collections = loss_effects.collection_read is not None
    members: List[int] = []
    for j in range(index - 1, -1, -1):
        stmt = block_body[j]
        effects = analyzer.statement_effects(stmt)
        mutated = set()
        for name in effects.mutates:
            mutated |= analyzer.aliases(name)
        touches = bool(effects.binds & live) or bool(mutated & live) or (
            needs_collections and effects.collection_write is not None)
        if not touches:
            continue
        killed = _definite_rebinds(analyzer, stmt)
        if _neutral(analyzer, stmt, effects) and not (mutated & live):
            live -= killed
            continue
        members.append(j)
        live -= killed
        live |= effects.reads
        needed |= effects.reads
        if effects.collection_read is not None:
            needs_collections = True
    if loss_is_name and not members:
        raise Reject(_loss_origin(facts, loss))  # type: ignore[arg-type]
    if members:
        start = min(members)
        end = index if not loss_is_name else max(members) + 1
    else:
        start = end = index
    boundary = _Boundary(analyzer, block_body, start, end, index, loss, loss_effects, in_loop, at_module_level,
                         function_name, needed, set(members))
    unsafe = boundary.check()
    return Region(start, end, unsafe)


def _neutral(analyzer: Analyzer, stmt: cst.BaseStatement, effects: Effects) -> bool:
    """``name = <gradient-free value or variable object>``: nothing to record, keep outside."""
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        return True
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return False
    small = stmt.body[0]
    if isinstance(small, (cst.Import, cst.ImportFrom)):
        return True
    if not (isinstance(small, cst.Assign) and all(isinstance(t.target, cst.Name) for t in small.targets)):
        return False
    # (a mutation of an object the slice needs is checked by the caller: others do not matter)
    if effects.collection_write is not None or effects.hazards or effects.opaque or effects.foreign \
            or effects.gradients:
        return False
    return analyzer.kind(small.value) in (Kind.FREE, Kind.VARIABLE)


def _definite_rebinds(analyzer: Analyzer, stmt: cst.BaseStatement) -> Set[str]:
    """Names ``stmt`` certainly binds to a new value: ``a = b = <expression>`` alone on its line, at
    this block's level (so it runs whenever the statements after it run), plain name targets. The
    backward slice stops following such a name above ``stmt``: an earlier binding of it, or an
    earlier change to the object it named, cannot reach the value read later (the cookbook's second
    example re-using the first's names). Not when the value may be an object that existed before:
    a name, attribute or item read (``a = b`` aliases ``b``), or a name the module may alias to
    another (:meth:`Analyzer.aliases`) -- then earlier changes through that other name still count."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return set()
    small = stmt.body[0]
    if not isinstance(small, cst.Assign) or not all(isinstance(t.target, cst.Name) for t in small.targets):
        return set()
    if isinstance(small.value, (cst.Name, cst.Attribute, cst.Subscript, cst.NamedExpr)):
        return set()
    names = {t.target.value for t in small.targets}  # type: ignore[union-attr]
    if len(names) != len(small.targets):
        return set()
    return {name for name in names if analyzer.aliases(name) == {name}}


def _loss_origin(facts: ModuleFacts, loss: cst.Name) -> str:
    found = facts.assignments(loss)
    if not found:
        where = "is not defined in this file (a fragment, or it comes from elsewhere)"
    elif any(isinstance(a, ImportAssignment) for a in found):
        where = "is imported from another module"
    elif any(isinstance(a, Assignment) and isinstance(a.node, cst.Param) for a in found):
        where = "is a parameter (computed by the caller, maybe in another file)"
    else:
        where = "is computed outside this block"
    return (f"the loss `{loss.value}` {where}; a `tf.GradientTape` must record the ops that compute it, so "
            f"wrap that computation yourself {MANUAL}")


class _Boundary:
    """Checks what enters the region ``[start, end)`` (and the loss read at ``index``)."""

    def __init__(self, analyzer: Analyzer, body: Sequence[cst.BaseStatement], start: int, end: int, index: int,
                 loss: cst.BaseExpression, loss_effects: Effects, in_loop: bool, at_module_level: bool,
                 function_name: Optional[str], needed: Set[str], members: Optional[Set[int]] = None) -> None:
        self.a = analyzer
        # the statements of the slice: only their reads reach the loss (the others sit in the
        # region because it is contiguous; their reads are not the loss's)
        self.members = set(range(start, end)) if members is None else members
        self.facts = analyzer.facts
        self.body = body
        self.start, self.end, self.index = start, end, index
        self.loss = loss
        self.loss_effects = loss_effects
        self.in_loop = in_loop
        self.at_module_level = at_module_level
        self.function_name = function_name
        self.needed = needed
        self.unsafe: List[str] = []
        self.region_ids: Set[int] = set()
        for j in range(start, end):
            for sub in _walk(body[j]):
                self.region_ids.add(id(sub))

    def check(self) -> List[str]:
        combined = Effects()
        fresh: Set[str] = set()  # names bound in the region to newly built objects
        for j in range(self.start, self.end):
            stmt = self.body[j]
            if j > self.start and cell_boundary(stmt):
                raise Reject(f"the statements the tape must wrap span notebook cells ({cell_boundary(stmt)}): one "
                             f"`with` block cannot cross a cell {MANUAL}", stmt)
            why = tape_unsafe_reason(stmt)
            if why:
                raise Reject(f"a statement that computes the loss contains {why}, which cannot move inside "
                             f"`with tf.GradientTape()` {MANUAL}", stmt)
            effects = self.a.statement_effects(stmt)
            if j in self.members:
                self._statement(stmt, effects, combined, fresh)
                combined.absorb(effects, sequential=True)
            else:
                # `self.lr = lr` between two statements of the slice: moved with them, checked for
                # what cannot move into a `with` or changes what a tape records, not for its reads.
                # A loop or a session there (a training loop between the forward pass and a later
                # `minimize`) is still checked as a statement of the slice, and a failure says so.
                runs = _runs_or_loops(self.facts, stmt)
                if runs is None:
                    self._statement(stmt, effects, combined, fresh, reads=False)
                    combined.absorb(replace(effects, reads=set(), attr_chains=[]), sequential=True)
                else:
                    self._loop_or_session(stmt, effects, combined, fresh, runs)
            fresh |= _fresh_bindings(self.a, stmt)
        self._statement(self.loss, self.loss_effects, combined, fresh, is_loss=True)
        combined.absorb(self.loss_effects, sequential=True)
        if self.end < self.index:
            # statements left between the region and the site must not change what the slice reads
            for j in range(self.end, self.index):
                later = self.a.statement_effects(self.body[j])
                changed = set(later.binds)
                for name in later.mutates:
                    changed |= self.a.aliases(name)
                if changed & self.needed or (later.collection_write is not None
                                             and self.loss_effects.collection_read is not None):
                    raise Reject(f"{self.facts.where(self.body[j])} changes what the loss reads after it is computed "
                                 f"{MANUAL}", self.body[j])
        self._free_names(combined)
        return self.unsafe

    def _loop_or_session(self, stmt: cst.BaseStatement, effects: Effects, combined: Effects, fresh: Set[str],
                         runs: str) -> None:
        """A loop or session among the slice's statements that the loss does not need: moved into
        the tape only if what it reads could be (as before the slice's reads alone were checked);
        a decline names it for what it is."""
        try:
            self._statement(stmt, effects, combined, fresh)
            self._free_names(Effects(reads=set(effects.reads - combined.binds)))
        except Reject as reject:
            reason = reject.reason
            if reason.endswith(" " + MANUAL):
                reason = reason[:-len(MANUAL) - 1]
            for prefix in ("the loss reads ", "the loss depends on "):
                if reason.startswith(prefix):
                    reason = "it reads " + reason[len(prefix):]
                    break
            else:
                reason = f"it cannot move there ({reason})"
            raise Reject(f"the statements the tape must wrap include {runs} ({self.facts.where(stmt)}) that the loss "
                         f"does not need, and {reason} {MANUAL}", stmt) from None
        combined.absorb(effects, sequential=True)

    def _statement(self, stmt: cst.CSTNode, effects: Effects, before: Effects, fresh: Set[str],
                   is_loss: bool = False, reads: bool = True) -> None:
        for node, why in effects.opaque:
            raise Reject(f"the loss is computed through {why} at {self.facts.where(node)}, which the analysis "
                         f"cannot follow {MANUAL}", node)
        for node, why in effects.hazards:
            raise Reject(f"the loss is computed through {why} at {self.facts.where(node)} {MANUAL}", node)
        if effects.gradients and not is_loss:
            raise Reject(f"another gradient computation ({self.facts.where(effects.gradients[0])}) sits among the "
                         f"statements that compute the loss {MANUAL}", effects.gradients[0])
        if effects.collection_read is not None and not self.at_module_level and reads:
            where = f"`{self.function_name}`" if self.function_name else "this block"
            if effects.collection_read_cause is not None:
                raise Reject(f"the loss is computed by {effects.collection_read_cause} "
                             f"({self.facts.where(effects.collection_read)}): its "
                             f"body cannot be checked from this file, and it may read graph collections that code "
                             f"outside {where} filled before it runs; those tensors would be outside the tape "
                             f"{MANUAL}", effects.collection_read)
            raise Reject(f"the loss reads graph collections ({self.facts.where(effects.collection_read)}) that code "
                         f"outside {where} may have filled before it runs; those tensors would be outside the tape "
                         f"{MANUAL}", effects.collection_read)
        for node, what in effects.foreign:
            note = (f"the loss is computed by {what} ({self.facts.where(node, 40)}): its body (loops, cached "
                    "tensors, collections) cannot be checked from this file")
            if note not in self.unsafe:
                self.unsafe.append(note)
        for root, chain in effects.attr_chains if reads else ():
            self._attribute(root, chain, before, fresh)

    def _attribute(self, root: str, chain: cst.Attribute, before: Effects, fresh: Set[str]) -> None:
        """``root.a.b`` read in the region: fine if ``root`` was built in the region, if ``root.a``
        was stored in the region before, or if its value cannot carry a gradient."""
        if root in fresh:
            return
        first = chain
        while isinstance(first.value, cst.Attribute):
            first = first.value
        if (root, first.attr.value) in before.attr_stores:
            return
        root_node = first.value
        if not isinstance(root_node, cst.Name):
            return
        found = self.facts.assignments(root_node)
        if found and all(isinstance(a, ImportAssignment) for a in found):
            return  # a module attribute (`config.BATCH`, `tf.float32`): checked as a name/call elsewhere
        if root_node.value in BUILTIN_NAMES and not found:
            return
        if shape_argument(self.a, chain):
            return  # `tf.placeholder(tf.float32, [None, self.n_actions])`: no gradient flows through a shape
        kind = self.a.kind(chain, exclude=self.region_ids)
        parent = self.facts.parent(chain)
        called = isinstance(parent, cst.Call) and parent.func is chain
        if kind is Kind.PARAM and not called:
            self._unsafe(f"the loss reads `{self.facts.code(chain, 40)}`, set from a parameter whose callers are "
                         "not in this file")
            return
        if kind is Kind.TENSOR and not called:
            stores = self.a.field_stores(chain.attr.value) if chain is first else []
            origin = ""
            if stores:
                origin = f", set at {self.facts.where(stores[0], 40)}"
            raise Reject(f"the loss reads `{self.facts.code(chain, 40)}`, computed outside the statements the tape "
                         f"can wrap{origin}; its ops would not be recorded {MANUAL}", chain)

    def _free_names(self, combined: Effects) -> None:
        anchor = self.body[self.index]
        probe = _scope_probe(self.facts, anchor)
        scope = self.facts.scope(probe) if probe is not None else None
        if scope is None:
            raise Reject(f"cannot resolve the names the loss reads {MANUAL}")
        for name in sorted(combined.reads):
            outside_captures = [c for c in self.facts.match_captures.get(name, ()) if id(c) not in self.region_ids]
            if outside_captures and self.a.capture_kind(outside_captures, exclude=self.region_ids) is not Kind.FREE:
                raise Reject(f"the loss reads `{name}`, which the `match` capture pattern at "
                             f"{self.facts.where(outside_captures[0])} binds outside the statements the tape can "
                             f"wrap {MANUAL}", outside_captures[0])
            found = [a for a in scope[name] if not isinstance(a, BuiltinAssignment)]
            if name in BUILTIN_NAMES and not found:
                continue
            if not found and self.facts.match_captures.get(name):
                continue  # bound only by `match` captures of a gradient-free subject (checked above)
            if not found:
                raise Reject(f"the loss reads `{name}`, which is not defined in this file {MANUAL}")
            outside = [a for a in found if id(getattr(a, "node", None)) not in self.region_ids]
            inside = [a for a in found if id(getattr(a, "node", None)) in self.region_ids]
            if self.in_loop and inside and outside:
                raise Reject(f"the loss reads `{name}`, which an earlier iteration of the loop computes; the "
                             f"tape of this iteration would not record it {MANUAL}")
            for assignment in outside:
                self._binding(name, assignment)

    def _binding(self, name: str, assignment) -> None:
        if isinstance(assignment, ImportAssignment):
            if self.a.import_is_code_or_data(assignment):
                return
            if self._used_only_as_callee(name):
                return  # the call itself is reported as foreign (unsafe) where it happens
            note = (f"the loss reads `{name}`, imported from another module: a tensor built there would be outside "
                    "the tape")
            if note not in self.unsafe:
                self.unsafe.append(note)
            return
        if not isinstance(assignment, Assignment):
            raise Reject(f"the loss reads `{name}`, bound in a way the analysis cannot follow {MANUAL}")
        node = assignment.node
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            return
        if isinstance(node, cst.Param):
            if self._used_only_as_attribute_root(name):
                return  # its fields are checked one by one
            if self._only_as_size(name, node):
                return  # `tf.placeholder(tf.float32, [batch_size, 4])`: no gradient flows through a shape
            kind = self.a.param_kind(node)
            if kind in (Kind.FREE, Kind.VARIABLE):
                return  # every caller in this module passes a gradient-free value or a variable object
            if kind is Kind.TENSOR:
                raise Reject(f"the loss reads the parameter `{name}`, and a caller passes a value computed from "
                             f"variables outside the tape {MANUAL}")
            self._unsafe(f"the loss reads the parameter `{name}`: if the caller computed it from trainable "
                         "variables, those paths are outside the tape")
            return
        if self._only_as_size(name, node):
            return  # `tf.layers.dense(X, n_outputs)`, whatever `n_outputs` holds or whoever changes it
        changed = self._mutated_outside(name, node)
        if changed is not None:
            raise Reject(f"the loss reads `{name}`, which {self.facts.where(self._statement_of(changed) or changed)} "
                         f"changes outside the statements the tape can wrap {MANUAL}", changed)
        kind = self.a.assignment_kind(assignment)
        if kind is Kind.PARAM:
            self._unsafe(f"the loss depends on `{name}`, computed from a parameter whose callers are not in this "
                         "file")
            return
        if kind is Kind.TENSOR:
            stmt = self._statement_of(node)
            raise Reject(f"the loss depends on `{name}`, computed by {self.facts.where(stmt or node)} outside the "
                         f"statements the tape can wrap (it may depend on trainable variables) {MANUAL}",
                         stmt or node)

    def _unsafe(self, note: str) -> None:
        if note not in self.unsafe:
            self.unsafe.append(note)

    def _mutated_outside(self, name: str, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        """A container bound outside (``losses = []``) that code outside the region changes
        (another function appends to it, an enclosing block, a later loop iteration)."""
        if not isinstance(node, cst.Name) or not self.a.mutable_binding(self._assignment_of(node)):
            return None
        exclude = set(self.region_ids)
        if not self.in_loop:
            for j in range(self.index, len(self.body)):
                exclude |= {id(sub) for sub in _walk(self.body[j])}
        return self.a.container_mutated(node, exclude)

    def _assignment_of(self, node: cst.Name):
        for assignment in self.facts.assignments(node):
            if getattr(assignment, "node", None) is node:
                return assignment
        return None

    def _statement_of(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        for anc in [node] + list(self.facts.ancestors(node)):
            if isinstance(anc, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return anc
        return None

    def _reads_in_region(self, name: str) -> List[cst.Name]:
        out: List[cst.Name] = []
        nodes = [self.body[j] for j in range(self.start, self.end)] + [self.loss]
        for stmt in nodes:
            out += [sub for sub in _walk(stmt) if self._is_read(sub, name)]
        return out

    def _used_only_as_attribute_root(self, name: str) -> bool:
        """Every read of ``name`` the loss may see is ``name.field`` (each field is then checked
        alone). Not when none is in the region's syntax, or a function, lambda or class nested in
        the enclosing function reads it: the loss may then read it through a call (a closure
        ``def scaled(t): return t * scale`` the loss calls), which only the name's own check sees."""
        reads = self._reads_in_region(name)
        if not reads or self._read_by_nested_code(name, fields_only=True):
            return False
        for read in reads:
            parent = self.facts.parent(read)
            if not (isinstance(parent, cst.Attribute) and parent.value is read):
                return False
        return True

    def _only_as_size(self, name: str, binding: cst.CSTNode) -> bool:
        """Every read of ``name`` (a parameter, or a name bound outside the region) by the slice's
        statements and the loss is a shape, axis or size (:func:`shape_argument`), and no function,
        lambda or class in its scope (the function it is bound in, or the module) reads it
        elsewhere: a call of one would read it where the syntax does not show."""
        function = self.facts.function_of(binding)
        if isinstance(binding, cst.Param) and function is None:
            return False
        nodes = [self.body[j] for j in sorted(self.members)] + [self.loss]
        reads = [sub for stmt in nodes for sub in _walk(stmt) if self._is_read(sub, name)]
        if not reads or not all(shape_argument(self.a, read) for read in reads):
            return False
        return not self._read_by_nested_code(name, function or self.facts.module, nodes, sizes_only=True)

    def _read_by_nested_code(self, name: str, scope: Optional[cst.CSTNode] = None,
                             nodes: Optional[List[cst.CSTNode]] = None, fields_only: bool = False,
                             sizes_only: bool = False) -> bool:
        """Whether a function, lambda or class inside ``scope`` (a function the name is local to,
        or the module; default: the function around the region), outside ``nodes`` (default: the
        region and the loss), reads ``name``: calling it reads ``name`` where the region's syntax
        does not show. ``fields_only``: reads of a field (``name.f``, not called) do not count -- a
        call's summary carries those, and each is checked as a field. ``sizes_only``: reads as a
        shape, axis or size do not count (no gradient flows through them wherever they are)."""
        if scope is None:
            scope = self.facts.function_of(self.body[self.start] if self.start < len(self.body) else self.loss) \
                or self.facts.module
        if nodes is None:
            nodes = [self.body[j] for j in range(self.start, self.end)] + [self.loss]
        inside = {id(sub) for stmt in nodes for sub in _walk(stmt)}
        scope_root = scope.body if isinstance(scope, cst.FunctionDef) else scope
        for sub in _walk(scope_root):
            if isinstance(sub, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) and id(sub) not in inside:
                if any(self._is_read(n, name) and id(n) not in inside and not (fields_only and self._field_read(n))
                       and not (sizes_only and shape_argument(self.a, n)) for n in _walk(sub)):
                    return True  # (the region's own reads, in the function around it, are checked as they are)
        return False

    def _field_read(self, node: cst.Name) -> bool:
        parent = self.facts.parent(node)
        if not (isinstance(parent, cst.Attribute) and parent.value is node):
            return False
        grand = self.facts.parent(parent)
        return not (isinstance(grand, cst.Call) and grand.func is parent)

    def _is_read(self, node: cst.CSTNode, name: str) -> bool:
        if not (isinstance(node, cst.Name) and node.value == name):
            return False
        parent = self.facts.parent(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return False
        return not (isinstance(parent, cst.Arg) and parent.keyword is node)

    def _used_only_as_callee(self, name: str) -> bool:
        for read in self._reads_in_region(name):
            parent = self.facts.parent(read)
            if isinstance(parent, cst.Call) and parent.func is read:
                continue
            if isinstance(parent, cst.Attribute) and parent.value is read:
                grand = self.facts.parent(parent)
                if isinstance(grand, cst.Call) and grand.func is parent:
                    continue
            return False
        return True


def shape_argument(analyzer: Analyzer, node: cst.BaseExpression) -> bool:
    """Whether ``node``'s value is used only inside an argument no gradient flows through
    (:data:`~codemods.rules.tape.tfapi.NON_DIFFERENTIABLE_ARGS`: a shape, axis, size or index of
    a listed TF call; or the argument of ``int``/``float``/``len``... or of a NumPy function,
    whose result is a Python or NumPy value), as the argument itself, an element of a list or tuple that is the argument, or an
    operand of arithmetic in one (``[None, self.n_actions * 2]``, ``int(env.observation_space.n)``)."""
    facts = analyzer.facts
    child: cst.CSTNode = node
    parent = facts.parent(child)
    while isinstance(parent, (cst.Element, cst.List, cst.Tuple, cst.BinaryOperation, cst.UnaryOperation)):
        if isinstance(parent, cst.BinaryOperation) and not isinstance(
                parent.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo)):
            return False
        child, parent = parent, facts.parent(parent)
    if not (isinstance(parent, cst.Arg) and parent.value is child):
        return False
    call = facts.parent(parent)
    if not isinstance(call, cst.Call):
        return False
    what = analyzer.callee(call.func)
    if what[0] == "builtin" and what[1] in PYTHON_VALUE_BUILTINS and not parent.star:
        return True
    if what[0] == "data" and what[1].startswith("numpy."):
        return True  # `np.random.randint(n_outputs)`: a NumPy value, never a tensor a tape records
    return any(tfapi.non_differentiable_argument(name, call.args, parent) for name in facts.tf_names(call.func))


CELL_BOUNDARY = "# tfclip-migrate:cell-boundary"  # the CLI's marker between notebook cells


def cell_boundary(stmt: cst.BaseStatement) -> Optional[str]:
    """The notebook cell boundary marker above ``stmt`` (``cell N``), if any."""
    for line in getattr(stmt, "leading_lines", ()):
        comment = line.comment.value if line.comment is not None else ""
        if comment.startswith(CELL_BOUNDARY):
            return "cell " + comment[len(CELL_BOUNDARY):].strip()
    return None


def _runs_or_loops(facts: ModuleFacts, stmt: cst.BaseStatement) -> Optional[str]:
    """``a loop`` / ``a session`` / ``a session run``: what in ``stmt`` should not move into a tape
    although the loss does not need it (None: nothing)."""
    if isinstance(stmt, (cst.For, cst.While)):
        return "a loop"
    for sub in _walk(stmt):
        if isinstance(sub, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            continue
        if isinstance(sub, cst.Call):
            func = sub.func
            if facts.tf_names(func) & tfapi.SESSIONS:
                return "a session"
            if isinstance(func, cst.Attribute) and func.attr.value in ("run", "eval"):
                return "a session run"
    return None


def _fresh_bindings(analyzer: Analyzer, stmt: cst.BaseStatement) -> Set[str]:
    """Names a region statement binds to objects it builds (``model = Model(x)``,
    ``layer = tf.layers.Dense(8)``): their fields are all set inside the tape."""
    out: Set[str] = set()
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            if isinstance(small, cst.Assign) and isinstance(small.value, cst.Call):
                what = analyzer.callee(small.value.func)
                if what[0] in ("local_class", "tf"):
                    for target in small.targets:
                        if isinstance(target.target, cst.Name):
                            out.add(target.target.value)
    return out


def _scope_probe(facts: ModuleFacts, node: cst.CSTNode) -> Optional[cst.Name]:
    for sub in _walk(node):
        if isinstance(sub, cst.Name) and facts.scope(sub) is not None:
            return sub
    return None


def _walk(node: cst.CSTNode):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)


__all__ = ["Region", "tape_region", "root_name"]
