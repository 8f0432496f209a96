"""Running the per-file processing over many files: in-process or in a pool of worker
processes, reports in input order, and the progress bar.

Imports neither libcst nor TensorFlow.
"""

from __future__ import annotations

import sys
import time
from typing import IO, Iterator, Sequence

from codemods._discovery import Target
from codemods._process import FileReport, Settings, process
from codemods._report import PROG


def iter_reports(settings: Settings, targets: Sequence[Target], jobs: int) -> Iterator[FileReport]:
    """Reports in the order of ``targets``, from ``jobs`` worker processes."""
    if jobs <= 1 or len(targets) < 2:
        for target in targets:
            yield process(settings, target)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    # fork: workers inherit the loaded engine (and the rule registry) instead of
    # re-importing it; elsewhere the platform default.
    context = multiprocessing.get_context("fork") if sys.platform.startswith("linux") else None
    workers = min(jobs, len(targets))
    chunksize = max(1, min(32, len(targets) // (workers * 4)))
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        yield from pool.map(partial(process, settings), targets, chunksize=chunksize)


class Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    def __init__(self, total: int, stream: IO[str], enabled: bool) -> None:
        self.total = total
        self.stream = stream
        self.enabled = enabled and total > 1
        self.done = 0
        self._last = 0.0

    def clear(self) -> None:
        if self.enabled:
            self.stream.write("\r\x1b[K")

    def draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < 0.1 and self.done < self.total:
            return
        self._last = now
        width = 30
        filled = width * self.done // self.total
        self.stream.write(f"\r{PROG} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}")
        self.stream.flush()

    def step(self) -> None:
        self.done += 1
        self.draw()


