"""Worker processes for ``--jobs N``: a pool that names the file a dying worker was on and
replaces the worker.

``concurrent.futures.ProcessPoolExecutor`` breaks as a whole when one worker dies (a
segfault in a native parser: ``BrokenProcessPool``, every pending file lost, none named).
Here each worker has its own pipe and at most two files in flight, taken in order, so
when its process dies the file it was on is known: that file gets a TFC900 report
(:func:`codemods.cli.process.crashed`) and a fresh worker takes the rest. Workers only
compute (they never write files) and die with the main process
(:func:`codemods.cli.signals.worker_setup`).

Reports come back in the order of the targets, so output and files are byte-identical
for any number of workers.
"""

from __future__ import annotations

import os
import sys
from collections import deque
from typing import Any, Deque, Dict, Iterator, List, Optional, Sequence, Tuple

from codemods.cli import signals as _signals
from codemods.cli.discovery import Target
from codemods.cli.process import FileReport, Settings, crashed, process

_IN_FLIGHT = 2  # files sent ahead to one worker (keeps it busy while the main process writes)


def _worker_main(conn: Any, settings: Settings, parent_pid: int) -> None:
    from codemods.cli.runner import per_file_gc

    _signals.worker_setup(parent_pid)
    with per_file_gc() as sweep:  # a worker's memory stays flat too
        while True:
            try:
                task = conn.recv()
            except (EOFError, OSError):
                break
            if task is None:
                break
            index, target = task
            conn.send((index, process(settings, target)))
            del task, target
            sweep()
    conn.close()


class _Worker:
    def __init__(self, context: Any, settings: Settings) -> None:
        self.conn, child = context.Pipe(duplex=True)
        self.process = context.Process(target=_worker_main, args=(child, settings, os.getpid()), daemon=True)
        with _signals.blocked():  # the child must not run the parent's handlers
            self.process.start()
        child.close()
        self.tasks: Deque[Tuple[int, Target]] = deque()

    def send(self, index: int, target: Target) -> None:
        self.tasks.append((index, target))
        try:
            self.conn.send((index, target))
        except OSError:  # the worker is dead: its sentinel says so, and _collect handles it
            pass

    def stop(self) -> None:
        try:
            self.conn.close()
        except OSError:  # pragma: no cover
            pass
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=5)


def _how_it_died(exitcode: Optional[int]) -> str:
    if exitcode is not None and exitcode < 0:
        import signal

        try:
            return f"worker process killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"worker process killed by signal {-exitcode}"
    return f"worker process exited with status {exitcode}"


class Pool:
    """``jobs`` worker processes; iterate :meth:`reports` for the reports in target order.
    Use as a context manager: leaving it stops every worker (after an interrupt too)."""

    def __init__(self, settings: Settings, targets: Sequence[Target], jobs: int) -> None:
        import multiprocessing

        # fork: workers inherit the loaded engine (and the rule registry) instead of
        # re-importing it; elsewhere the platform default.
        self.context = multiprocessing.get_context("fork") if sys.platform.startswith("linux") else multiprocessing.get_context()
        self.settings = settings
        self.targets = targets  # a sequence, not copied: Targets are made as they are sent
        self.jobs = max(1, min(jobs, len(self.targets)))
        self.workers: List[_Worker] = []
        self.crashes = 0

    def __enter__(self) -> "Pool":
        try:
            for _ in range(self.jobs):
                self.workers.append(_Worker(self.context, self.settings))
        except BaseException:  # e.g. interrupted while starting: stop the ones started
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        for worker in self.workers:
            worker.stop()
        self.workers = []

    def reports(self) -> Iterator[FileReport]:
        from multiprocessing.connection import wait

        todo: Deque[Tuple[int, Target]] = deque()  # files handed back by a worker that died
        fresh = enumerate(self.targets)  # the others, taken as workers need them
        done: Dict[int, FileReport] = {}
        next_out = 0
        while next_out < len(self.targets):
            for worker in self.workers:
                while len(worker.tasks) < _IN_FLIGHT:
                    task = todo.popleft() if todo else next(fresh, None)
                    if task is None:
                        break
                    worker.send(*task)
            busy = {worker.conn: worker for worker in self.workers if worker.tasks}
            sentinels = {worker.process.sentinel: worker for worker in self.workers if worker.tasks}
            for ready in wait(list(busy) + list(sentinels)):
                worker = busy.get(ready) or sentinels[ready]
                if worker not in self.workers:
                    continue  # replaced in this round already
                self._collect(worker, done, todo)
            while next_out in done:
                yield done.pop(next_out)
                next_out += 1

    def _collect(self, worker: _Worker, done: Dict[int, FileReport], todo: Deque[Tuple[int, Target]]) -> None:
        try:
            while worker.tasks and worker.conn.poll():
                index, report = worker.conn.recv()
                worker.tasks.popleft()
                done[index] = report
        except (EOFError, OSError, Exception):  # a message cut by the worker's death
            pass
        if worker.process.is_alive() or not worker.tasks:
            return
        worker.process.join(timeout=5)
        # The worker died: the oldest file it had is the one it died on; the others go back.
        index, target = worker.tasks.popleft()
        done[index] = crashed(self.settings, target, _how_it_died(worker.process.exitcode))
        self.crashes += 1
        for task in reversed(worker.tasks):
            todo.appendleft(task)
        worker.tasks.clear()
        worker.stop()
        self.workers[self.workers.index(worker)] = _Worker(self.context, self.settings)
