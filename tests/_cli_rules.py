"""Test-only rules for the CLI tests (passed as ``main(argv, rules=TEST_RULES)``), and a
``python tests/_cli_rules.py ARGS`` entry point that runs ``tfclip-migrate`` with them in
place of the package's rules (for tests that need a real subprocess: signals, permissions,
crashing workers).

* ``TFC990`` (:class:`RenameRule`): ``legacy_clip`` -> ``modern_clip`` (safe), ``risky_clip``
  (unsafe), ``manual_clip`` (no fix).
* ``TFC991`` (:class:`CrashRule`): raises on ``boom_clip`` (an internal error).
* ``TFC992`` (:class:`GateRule`): on ``gate_clip``, writes ``started-<pid>`` into the directory
  ``$TFCLIP_TEST_GATE`` and waits (up to 60 s) until a file ``go`` appears there -- so a test
  can act (edit a file, send a signal) while the CLI is in the middle of a file.
* ``TFC993`` (:class:`SegfaultRule`): on ``segv_clip``, kills its own process with SIGSEGV,
  as a crashing native parser would.
"""

from __future__ import annotations

import os
import signal
import sys
import time

import libcst as cst

from codemods.engine.base import FixSafety, Phase, TfcCodemod


class RenameRule(TfcCodemod):
    """Test-only rule: ``legacy_clip(x)`` -> ``modern_clip(x)``.

    ## What it does
    Renames ``legacy_clip``, ``risky_clip`` and ``manual_clip`` calls.

    ## Why is this bad?
    Test-only: it exercises the CLI.

    ## Example
    ```python
    legacy_clip(x)
    ```

    ## Use instead
    ```python
    modern_clip(x)
    ```

    ## Fix safety
    ``legacy_clip``: safe; ``risky_clip``: unsafe; ``manual_clip``: no fix.
    """

    CODE = "TFC990"
    PHASE = Phase.REPORT
    NAME = "test-rename"
    SUMMARY = "test-only: `legacy_clip` -> `modern_clip`"
    TOKENS = ("legacy_clip", "risky_clip", "manual_clip")
    SAFETY = {"legacy_clip": FixSafety.SAFE, "risky_clip": FixSafety.UNSAFE, "manual_clip": FixSafety.NONE}

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        func = original_node.func
        if not isinstance(func, cst.Name) or func.value not in self.SAFETY:
            return updated_node
        safety = self.SAFETY[func.value]
        applied = self.may_fix(original_node, safety)
        self.report(original_node, f"`{func.value}` is legacy: use `modern_clip`", fix=safety, applied=applied)
        if applied:
            return updated_node.with_changes(func=cst.Name("modern_clip"))
        return updated_node


class CrashRule(TfcCodemod):
    """Test-only rule that crashes on ``boom_clip`` (an internal error).

    ## What it does
    Raises inside the rule.

    ## Why is this bad?
    Test-only: it exercises the CLI.

    ## Example
    ```python
    legacy_clip(x)
    ```

    ## Use instead
    ```python
    modern_clip(x)
    ```

    ## Fix safety
    No fix.
    """

    CODE = "TFC991"
    PHASE = Phase.REPORT
    NAME = "test-crash"
    SUMMARY = "test-only: crashes"
    TOKENS = ("boom_clip",)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "boom_clip":
            raise RuntimeError("rule exploded")


class GateRule(TfcCodemod):
    """Test-only rule that waits at ``gate_clip`` until the test opens the gate.

    ## What it does
    Waits for the test.

    ## Why is this bad?
    Test-only: it exercises the CLI.

    ## Example
    ```python
    legacy_clip(x)
    ```

    ## Use instead
    ```python
    modern_clip(x)
    ```

    ## Fix safety
    No fix.
    """

    CODE = "TFC992"
    PHASE = Phase.REPORT
    NAME = "test-gate"
    SUMMARY = "test-only: waits for the test"
    TOKENS = ("gate_clip",)

    def visit_Call(self, node: cst.Call) -> None:
        if not (isinstance(node.func, cst.Name) and node.func.value == "gate_clip"):
            return
        gate = os.environ["TFCLIP_TEST_GATE"]
        with open(os.path.join(gate, f"started-{os.getpid()}"), "w"):
            pass
        deadline = time.monotonic() + 60
        while not os.path.exists(os.path.join(gate, "go")) and time.monotonic() < deadline:
            time.sleep(0.01)


class SegfaultRule(TfcCodemod):
    """Test-only rule whose process dies of SIGSEGV at ``segv_clip``.

    ## What it does
    Kills its own process.

    ## Why is this bad?
    Test-only: it exercises the CLI.

    ## Example
    ```python
    legacy_clip(x)
    ```

    ## Use instead
    ```python
    modern_clip(x)
    ```

    ## Fix safety
    No fix.
    """

    CODE = "TFC993"
    PHASE = Phase.REPORT
    NAME = "test-segfault"
    SUMMARY = "test-only: segfaults"
    TOKENS = ("segv_clip",)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "segv_clip":
            os.kill(os.getpid(), signal.SIGSEGV)


TEST_RULES = (RenameRule, CrashRule, GateRule, SegfaultRule)


def _linger_at_exit(gate: str) -> None:
    """``$TFCLIP_TEST_LINGER_GATE``: once the command has returned and the interpreter is shutting
    down (``atexit``), put the default signal handlers back as CPython's finalization does
    (``_PySignal_Fini``), write ``exiting`` there and wait for ``go`` -- the window in which a late
    signal killed a finished run."""
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        signal.signal(getattr(signal, name), signal.SIG_DFL)
    with open(os.path.join(gate, "exiting"), "w"):
        pass
    deadline = time.monotonic() + 60
    while not os.path.exists(os.path.join(gate, "go")) and time.monotonic() < deadline:
        time.sleep(0.01)


def _gate_the_walk(gate: str) -> None:
    """``$TFCLIP_TEST_WALK_GATE``: once discovery's walk has given its second directory, write
    ``walking`` there and wait for ``go`` -- a moment in the middle of discovery that a test can
    see for certain (polling ``/proc`` for an open directory could miss a walk of seconds; the
    command then blocked forever writing a 1.8 MB document into a pipe nobody read)."""
    real_walk = os.walk

    def walk(top, *args, **kwargs):
        for number, item in enumerate(real_walk(top, *args, **kwargs)):
            yield item
            if number == 1:
                with open(os.path.join(gate, "walking"), "w"):
                    pass
                deadline = time.monotonic() + 60
                while not os.path.exists(os.path.join(gate, "go")) and time.monotonic() < deadline:
                    time.sleep(0.01)

    os.walk = walk


if __name__ == "__main__":
    import atexit

    from codemods.cli import console

    if os.environ.get("TFCLIP_TEST_LINGER_GATE"):
        atexit.register(_linger_at_exit, os.environ["TFCLIP_TEST_LINGER_GATE"])
    if os.environ.get("TFCLIP_TEST_WALK_GATE"):
        _gate_the_walk(os.environ["TFCLIP_TEST_WALK_GATE"])

    console(sys.argv[1:], rules=TEST_RULES)
