"""Running a ``check`` / ``fix`` over the discovered files: processing (in-process or in
the worker pool), writing back (main process only), reporting, progress, signals.

For each file, in input order: the report arrives, the new content is written back
(compare-and-swap, ``codemods.cli.writes``) and the file is reported -- together, as one
critical section a signal cannot cut. On SIGINT / SIGTERM / SIGHUP no further file is
started, the workers are stopped, temp files are removed, and the caller prints the
summary of what was written and exits with 128 + the signal number.

Memory stays flat in the number of files: a report is dropped once reported, and the
cyclic garbage a file leaves (libcst's metadata holds reference cycles, freed only by a
full collection, which Python runs rarely: two or three dead modules could pile up) is
collected right after the file, cheaply, by :func:`per_file_gc`.

Imports neither libcst nor TensorFlow.
"""

from __future__ import annotations

import gc
import time
from array import array
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from codemods.cli import signals as _signals

from codemods.cli import writes as _writes
from codemods.cli.discovery import Target
from codemods.cli.process import FileReport, Settings, process
from codemods.cli.report import PROG

if TYPE_CHECKING:  # pragma: no cover
    from codemods.cli.cache import Tree


@dataclass
class RunResult:
    processed: int = 0  # files reported (each handed to ``on_report``, then dropped)
    not_processed: List[Target] = field(default_factory=list)
    interrupted: Optional[_signals.Interrupted] = None
    crashes: int = 0  # worker processes that died (each named in its file's report)


@contextmanager
def per_file_gc() -> Iterator[Callable[[], None]]:
    """A ``sweep()`` to call after each file: it collects the garbage the file left and
    freezes what survives (``gc.freeze``), so the next sweep and Python's own full
    collections scan only what later files allocate -- a sweep costs about a millisecond,
    not a full collection over the loaded engine. Everything frozen is unfrozen on exit.
    A no-op when the garbage collector is disabled or the caller froze objects itself
    (its freeze is its own business)."""
    if not gc.isenabled() or gc.get_freeze_count():
        yield lambda: None
        return

    def sweep() -> None:
        gc.collect()
        gc.freeze()

    try:
        yield sweep
    finally:
        gc.unfreeze()


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
    tree: Optional["Tree"] = None,
) -> RunResult:
    """Process ``targets`` (writing changed files back when ``write``), calling
    ``on_report`` for each in order. Returns what happened, interrupted or not.

    ``tree``: the run's tree index (``codemods.cli.cache.Tree``): a file whose bytes it holds
    is reported from it, in this process; the others are processed, and the index is saved
    at the end of a run that was not interrupted."""
    result = RunResult()
    try:
        with _signals.handling(), per_file_gc() as sweep:
            try:
                _loop(settings, targets, jobs, write, on_report, progress, result, tree, sweep)
            except _signals.Interrupted as exc:
                result.interrupted = exc
    finally:
        _writes.remove_temp_files()
        if progress is not None:
            progress.clear()
    if tree is not None and result.interrupted is None:
        tree.save()
    result.not_processed = list(targets[result.processed:])
    return result


def _read(target: Target) -> Tuple[Optional[bytes], Optional[_writes.Snapshot]]:
    try:
        return _writes.read_file(target.real)
    except OSError:  # process() reads it again and reports why it cannot
        return None, None


def _from_tree(settings: Settings, tree: "Tree", targets: Sequence[Target]) -> Iterator[FileReport]:
    """In-process: each file read once, reported from the tree index or processed."""
    from codemods.cli.cache import report_of

    for target in targets:
        data, snapshot = _read(target)
        if data is None:
            yield process(settings, target)
            continue
        key = settings.cache.key(data, target.notebook)
        row = tree.get(key)
        yield report_of(target.display, row) if row is not None else process(settings, target, data, snapshot, key)


def _loop(settings, targets, jobs, write, on_report, progress, result: RunResult, tree, sweep) -> None:
    def handle(reports: Iterator[FileReport]) -> None:
        for index, report in enumerate(reports):
            with _signals.critical():
                if tree is not None and report.cacheable and report.cache_key is not None:
                    from codemods.cli.cache import report_row

                    tree.put(report.cache_key, report_row(report))
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
            del report
            sweep()

    if progress is not None:
        progress.draw(force=True)
    if jobs <= 1 or len(targets) < 2:
        handle(_from_tree(settings, tree, targets) if tree is not None
               else (process(settings, target) for target in targets))
        return
    hits: Dict[int, str] = {}  # index -> the content key of a file the tree index holds
    if tree is not None and tree.rows:
        # The files the tree index holds are reported from it here; only the others go to
        # the workers (which read them again: their key is of the bytes they process).
        for index, target in enumerate(targets):
            data = _read(target)[0]
            if data is None:
                continue
            key = settings.cache.key(data, target.notebook)
            if tree.get(key) is not None:
                hits[index] = key
    misses: Sequence[Target] = _Others(targets, hits) if hits else targets
    if jobs <= 1 or len(misses) < 2:
        handle(_merge(targets, tree, hits, (process(settings, target) for target in misses)))
        return
    from codemods.cli.pool import Pool

    with Pool(settings, misses, jobs) as pool:
        try:
            handle(_merge(targets, tree, hits, pool.reports()))
        finally:
            result.crashes = pool.crashes


class _Others(Sequence[Target]):
    """The targets not in ``hits``, in order (indexes in an array: no Target is kept)."""

    def __init__(self, targets: Sequence[Target], hits: Dict[int, Any]) -> None:
        self.targets = targets
        self.indexes = array("i", (i for i in range(len(targets)) if i not in hits))

    def __len__(self) -> int:
        return len(self.indexes)

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self.targets[i] for i in self.indexes[index]]
        return self.targets[self.indexes[index]]


def _merge(targets: Sequence[Target], tree: Optional["Tree"], hits: Dict[int, str],
           others: Iterator[FileReport]) -> Iterator[FileReport]:
    """The reports of ``targets`` in order: ``hits`` (keys of rows of ``tree``) by index, the
    others in turn (a row is decoded when its file's turn comes)."""
    from codemods.cli.cache import report_of

    for index in range(len(targets)):
        key = hits.pop(index, None)
        if key is None or tree is None:
            yield next(others)
        else:  # the same bytes that were decoded once already: the same row
            yield report_of(targets[index].display, tree.get(key))


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
