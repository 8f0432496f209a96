"""Running ``tfclip-migrate`` in a real subprocess for the CLI safety tests: with the test-only
rules of ``tests/_cli_rules.py``, optionally as the unprivileged user ``nobody``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

TESTS = Path(__file__).resolve().parent
RULES_SCRIPT = str(TESTS / "_cli_rules.py")
NOBODY = 65534


def can_drop_to_nobody() -> bool:
    """Root can run a child as ``nobody`` (uid/gid 65534); nobody else can."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


# The interpreter lives under /root (mode 0700 here), which nobody may not enter: so the
# child starts as root, imports everything the CLI will need, then drops to nobody (which
# also drops every capability: the kernel checks permissions as for any ordinary user)
# before it touches a file. A module missing from this list fails loudly (ImportError).
_AS_NOBODY = """
import os, sys
for name in ("_cli_rules", "codemods.cli", "codemods.cli.runner", "codemods.cli.pool", "codemods.cli.process",
             "codemods.cli.writes", "codemods.notebooks.cells", "codemods.notebooks.layout", "codemods.engine.splice",
             "codemods.cli.config",
             "codemods.api", "tempfile", "hashlib", "difflib", "json", "multiprocessing",
             "multiprocessing.connection", "ctypes", "tomllib", "inspect", "importlib.metadata",
             "encodings.latin_1", "encodings.ascii"):
    __import__(name)
os.setgroups([])
os.setgid(%d)
os.setuid(%d)
script = sys.argv[1]
sys.argv = sys.argv[1:]
with open(script) as handle:
    code = compile(handle.read(), script, "exec")
exec(code, {"__name__": "__main__", "__file__": script})
""" % (NOBODY, NOBODY)


def env(**extra: str) -> Dict[str, str]:
    out = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", TF_CPP_MIN_LOG_LEVEL="2")
    out.update(extra)
    return out


def popen(args: List[str], cwd: Path, *, nobody: bool = False, extra_env: Optional[Dict[str, str]] = None,
          **kwargs) -> subprocess.Popen:
    """Start ``tfclip-migrate ARGS`` (test rules) in ``cwd``."""
    prefix = [sys.executable, "-c", _AS_NOBODY] if nobody else [sys.executable]
    return subprocess.Popen(
        [*prefix, RULES_SCRIPT, *args],
        cwd=cwd,
        env=env(PYTHONPATH=str(TESTS), **(extra_env or {})),
        stdout=kwargs.pop("stdout", subprocess.PIPE),
        stderr=kwargs.pop("stderr", subprocess.PIPE),
        **kwargs,
    )


def run(args: List[str], cwd: Path, *, nobody: bool = False, extra_env: Optional[Dict[str, str]] = None,
        timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``tfclip-migrate ARGS`` (test rules) in ``cwd`` to the end; text output."""
    proc = popen(args, cwd, nobody=nobody, extra_env=extra_env)
    out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out.decode("utf-8", "replace"),
                                       err.decode("utf-8", "replace"))


def wait_for(predicate, timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def started_pids(gate: Path) -> List[int]:
    """Pids of the processes that reached a ``gate_clip`` (``started-<pid>`` files)."""
    return [int(p.name.split("-", 1)[1]) for p in gate.glob("started-*")]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie child of ours would still answer kill(0): reap it if it is ours
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        pass
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
