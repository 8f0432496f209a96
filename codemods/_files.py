"""Files for ``tfclip-migrate``: discovery, configuration, notebooks and atomic writes.

Nothing here imports libcst or TensorFlow, so ``tfclip-migrate`` can find and filter
files before the engine is loaded.

Symlink policy (the issue asks that symlinks are never followed out of the tree):

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

import codecs
import errno
import fnmatch
import json
import os
import re
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

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

CONFIG_TABLE = "tfclip-migrate"
CONFIG_KEYS = ("select", "ignore", "exclude")


class UsageError(Exception):
    """A problem with the command line or the configuration (exit code 2)."""


# --------------------------------------------------------------------------------------
# configuration


@dataclass(frozen=True)
class Config:
    """``[tool.tfclip-migrate]`` from the nearest ``pyproject.toml`` (empty when none)."""

    path: Optional[str] = None  # the pyproject.toml it came from
    select: Optional[Tuple[str, ...]] = None
    ignore: Tuple[str, ...] = ()
    exclude: Tuple[str, ...] = ()

    @property
    def base(self) -> str:
        """Directory the ``exclude`` globs are relative to."""
        return os.path.dirname(os.path.abspath(self.path)) if self.path else os.getcwd()


def _load_toml(path: str) -> Dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python < 3.11 only
        import tomli as tomllib
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: invalid TOML: {exc}") from None


def _codes_value(path: str, key: str, value: Any) -> Tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(
            f"{path}: [tool.{CONFIG_TABLE}] {key} must be a list of strings, got {value!r}"
        )
    return split_codes(value)


def split_codes(values: Sequence[str]) -> Tuple[str, ...]:
    """``["TFC001,TFC002", " tfc003"]`` -> ``("TFC001", "TFC002", "TFC003")``."""
    out: List[str] = []
    for value in values:
        out.extend(part.strip().upper() for part in value.split(",") if part.strip())
    return tuple(out)


def find_pyproject(start_dirs: Sequence[str]) -> Optional[str]:
    """Nearest ``pyproject.toml`` with a ``[tool.tfclip-migrate]`` table, searching upward
    from each of ``start_dirs`` in turn (the paths' common directory, then the cwd)."""
    seen = set()
    for start in start_dirs:
        directory = os.path.abspath(start)
        while directory not in seen:
            seen.add(directory)
            candidate = os.path.join(directory, "pyproject.toml")
            if os.path.isfile(candidate):
                data = _load_toml(candidate)
                if CONFIG_TABLE in data.get("tool", {}):
                    return candidate
            parent = os.path.dirname(directory)
            if parent == directory:
                break
            directory = parent
    return None


def load_config(path: Optional[str]) -> Config:
    """Read and validate ``[tool.tfclip-migrate]`` from ``path`` (``None``: empty config)."""
    if path is None:
        return Config()
    table = _load_toml(path).get("tool", {}).get(CONFIG_TABLE, {})
    if not isinstance(table, dict):
        raise UsageError(f"{path}: [tool.{CONFIG_TABLE}] must be a table")
    unknown = sorted(set(table) - set(CONFIG_KEYS))
    if unknown:
        raise UsageError(
            f"{path}: unknown key(s) in [tool.{CONFIG_TABLE}]: {', '.join(unknown)} "
            f"(known: {', '.join(CONFIG_KEYS)})"
        )
    select = _codes_value(path, "select", table["select"]) if "select" in table else None
    ignore = _codes_value(path, "ignore", table.get("ignore", []))
    exclude = table.get("exclude", [])
    if isinstance(exclude, str):
        exclude = [exclude]
    if not isinstance(exclude, list) or not all(isinstance(v, str) for v in exclude):
        raise UsageError(f"{path}: [tool.{CONFIG_TABLE}] exclude must be a list of glob strings")
    return Config(path=path, select=select, ignore=ignore, exclude=tuple(exclude))


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


# --------------------------------------------------------------------------------------
# reading and atomic writing


def read_bytes(path: str) -> bytes:
    """The file's bytes (a separate function so tests can simulate unreadable files)."""
    with open(path, "rb") as handle:
        return handle.read()


def atomic_write(path: str, data: bytes) -> None:
    """Replace ``path``'s content with ``data`` atomically, keeping its mode (and owner
    when permitted): temp file in the same directory, fsync, ``os.replace``.

    On any failure the temp file is removed and the original is left untouched.
    ``path`` must be a real path (not a symlink): the caller resolves links.
    """
    st = os.stat(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".tfclip-tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        if hasattr(os, "chown"):
            try:
                os.chown(tmp, st.st_uid, st.st_gid)
            except OSError:
                pass  # not permitted: keep our own ownership, as editors do
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename durable; not available everywhere (Windows)
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


# --------------------------------------------------------------------------------------
# notebooks


class NotebookError(Exception):
    """The notebook cannot be handled; ``reason`` says why (the file is left untouched)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Notebook:
    """A parsed ``.ipynb`` with what is needed to write it back in its own layout."""

    data: Dict[str, Any]
    had_bom: bool
    crlf: bool
    layout: Optional[Dict[str, Any]]  # json.dumps kwargs reproducing the file; None = unknown
    suffix: str  # whitespace after the JSON document

    def code_cells(self) -> Iterator[Tuple[int, str]]:
        """``(cell_number, source)`` of every code cell; numbers are 1-based over all cells."""
        for number, cell in enumerate(self.data["cells"], start=1):
            if isinstance(cell, dict) and cell.get("cell_type") == "code":
                source = cell.get("source", "")
                if isinstance(source, list):
                    source = "".join(source)
                if isinstance(source, str):
                    yield number, source

    def set_source(self, number: int, source: str) -> None:
        """Replace cell ``number``'s source, keeping its list-of-lines or string form."""
        cell = self.data["cells"][number - 1]
        if isinstance(cell.get("source"), list):
            cell["source"] = source.splitlines(keepends=True)
        else:
            cell["source"] = source

    def dump(self) -> bytes:
        """Serialise in the layout detected at load time."""
        assert self.layout is not None
        text = json.dumps(self.data, **self.layout) + self.suffix
        if self.crlf:
            text = text.replace("\n", "\r\n")
        data = text.encode("utf-8")
        return codecs.BOM_UTF8 + data if self.had_bom else data


def _detect_layout(data: Any, text: str) -> Tuple[Optional[Dict[str, Any]], str]:
    """Find ``json.dumps`` arguments that reproduce ``text`` exactly (key order is kept by
    ``json.loads``). Jupyter itself writes ``indent=1, ensure_ascii=False`` + newline."""
    body = text.rstrip()
    suffix = text[len(body):]
    indents: List[Optional[int]] = []
    match = re.search(r"\n( +)\S", body)
    if match:
        indents.append(len(match.group(1)))
    indents += [1, 2, 4, None]
    for indent in dict.fromkeys(indents):
        seps = [(",", ": ")] if indent is not None else [(", ", ": "), (",", ":")]
        for separators in seps:
            for ensure_ascii in (False, True):
                kwargs: Dict[str, Any] = {
                    "indent": indent,
                    "ensure_ascii": ensure_ascii,
                    "separators": separators,
                }
                if json.dumps(data, **kwargs) == body:
                    return kwargs, suffix
    return None, suffix


def load_notebook(raw: bytes) -> Notebook:
    """Parse notebook bytes; raises :class:`NotebookError` with a reason if impossible."""
    if not raw.strip():
        raise NotebookError("empty file is not a Jupyter notebook")
    had_bom = raw.startswith(codecs.BOM_UTF8)
    try:
        text = raw[len(codecs.BOM_UTF8):].decode("utf-8") if had_bom else raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotebookError(f"notebook is not valid UTF-8: {exc}") from None
    crlf = "\r\n" in text
    if crlf:
        text = text.replace("\r\n", "\n")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"invalid notebook JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        if isinstance(data, dict) and "worksheets" in data:
            raise NotebookError("nbformat 3 notebook (no top-level 'cells'); upgrade it with `jupyter nbconvert --to notebook`")
        raise NotebookError("not a Jupyter notebook (no top-level 'cells' list)")
    layout, suffix = _detect_layout(data, text)
    return Notebook(data=data, had_bom=had_bom, crlf=crlf, layout=layout, suffix=suffix)


def notebook_language(nb: Notebook) -> str:
    """The kernel language, ``python`` when the notebook does not say."""
    meta = nb.data.get("metadata") or {}
    info = meta.get("language_info") or {}
    kernel = meta.get("kernelspec") or {}
    language = info.get("name") or kernel.get("language") or "python"
    return str(language).lower()


# IPython syntax that is not Python: line magics, shell escapes, help.
_MAGIC_LINE = re.compile(r"^[ \t]*(?:[%!?]|[^#\n]*\?\??[ \t]*$)")
# Cell magics whose body is Python.
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
_PLACEHOLDER = "pass  # tfclip-migrate:ipython-line:{n}"


@dataclass
class MaskedCell:
    """A code cell with its IPython-only lines replaced by ``pass`` placeholders.

    A Python-bodied cell magic (``%%time``) is held apart in ``header`` so a rewrite
    cannot insert code above it; ``line_offset`` maps positions back to the cell.
    """

    source: str
    originals: Dict[str, str]  # placeholder line -> original line
    header: str = ""
    line_offset: int = 0

    def unmask(self, new_source: str) -> Optional[str]:
        """Put the original lines back; None when a rewrite moved or changed a
        placeholder (then the cell must be left as it was)."""
        lines = new_source.split("\n")
        restored = 0
        for i, line in enumerate(lines):
            original = self.originals.get(line)
            if original is not None:
                lines[i] = original
                restored += 1
        if restored != len(self.originals):
            return None
        return self.header + "\n".join(lines)


def mask_ipython(source: str) -> Optional[MaskedCell]:
    """Mask IPython-only lines so the cell parses as Python, or None when the cell is
    not Python at all (a ``%%bash``-style cell magic)."""
    header = ""
    if source.lstrip(" \t").startswith("%%"):
        first, newline, rest = source.partition("\n")
        words = first.strip()[2:].split(None, 1)
        if not words or words[0] not in _PYTHON_CELL_MAGICS:
            return None
        header, source = first + newline, rest
    lines = source.split("\n")
    originals: Dict[str, str] = {}
    for i, line in enumerate(lines):
        if _MAGIC_LINE.match(line) and "tfclip-migrate:ipython-line" not in line:
            indent = line[: len(line) - len(line.lstrip())]
            placeholder = indent + _PLACEHOLDER.format(n=len(originals))
            originals[placeholder] = line
            lines[i] = placeholder
    return MaskedCell(source="\n".join(lines), originals=originals, header=header, line_offset=1 if header else 0)
