"""Which files a run processes: paths, directory walks, the symlink policy and excludes.

Imports neither libcst nor TensorFlow, so the CLI can find and filter files before the
engine is loaded.

Symlink policy:

* A directory walk never follows a symlink, to a directory or to a file. A symlinked file
  met in a walk is skipped; its target is migrated under its real name when the walk
  reaches it, i.e. when it lies inside the tree. Loops therefore cannot happen.
* A symlink named *explicitly* on the command line is followed only when its real path
  lies inside the current working directory (the project); the target file is rewritten
  in place and the link stays a link. Dangling links, links out of the project and link
  loops are skipped with a message.
* Every real file is processed at most once, whatever the number of names it is given.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import stat
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

from codemods._config import Config

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


@dataclass
class Discovery:
    """What :func:`discover` found: files to process, paths skipped and path errors."""

    targets: List[Target] = field(default_factory=list)
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


def discover(paths: Sequence[str], config: Config) -> Discovery:
    """Expand ``paths`` into files, in a deterministic order (arguments in order,
    directory entries sorted), skipping what the module docstring says."""
    found = Discovery()
    seen_real: set = set()
    cwd_real = os.path.realpath(os.getcwd())

    def add(display: str, real: str, notebook: bool) -> None:
        if real in seen_real:
            return
        seen_real.add(real)
        found.targets.append(Target(display=display, real=real, notebook=notebook))

    for arg in paths:
        try:
            lst = os.lstat(arg)
        except OSError as exc:
            found.errors.append((arg, _os_reason(exc)))
            continue
        if is_excluded(os.path.abspath(arg), config):
            found.excluded += 1
            continue
        if stat.S_ISLNK(lst.st_mode):
            real = os.path.realpath(arg)
            try:
                st = os.stat(arg)
            except OSError as exc:
                reason = "symlink loop" if exc.errno == errno.ELOOP else f"broken symlink ({_os_reason(exc)})"
                found.skipped.append((arg, reason))
                continue
            if not _is_inside(real, cwd_real):
                found.skipped.append((arg, f"symlink points outside the project ({real}); not followed"))
                continue
            if stat.S_ISDIR(st.st_mode):
                found.skipped.append((arg, "symlink to a directory; not followed"))
                continue
            if not stat.S_ISREG(st.st_mode):
                found.skipped.append((arg, "not a regular file"))
                continue
            add(arg, real, bool(_wanted_suffix(arg)))
            continue
        if stat.S_ISDIR(lst.st_mode):
            _walk(arg, config, found, add)
            continue
        if not stat.S_ISREG(lst.st_mode):
            found.skipped.append((arg, "not a regular file"))
            continue
        # An explicitly named file is processed whatever its suffix (pre-commit passes
        # extension-less scripts with a python shebang).
        add(arg, os.path.realpath(arg), bool(_wanted_suffix(arg)))
    return found


def _walk(root: str, config: Config, found: Discovery, add) -> None:
    def onerror(exc: OSError) -> None:
        found.skipped.append((exc.filename or root, f"cannot list directory: {_os_reason(exc)}"))

    for dirpath, dirnames, filenames in os.walk(root, onerror=onerror, followlinks=False):
        keep = []
        for name in sorted(dirnames):
            sub = os.path.join(dirpath, name)
            if os.path.islink(sub):
                found.symlinks_not_followed += 1
                continue
            if name in SKIP_DIR_NAMES or _is_venv(sub):
                continue
            if is_excluded(os.path.abspath(sub), config):
                found.excluded += 1
                continue
            keep.append(name)
        dirnames[:] = keep
        for name in sorted(filenames):
            notebook = _wanted_suffix(name)
            if notebook is None:
                continue
            path = os.path.normpath(os.path.join(dirpath, name))
            if is_excluded(os.path.abspath(path), config):
                found.excluded += 1
                continue
            try:
                lst = os.lstat(path)
            except OSError as exc:
                found.skipped.append((path, _os_reason(exc)))
                continue
            if stat.S_ISLNK(lst.st_mode):
                found.symlinks_not_followed += 1
                continue
            if not stat.S_ISREG(lst.st_mode):
                found.skipped.append((path, "not a regular file"))
                continue
            add(path, os.path.realpath(path), notebook)


def _os_reason(exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return "no such file or directory"
    return exc.strerror or str(exc)


