"""A content-addressed cache of per-file results, so re-running over an unchanged tree costs
little more than reading it.

**Key.** SHA-256 over: the file's bytes and kind (Python or notebook); everything in the
run's settings that can change a result (rule selection, ``--unsafe-fixes``,
``--add-clip-norm``, check or fix, ``--diff``, ``--max-file-size``, whether TFC900 is
reported); and the *tool fingerprint* -- the cache format, the Python version, the libcst
version and a hash of every ``.py`` file of the ``codemods`` package. The fingerprint is
the tool version that matters: a release, a dev checkout with one edited line, a different
libcst each get their own entries, so no result is ever trusted across versions. Paths are
not in the key: a file copied to another place or checkout hits the same entry (the path
in each finding is filled in when the entry is read).

**What is cached.** Only outcomes that write nothing: a file left unchanged (with its
findings) or skipped (TFC900), by ``check`` -- ``fix`` never consults the cache (the CLI
gives it none), so a cached result can never stand in for a write or a diff. An entry is
found only by the exact bytes just read, so a file that changed since is a miss; an entry
or row that does not decode to exactly the shape written (:func:`valid_row`) is a miss
too, and is rewritten. Internal errors and crashed workers are not cached.

**Where.** ``$TFCLIP_MIGRATE_CACHE_DIR`` if set, else the user cache directory
(``$XDG_CACHE_HOME/tfclip-migrate``, default ``~/.cache/tfclip-migrate``): content-addressed
entries do not depend on the project, so one cache serves every checkout, worktree and
pre-commit environment, and nothing is written into the user's tree. ``--no-cache`` turns
it off. Entries live in ``v<FORMAT>-<fingerprint>/<2 hex>/<64 hex>.json``; a directory of
another fingerprint not used for 30 days is removed when a new one is created -- only if
its name has that exact pattern AND it holds the :data:`MARKER` file the tool wrote in it
(never through a symlink). A directory the user does not own or others may write, or
whose ``CACHEDIR.TAG`` is a symlink, is not used (:func:`unusable`).

**Tree index.** A run over a directory (or many files) also keeps one :class:`Tree`: the
rows of all its files, those without candidates included, in one file per (settings,
command-line paths), so a warm run does one read for the tree and one hash per file instead
of the pre-filter and a lookup per file (see :class:`Tree`; rows are held as compact bytes).

**Concurrency.** Each entry is written to a temporary file in its directory and renamed
into place (atomic on POSIX), so concurrent runs (and ``--jobs`` workers) only ever see
whole entries; an entry that cannot be read or parsed is a miss, and is overwritten. A
cache that cannot be written (read-only home, full disk) is silently not written.

Imports neither libcst nor TensorFlow.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

CACHE_ENV = "TFCLIP_MIGRATE_CACHE_DIR"
FORMAT = 1
_STALE_AFTER_S = 30 * 24 * 3600
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the whole codemods package


def default_dir() -> str:
    """``$TFCLIP_MIGRATE_CACHE_DIR``, else ``$XDG_CACHE_HOME/tfclip-migrate`` (``~/.cache``)."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(os.path.abspath(base), "tfclip-migrate")


_FINGERPRINT: Optional[str] = None


def tool_fingerprint() -> str:
    """Hash of what makes this tool's results what they are (see the module docstring)."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        digest = hashlib.sha256()
        digest.update(f"format {FORMAT}\npython {sys.version_info[:3]}\nlibcst {_libcst_version()}\n".encode())
        for directory, dirnames, filenames in os.walk(_PACKAGE_DIR):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                if name.endswith(".py"):
                    path = os.path.join(directory, name)
                    digest.update(os.path.relpath(path, _PACKAGE_DIR).encode() + b"\0")
                    with open(path, "rb") as handle:
                        digest.update(handle.read())
                    digest.update(b"\0")
        _FINGERPRINT = digest.hexdigest()
    return _FINGERPRINT


def _libcst_version() -> str:
    """libcst's version, read from its ``_version.py`` without importing it (that costs ~0.1 s)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("libcst")
        locations = list(spec.submodule_search_locations or ()) if spec else []
        with open(os.path.join(locations[0], "_version.py"), "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except (ImportError, IndexError, OSError, ValueError):
        return "unknown"


class Cache:
    """One run's view of the cache: its directory and the settings part of the key."""

    __slots__ = ("directory", "settings", "_prefixes")

    def __init__(self, directory: str, settings: str) -> None:
        self.directory = directory  # the cache root (``default_dir()``)
        self.settings = settings  # a canonical text of the settings that change results
        self._prefixes: Optional[Dict[bool, Any]] = None  # hash objects, not picklable: made lazily

    def __getstate__(self) -> Tuple[str, str]:
        return self.directory, self.settings

    def __setstate__(self, state: Tuple[str, str]) -> None:
        self.directory, self.settings = state
        self._prefixes = None

    def __repr__(self) -> str:
        return f"Cache({self.directory!r}, {self.settings!r})"

    @property
    def root(self) -> str:
        return os.path.join(self.directory, f"v{FORMAT}-{tool_fingerprint()[:24]}")

    def key(self, data: bytes, notebook: bool) -> str:
        """SHA-256 of the fingerprint, the settings, the kind and ``data`` (the prefix is
        hashed once per run and copied: a key costs one pass over the bytes)."""
        prefixes = self._prefixes
        if prefixes is None:
            prefixes = self._prefixes = {}
        prefix = prefixes.get(notebook)
        if prefix is None:
            prefix = prefixes[notebook] = hashlib.sha256(
                f"{tool_fingerprint()}\n{self.settings}\n{'notebook' if notebook else 'python'}\n".encode())
        digest = prefix.copy()
        digest.update(data)
        return digest.hexdigest()

    def _path(self, key: str) -> str:
        return os.path.join(self.root, key[:2], key[2:] + ".json")

    def get(self, key: str) -> Optional[Dict[str, Any]]:
        """The entry stored under ``key``, or None (missing, partial, corrupt, of any other
        shape than :meth:`put` writes: a miss, then overwritten)."""
        try:
            fd = os.open(self._path(key), os.O_RDONLY | _NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            with os.fdopen(fd, "rb") as handle:
                fd = -1
                entry = json.loads(handle.read(_MAX_ENTRY + 1))
        except (OSError, ValueError, RecursionError):
            return None
        finally:
            if fd >= 0:
                os.close(fd)
        if (not isinstance(entry, dict) or set(entry) != _ENTRY_FIELDS or entry.get("key") != key
                or not valid_row([entry[name] for name in _ROW_FIELDS])):
            return None
        return entry

    def put(self, key: str, entry: Dict[str, Any]) -> None:
        """Store ``entry`` under ``key`` atomically; any failure leaves the cache as it was."""
        import tempfile

        path = self._path(key)
        directory = os.path.dirname(path)
        try:
            if not os.path.isdir(self.root):
                self._create_root()
            os.makedirs(directory, exist_ok=True)
            fd, temp = tempfile.mkstemp(prefix=".entry.", suffix=".tmp", dir=directory)
        except OSError:
            return
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(json.dumps(dict(entry, key=key), separators=(",", ":")).encode("utf-8"))
            os.replace(temp, path)
        except OSError:
            try:
                os.unlink(temp)
            except OSError:
                pass

    def _create_root(self) -> None:
        """Create this fingerprint's directory, with the marker that proves the tool made it,
        and remove the stale ones the tool provably made (see :func:`_remove_stale`)."""
        if unusable(self.directory) is not None:
            raise OSError("cache directory not usable")
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        _write_new(os.path.join(self.directory, "CACHEDIR.TAG"), _CACHEDIR_TAG)
        try:
            os.mkdir(self.root, 0o700)
        except FileExistsError:
            pass
        _write_new(os.path.join(self.root, MARKER), _MARKER_TEXT)
        _remove_stale(self.directory, self.root)


    def tree(self, paths: Sequence[str]) -> "Tree":
        """The tree index of a run over ``paths`` with these settings (see :class:`Tree`)."""
        name = hashlib.sha256(json.dumps([self.settings, [os.path.realpath(p) for p in paths]]).encode()).hexdigest()
        return Tree(self, os.path.join(self.root, TREES, name + TREE_SUFFIX))


# A run uses a tree index when it names a directory, or at least this many files.
TREE_MIN_FILES = 32
TREES = "trees"  # the folder of the tree indexes, in the fingerprint's directory
TREE_SUFFIX = ".tree"  # a tree index file (see :class:`Tree` for its lines)
_MAX_TREES = 64  # tree indexes kept per fingerprint (the least recently used go first)


def uses_tree(paths: Sequence[str], targets: int) -> bool:
    """Whether a run over ``paths`` (``targets`` files found) keeps a tree index: a run over a
    directory or many files, not a pre-commit run over a few changed files (whose list of
    paths changes with every commit, so its index would never be read again)."""
    return targets >= TREE_MIN_FILES or any(os.path.isdir(p) for p in paths)


class Tree:
    """Every entry of one run's files in one file, so a warm run over the same paths does one
    read for the whole tree instead of a pre-filter and a lookup per file.

    It is found by the run's settings and the real paths named on the command line, and holds
    rows ``[status, reason, parsed, encoding, findings]``, each under the file's *content* key
    (:meth:`Cache.key`): a file changed since is a miss (computed as usual), whatever the index
    says. Unlike the entries it also holds the files no rule's token occurs in. After a run the
    index is rewritten (atomically, temp file and rename) with exactly the rows of that run's
    files, if they changed; an index that cannot be read or belongs to another fingerprint or
    settings is empty, a damaged row is a miss. At most ``_MAX_TREES`` are kept.

    **Compact.** The file is a header line (JSON: format, fingerprint, settings) then one line
    per file, ``KEY ROW-JSON``. In memory a row stays its JSON bytes under the key's 32 bytes
    (about 150 bytes a file, read or written) and is decoded only when a file's turn comes;
    the new index is written line by line from those bytes.
    """

    __slots__ = ("cache", "path", "rows", "used", "dirty")

    def __init__(self, cache: Cache, path: str) -> None:
        self.cache = cache
        self.path = path
        self.rows: Dict[bytes, bytes] = self._load()  # the index as read: key digest -> row JSON
        self.used: Dict[bytes, bytes] = {}  # the rows of this run's files
        self.dirty = False  # a row was added that the index did not hold

    def _header(self) -> bytes:
        return json.dumps({"format": FORMAT, "fingerprint": tool_fingerprint(), "settings": self.cache.settings},
                          separators=(",", ":")).encode("utf-8")

    def _load(self) -> Dict[bytes, bytes]:
        rows: Dict[bytes, bytes] = {}
        try:
            with open(self.path, "rb") as handle:
                if handle.readline().rstrip(b"\n") != self._header():
                    return {}
                for line in handle:
                    key, _, row = line.rstrip(b"\n").partition(b" ")
                    if len(key) == 64 and row:
                        try:
                            rows[bytes.fromhex(key.decode("ascii"))] = row
                        except ValueError:  # not hex: that row is a miss, the others stand
                            continue
        except (OSError, ValueError):
            return {}
        return rows

    def get(self, key: str) -> Optional[List[Any]]:
        """The row stored under ``key`` (and kept for the next index), or None."""
        digest = bytes.fromhex(key)
        text = self.rows.get(digest)
        if text is None:
            return None
        try:
            row = json.loads(text)
        except (ValueError, RecursionError):
            return None
        if not valid_row(row):
            del self.rows[digest]  # a miss: the file's new row replaces it
            return None
        self.used[digest] = text
        return row

    def put(self, key: str, row: List[Any]) -> None:
        digest = bytes.fromhex(key)
        if digest not in self.used:
            self.used[digest] = json.dumps(row, separators=(",", ":")).encode("utf-8")
            self.dirty = True

    def save(self) -> None:
        """Write the index when its rows changed (a file added, changed or gone); never raises."""
        import tempfile

        if not self.dirty and len(self.used) == len(self.rows):
            try:
                os.utime(self.path)  # recently used: pruned last
            except OSError:
                pass
            return
        directory = os.path.dirname(self.path)
        try:
            new = not os.path.exists(self.path)
            if not os.path.isdir(self.cache.root):
                self.cache._create_root()
            os.makedirs(directory, exist_ok=True)
            if new:
                _prune(directory, _MAX_TREES - 1)
            fd, temp = tempfile.mkstemp(prefix=".tree.", suffix=".tmp", dir=directory)
        except OSError:
            return
        try:
            with os.fdopen(fd, "wb") as handle:  # buffered: one line per file, no whole-index string
                handle.write(self._header() + b"\n")
                for digest, row in self.used.items():
                    handle.write(b"%s %s\n" % (digest.hex().encode("ascii"), row))
            os.replace(temp, self.path)
        except OSError:
            try:
                os.unlink(temp)
            except OSError:
                pass


MARKER = ".tfclip-migrate-cache"  # in each fingerprint directory the tool made
_MARKER_TEXT = b"tfclip-migrate cache entries (a directory holding this file may be deleted by tfclip-migrate)\n"
_CACHEDIR_TAG = (b"Signature: 8a477f597d28d172789f06886806bc55\n"
                 b"# This directory is tfclip-migrate's cache (safe to delete; see --no-cache).\n")
_ROOT_NAME = re.compile(r"v%d-[0-9a-f]{24}\Z" % FORMAT)
_TREE_NAME = re.compile(r"[0-9a-f]{64}\.tree\Z")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_MAX_ENTRY = 64 << 20  # bytes of one entry read at most (a bigger one is a miss)


def _write_new(path: str, data: bytes) -> None:
    """Create ``path`` with ``data`` unless a regular file is there; never through a link
    (a symlink there, dangling or not, raises ``OSError``: the cache is then not written)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        pass
    else:
        if stat.S_ISREG(st.st_mode):
            return
        raise OSError(f"{path} is not a regular file")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _is_marked(path: str) -> bool:
    """``path`` is a real directory (not a link) holding the marker the tool wrote in it."""
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return False
        fd = os.open(os.path.join(path, MARKER), os.O_RDONLY | _NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, len(_MARKER_TEXT) + 1) == _MARKER_TEXT
    except OSError:
        return False
    finally:
        os.close(fd)


def _remove_stale(directory: str, keep: str) -> None:
    """Remove the fingerprint directories of ``directory`` not used for 30 days -- only
    those the tool provably made: named ``v<FORMAT>-<24 hex>`` AND holding the marker file
    it wrote; never through a symlink (``shutil.rmtree`` follows none). Anything else, a
    user's ``v1-thesis-draft/`` included, is never touched."""
    import shutil

    now = time.time()
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        old = os.path.join(directory, name)
        if not _ROOT_NAME.match(name) or old == keep or not _is_marked(old):
            continue
        try:
            if now - os.lstat(old).st_mtime > _STALE_AFTER_S:
                shutil.rmtree(old, ignore_errors=True)
        except OSError:
            pass


def unusable(directory: str) -> Optional[str]:
    """Why the cache directory must not be used, or None: like ssh and pip, a directory
    the user does not own, or that others may write, is not trusted (an entry there could
    hide findings); nor one whose ``CACHEDIR.TAG`` is a symlink (writing it would create
    the link's target). A directory not made yet is fine (it is made 0700)."""
    try:
        st = os.stat(directory)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot use the cache directory {directory}: {exc.strerror or exc}"
    if not stat.S_ISDIR(st.st_mode):
        return f"the cache directory {directory} is not a directory"
    euid = os.geteuid() if hasattr(os, "geteuid") else None
    if euid is not None and st.st_uid != euid:
        return f"the cache directory {directory} is owned by uid {st.st_uid}, not by you (uid {euid})"
    if stat.S_IMODE(st.st_mode) & 0o022:
        return (f"the cache directory {directory} is writable by others (mode "
                f"{oct(stat.S_IMODE(st.st_mode))[2:].zfill(4)}); make it private (chmod go-w)")
    try:
        tag = os.lstat(os.path.join(directory, "CACHEDIR.TAG"))
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot use the cache directory {directory}: {exc.strerror or exc}"
    if not stat.S_ISREG(tag.st_mode):
        return f"{os.path.join(directory, 'CACHEDIR.TAG')} is not a regular file (a symlink?)"
    return None


# A row: [status, reason, parsed, encoding, findings]; a finding:
# [line, col, code, message, fix, applied, cell, end_line, end_col, edits] (edits: None or a list
# of [start_line, end_line, text]). Only outcomes that write nothing are
# cached, and only by runs that write nothing (``check``): a finding is never applied.
_ROW_FIELDS = ("status", "reason", "parsed", "encoding", "findings")
_ENTRY_FIELDS = frozenset(_ROW_FIELDS) | {"key"}
_CODE = re.compile(r"[A-Z]{2,5}[0-9]{3}\Z")
_FIXES = ("safe", "unsafe", "none")


def _is_int(value: Any, low: int) -> bool:
    return type(value) is int and value >= low


def valid_row(row: Any) -> bool:
    """Whether ``row`` decodes to exactly the shape :func:`report_row` writes (anything else
    is a miss: a damaged or hand-made entry never decides a result)."""
    if type(row) is not list or len(row) != 5:
        return False
    status, reason, parsed, encoding, findings = row
    if status not in ("unchanged", "skipped") or type(reason) is not str or type(parsed) is not bool:
        return False
    if type(encoding) is not str or not encoding or len(encoding) > 64 or type(findings) is not list:
        return False
    if status == "unchanged" and reason:
        return False
    try:
        import codecs

        codecs.lookup(encoding)
    except LookupError:
        return False
    for finding in findings:
        if type(finding) is not list or len(finding) != 10:
            return False
        line, col, code, message, fix, applied, cell, end_line, end_col, edits = finding
        if not (_is_int(line, 1) and _is_int(col, 1) and type(code) is str and _CODE.match(code)
                and type(message) is str and fix in _FIXES and applied is False
                and (cell is None or _is_int(cell, 1))
                and (end_line is None or _is_int(end_line, 1)) and (end_col is None or _is_int(end_col, 1))
                and (edits is None or _valid_edits(edits))):
            return False
    return True


def _valid_edits(edits: Any) -> bool:
    return type(edits) is list and all(
        type(e) is list and len(e) == 3 and _is_int(e[0], 1) and _is_int(e[1], 1) and type(e[2]) is str
        for e in edits)


def read_tree(path: str) -> Dict[str, List[Any]]:
    """The rows of the tree index file ``path``, decoded (tests, inspection)."""
    rows = {}
    with open(path, "rb") as handle:
        handle.readline()
        for line in handle:
            key, _, row = line.rstrip(b"\n").partition(b" ")
            rows[key.decode("ascii")] = json.loads(row)
    return rows


def _prune(directory: str, keep: int) -> None:
    """Remove all but the ``keep`` most recently written tree indexes of ``directory``."""
    try:
        names = [n for n in os.listdir(directory) if _TREE_NAME.match(n)  # only the tool's own names
                 and stat.S_ISREG(os.lstat(os.path.join(directory, n)).st_mode)]
        if len(names) <= keep:
            return
        dated = sorted(((os.stat(os.path.join(directory, n)).st_mtime, n) for n in names), reverse=True)
    except OSError:
        return
    for _, name in dated[keep:]:
        try:
            os.unlink(os.path.join(directory, name))
        except OSError:
            pass


def report_row(report: Any) -> List[Any]:
    """A tree row of a file's report (``codemods.cli.results.FileReport``)."""
    return [report.status, report.reason, report.parsed, report.encoding, encode_findings(report.findings)]


def report_of(display: str, row: List[Any]) -> Any:
    """The report a tree row stands for, for the file shown as ``display``."""
    from codemods.cli.results import FileReport

    status, reason, parsed, encoding, findings = row
    return FileReport(display=display, status=status, reason=reason, parsed=parsed, encoding=encoding,
                      findings=decode_findings(findings, display))


def settings_text(options: Any, *, diff: bool, report_unparsable: bool, max_size: int, edits: bool = False) -> str:
    """The canonical text of everything in a run's settings that can change a file's result
    (``edits``: `check` computes each fix's edit, for JSON and SARIF; in the key only when set)."""
    return json.dumps({**({"edits": True} if edits else {}),
        "select": sorted(options.select) if options.select is not None else None,
        "ignore": sorted(options.ignore),
        "unsafe_fixes": options.unsafe_fixes,
        "add_clip_norm": repr(options.add_clip_norm),
        "apply_fixes": options.apply_fixes,
        "diff": diff,
        "report_unparsable": report_unparsable,
        "max_size": max_size,
    }, sort_keys=True)


def encode_findings(findings: List[Any]) -> List[List[Any]]:
    """Findings as JSON lists (the path is left out: the entry is found by content)."""
    return [[f.diagnostic.line, f.diagnostic.col, f.diagnostic.code, f.diagnostic.message,
             f.diagnostic.fix.value, f.diagnostic.applied, f.cell, f.diagnostic.end_line, f.diagnostic.end_col,
             None if f.diagnostic.edits is None else [list(e) for e in f.diagnostic.edits]]
            for f in findings]


def decode_findings(rows: List[List[Any]], display: str) -> List[Any]:
    from codemods.engine.core import Diagnostic, FixSafety
    from codemods.cli.results import Finding

    return [Finding(Diagnostic(display, line, col, code, message, FixSafety(fix), applied, end_line, end_col,
                               None if edits is None else tuple(tuple(e) for e in edits)), cell)
            for line, col, code, message, fix, applied, cell, end_line, end_col, edits in rows]
