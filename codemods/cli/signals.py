"""SIGINT / SIGTERM / SIGHUP for ``tfclip-migrate``: stop cleanly, never mid-write.

While :func:`handling` is active, the first of these signals raises :class:`Interrupted`
in the main thread, except inside a :func:`critical` section (writing one file back and
reporting it), where it is deferred until the section ends. The runner then stops
submitting work, stops its worker processes, prints the summary of what was written and
exits with ``128 + signal number`` (130 SIGINT, 143 SIGTERM, 129 SIGHUP), as shells do.

Worker processes call :func:`worker_setup`: they ignore SIGINT and SIGHUP (a Ctrl-C on the
terminal reaches the whole process group; the main process decides), and on Linux ask the
kernel to kill them when their parent dies (``PR_SET_PDEATHSIG``), so a main process
killed with SIGKILL leaves no orphan behind.
"""

from __future__ import annotations

import os
import signal
import sys
from contextlib import contextmanager
from typing import Any, Dict, Iterator, Optional

HANDLED = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


class Interrupted(BaseException):
    """A handled signal arrived (a ``BaseException``: ``except Exception`` does not swallow it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        try:
            return signal.Signals(self.signum).name
        except ValueError:  # pragma: no cover - not one of ours
            return f"signal {self.signum}"

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class _State:
    received: Optional[int] = None  # first handled signal, if any
    raised = False  # Interrupted already raised for it
    depth = 0  # nesting of critical sections


_state = _State()


def _handler(signum: int, frame: Any) -> None:
    if _state.received is None:
        _state.received = signum
    if _state.depth == 0 and not _state.raised:
        _state.raised = True
        raise Interrupted(signum)


@contextmanager
def handling(*, restore: bool = True) -> Iterator[None]:
    """Install the handlers for the duration of a run (main thread only); restore after.

    ``restore=False`` (the command's own process, :func:`codemods.cli.console`): the handlers
    stay until the process exits, recording only (:func:`stop_raising`), so a signal that
    arrives after the output is complete -- while the interpreter shuts down -- neither kills
    the process with a default action nor changes its exit code.
    """
    _state.received, _state.raised, _state.depth = None, False, 0
    previous: Dict[int, Any] = {}
    try:
        for signum in HANDLED:
            try:
                previous[signum] = signal.signal(signum, _handler)
            except (ValueError, OSError):  # not the main thread, or not supported
                pass
        yield
    finally:
        if restore:
            for signum, old in previous.items():
                signal.signal(signum, old)
        else:
            stop_raising()


@contextmanager
def critical() -> Iterator[None]:
    """A section a signal must not cut in two: the signal takes effect when it ends."""
    _state.depth += 1
    try:
        yield
    finally:
        _state.depth -= 1
        if _state.depth == 0 and _state.received is not None and not _state.raised:
            _state.raised = True
            raise Interrupted(_state.received)


def stop_raising() -> None:
    """From now on a handled signal is only recorded (the run's output is complete, or being
    completed after a first signal): it can no longer cut anything short."""
    _state.raised = True


def block_until_exit() -> None:
    """The command's own process, its output complete: block the handled signals for the rest of
    its life. CPython's finalization puts the default handlers back (``_PySignal_Fini``), so a
    signal arriving while the interpreter shuts down would kill a finished run; blocked, it stays
    pending and is discarded when the process exits with the run's own exit code."""
    stop_raising()
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)


def received() -> Optional[int]:
    """The handled signal received during this run, if any."""
    return _state.received


@contextmanager
def blocked() -> Iterator[None]:
    """Block the handled signals (around ``fork``, so a child never runs our handler)."""
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - Windows
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


_PR_SET_PDEATHSIG = 1


def worker_setup(parent_pid: int) -> None:
    """First thing in a worker process: die with the parent, leave signals to the parent."""
    for name in ("SIGINT", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_IGN)
    if hasattr(signal, "SIGTERM"):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no prctl: rely on the pipe EOF
            pass
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED)
