"""Reading files, and writing them back without ever losing an edit.

:func:`read_file` returns a file's bytes with a :class:`Snapshot` of what was read.
:func:`write_back` replaces the file only if

* the user may write it: a file without any write bit (mode 0444) is refused, even for
  root; a file the user may not open for writing is refused; a file owned by another
  user is refused (an atomic replace would make it the user's);
* the new file can carry the old one's owner, group, mode (setuid, setgid and sticky bits
  included) and extended attributes (``user.*``, ACLs, ...): otherwise it is refused;
* the file is still what was read (compare-and-swap): size, ``mtime_ns``, inode and a
  SHA-256 of the content are checked again right before the atomic replace; an edit made
  meanwhile (an editor save, a second tool) is never overwritten.

The replace is atomic (temp file ``.NAME.XXXX.tfclip-tmp`` in the same directory, fsync,
``os.replace``, fsync of the directory): the file is the old or the new version, never a
mix; on any failure the temp file is removed. A refusal raises :class:`WriteRefused`
with a one-line reason. The caller makes the call a signal-free critical section
(``codemods.cli.signals.critical``), so a signal never leaves a temp file behind.

What is not guaranteed: the compare-and-swap is not a lock, so a write landing between
the last check and the rename (microseconds) is still replaced; a hard-linked file gets a
new inode, so its other names keep the old content.

Imports neither libcst nor TensorFlow.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from typing import Dict, Set

TEMP_SUFFIX = ".tfclip-tmp"

# Temp files this process created and has not yet renamed or removed (for cleanup).
_TEMP_FILES: Set[str] = set()


class WriteRefused(Exception):
    """The file was left untouched on purpose; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Snapshot:
    """What a file was when it was read (the compare-and-swap witness)."""

    size: int
    mtime_ns: int
    ino: int
    dev: int


def read_file(path: str):
    """``(data, snapshot)`` of ``path``; the snapshot comes from the open descriptor."""
    with open(path, "rb") as handle:
        st = os.fstat(handle.fileno())
        data = handle.read()
    return data, Snapshot(st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)


def read_bytes(path: str) -> bytes:
    """The file's bytes (kept for callers that need no snapshot)."""
    return read_file(path)[0]


def digest(data: bytes) -> str:
    """The content hash the compare-and-swap checks (SHA-256, hex)."""
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _mode_text(mode: int) -> str:
    return oct(stat.S_IMODE(mode)).replace("0o", "0", 1)


def check_writable(path: str, st: os.stat_result) -> None:
    """Raise :class:`WriteRefused` when the user may not (or must not) replace ``path``."""
    if not stat.S_ISREG(st.st_mode):
        raise WriteRefused("no longer a regular file")
    if stat.S_IMODE(st.st_mode) & 0o222 == 0:
        raise WriteRefused(
            f"read-only file (mode {_mode_text(st.st_mode)}); make it writable (chmod u+w) to let fix rewrite it"
        )
    if not os.access(path, os.W_OK):
        raise WriteRefused(
            f"you may not write this file (mode {_mode_text(st.st_mode)}, owner uid {st.st_uid})"
        )
    euid = os.geteuid() if hasattr(os, "geteuid") else None
    if euid not in (None, 0) and st.st_uid != euid:
        raise WriteRefused(
            f"owned by another user (uid {st.st_uid}); replacing it would make it yours"
        )


def _same_file(snapshot: Snapshot, st: os.stat_result) -> bool:
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev) == (
        snapshot.size,
        snapshot.mtime_ns,
        snapshot.ino,
        snapshot.dev,
    )


_CHANGED = "changed on disk since it was read (edited during the run?); not overwritten, run again"


def _xattrs(target) -> Dict[str, bytes]:
    if not hasattr(os, "listxattr"):  # pragma: no cover - not Linux
        return {}
    try:
        names = os.listxattr(target)
    except OSError as exc:
        if exc.errno in (errno.ENOTSUP, getattr(errno, "EOPNOTSUPP", errno.ENOTSUP)):
            return {}
        raise
    return {name: os.getxattr(target, name) for name in names}


def _copy_metadata(path: str, st: os.stat_result, fd: int) -> None:
    """Give the temp file ``fd`` the owner, group, mode and xattrs of ``path``, or refuse."""
    tmp = os.fstat(fd)
    if hasattr(os, "fchown") and (tmp.st_uid, tmp.st_gid) != (st.st_uid, st.st_gid):
        try:
            os.fchown(fd, st.st_uid, st.st_gid)
        except OSError as exc:
            raise WriteRefused(
                f"cannot keep its owner/group (uid {st.st_uid}, gid {st.st_gid}): {exc.strerror}"
            ) from None
    # chmod after chown: chown clears the setuid/setgid bits.
    if hasattr(os, "fchmod"):
        os.fchmod(fd, stat.S_IMODE(st.st_mode))
    old = _xattrs(path)
    new = _xattrs(fd)
    for name, value in old.items():
        if new.get(name) != value:
            try:
                os.setxattr(fd, name, value)
            except OSError as exc:
                raise WriteRefused(f"cannot keep extended attribute {name}: {exc.strerror}") from None
    for name in set(new) - set(old):
        try:
            os.removexattr(fd, name)
        except OSError as exc:
            raise WriteRefused(f"cannot drop extended attribute {name} the new file got: {exc.strerror}") from None
    done = os.fstat(fd)
    if (done.st_uid, done.st_gid) != (st.st_uid, st.st_gid):
        raise WriteRefused(f"cannot keep its owner/group (uid {st.st_uid}, gid {st.st_gid})")
    if stat.S_IMODE(done.st_mode) != stat.S_IMODE(st.st_mode):
        raise WriteRefused(
            f"cannot keep its mode {_mode_text(st.st_mode)} (got {_mode_text(done.st_mode)})"
        )
    if _xattrs(fd) != old:
        raise WriteRefused("cannot keep its extended attributes")


def write_back(path: str, data: bytes, snapshot: Snapshot, content_digest: str) -> None:
    """Atomically replace ``path`` (a real path, not a symlink) with ``data``, if it is still
    the file described by ``snapshot`` / ``content_digest`` and may be written; see the
    module docstring. Raises :class:`WriteRefused` or ``OSError``; the file is then untouched."""
    st = os.stat(path)
    check_writable(path, st)
    if not _same_file(snapshot, st):
        raise WriteRefused(_CHANGED)
    import tempfile

    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".", suffix=TEMP_SUFFIX)
    _TEMP_FILES.add(tmp)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            _copy_metadata(path, st, fd)
            os.fsync(fd)
        finally:
            os.close(fd)
        # Compare-and-swap: the last look at the file before the rename.
        now = os.stat(path)
        if not _same_file(snapshot, now) or digest(read_bytes(path)) != content_digest:
            raise WriteRefused(_CHANGED)
        os.replace(tmp, path)
        _TEMP_FILES.discard(tmp)
    except BaseException:
        _remove(tmp)
        raise
    _fsync_directory(directory)


def _remove(tmp: str) -> None:
    try:
        os.unlink(tmp)
    except OSError:
        pass
    _TEMP_FILES.discard(tmp)


def _fsync_directory(directory: str) -> None:
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


def remove_temp_files() -> int:
    """Remove temp files this process left (after an exception); how many there were."""
    left = list(_TEMP_FILES)
    for tmp in left:
        _remove(tmp)
    return len(left)


def atomic_write(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically, whatever it holds now (no compare-and-swap)."""
    current, snapshot = read_file(path)
    write_back(path, data, snapshot, digest(current))


def describe_os_error(exc: OSError) -> str:
    """``strerror`` (or the message) of an ``OSError``, for one-line reports."""
    if exc.errno == errno.ENOENT:
        return "no such file or directory"
    return exc.strerror or str(exc)

