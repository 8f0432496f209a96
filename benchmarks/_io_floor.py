"""The I/O floor of a tree migration: walk a tree and read every ``.py`` file, nothing else.

Usage: ``python benchmarks/_io_floor.py TREE`` (prints the file and byte counts). Run in a fresh
interpreter, so it pays the same interpreter start-up as the tools it is compared with.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> int:
    """Read every ``.py`` file under the given tree (bytes, then UTF-8 decode) and print totals."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not os.path.isdir(args[0]):
        print("usage: _io_floor.py TREE (an existing directory)", file=sys.stderr)
        return 2
    files = 0
    size = 0
    for directory, _, names in os.walk(args[0]):
        for name in names:
            if name.endswith(".py"):
                with open(os.path.join(directory, name), "rb") as handle:
                    size += len(handle.read().decode("utf-8", "replace"))
                files += 1
    print(f"{files} files, {size} characters")
    return 0


if __name__ == "__main__":
    sys.exit(main())
