"""TFC301's chain check: arithmetic that grappler regroups differently in TF 1's session (the
whole graph optimized at once) and in the eager step's ``tf.function``, so that the two train a
few ulps apart (round 11; measured by ``tests/fuzz_eager/test_probes.py`` and validated on random
chains, ``tests/fuzz_eager/probes/chains.txt``). :func:`check_arithmetic_chains` reads the
program model once it has read the whole program (:class:`ProgramCode`), and declines; it imports
nothing of the model (the model calls it).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Protocol, Set, Tuple

import libcst as cst

from codemods.rules.eager import tfnames
from codemods.rules.eager.syntax import Decline, names_of, nodes_of


class ProgramCode(Protocol):
    """What the chain check reads of the program model (:class:`~codemods.rules.eager.model.Reader`
    once it has read the whole program): its statements by kind, the expressions lifted into the
    model, the late forward statements, the helpers, the module, TF paths and the graph's names."""

    module: cst.Module
    items: List[Tuple[str, cst.BaseStatement]]
    lifted: Dict[int, List[Tuple[str, cst.BaseExpression]]]
    late_forward: List[cst.SimpleStatementLine]
    helpers: Dict[str, cst.FunctionDef]
    placeholders: list  # of model.Placeholder: ``.name`` and ``.dtype`` (a canonical dtype path)

    def path(self, node: cst.BaseExpression) -> Optional[str]: ...

    def int_value(self, node: cst.BaseExpression) -> Optional[int]: ...

    def graph_names(self) -> Set[str]: ...

# Arithmetic grappler's arithmetic optimizer and constant folding regroup: ``tf.<path>`` ->
# (family, is an addition).
_ARITHMETIC_CALLS = {"add": ("+", True), "math.add": ("+", True), "subtract": ("+", False),
                     "math.subtract": ("+", False), "multiply": ("*", False), "math.multiply": ("*", False),
                     "divide": ("*", False), "math.divide": ("*", False), "div": ("*", False),
                     "truediv": ("*", False), "math.truediv": ("*", False), "realdiv": ("*", False)}
# Reductions to a scalar (called with the tensor alone): the terms of a regularised loss.
# Ops whose result is an integer tensor whatever their (integer) arguments: TF 1's defaults
# (``out_type=tf.int32`` for shape/size/rank, ``output_type=tf.int64`` for argmax/argmin).
_INTEGER_OPS = frozenset({"shape", "size", "rank", "argmax", "argmin", "math.argmax", "math.argmin"})
_INTEGER_DTYPES = frozenset({"int8", "int16", "int32", "int64", "uint8"})
_REDUCTIONS = frozenset({"reduce_mean", "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "nn.l2_loss",
                         "math.reduce_mean", "math.reduce_sum", "math.reduce_max", "math.reduce_min"})


def check_arithmetic_chains(reader: ProgramCode) -> None:
    """Decline a chain of ``+``/``-`` (or ``*``/``/``) in the graph code that grappler may regroup
    differently in TF 1's session and in the eager step's function (measured: the two then train
    a few ulps apart; tests/fuzz_eager/test_probes.py). A chain is followed through names bound
    once; its leaves are the operands that are not themselves in the chain. Declined:

    * a sum of three or more tensors (an addition whose operand is an addition): the arithmetic
      optimizer turns such trees into ``AddN`` groups chosen by shape and consumers;
    * a constant (a literal, module-level data, ``tf.constant``...) in a chain with two or more
      tensors: constant folding pushes it down the tree;
    * the same tensor twice in a ``+``/``-`` chain of three or more leaves (merged, then regrouped);
    * an augmented assignment of tensors (``h += b``: the chain it extends is not followed);
    * Python's ``sum`` over tensors (``0 + a + b + c``), unless of scalar reductions or numbers.

    A chain of one tensor and constants (``tf.log(1 - h + 1e-7)``) and a difference of a sum
    (``tf.matmul(x, W) + b - y``) train the same, and so do sums of scalar reductions (a loss and
    its penalties), measured on generated chains (tests/fuzz_eager/probes/chains.txt)."""
    code: List[cst.CSTNode] = [stmt for kind, stmt in reader.items if kind in ("forward", "trainop")]
    code += [expr for exprs in reader.lifted.values() for _, expr in exprs]
    code += list(reader.late_forward) + [h for h in reader.helpers.values() if all(h is not c for c in code)]
    bound: Dict[str, List[cst.BaseExpression]] = {}
    for node in code:
        for assign in nodes_of(node, cst.Assign):
            for target in assign.targets:
                if isinstance(target.target, cst.Name):
                    bound.setdefault(target.target.value, []).append(assign.value)
                else:  # unpacked, an item or an attribute: never followed
                    for name in names_of(target.target).read | names_of(assign).bound:
                        bound.setdefault(name, []).extend([target.target, target.target])
        for other in nodes_of(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.With, cst.NamedExpr,
                                      cst.FunctionDef, cst.CompFor, cst.Param)):
            if isinstance(other, (cst.For, cst.CompFor, cst.NamedExpr)):
                names = names_of(other.target).read
            elif isinstance(other, (cst.FunctionDef, cst.Param)):
                names = {other.name.value}
            elif isinstance(other, cst.With):
                names = set().union(*[names_of(item.asname).bound for item in other.items if item.asname])
            else:
                names = names_of(other).bound
            for name in names:
                bound.setdefault(name, []).extend([other, other])  # bound otherwise: never followed
    graph = reader.graph_names()
    data: Set[str] = set()  # module-level Python values (data, settings, modules): constants in the graph
    for kind, stmt in reader.items:
        if kind in ("keep", "import"):
            data |= names_of(stmt).bound
    data -= graph | set(bound)

    def operation(node: cst.BaseExpression) -> Optional[Tuple[str, bool, List[cst.BaseExpression]]]:
        if isinstance(node, cst.BinaryOperation):
            if isinstance(node.operator, (cst.Add, cst.Subtract)):
                return "+", isinstance(node.operator, cst.Add), [node.left, node.right]
            if isinstance(node.operator, (cst.Multiply, cst.Divide)):
                return "*", False, [node.left, node.right]
        if isinstance(node, cst.Call) and reader.path(node.func) in _ARITHMETIC_CALLS and len(node.args) >= 2:
            family, is_add = _ARITHMETIC_CALLS[reader.path(node.func)]
            return family, is_add, [a.value for a in node.args[:2]]
        return None

    def resolve(node: cst.BaseExpression, seen: Set[str]) -> Tuple[cst.BaseExpression, Set[str]]:
        while isinstance(node, cst.Name) and node.value not in seen and len(bound.get(node.value, [])) == 1:
            seen = seen | {node.value}
            node = bound[node.value][0]
        return node, seen

    # a helper's parameters: what its call sites pass
    params: Dict[int, Tuple[cst.FunctionDef, int, cst.Param]] = {}  # id(Name in the body) -> param
    helpers: Dict[str, cst.FunctionDef] = {}
    for node in code:
        for func in nodes_of(node, cst.FunctionDef):
            known = helpers.get(func.name.value, func)
            helpers[func.name.value] = func if known is func else None  # defined twice: unknown
            plist = list(func.params.params)
            for position, param in enumerate(plist):
                for name in nodes_of(func.body, cst.Name):
                    if name.value == param.name.value:
                        params[id(name)] = (func, position, param)
    sites: Dict[str, List[cst.Call]] = {}
    for node in code:
        for call in nodes_of(node, cst.Call):
            if isinstance(call.func, cst.Name) and call.func.value in helpers:
                sites.setdefault(call.func.value, []).append(call)

    def param_kind(func: cst.FunctionDef, position: int, param: cst.Param, seen: Set[str]) -> str:
        key = f"{func.name.value}#{position}"
        calls = sites.get(func.name.value, [])
        if key in seen or helpers.get(func.name.value) is not func or not calls:
            return "U"
        kinds = set()
        for call in calls:
            passed = [a.value for a in call.args if a.keyword is not None and a.keyword.value == param.name.value]
            if any(a.star for a in call.args):
                return "U"
            positional = [a for a in call.args if a.keyword is None]
            if position < len(positional):
                passed.append(positional[position].value)
            if not passed and param.default is not None:
                passed.append(param.default)
            if len(passed) != 1:
                return "U"
            kinds.add(kind_of(passed[0], seen | {key}))
        return kinds.pop() if len(kinds) == 1 else "U"

    def kind_of(node: cst.BaseExpression, seen: Set[str]) -> str:
        """"C" (a constant in the graph), "T" (a tensor of the model) or "U" (unknown: either)."""
        if isinstance(node, cst.Name) and id(node) in params:
            return param_kind(*params[id(node)], seen)
        if isinstance(node, cst.Name):
            if node.value in data:
                return "C"
            target, inner = resolve(node, seen)
            kind = kind_of(target, inner) if target is not node else "U"
            return "C" if kind == "C" else "T" if node.value in graph else kind
        if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString)):
            return "C"
        parts: List[cst.BaseExpression] = []
        if isinstance(node, cst.UnaryOperation):
            parts = [node.expression]
        elif isinstance(node, cst.BinaryOperation):
            parts = [node.left, node.right]
        elif isinstance(node, (cst.List, cst.Tuple)):
            parts = [e.value for e in node.elements]
        elif isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value in data:
            return "C"  # np.pi, config.scale
        elif isinstance(node, cst.Subscript):  # a slice of data is data; of a tensor, a tensor
            reads: Set[str] = set()
            for element in node.slice:
                reads |= names_of(element).read
            kinds = {kind_of(node.value, seen)} | {"T" if n in graph else "C" if n in data else "U" for n in reads}
            return "T" if "T" in kinds else "U" if "U" in kinds else "C"
        elif isinstance(node, cst.Call) and reader.path(node.func) is not None:
            path = reader.path(node.func)
            if (path in ("Variable", "get_variable") or path.startswith(tfnames.STATEFUL_PREFIXES)
                    or path.startswith(tfnames.RANDOM_PREFIXES) or "dropout" in path):
                return "T"  # a variable, a layer's output or random numbers: never folded
            parts = [a.value for a in node.args]  # an op of constants is folded to a constant
        else:
            reads = names_of(node).read
            return "T" if reads & graph else "U"
        kinds = {kind_of(part, seen) for part in parts}
        return "T" if "T" in kinds else "U" if "U" in kinds else "C"

    def scalar(node: cst.BaseExpression, seen: Set[str]) -> bool:
        """A scalar reduction (``tf.reduce_mean(...)``, ``tf.nn.l2_loss(w)``), a number times one, or
        a ``+``/``-`` of them: a regularised loss's terms."""
        node, seen = resolve(node, seen)
        if isinstance(node, cst.Call) and reader.path(node.func) in _REDUCTIONS:
            return len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            return scalar(node.expression, seen)
        op = operation(node)
        if op is None:
            return False
        left, right = op[2]
        if op[0] == "*":
            return (number(left, seen) and scalar(right, seen)) or (number(right, seen) and scalar(left, seen))
        return scalar(left, seen) and scalar(right, seen)

    def number(node: cst.BaseExpression, seen: Set[str]) -> bool:
        """A number: a literal, or a name or ``tf.constant`` of one."""
        node, seen = resolve(node, seen)
        if isinstance(node, cst.UnaryOperation):
            return number(node.expression, seen)
        if isinstance(node, cst.Call) and reader.path(node.func) == "constant" and len(node.args) == 1:
            return number(node.args[0].value, seen)
        return isinstance(node, (cst.Integer, cst.Float))

    def leaves(node: cst.BaseExpression, family: str, seen: Set[str], out: list) -> bool:
        """Collect the chain's leaves into ``out``; True when an addition has an addition operand."""
        nested = False
        op = operation(node)
        assert op is not None and op[0] == family
        for operand in op[2]:
            target, names = resolve(operand, seen)
            inner = operation(target)
            if inner is not None and inner[0] == family and kind_of(target, names) != "C":
                nested |= op[1] and inner[1]
                nested |= leaves(target, family, names, out)
            else:
                out.append((operand, kind_of(operand, seen)))
        return nested

    int_data = {name for name in data if reader.int_value(cst.Name(name)) is not None}
    int_placeholders = {p.name for p in reader.placeholders if p.dtype in _INTEGER_DTYPES}

    def integer(node: cst.BaseExpression, seen: Set[str]) -> bool:
        """An integer tensor or number, known from the syntax: integer literals and module-level
        names bound once to one, integer placeholders, ``tf.shape``/``size``/``rank``/``argmax``,
        ``tf.range`` and ``tf.cast(..., tf.int32)``, items of these, and ``+``/``-``/``*``/``//``/``%``
        of them. Integer arithmetic is exact (wrapping too is associative), so grappler's regrouping
        cannot change its value."""
        if isinstance(node, cst.Name) and id(node) in params:  # every call site passes an integer
            func, position, param = params[id(node)]
            key = f"{func.name.value}#{position}"
            calls = sites.get(func.name.value, [])
            if key in seen or helpers.get(func.name.value) is not func or not calls:
                return False
            for call in calls:
                passed = [a.value for a in call.args if a.keyword is not None and a.keyword.value == param.name.value]
                positional = [a for a in call.args if a.keyword is None]
                if position < len(positional):
                    passed.append(positional[position].value)
                if any(a.star for a in call.args) or len(passed) != 1 or not integer(passed[0], seen | {key}):
                    return False
            return True
        if isinstance(node, cst.Name):
            if node.value in int_data or node.value in int_placeholders:
                return True
            target, inner = resolve(node, seen)
            return target is not node and integer(target, inner)
        if _integer_literal(node):
            return True
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            return integer(node.expression, seen)
        if isinstance(node, cst.BinaryOperation) and isinstance(
                node.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo)):
            return integer(node.left, seen) and integer(node.right, seen)
        if isinstance(node, cst.Subscript):
            return integer(node.value, seen)
        if isinstance(node, cst.Call) and not any(a.star for a in node.args):
            path = reader.path(node.func)
            keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
            positional = [a.value for a in node.args if a.keyword is None]
            if path in _INTEGER_OPS:
                kind = keywords.get("out_type", keywords.get("output_type"))
                return kind is None or reader.path(kind) in _INTEGER_DTYPES
            if path == "range" and "dtype" not in keywords:
                return all(integer(arg, seen) for arg in positional + list(keywords.values()) if arg is not None)
            if path == "cast":
                dtype = keywords.get("dtype", positional[1] if len(positional) > 1 else None)
                return dtype is not None and reader.path(dtype) in _INTEGER_DTYPES
        return False

    def decide(expr: cst.BaseExpression, family: str, out: list, nested_add: bool) -> None:
        """Decline the chain at ``expr`` (its ``out`` leaves with their kinds) if grappler may
        regroup it (see above); a chain of integers is exact however it is grouped."""
        if len(out) < 3:
            return
        if all(integer(leaf, set()) for leaf, _ in out) and (family == "+" or not any(
                isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.Divide)
                or isinstance(n, cst.Call) and reader.path(n.func) in ("divide", "math.divide", "div", "truediv",
                                                                      "math.truediv", "realdiv")
                for n in nodes_of(expr, cst.BaseExpression))):
            return
        count = {k: sum(1 for _, kind in out if kind == k) for k in "CTU"}
        tensors = [leaf for leaf, kind in out if kind != "C"]
        text = reader.module.code_for_node(expr)
        sign = "`+`/`-`" if family == "+" else "`*`/`/`"
        # an unknown leaf may be either: decline when some reading of it is declined
        # a sum of scalar reductions (a loss and its penalties) trains the same (measured)
        scalars = family == "+" and all(scalar(leaf, set()) for leaf in tensors)
        if count["T"] + count["U"] >= 2 and count["C"] + count["U"] >= 1 and not scalars and (
                count["C"] >= 1 or count["T"] + count["U"] >= 3):
            if count["C"]:
                what = f"puts a constant in a chain of {sign} with two or more tensors"
            else:
                unknown = next(reader.module.code_for_node(leaf) for leaf, kind in out if kind == "U")
                what = (f"is a chain of {sign} over three or more operands, and the rule cannot tell whether "
                        f"`{unknown}` is a constant or a tensor; were it a constant")
            raise Decline(expr, f"`{text}` {what}: grappler's constant folding pushes a constant down such "
                                "a tree in TF 1's session and not the same way in the eager step's function, "
                                "and the two train a few ulps apart (measured)")
        if nested_add and len(tensors) >= 3 and not scalars:
            raise Decline(expr, f"`{text}` adds three or more tensors in one chain: grappler's arithmetic "
                                "optimizer groups such a sum differently in TF 1's session and in the eager "
                                "step's function, and the two train a few ulps apart (measured)")
        texts = [reader.module.code_for_node(leaf) for leaf in tensors]
        if family == "+" and len(set(texts)) < len(texts) and not scalars:
            raise Decline(expr, f"`{text}` uses the same tensor twice in one chain of `+`/`-`: grappler merges "
                                "and regroups it differently in TF 1's session and in the eager step's "
                                "function, and the two train a few ulps apart (measured)")

    def python_sum(expr: cst.Call) -> None:
        """Python's ``sum(items[, start])`` builds ``start + items[0] + items[1] ...``: a chain."""
        items = expr.args[0].value
        start: cst.BaseExpression = expr.args[1].value if len(expr.args) > 1 else cst.Integer("0")
        if isinstance(items, (cst.List, cst.Tuple)) and not any(isinstance(e, cst.StarredElement)
                                                                 for e in items.elements):
            out = [(e.value, kind_of(e.value, set())) for e in items.elements] + [(start, kind_of(start, set()))]
            decide(expr, "+", out, True)
            return
        element = items.elt if isinstance(items, (cst.GeneratorExp, cst.ListComp)) else items
        if scalar(element, set()) or kind_of(element, set()) == "C":
            return  # a sum of scalar reductions (weight decay), or of numbers
        raise Decline(expr, f"`{reader.module.code_for_node(expr)}` adds the items of a sequence the rule does not "
                            "follow in one chain (Python's `sum`); grappler regroups some such sums "
                            "differently in TF 1's session and in the eager step's function, and the two then "
                            "train a few ulps apart (measured)")

    for node in code:
        for aug in nodes_of(node, cst.AugAssign):
            if isinstance(aug.operator, (cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign,
                                         cst.DivideAssign)) and "T" in (kind_of(aug.target, set()),
                                                                         kind_of(aug.value, set())):
                raise Decline(aug, f"`{reader.module.code_for_node(aug).strip()}` extends a chain of arithmetic "
                                   "whose earlier terms the rule does not follow; grappler regroups some such "
                                   "chains differently in TF 1's session and in the eager step's function, and "
                                   "the two then train a few ulps apart (measured)")
        for expr in nodes_of(node, cst.BaseExpression):
            if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "sum" \
                    and expr.args and "sum" not in bound and "sum" not in data:
                python_sum(expr)
                continue
            op = operation(expr)
            if op is None:
                continue
            out: list = []
            nested_add = leaves(expr, op[0], set(), out)
            decide(expr, op[0], out, nested_add)


def _integer_literal(node: cst.CSTNode) -> bool:
    """An integer literal, possibly negated."""
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    return isinstance(node, cst.Integer)
