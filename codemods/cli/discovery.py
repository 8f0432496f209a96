"""Which files a run processes: paths, directory walks, the symlink policy and excludes.

Imports neither libcst nor TensorFlow, so the CLI can find and filter files before the
engine is loaded.

Symlink policy (the same for walks and for paths named on the command line):

* A directory walk never follows a symlink, to a directory or to a file. A symlinked file
  met in a walk is skipped; its target is migrated under its real name when the walk
  reaches it, i.e. when it lies inside the tree. Loops therefore cannot happen.
* A path named *explicitly* is resolved component by component. Every symlink met on the
  way (``link.py``, ``linkdir/x.py``, ``linkdir/``) must lead to a place inside the
  directory the path was given under: the current directory (the project) when the path
  lies inside it, else the directory holding the first symlink. Otherwise the path is
  refused, named, with exit 2 -- as are dangling links and link loops. An accepted
  link is followed: its target is rewritten in place and the link stays a link.
* Every real file is processed at most once, whatever the number of names it is given.

The files found are kept compactly (:class:`Targets`: per directory its shown and real
path once, per file its name), so a walk over 10,000 files holds well under a megabyte;
a :class:`Target` is made only when a file's turn comes.
"""

from __future__ import annotations

import errno
import os
import stat
from array import array
from dataclasses import dataclass, field
from typing import Iterator, List, Optional, Sequence, Tuple, Union, overload

from codemods.cli.config import Config

PY_SUFFIXES = (".py",)
NOTEBOOK_SUFFIX = ".ipynb"

# Directory names never entered during a walk (a directory given explicitly is walked).
SKIP_DIR_NAMES = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".tox",
        ".nox",
        ".venv",
        "venv",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".ipynb_checkpoints",
        "__pycache__",
        "site-packages",
        "build",
        "dist",
        "node_modules",
    }
)


def is_excluded(abs_path: str, config: Config) -> bool:
    """Whether ``abs_path`` (or one of its parent directories) matches an ``exclude`` glob.

    A glob without ``/`` matches any single path component (``legacy_*``, ``*_pb2.py``);
    a glob with ``/`` is matched against the path relative to the ``pyproject.toml``
    directory, where ``*`` also crosses ``/`` (``src/vendor/*``). Matching a directory
    excludes everything below it.
    """
    if not config.exclude:
        return False
    import fnmatch
    rel = os.path.relpath(abs_path, config.base)
    if rel == os.curdir or rel.startswith(os.pardir + os.sep) or rel == os.pardir:
        parts = [p for p in abs_path.replace(os.sep, "/").split("/") if p]
        anchored = False
    else:
        parts = rel.replace(os.sep, "/").split("/")
        anchored = True
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pattern in config.exclude:
        if "/" not in pattern.strip("/"):
            name = pattern.strip("/")
            if any(fnmatch.fnmatchcase(part, name) for part in parts):
                return True
        elif anchored:
            glob = pattern.strip("/")
            if any(fnmatch.fnmatchcase(prefix, glob) for prefix in prefixes):
                return True
    return False


# --------------------------------------------------------------------------------------
# discovery


@dataclass(frozen=True)
class Target:
    """One file to process: ``display`` is how it is named in messages, ``real`` where
    its bytes live (they differ for an explicitly named symlink)."""

    display: str
    real: str
    notebook: bool


class Targets(Sequence[Target]):
    """The files of a run, in order, stored compactly: each directory's shown and real path
    once, each file's name and kind; ``targets[i]`` makes the :class:`Target`."""

    __slots__ = ("_dirs", "_dir_of", "_names", "_notebook")

    def __init__(self, targets: Sequence[Target] = ()) -> None:
        self._dirs: List[Tuple[str, str]] = []  # (shown, real): a directory, or an explicit file's paths
        self._dir_of = array("i")  # per file: its index in _dirs
        self._names: List[Optional[str]] = []  # per file: its name in the directory (None: explicit file)
        self._notebook = bytearray()  # per file: 1 for a notebook
        for target in targets:
            self.add_file(target.display, target.real, target.notebook)

    def add_directory(self, shown: str, real: str) -> int:
        """Register a directory (``shown`` as paths are shown: ``""`` for the current one);
        returns its number for :meth:`add`."""
        self._dirs.append((shown, real))
        return len(self._dirs) - 1

    def add(self, directory: int, name: str, notebook: bool) -> None:
        """A file ``name`` of a registered directory."""
        self._dir_of.append(directory)
        self._names.append(name)
        self._notebook.append(notebook)

    def add_file(self, display: str, real: str, notebook: bool) -> None:
        """A file with its own paths (named on the command line)."""
        self._dir_of.append(self.add_directory(display, real))
        self._names.append(None)
        self._notebook.append(notebook)

    def __len__(self) -> int:
        return len(self._names)

    def _make(self, index: int) -> Target:
        shown, real = self._dirs[self._dir_of[index]]
        name = self._names[index]
        notebook = bool(self._notebook[index])
        if name is None:
            return Target(display=shown, real=real, notebook=notebook)
        return Target(display=os.path.join(shown, name), real=os.path.join(real, name), notebook=notebook)

    @overload
    def __getitem__(self, index: int) -> Target: ...

    @overload
    def __getitem__(self, index: slice) -> List[Target]: ...

    def __getitem__(self, index: Union[int, slice]) -> Union[Target, List[Target]]:
        if isinstance(index, slice):
            return [self._make(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("target index out of range")
        return self._make(index)

    def __iter__(self) -> Iterator[Target]:
        for index in range(len(self)):
            yield self._make(index)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Targets, list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"Targets({list(self)!r})"


@dataclass
class Discovery:
    """What :func:`discover` found: files to process, paths skipped and path errors."""

    targets: Targets = field(default_factory=Targets)
    skipped: List[Tuple[str, str]] = field(default_factory=list)  # (path, reason)
    errors: List[Tuple[str, str]] = field(default_factory=list)  # (path, message)
    symlinks_not_followed: int = 0
    excluded: int = 0


def _is_inside(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # different drives on Windows
        return False


def _is_venv(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, "pyvenv.cfg"))


def _wanted_suffix(name: str) -> Optional[bool]:
    """True for a notebook, False for a Python file, None for anything else."""
    if name.endswith(NOTEBOOK_SUFFIX):
        return True
    if name.endswith(PY_SUFFIXES):
        return False
    return None


_MAX_LINKS = 40  # symlinks followed while resolving one path (Linux's own limit)


class PathRefused(Exception):
    """An explicit path that must not be processed; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def resolve_explicit(arg: str, cwd_real: str) -> Tuple[str, bool]:
    """``arg``'s real path, and whether a symlink was followed on the way; raises
    :class:`PathRefused` per the module docstring's policy (``OSError`` when a directory
    on the way cannot be read)."""
    inside_project = _is_inside(os.path.abspath(arg), os.path.abspath(os.getcwd()))
    if os.path.isabs(arg):
        current, pending = os.path.abspath(os.sep), arg.split(os.sep)
    else:
        current, pending = cwd_real, arg.split(os.sep)
    anchor: Optional[str] = cwd_real if inside_project else None
    links = 0
    followed = False
    while pending:
        part = pending.pop(0)
        if part in ("", os.curdir):
            continue
        if part == os.pardir:
            current = os.path.dirname(current)
            continue
        candidate = os.path.join(current, part)
        try:
            lst = os.lstat(candidate)
        except FileNotFoundError:
            if followed:
                raise PathRefused("broken symlink (its target does not exist)") from None
            raise
        if stat.S_ISLNK(lst.st_mode):
            links += 1
            if links > _MAX_LINKS:
                raise PathRefused("symlink loop")
            followed = True
            if anchor is None:
                anchor = current
            target = os.readlink(candidate)
            if os.path.isabs(target):
                current = os.path.abspath(os.sep)
            pending = target.split(os.sep) + pending
            continue
        current = candidate
    if followed and anchor is not None and not _is_inside(current, anchor):
        where = "the project" if anchor == cwd_real else anchor
        raise PathRefused(f"symlink leads outside {where} (to {current}); not followed")
    return current, followed


def discover(paths: Sequence[str], config: Config) -> Discovery:
    """Expand ``paths`` into files, in a deterministic order (arguments in order,
    directory entries sorted), per the module docstring's policy."""
    found = Discovery()
    # One path cannot name a file twice (a walk follows no symlink, so each file it meets has
    # its own real path): the real paths seen are kept only when several paths are given.
    seen_real: Optional[set] = set() if len(paths) > 1 else None
    cwd_real = os.path.realpath(os.getcwd())

    def seen(real: str) -> bool:
        if seen_real is None:
            return False
        if real in seen_real:
            return True
        seen_real.add(real)
        return False

    for arg in paths:
        try:
            os.lstat(arg)
            real, followed = resolve_explicit(arg, cwd_real)
            st = os.stat(real)
        except PathRefused as exc:
            found.errors.append((arg, exc.reason))
            continue
        except OSError as exc:
            reason = "symlink loop" if exc.errno == errno.ELOOP else _os_reason(exc)
            found.errors.append((arg, reason))
            continue
        if is_excluded(os.path.abspath(arg), config):
            found.excluded += 1
            continue
        if stat.S_ISDIR(st.st_mode):
            _walk(arg, real if followed else arg, config, found, seen)
            continue
        if not stat.S_ISREG(st.st_mode):
            found.errors.append((arg, "not a regular file (a FIFO, socket or device is never read)"))
            continue
        # An explicitly named file is processed whatever its suffix (pre-commit passes
        # extension-less scripts with a python shebang).
        if not seen(real):
            found.targets.add_file(arg, real, bool(_wanted_suffix(arg)))
    return found


def _walk(shown: str, root: str, config: Config, found: Discovery, seen) -> None:
    """Walk ``root`` (a real directory, or ``shown`` itself when no symlink led there),
    naming what it finds under ``shown``."""

    def display(path: str) -> str:
        if root == shown:
            return os.path.normpath(path)
        return os.path.normpath(os.path.join(shown, os.path.relpath(path, root)))

    def onerror(exc: OSError) -> None:
        found.skipped.append((display(exc.filename or root), f"cannot list directory: {_os_reason(exc)}"))

    for dirpath, dirnames, filenames in os.walk(root, onerror=onerror, followlinks=False):
        # No symlink is followed below ``dirpath`` and a file met is checked not to be one, so
        # its real path is the directory's (resolved once) joined with its name.
        real_dir: Optional[str] = None
        number = -1  # the directory's number in found.targets, once it holds a file
        keep = []
        for name in sorted(dirnames):
            sub = os.path.join(dirpath, name)
            if os.path.islink(sub):
                found.symlinks_not_followed += 1
                continue
            if name in SKIP_DIR_NAMES or _is_venv(sub):
                continue
            if config.exclude and is_excluded(os.path.abspath(display(sub)), config):
                found.excluded += 1
                continue
            keep.append(name)
        dirnames[:] = keep
        for name in sorted(filenames):
            notebook = _wanted_suffix(name)
            if notebook is None:
                continue
            path = os.path.join(dirpath, name)
            shown_path = display(path)
            if config.exclude and is_excluded(os.path.abspath(shown_path), config):
                found.excluded += 1
                continue
            try:
                lst = os.lstat(path)
            except OSError as exc:
                found.skipped.append((shown_path, _os_reason(exc)))
                continue
            if stat.S_ISLNK(lst.st_mode):
                found.symlinks_not_followed += 1
                continue
            if not stat.S_ISREG(lst.st_mode):
                found.skipped.append((shown_path, "not a regular file"))
                continue
            if real_dir is None:
                real_dir = os.path.realpath(dirpath)
            if seen(os.path.join(real_dir, name)):
                continue
            if number < 0:
                shown_dir = os.path.dirname(shown_path)
                number = found.targets.add_directory(shown_dir, real_dir)
            found.targets.add(number, name, notebook)


def _os_reason(exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return "no such file or directory"
    return exc.strerror or str(exc)


