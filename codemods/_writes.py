"""Reading files and writing them back atomically.

Imports neither libcst nor TensorFlow.
"""

from __future__ import annotations

import os
import stat
import tempfile


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


