"""Running a ``check`` / ``fix`` over the discovered files: processing (in-process or in
the worker pool), writing back (main process only), reporting, progress, signals.

For each file, in input order: the report arrives, the new content is written back
(compare-and-swap, ``codemods._writes``) and the file is reported -- together, as one
critical section a signal cannot cut. On SIGINT / SIGTERM / SIGHUP no further file is
started, the workers are stopped, temp files are removed, and the caller prints the
summary of what was written and exits with 128 + the signal number.

Imports neither libcst nor TensorFlow.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import IO, Callable, Iterator, List, Optional, Sequence

from codemods import _signals, _writes
from codemods._discovery import Target
from codemods._process import FileReport, Settings, process
from codemods._report import PROG


@dataclass
class RunResult:
    processed: int = 0  # files reported (each handed to ``on_report``, then dropped)
    not_processed: List[Target] = field(default_factory=list)
    interrupted: Optional[_signals.Interrupted] = None
    crashes: int = 0  # worker processes that died (each named in its file's report)


def write_report(report: FileReport, target: Target) -> None:
    """Write a changed file back; on refusal or failure the report says why (exit 2)."""
    if report.status != "changed" or report.new is None or report.snapshot is None or report.digest is None:
        return
    try:
        _writes.write_back(target.real, report.new, report.snapshot, report.digest)
    except _writes.WriteRefused as exc:
        report.not_written(f"not written: {exc.reason}")
    except OSError as exc:
        report.not_written(f"not written (file left untouched): {_writes.describe_os_error(exc)}")
    else:
        report.written = True


def run(
    settings: Settings,
    targets: Sequence[Target],
    *,
    jobs: int,
    write: bool,
    on_report: Callable[[FileReport], None],
    progress: Optional["Progress"] = None,
) -> RunResult:
    """Process ``targets`` (writing changed files back when ``write``), calling
    ``on_report`` for each in order. Returns what happened, interrupted or not."""
    result = RunResult()
    try:
        with _signals.handling():
            try:
                _loop(settings, targets, jobs, write, on_report, progress, result)
            except _signals.Interrupted as exc:
                result.interrupted = exc
    finally:
        _writes.remove_temp_files()
        if progress is not None:
            progress.clear()
    result.not_processed = list(targets[result.processed:])
    return result


def _loop(settings, targets, jobs, write, on_report, progress, result: RunResult) -> None:
    def handle(reports: Iterator[FileReport]) -> None:
        for index, report in enumerate(reports):
            with _signals.critical():
                if write:
                    write_report(report, targets[index])
                result.processed += 1
                if progress is not None:
                    progress.clear()
                on_report(report)
                # Reported: nothing of it is kept (new content, diffs, findings), so memory
                # stays flat in the number of files.
                report.new = report.diff = report.snapshot = None
                if progress is not None:
                    progress.step()

    if progress is not None:
        progress.draw(force=True)
    if jobs <= 1 or len(targets) < 2:
        handle(process(settings, target) for target in targets)
        return
    from codemods._pool import Pool

    with Pool(settings, targets, jobs) as pool:
        try:
            handle(pool.reports())
        finally:
            result.crashes = pool.crashes


class Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    def __init__(self, total: int, stream: IO[str], enabled: bool) -> None:
        self.total = total
        self.stream = stream
        self.enabled = enabled and total > 1
        self.done = 0
        self._last = 0.0

    def _put(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # stderr went away: no more progress
            self.enabled = False

    def clear(self) -> None:
        if self.enabled:
            self._put("\r\x1b[K")

    def draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < 0.1 and self.done < self.total:
            return
        self._last = now
        width = 30
        filled = width * self.done // self.total
        self._put(f"\r{PROG} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}")

    def step(self) -> None:
        self.done += 1
        self.draw()
