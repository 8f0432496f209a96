"""Shrink a failing fuzz program (``python benchmarks/fuzz.py --seed S --index I --minimize``).

Greedy delta debugging: every statement of the program, at any depth, and every run of 2-4
consecutive sibling statements, largest first, is tried without its lines, and every assignment
``t = f(a, ...)`` is tried as ``t = a`` (skipping a layer); a change is kept when the smaller
program still trains as TF1 code and its safe fix still fails the same way (same verdict; for a
crash, the same exception type). Passes repeat until nothing more can go. Each try costs one
differential check (~0.5 s): seed 0 index 26 goes from 43 to 33 lines in about 5 minutes on a busy
2-core machine. The chain data -> loss -> site usually stays whole, so reproducers are finished by
hand.
"""

from __future__ import annotations

import ast
from typing import List, Optional, Tuple

from tests.fuzz import oracle
from tests.fuzz.generator import Program, generate


def _signature(program: Program) -> Optional[Tuple[str, str]]:
    """(verdict, exception type) of the safe fix when it fails, else None."""
    result = oracle.check_program(program)
    if result["verdict"] != "ok":
        return None
    entry = result["safe"]
    if entry["verdict"] not in oracle.SAFE_FAILURES:
        return None
    kind = entry["detail"].split(":", 1)[0] if entry["verdict"] == "crashes" else ""
    return entry["verdict"], kind


def _statement_spans(source: str) -> List[Tuple[int, int]]:
    """(first line, last line), 1-based, of every statement and of every run of 2-4 consecutive
    sibling statements (a layer is often a few statements), largest first."""
    spans = set()
    for node in ast.walk(ast.parse(source)):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if not isinstance(body, list) or not body or not isinstance(body[0], ast.stmt):
                continue
            for i, first in enumerate(body):
                for j in range(i, min(i + 4, len(body))):
                    spans.add((first.lineno, body[j].end_lineno))
    return sorted(spans, key=lambda s: (s[0] - s[1], s[0]))


def _without(source: str, span: Tuple[int, int]) -> str:
    lines = source.splitlines(keepends=True)
    return "".join(lines[: span[0] - 1] + lines[span[1]:])


def _bypasses(source: str) -> List[str]:
    """Programs where one assignment ``t = f(a, b...)`` becomes ``t = a`` (a layer skipped; a shape
    mismatch only makes the candidate invalid, and it is rejected)."""
    lines = source.splitlines(keepends=True)
    out = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call)):
            continue
        target = node.targets[0].id
        reads = [n.id for n in ast.walk(node.value) if isinstance(n, ast.Name) and n.id not in ("tf", "np", target)]
        indent = lines[node.lineno - 1][: len(lines[node.lineno - 1]) - len(lines[node.lineno - 1].lstrip())]
        for name in dict.fromkeys(reads):
            out.append("".join(lines[: node.lineno - 1] + [f"{indent}{target} = {name}\n"] + lines[node.end_lineno:]))
    return out


def shrink(program: Program, log=print) -> Program:
    """The smallest program (by greedy deletion) that fails like ``program``."""
    target = _signature(program)
    if target is None:
        raise ValueError("the program's safe fix does not fail: nothing to minimize")
    current = program
    changed = True
    while changed:
        changed = False
        candidates = [_without(current.source, span) for span in _statement_spans(current.source)]
        for candidate_src in candidates + _bypasses(current.source):
            try:
                compile(candidate_src, "<candidate>", "exec")
            except SyntaxError:
                continue
            candidate = Program(current.seed, current.index, current.kind, candidate_src, current.blocks)
            if _signature(candidate) == target:
                current = candidate
                changed = True
                log(f"# kept: {len(candidate_src.splitlines())} lines")
                break
    return current


def minimize_program(seed: int, index: int) -> int:
    program = generate(seed, index)
    try:
        small = shrink(program)
    except ValueError as exc:
        print(f"seed {seed} index {index}: {exc}")
        return 1
    result = oracle.check_program(small)
    print(f"# seed {seed} index {index}, minimized from {len(program.source.splitlines())} to "
          f"{len(small.source.splitlines())} lines; safe fix: {result['safe']['verdict']}: {result['safe']['detail']}")
    print(small.source)
    if result["safe"].get("code"):
        print("# --- after (safe fixes)")
        print(result["safe"]["code"])
    return 0
