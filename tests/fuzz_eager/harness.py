"""The executed-equivalence harness for whole-program migration: a TF 1 session script BEFORE
(graph mode, TF 1.15 semantics) against its eager TF 2 conversion AFTER (no
``disable_eager_execution``), each in its own worker process (:mod:`._side`).

What is compared (:func:`compare`):

* **what the script prints**, line by line: the text between numbers must be the same and every
  number equal (bit for bit by default: the generated scripts print ``repr(float(value))``, which
  round-trips; ``rtol`` loosens it). The scripts print every fetched loss at every step, so this
  is the loss at every step, eval runs included;
* **every variable by TF 1 name** at the end (model weights, optimizer slots, ``beta1_power``,
  the global step, batch-norm moving statistics): the before session's variables when it closes
  against the variables the after program created. A before variable missing after is a
  difference; variables only after (a Keras ``iterations`` counter...) are listed, not failed.

Initial values are aligned by name: the after program runs in a ``variable_creator_scope`` that
gives each variable the value its TF 1 namesake had right after the initializer ran (TF 2's
``tf.compat.v1.layers`` and initializers draw other numbers from the same seed). Dropout masks
are aligned in both workers: ``tf.nn.dropout`` draws from a stateless op keyed by its op seed
(``tests/_aligned_dropout.py``: a session's op advances in evaluation runs too, which a
``tf.function`` step's own copy does not); ``tf.layers.dropout`` keeps its own generator, and the
generated scripts give it op-level seeds under a graph seed.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from tests.fuzz_eager._side import decode

ROOT = Path(__file__).resolve().parents[2]
JOB_TIMEOUT = 120.0


class SideProcess:
    """A persistent worker for one side (``before`` or ``after``); restarted when it dies."""

    def __init__(self, side: str) -> None:
        self.side = side
        self.proc: Optional[subprocess.Popen] = None

    def _start(self) -> None:
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_USE_LEGACY_KERAS="1",
                   PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.fuzz_eager._side", self.side], cwd=str(ROOT), env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        ready = self.proc.stdout.readline()
        if not ready.strip().startswith('{"ready"'):
            raise RuntimeError(f"the {self.side} worker did not start: {ready!r}")

    def run(self, job: Dict[str, Any], timeout: float = JOB_TIMEOUT) -> Dict[str, Any]:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        assert self.proc is not None and self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        box: List[str] = []
        reader = threading.Thread(target=lambda: box.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout)
        if not box or not box[0]:
            self.close()
            return {"ok": False, "error": "worker died or timed out", "stdout": "", "final": {}}
        return json.loads(box[0])

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc = None


class Harness:
    """Both workers; ``with Harness() as h: h.before(src)``, ``h.after(src, before)``."""

    def __init__(self) -> None:
        self.sides = {"before": SideProcess("before"), "after": SideProcess("after")}

    def __enter__(self) -> "Harness":
        return self

    def __exit__(self, *exc: Any) -> None:
        for side in self.sides.values():
            side.close()

    def before(self, source: str) -> Dict[str, Any]:
        return self.sides["before"].run({"source": source})

    def after(self, source: str, before: Dict[str, Any]) -> Dict[str, Any]:
        return self.sides["after"].run({"source": source, "initial": before.get("initial") or {}})

    def pair(self, before_source: str, after_source: str, *, rtol: float = 0.0) -> "Comparison":
        b = self.before(before_source)
        if not b.get("ok"):
            return Comparison("before-invalid", b.get("error", ""))
        a = self.after(after_source, b)
        if not a.get("ok"):
            return Comparison("after-crash", a.get("error", ""), before=b, after=a)
        return compare(b, a, rtol=rtol)


@dataclass
class Comparison:
    """``verdict``: equal (bit for bit, or within ``rtol``), different, after-crash, before-invalid."""

    verdict: str
    detail: str = ""
    max_abs_diff: float = 0.0
    bitwise: bool = False
    printed_numbers: int = 0
    variables: int = 0
    only_after: List[str] = field(default_factory=list)
    before: Optional[Dict[str, Any]] = field(default=None, repr=False)
    after: Optional[Dict[str, Any]] = field(default=None, repr=False)


NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|\b(?:nan|inf)\b")


def _numbers(line: str) -> Tuple[str, List[float]]:
    return NUMBER.sub("#", line), [float(m) for m in NUMBER.findall(line)]


def _same(a: float, b: float, rtol: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or abs(a - b) <= rtol * abs(b)


def compare(before: Dict[str, Any], after: Dict[str, Any], *, rtol: float = 0.0) -> Comparison:
    """Compare two side reports (see the module docstring)."""
    problems: List[str] = []
    max_diff = 0.0
    bitwise = True
    b_lines = [l for l in before.get("stdout", "").splitlines() if l.strip()]
    a_lines = [l for l in after.get("stdout", "").splitlines() if l.strip()]
    printed = 0
    if len(b_lines) != len(a_lines):
        problems.append(f"{len(b_lines)} printed lines before, {len(a_lines)} after")
    for i, (bl, al) in enumerate(zip(b_lines, a_lines)):
        (bt, bn), (at, an) = _numbers(bl), _numbers(al)
        if bt != at or len(bn) != len(an):
            problems.append(f"printed line {i + 1}: {bl!r} before, {al!r} after")
            break
        printed += len(bn)
        for x, y in zip(bn, an):
            if x != y and not (math.isnan(x) and math.isnan(y)):
                bitwise = False
                if not (math.isnan(x) or math.isnan(y)):
                    max_diff = max(max_diff, abs(x - y))
            if not _same(y, x, rtol):
                problems.append(f"printed line {i + 1}: {bl!r} before, {al!r} after")
                break
    b_vars = {k: decode(v) for k, v in (before.get("final") or {}).items()}
    a_vars = {k: decode(v) for k, v in (after.get("final") or {}).items()}
    if not b_vars:
        problems.append("the before script left no variables to compare")
    missing = sorted(set(b_vars) - set(a_vars))
    if missing:
        problems.append(f"variables missing after: {missing}")
    diffs = []
    for name in sorted(set(b_vars) & set(a_vars)):
        x, y = b_vars[name], a_vars[name]
        if x.shape != y.shape or x.dtype != y.dtype:
            diffs.append(f"{name} ({x.dtype}{list(x.shape)} before, {y.dtype}{list(y.shape)} after)")
            bitwise = False
            continue
        if np.array_equal(x, y, equal_nan=x.dtype.kind == "f"):
            continue
        bitwise = False
        err = float(np.nanmax(np.abs(y.astype(np.float64) - x.astype(np.float64)))) if x.dtype.kind in "fiu" else math.inf
        max_diff = max(max_diff, err)
        if rtol == 0.0 or not np.allclose(y, x, rtol=rtol, atol=0.0, equal_nan=True):
            diffs.append(f"{name} (max abs diff {err:.3g})")
    if diffs:
        problems.append("variables differ: " + ", ".join(diffs))
    problems += _checkpoint_problems(before.get("checkpoints") or {}, after.get("checkpoints") or {})
    problems += list(after.get("problems") or [])
    only_after = sorted(set(a_vars) - set(b_vars))
    return Comparison("different" if problems else "equal", "; ".join(problems), max_diff,
                      bitwise and not problems, printed, len(b_vars), only_after, before, after)


def _checkpoint_problems(before: Dict[str, Any], after: Dict[str, Any]) -> List[str]:
    """The checkpoints each side wrote (``_side``: path prefix -> tensor key -> array, and each
    ``checkpoint`` state file's text): the same files, keys and tensors, bit for bit."""
    if set(before) != set(after):
        return [f"checkpoints written: {sorted(before)} before, {sorted(after)} after"]
    problems = []
    for prefix in sorted(before):
        b, a = before[prefix], after[prefix]
        if isinstance(b, str) or isinstance(a, str):  # a `checkpoint` state file
            if a != b:
                problems.append(f"checkpoint state {prefix}: {b!r} before, {a!r} after")
            continue
        if set(b) != set(a):
            problems.append(f"checkpoint {prefix}: keys {sorted(set(b) - set(a))} only before, "
                            f"{sorted(set(a) - set(b))} only after")
            continue
        for key in sorted(b):
            x, y = decode(b[key]), decode(a[key])
            if x.dtype != y.dtype or x.shape != y.shape or not np.array_equal(x, y, equal_nan=x.dtype.kind == "f"):
                problems.append(f"checkpoint {prefix}: tensor {key} differs")
    return problems
