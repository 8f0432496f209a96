"""Which optimizer a ``minimize`` / ``compute_gradients`` call is made on.

:func:`classify` follows the receiver through plain assignments to its constructor and returns an
:class:`Optimizer`: a ``tf.train`` optimizer (``tf1``), one wrapped by
``tf.contrib.estimator.clip_gradients_by_norm`` (``wrapped``), a wrapper whose ``minimize`` does
more than the tape form (``wrapper``: CrossShard, SyncReplicas, Horovod...), a class defined in
this module (``custom``), an object of another library (``foreign``: ``scipy.optimize.minimize``),
a Keras optimizer (``keras``: ``tf.keras.optimizers.Adam`` -- its ``minimize``/``apply_gradients``
are the TF 2 API already, no TF 1 training site), or ``unknown`` with the reason. Only ``tf1`` and ``wrapped`` around ``tf1`` can be rewritten.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from codemods.rules.tape.syntax import subtargets, walk_nodes
from libcst.metadata import Assignment, BuiltinAssignment, ImportAssignment

from codemods.rules.analysis import call_args
from codemods.rules.tfnames import OPTIMIZER_WRAPPERS, TF1_OPTIMIZERS
from codemods.rules.tape.facts import MANUAL, ModuleFacts
from codemods.rules.tape.sites import Reject

CLIP_GRADIENTS_BY_NORM = "tf.contrib.estimator.clip_gradients_by_norm"
SHIM_CLIP_GRADIENTS_BY_NORM = "tfclip_compat.clip_gradients_by_norm"
# Keras optimizer classes (TF 2 API): `tf.keras.optimizers.Adam`, `tf.optimizers.SGD`, `...legacy.Adam`,
# `tf.keras.mixed_precision.LossScaleOptimizer`; and the `tf.keras.optimizers.get` factory.
KERAS_OPTIMIZER_NAMESPACES = ("tf.keras.optimizers.", "tf.optimizers.")
KERAS_OPTIMIZER_NAMES = frozenset({"tf.keras.optimizers.get", "tf.optimizers.get",
                                   "tf.keras.mixed_precision.LossScaleOptimizer",
                                   "tf.keras.mixed_precision.experimental.LossScaleOptimizer"})
# kinds whose `minimize`/`compute_gradients` is no TF 1 training site of a `tf.train` optimizer
NOT_TF1_SITE_KINDS = ("foreign", "shim", "keras")
FOREIGN_LIBRARIES = ("scipy", "numpy", "torch", "jax", "optax", "sklearn", "gym", "keras", "tensorflow_probability")


@dataclass
class Optimizer:
    """An optimizer expression, classified (see the module docstring)."""

    kind: str  # tf1 | wrapped | wrapper | custom | foreign | unknown
    what: str = ""  # the class name, or the reason for unknown
    ctor: Optional[cst.Call] = None  # the constructor (tf1) or the wrapper call (wrapped)
    name: Optional[cst.Name] = None  # the name the receiver is bound to, if any
    inner: Optional["Optimizer"] = None  # wrapped: the optimizer inside the wrapper

    @property
    def rewritable(self) -> bool:
        return self.kind == "tf1" or (self.kind == "wrapped" and self.inner is not None and self.inner.kind == "tf1")


def classify(facts: ModuleFacts, receiver: cst.BaseExpression, depth: int = 0, analyzer=None) -> Optimizer:
    if depth > 5:
        return Optimizer("unknown", "the optimizer is built through too many names")
    if isinstance(receiver, cst.Call):
        names = facts.tf_names(receiver.func)
        tf1 = names & TF1_OPTIMIZERS
        if tf1:
            return Optimizer("tf1", sorted(tf1)[0], ctor=receiver)
        qualified = facts.qualified(receiver.func)
        if CLIP_GRADIENTS_BY_NORM in names:
            positional, keywords = call_args(receiver)
            if positional is None:
                return Optimizer("unknown", "`clip_gradients_by_norm` is called with `*args`/`**kwargs`")
            inner = positional[0] if positional else keywords.get("optimizer")
            if inner is None:
                return Optimizer("unknown", "`clip_gradients_by_norm` has no optimizer argument")
            return Optimizer("wrapped", CLIP_GRADIENTS_BY_NORM, ctor=receiver,
                             inner=classify(facts, inner, depth + 1, analyzer))
        if SHIM_CLIP_GRADIENTS_BY_NORM in qualified:
            return Optimizer("shim", SHIM_CLIP_GRADIENTS_BY_NORM, ctor=receiver)
        keras = {n for n in names if is_keras_optimizer(n)}
        if keras and keras == names:
            return Optimizer("keras", sorted(keras)[0], ctor=receiver)
        wrappers = names & OPTIMIZER_WRAPPERS
        if wrappers:
            return Optimizer("wrapper", sorted(wrappers)[0])
        if any(q.endswith("DistributedOptimizer") for q in qualified):
            return Optimizer("wrapper", sorted(qualified)[0])
        if isinstance(receiver.func, cst.Name) and _is_local_class(facts, receiver.func):
            cls = _local_class(facts, receiver.func)
            if cls is not None and not _may_derive_from_tf(facts, cls, 0):
                # A user class that is no TF optimizer (its `minimize` is the user's own): not a site.
                return Optimizer("foreign", receiver.func.value)
            return Optimizer("custom", receiver.func.value)
        if qualified and not names and all(q.split(".")[0] in FOREIGN_LIBRARIES for q in qualified):
            return Optimizer("foreign", sorted(qualified)[0])
        if names:
            return Optimizer("unknown", f"`{facts.code(receiver.func, 50)}` is not a `tf.train` optimizer class")
        return Optimizer("unknown", f"`{facts.code(receiver.func, 50)}` is not a `tf.train` optimizer class")
    if isinstance(receiver, cst.Name):
        found = facts.assignments(receiver)
        if not found:
            return Optimizer("unknown", f"`{receiver.value}` is not defined in this file")
        if any(isinstance(a, ImportAssignment) for a in found):
            qualified = facts.qualified(receiver)
            if qualified and all(q.split(".")[0] in FOREIGN_LIBRARIES for q in qualified):
                return Optimizer("foreign", sorted(qualified)[0])
            return Optimizer("unknown", f"`{receiver.value}` is imported; its optimizer class is unknown here")
        params = [a.node for a in found if isinstance(a, Assignment) and isinstance(a.node, cst.Param)]
        if params:
            # What every caller in this file passes for it (its callers elsewhere are unknown).
            args = analyzer.param_args(params[0]) if analyzer is not None and len(found) == 1 else None
            if not args:
                return Optimizer("unknown", f"the optimizer `{receiver.value}` is a parameter; its class is unknown "
                                            "here")
            infos = [classify(facts, arg, depth + 1, analyzer) for arg in args]
            kinds = {info.kind for info in infos}
            if kinds == {"tf1"} and len({info.what for info in infos}) == 1:
                return Optimizer("tf1", infos[0].what, ctor=None, name=receiver)
            for info in infos:
                if info.kind in ("wrapper", "custom") + NOT_TF1_SITE_KINDS:
                    return info
            if "wrapped" in kinds:
                return Optimizer("unknown", f"the optimizer `{receiver.value}` is a `clip_gradients_by_norm` optimizer "
                                            "passed in as a parameter; the compat form (TFC001) keeps it working")
            return Optimizer("unknown", f"the callers pass different optimizers as `{receiver.value}`")
        reaching = (_reaching(facts, receiver, found) or _dominating(facts, receiver, found)) if len(found) > 1 \
            else None
        if reaching is not None:
            found = [reaching]  # straight-line code: the assignment just above the use
        infos = []
        for assignment in found:
            value = facts.assigned_value(assignment)
            if value is None:
                return Optimizer("unknown", f"`{receiver.value}` is not bound by a plain assignment")
            infos.append(classify(facts, value, depth + 1, analyzer))
        for info in infos:
            if info.kind in ("wrapper", "custom") + NOT_TF1_SITE_KINDS:
                return info
        if len(infos) != 1:
            return Optimizer("unknown", f"`{receiver.value}` is assigned more than once, and which assignment "
                                        f"reaches this call depends on a loop, a branch or when a function runs")
        info = infos[0]
        if info.kind == "wrapped" and info.inner is not None and _rebound(facts, info.inner.name):
            # `opt = clip_gradients_by_norm(opt, 5.0)`: the tape form applies with the inner optimizer,
            # which has no name of its own at the site (it would write the wrapper: clipping twice).
            return Optimizer("unknown", f"the optimizer inside `clip_gradients_by_norm` is bound to "
                                        f"`{info.inner.name.value}`, which is assigned more than once, so the "
                                        f"tape form could not name it at the site; the compat form (TFC001) keeps "
                                        f"it working")
        if info.kind in ("tf1", "wrapped"):
            return Optimizer(info.kind, info.what, ctor=info.ctor, name=receiver, inner=info.inner)
        return info
    if isinstance(receiver, cst.Attribute):
        return _classify_field(facts, receiver, depth, analyzer)
    return Optimizer("unknown", "the optimizer expression is not a name or a constructor call")


# names through which a module can write a field without an assignment statement the planner sees
FIELD_WRITER_FUNCTIONS = ("setattr", "vars")  # builtins (as names, not as attributes: `self.vars` is a field)
FIELD_WRITER_DUNDERS = ("__setattr__", "__dict__", "__getattribute__", "__slots__")


def _classify_field(facts: ModuleFacts, receiver: cst.Attribute, depth: int, analyzer) -> Optimizer:
    """``self.X`` in a method of a class: the optimizer class of every value the module stores in a
    field named ``X``, when that is provably one ``tf.train`` class at this use.

    Provable when every write to any field named ``X`` in the module (on any object, in any class)
    is a plain ``obj.X = value`` statement (no tuple/loop/``with``/``del`` target, no
    ``setattr``/``__dict__``/``vars``), every value is a constructor of the same ``tf.train``
    optimizer class (followed like a name's value), the class has no base defined elsewhere nor a
    property named ``X``, and one ``self.X = ...`` is in the class's ``__init__`` or precedes the use
    in straight-line code of the use's method (so the
    field was set by this file when the site runs). Every write building one Keras (or other
    not-a-TF1-site) class, under the same conditions, makes the call no TF 1 training site. Anything
    else keeps the decline, with the cause (a parameter, an unknown call, other classes, other writes,
    a base class from elsewhere)."""
    field = f"`{facts.code(receiver, 50)}`"
    unknown = Optimizer("unknown", f"the optimizer {field} is an attribute; its class is unknown here")
    attr = receiver.attr.value
    method = facts.function_of(receiver)
    cls = facts.class_of(method) if method is not None else None
    if (analyzer is None or method is None or cls is None or facts.function_of(method) is not None
            or facts.parent(facts.parent(method)) is not cls or not _is_self(method, receiver.value)):
        return unknown
    stores = analyzer.all_field_stores().get(attr, [])
    if not stores:
        return Optimizer("unknown", f"the optimizer {field} is an attribute this file never assigns; its class "
                                    "is unknown here")
    infos = []
    for node, value in stores:
        # (a write on another object or in another class counts the same: what matters is the class
        # of every value any field named `attr` can hold)
        if value is None:
            return Optimizer("unknown", f"the optimizer {field} is an attribute, and a field `{attr}` is also set "
                                        f"by {facts.where(node)}, which this analysis does not follow; its class "
                                        "is unknown here")
        info = classify(facts, value, depth + 1, analyzer)
        if info.kind in ("wrapper", "custom"):
            return info  # declined, naming the wrapper or the custom class
        if info.kind == "unknown":
            if isinstance(value, cst.Name) and any(isinstance(a, Assignment) and isinstance(a.node, cst.Param)
                                                   for a in facts.assignments(value)):
                return Optimizer("unknown", f"the optimizer {field} is set from the parameter `{value.value}`; its "
                                            "class is unknown here")
            return Optimizer("unknown", f"the optimizer {field} is set to {facts.where(value)}, whose optimizer class "
                                        "is unknown here")
        infos.append((node, info))
    # Only now the ways a write may escape the statements above (a `tf1` or a not-a-site answer
    # must hold for every write).
    if not _plain_class(facts, cls, 0):
        return Optimizer("unknown", f"the optimizer {field} is an attribute of `{cls.name.value}`, which has a base "
                                    f"class defined elsewhere (it may define or set `{attr}`); its class is unknown here")
    if _defines(facts, attr):
        return Optimizer("unknown", f"the optimizer {field} is an attribute, and this module defines a function "
                                    f"or class named `{attr}` (a property may compute it); its class is unknown here")
    if _writes_fields_by_name(facts):
        return Optimizer("unknown", f"the optimizer {field} is an attribute, and this module writes fields "
                                    f"through `setattr`/`__dict__`/`vars`; its class is unknown here")
    if _other_field_writes(facts, attr):
        return Optimizer("unknown", f"the optimizer {field} is an attribute also written as a loop, `with` or "
                                    "`del` target; its class is unknown here")
    classes = sorted({f"{info.kind}:{info.what}" for _, info in infos})
    if len(classes) != 1:
        return Optimizer("unknown", f"the optimizer {field} is set to different optimizer classes "
                                    f"({', '.join(sorted(f'`{info.what}`' for info in {i.what: i for _, i in infos}.values()))}) "
                                    f"in this file")
    kind, what = infos[0][1].kind, infos[0][1].what
    if not any(_sets_before(facts, node, owner_of, receiver, method)
               for node, _ in infos for owner_of in [facts.function_of(node)]):
        return Optimizer("unknown", f"the optimizer {field} is set to `{what}` neither in `__init__` nor in "
                                    f"straight-line code above this call in its method, so it may not be set when "
                                    f"this call runs; its class is unknown here")
    if kind in NOT_TF1_SITE_KINDS:
        return infos[0][1]  # every write builds, say, a Keras optimizer: no TF 1 training site
    if kind != "tf1":
        return Optimizer("unknown", f"the optimizer {field} holds a `{what}` optimizer; the tape form is written "
                                    "only for a field that holds a `tf.train` optimizer itself")
    classes = [what]
    ctor = infos[0][1].ctor if len(infos) == 1 else None
    return Optimizer("tf1", classes[0], ctor=ctor)


def _plain_class(facts: ModuleFacts, cls: cst.ClassDef, depth: int) -> bool:
    """``cls``'s bases are only ``object`` or classes of this module with the same property (no
    metaclass): nothing outside this file defines its attributes."""
    if depth > 5 or cls.keywords:
        return False
    for base in cls.bases:
        value = base.value
        if base.star or not isinstance(value, cst.Name):
            return False
        if value.value == "object" and all(isinstance(a, BuiltinAssignment) for a in facts.assignments(value)):
            continue
        local = _local_class(facts, value)
        if local is None or not _plain_class(facts, local, depth + 1):
            return False
    return True


def _defines(facts: ModuleFacts, attr: str) -> bool:
    """A function or class named ``attr`` is defined somewhere in the module (a property, a method)."""
    found = []

    class Find(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            if node.name.value == attr:
                found.append(node)

        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            if node.name.value == attr:
                found.append(node)

    facts.module.visit(Find())
    return bool(found)


def _is_self(method: cst.FunctionDef, expr: cst.BaseExpression) -> bool:
    """``expr`` is the name of ``method``'s first parameter (``self``), never rebound in it."""
    params = method.params.params
    if not isinstance(expr, cst.Name) or not params or params[0].name.value != expr.value:
        return False
    if any(isinstance(d.decorator, cst.Name) and d.decorator.value in ("staticmethod", "classmethod")
           for d in method.decorators):
        return False
    return True


def _sets_before(facts: ModuleFacts, store: cst.CSTNode, owner: Optional[cst.FunctionDef], use: cst.CSTNode,
                 method: cst.FunctionDef) -> bool:
    """The store is a statement of ``__init__``'s own body (not under a branch or loop), or of a
    block of the use's method that holds the use, above the statement that holds it (so it runs
    before the use whenever the use runs)."""
    if owner is None or facts.function_of(owner) is not None:
        return False
    target = store.targets[0].target if isinstance(store, cst.Assign) and len(store.targets) == 1 else None
    if not isinstance(target, cst.Attribute) or not _is_self(owner, target.value):
        return False
    if owner is not method and facts.parent(facts.parent(owner)) is not facts.parent(facts.parent(method)):
        return False  # `__init__` of another class
    line = facts.parent(store)
    if not isinstance(line, cst.SimpleStatementLine):
        return False
    block = facts.parent(line)
    if owner is not method:
        return owner.name.value == "__init__" and block is owner.body
    if not isinstance(block, cst.IndentedBlock):
        return False
    holder = None
    for anc in facts.ancestors(use):
        if anc is method:
            return False
        if facts.parent(anc) is block:
            holder = anc
            break
    if holder is None:
        return False
    index = {id(stmt): k for k, stmt in enumerate(block.body)}
    return id(holder) in index and id(line) in index and index[id(line)] < index[id(holder)]


def _writes_fields_by_name(facts: ModuleFacts) -> bool:
    """The module reads ``setattr``/``vars`` as names, or spells ``__dict__``/``__setattr__``/...:
    it may write any field without an assignment statement."""
    if any(dunder in facts.mentions for dunder in FIELD_WRITER_DUNDERS):
        return True
    if not any(name in facts.mentions for name in FIELD_WRITER_FUNCTIONS):
        return False
    attrs = set()
    found = []

    class Find(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            attrs.add(id(node.attr))

        def visit_Name(self, node: cst.Name) -> None:
            if node.value in FIELD_WRITER_FUNCTIONS and id(node) not in attrs:
                found.append(node)

    facts.module.visit(Find())
    return bool(found)


def _other_field_writes(facts: ModuleFacts, attr: str) -> bool:
    """A field named ``attr`` is a ``for``/comprehension/``with``/``del`` target somewhere."""
    found = []

    class Find(cst.CSTVisitor):
        def _check(self, target: Optional[cst.CSTNode]) -> None:
            if target is None:
                return
            for sub in subtargets(target):  # an Attribute is always a leaf
                if isinstance(sub, cst.Attribute) and sub.attr.value == attr:
                    found.append(sub)

        def visit_For(self, node: cst.For) -> None:
            self._check(node.target)

        def visit_CompFor(self, node: cst.CompFor) -> None:
            self._check(node.target)

        def visit_AsName(self, node: cst.AsName) -> None:
            self._check(node.name)

        def visit_Del(self, node: cst.Del) -> None:
            self._check(node.target)

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            self._check(node.target)

    facts.module.visit(Find())
    return bool(found)


def is_keras_optimizer(name: str) -> bool:
    """``name`` (canonical) is a Keras optimizer class or factory."""
    if name in KERAS_OPTIMIZER_NAMES:
        return True
    return name.startswith(KERAS_OPTIMIZER_NAMESPACES) and name.rsplit(".", 1)[-1][:1].isupper()


def _rebound(facts: ModuleFacts, name: Optional[cst.Name]) -> bool:
    return isinstance(name, cst.Name) and len(facts.assignments(name)) > 1


def _reaching(facts: ModuleFacts, use: cst.Name, found: list):
    """The one assignment of ``use``'s name that reaches it in straight-line code, else None.

    Exact only when every assignment is a plain ``name = value`` statement of the block that
    holds the use (no branch, loop target, ``global`` rebinding in a function, or import), the use
    is not inside a function, lambda or class defined in that block (called later, it would see a
    later binding), and, when the block sits in a loop, no assignment follows the use (the next
    iteration would see it). Then the last assignment above the use's statement is the binding it
    reads (an assignment's own value is read before it binds: ``opt = wrap(opt)``)."""
    lines = []
    for assignment in found:
        if not isinstance(assignment, Assignment) or facts.assigned_value(assignment) is None:
            return None
        target = facts.parent(assignment.node)
        assign = facts.parent(target) if target is not None else None
        line = facts.parent(assign) if assign is not None else None
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            return None
        lines.append(line)
    block = facts.parent(lines[0])
    if not isinstance(block, (cst.Module, cst.IndentedBlock)) or any(facts.parent(line) is not block
                                                                      for line in lines):
        return None
    holder = None
    for anc in facts.ancestors(use):
        if anc is block or isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return None
        if facts.parent(anc) is block:
            holder = anc
            break
    if holder is None:
        return None
    body = list(block.body)
    position = {id(stmt): k for k, stmt in enumerate(body)}
    use_index = position.get(id(holder))
    indices = [position.get(id(line)) for line in lines]
    if use_index is None or any(k is None for k in indices):
        return None
    before = [(k, a) for k, a in zip(indices, found) if k < use_index]
    if not before:
        return None
    if any(k >= use_index for k in indices) and _in_loop(facts, block):
        return None
    return max(before, key=lambda pair: pair[0])[1]


def _dominating(facts: ModuleFacts, use: cst.Name, found: list):
    """The assignment just above the use in the use's own block, when it is the one the use reads
    whatever the other assignments are (a notebook rebinding ``optimizer`` in every cell, each
    time inside ``with tf.name_scope("train"):`` just above its ``minimize``), else None.

    Exact when it is a plain ``name = value`` statement of the block holding the use's statement,
    before it; no statement between them binds the name (nested blocks included); the use is not
    inside a function, lambda or class (called later, it would see a later binding); and every
    assignment of the name is in the use's own function (or all at module level): a function
    rebinding it through ``global``/``nonlocal`` could run between them. Loops around the block do
    not matter: each time the use runs, that assignment has just run."""
    holder = block = None
    for anc in facts.ancestors(use):
        if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return None
        parent = facts.parent(anc)
        if isinstance(anc, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) and \
                isinstance(parent, (cst.Module, cst.IndentedBlock)):
            holder, block = anc, parent
            break
    if holder is None or block is None:
        return None
    function = facts.function_of(use)
    statements: dict = {}
    for assignment in found:
        if not isinstance(assignment, Assignment) or facts.function_of(assignment.node) is not function:
            return None
        line = None
        for anc in facts.ancestors(assignment.node):
            if isinstance(anc, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                line = anc
                break
        statements[id(assignment)] = line
    body = list(block.body)
    position = {id(stmt): k for k, stmt in enumerate(body)}
    use_index = position.get(id(holder))
    if use_index is None:
        return None
    candidates = []
    for assignment in found:
        line = statements[id(assignment)]
        k = position.get(id(line))
        if k is not None and k < use_index and facts.assigned_value(assignment) is not None \
                and isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 \
                and isinstance(line.body[0], cst.Assign) and len(line.body[0].targets) == 1:
            candidates.append((k, assignment))
    if not candidates:
        return None
    k_def, reaching = max(candidates, key=lambda pair: pair[0])
    inside = {id(sub) for j in range(k_def + 1, use_index + 1) for sub in walk_nodes(body[j])}
    if any(id(a.node) in inside for a in found):
        return None  # bound again between them (or inside the use's own statement)
    return reaching


def _in_loop(facts: ModuleFacts, block: cst.CSTNode) -> bool:
    for anc in [block] + list(facts.ancestors(block)):
        if isinstance(anc, (cst.For, cst.While)):
            return True
        if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
    return False


def _local_class(facts: ModuleFacts, name: cst.Name) -> Optional[cst.ClassDef]:
    found = [a.node for a in facts.assignments(name) if isinstance(a, Assignment) and isinstance(a.node, cst.ClassDef)]
    return found[0] if len(found) == 1 else None


def _may_derive_from_tf(facts: ModuleFacts, cls: cst.ClassDef, depth: int) -> bool:
    """Whether a TF (or unknown, imported) class may be among ``cls``'s bases."""
    if depth > 5:
        return True
    for base in cls.bases:
        value = base.value
        if facts.tf_names(value):
            return True
        if isinstance(value, cst.Name):
            if value.value == "object":
                continue
            local = _local_class(facts, value)
            if local is not None:
                if _may_derive_from_tf(facts, local, depth + 1):
                    return True
                continue
        return True  # imported or computed: it may be a TF optimizer
    return False


def _is_local_class(facts: ModuleFacts, name: cst.Name) -> bool:
    return any(isinstance(a, Assignment) and isinstance(a.node, cst.ClassDef) for a in facts.assignments(name))


def check(info: Optimizer, method: str, *, allow_wrapped: bool) -> None:
    """Gate: only ``tf.train`` optimizers (optionally inside ``clip_gradients_by_norm``) are rewritten.
    Why: a wrapper or a subclass may override ``compute_gradients``/``minimize`` (cross-replica
    aggregation, sync, custom updates), which a tape + ``apply_gradients`` would skip."""
    if info.kind == "tf1":
        return
    if info.kind == "wrapped" and allow_wrapped:
        assert info.inner is not None
        if info.inner.kind != "tf1":
            check(info.inner, method, allow_wrapped=False)
        return
    if info.kind == "wrapped":
        raise Reject(f"`clip_gradients_by_norm` wraps another wrapper here {MANUAL}")
    if info.kind == "wrapper":
        raise Reject(f"`{method}` on `{info.what}`: the wrapper does more than the wrapped optimizer "
                     f"(cross-replica aggregation/sync), which a tape + `apply_gradients` does not reproduce {MANUAL}")
    if info.kind == "custom":
        raise Reject(f"`{method}` on the custom optimizer class `{info.what}`: it may override "
                     f"`compute_gradients`/`minimize`, so a tape is not provably the same {MANUAL}")
    raise Reject(f"cannot prove this is a `tf.train` optimizer: {info.what} {MANUAL}")
