"""What keeps a run's memory flat in the number of files: the compact file list
(``codemods.cli.discovery.Targets``) and the per-file garbage collection
(``codemods.cli.runner.per_file_gc``). The memory figures themselves are measured by
``benchmarks/run.py --only scaling``, not asserted here.
"""

from __future__ import annotations

import gc
import os
import weakref

import pytest

from codemods.cli import config as _config

from codemods.cli import discovery as _discovery
from codemods.cli.discovery import Target, Targets
from codemods.cli.runner import per_file_gc


def _tree(root):
    for rel in ("a.py", "nb.ipynb", "z.txt", "sub/b.py", "sub/deeper/c.py", "sub/empty/.keep"):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}\n" if rel.endswith(".ipynb") else "x = 1\n")


def _discover(*paths):
    config = _config.resolve(list(paths), isolated=True, explicit=None, stdin_filename=None)
    return _discovery.discover(list(paths), config)


@pytest.mark.parametrize("arg", [".", "./", "proj", "proj/sub/.."])
def test_walk_names_files_as_before(tmp_path, monkeypatch, arg):
    """A walk's Targets are the files, names and kinds a plain list would hold, shown
    relative to the path given (no `./` prefix for `.`), real paths resolved."""
    project = tmp_path / "proj"
    _tree(project)
    monkeypatch.chdir(project if arg.startswith(".") else tmp_path)
    prefix = "" if arg.startswith(".") else "proj/"
    real = os.path.realpath(project)
    expected = [Target(prefix + rel, os.path.join(real, rel), rel.endswith(".ipynb"))
                for rel in ("a.py", "nb.ipynb", "sub/b.py", "sub/deeper/c.py")]
    found = _discover(arg)
    assert isinstance(found.targets, Targets) and found.targets == expected
    assert list(found.targets) == expected and len(found.targets) == 4
    assert found.targets[-1] == expected[-1] and found.targets[1:3] == expected[1:3]
    with pytest.raises(IndexError):
        found.targets[4]


def test_explicit_files_and_overlaps_are_listed_once(tmp_path, monkeypatch):
    """Several paths naming the same file (a file and its directory, a directory twice) list
    it once, under the name it was first given; an explicit file keeps its own name."""
    _tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    found = _discover("sub/b.py", "sub", ".", "z.txt")
    assert [t.display for t in found.targets] == ["sub/b.py", "sub/deeper/c.py", "a.py", "nb.ipynb", "z.txt"]
    assert found.targets[0].real == os.path.join(os.path.realpath(tmp_path), "sub", "b.py")
    assert Targets(list(found.targets)) == found.targets  # built from Target objects: the same


def test_sweep_frees_a_files_cycles_at_once():
    """A reference cycle left by a file is freed by the sweep after it (not at some later full
    collection), and everything frozen meanwhile is unfrozen when the run ends."""

    class Node:
        pass

    before = gc.get_freeze_count()
    with per_file_gc() as sweep:
        for _ in range(3):
            gc.disable()  # no automatic collection may do the sweep's work
            try:
                node = Node()
                node.me = node
                alive = weakref.ref(node)
                del node
                assert alive() is not None
            finally:
                gc.enable()
            sweep()
            assert alive() is None
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == before == 0


def test_sweep_leaves_a_callers_freeze_alone():
    """When the caller froze objects itself, a run neither freezes nor unfreezes anything."""
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with per_file_gc() as sweep:
            sweep()
            assert gc.get_freeze_count() == frozen
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
