"""libcst's ``PositionProvider`` mapping, computed faster and converted on first use.

libcst computes positions by generating the module's code with a state that tracks the
line and column of every token: for every node a ``CodePosition`` pushed before its code
and a ``CodeRange`` stored after it, a generator-based context manager for each node with a
syntactic range, and a regular-expression split of every token. Rules ask for the
positions of the few nodes they report. :class:`Positions` runs the same code generation
with the same bookkeeping on plain tuples (a token without a line break moves the column
only; the context manager is a small class) and makes the ``CodeRange`` of a node when it
is asked for. The ranges are libcst's, node for node: ``tests/test_metadata.py`` compares
them on every fixture.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst._position import CodePosition, CodeRange

__all__ = ["Positions"]

_NEWLINE = re.compile(r"\r\n?|\n")  # libcst's NEWLINE_RE (position_provider.py)

_Pair = Tuple[int, int]


class _State(CodegenState):
    """``PositionProvidingCodegenState`` on ``(line, column)`` tuples."""

    def __init__(self, module: cst.Module, computed: Dict[cst.CSTNode, Tuple[_Pair, _Pair]]) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.computed = computed
        self.line = 1  # one-indexed
        self.column = 0  # zero-indexed
        self.stack: List[_Pair] = []

    def _advance(self, value: str) -> None:
        if "\n" in value or "\r" in value:
            segments = _NEWLINE.split(value)
            self.line += len(segments) - 1
            self.column = len(segments[-1])
        else:
            self.column += len(value)

    def add_indent_tokens(self) -> None:
        self.tokens.extend(self.indent_tokens)
        for token in self.indent_tokens:
            self._advance(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self._advance(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.stack.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self.stack.pop()  # popped whatever happens, as libcst does
        if node not in self.computed:  # a syntactic range already recorded wins
            self.computed[node] = (start, (self.line, self.column))

    def record_syntactic_position(self, node: cst.CSTNode, *, start_node: Optional[cst.CSTNode] = None,
                                  end_node: Optional[cst.CSTNode] = None) -> "_Syntactic":
        return _Syntactic(self, node, start_node, end_node)


class _Syntactic:
    """libcst's ``record_syntactic_position`` context manager as a class."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state: _State, node: cst.CSTNode, start_node: Optional[cst.CSTNode],
                 end_node: Optional[cst.CSTNode]) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node
        self.start: _Pair = (0, 0)

    def __enter__(self) -> None:
        self.start = (self.state.line, self.state.column)

    def __exit__(self, *exc: Any) -> bool:
        state = self.state
        computed = state.computed
        start = computed[self.start_node][0] if self.start_node is not None else self.start
        end = computed[self.end_node][1] if self.end_node is not None else (state.line, state.column)
        computed[self.node] = (start, end)
        return False


class Positions(Mapping):
    """``PositionProvider``'s mapping for ``module``: computed on first use, each
    ``CodeRange`` made when its node is asked for (and then always the same object)."""

    def __init__(self, module: cst.Module) -> None:
        self._module = module
        self._raw: Optional[Dict[cst.CSTNode, Tuple[_Pair, _Pair]]] = None
        self._ranges: Dict[cst.CSTNode, CodeRange] = {}

    def _computed(self) -> Dict[cst.CSTNode, Tuple[_Pair, _Pair]]:
        if self._raw is None:
            raw: Dict[cst.CSTNode, Tuple[_Pair, _Pair]] = {}
            self._module._codegen(_State(self._module, raw))
            self._raw = raw
        return self._raw

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        found = self._ranges.get(node)
        if found is None:
            start, end = self._computed()[node]
            found = self._ranges[node] = CodeRange(CodePosition(*start), CodePosition(*end))
        return found

    def __contains__(self, node: object) -> bool:
        return node in self._computed()

    def __iter__(self) -> Iterator[cst.CSTNode]:
        return iter(self._computed())

    def __len__(self) -> int:
        return len(self._computed())
