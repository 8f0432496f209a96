"""``tfclip-migrate`` as a hostile or unlucky user meets it (issue 23): the cache only ever saves
work, nothing hangs, notebooks stay bounded, every exit and every JSON document tells the truth,
names cannot forge output. Real processes, real signals, real permissions (as ``nobody``).

Cache tests run the package's rules in-process (the cache is keyed by their sources) with the
per-test ``$TFCLIP_MIGRATE_CACHE_DIR`` of ``conftest.py``; subprocess tests use the test-only rules
of ``tests/_cli_rules.py`` (``legacy_clip`` is rewritten, ``gate_clip`` waits for a gate).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import _cli_subprocess as sub
import pytest

from codemods import _cache
from codemods import _writes as writes_mod
from codemods.cli import main

needs_root = pytest.mark.skipif(not sub.can_drop_to_nobody(), reason="running a child as nobody needs root")

SEED = (
    "import tensorflow as tf\n\n"
    "original_optimizer = tf.train.AdamOptimizer(learning_rate=0.01)\n"
    "optimizer = tf.contrib.estimator.clip_gradients_by_norm(original_optimizer, clip_norm=5.0)\n"
    "train_op = optimizer.minimize(loss)\n"
)


@pytest.fixture
def tree(tmp_path, monkeypatch):
    project = tmp_path / "proj"
    project.mkdir()
    monkeypatch.chdir(project)
    return project


@pytest.fixture
def gate(tmp_path):
    path = tmp_path / "gate"
    path.mkdir()
    return path


def run(capsys, *argv: str, rules=None):
    rc = main(list(argv), rules=rules)
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def cache_dir() -> Path:
    return Path(os.environ[_cache.CACHE_ENV])


def entries() -> list:
    return sorted(p for p in cache_dir().rglob("*.json") if p.parent.name != _cache.TREES)


def trees() -> list:
    return sorted(cache_dir().glob(f"*/{_cache.TREES}/*{_cache.TREE_SUFFIX}"))


def no_traceback(text) -> bool:
    text = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    return "Traceback" not in text and "internal error" not in text


# --------------------------------------------------------------------------------------
# 1-3. the cache only saves work


class TestCacheDeletesOnlyItsOwn:
    def _age(self, path: Path) -> None:
        old = time.time() - 90 * 24 * 3600
        os.utime(path, (old, old))

    def test_user_directories_named_like_the_cache_survive(self, tree, capsys):
        """A new fingerprint directory removes only stale directories the tool marked as its
        own: a user's `v1-thesis-draft/`, an unmarked `v1-<24 hex>/` and a symlink to a marked
        directory are left, with their contents; a stale marked one goes."""
        root = cache_dir()
        draft = root / "v1-thesis-draft"
        draft.mkdir()
        (draft / "chapter1.tex").write_text("precious\n")
        unmarked = root / ("v1-" + "a" * 24)
        unmarked.mkdir()
        (unmarked / "notes.txt").write_text("mine\n")
        outside = tree.parent / "elsewhere"
        outside.mkdir()
        (outside / _cache.MARKER).write_bytes(_cache._MARKER_TEXT)
        (outside / "keep.txt").write_text("keep\n")
        link = root / ("v1-" + "b" * 24)
        link.symlink_to(outside, target_is_directory=True)
        stale = root / ("v1-" + "c" * 24)
        stale.mkdir()
        (stale / _cache.MARKER).write_bytes(_cache._MARKER_TEXT)
        for path in (draft, unmarked, stale, outside):
            self._age(path)
        os.utime(link, (time.time() - 90 * 24 * 3600,) * 2, follow_symlinks=False)
        (tree / "train.py").write_text(SEED)
        rc, out, err = run(capsys, "check", ".", "-j1")
        assert rc == 1 and entries(), err
        assert (draft / "chapter1.tex").read_text() == "precious\n"
        assert (unmarked / "notes.txt").read_text() == "mine\n"
        assert link.is_symlink() and (outside / "keep.txt").read_text() == "keep\n"
        assert not stale.exists()

    def test_dangling_cachedir_tag_link_is_not_followed(self, tree, capsys, tmp_path):
        """A dangling CACHEDIR.TAG symlink: a warning, a run without the cache, its target never created."""
        target = tmp_path / "created-by-tool"
        (cache_dir() / "CACHEDIR.TAG").symlink_to(target)
        (tree / "train.py").write_text(SEED)
        rc, out, err = run(capsys, "check", ".", "-j1")
        assert rc == 1 and "train.py:4:13: TFC001" in out
        assert "CACHEDIR.TAG is not a regular file" in err and "running without the cache" in err
        assert not target.exists() and entries() == []

    @pytest.mark.parametrize("mode", [0o775, 0o757, 0o1777])
    def test_cache_others_may_write_is_not_used(self, tree, capsys, mode):
        """A cache directory writable by group or others is not used: a warning, no entry read or written."""
        os.chmod(cache_dir(), mode)
        (tree / "train.py").write_text(SEED)
        rc, out, err = run(capsys, "check", ".", "-j1")
        assert rc == 1 and "writable by others" in err and entries() == [], err

    @needs_root
    def test_cache_of_another_user_is_not_used(self, tree, capsys):
        """A cache directory owned by another user (here: root's, for a run as nobody) is not used."""
        project = Path(_nobody_project())
        cache = project / "cache"
        cache.mkdir(mode=0o755)  # root's, readable by nobody
        (project / "a.py").write_text("x = legacy_clip(1)\n")
        os.chown(project / "a.py", sub.NOBODY, sub.NOBODY)
        try:
            proc = _real_cli(["check", "a.py"], project, nobody=True, extra_env={_cache.CACHE_ENV: str(cache)})
            assert "owned by uid 0, not by you" in proc.stderr and "running without the cache" in proc.stderr
            assert list(cache.iterdir()) == []
        finally:
            shutil.rmtree(project, ignore_errors=True)


def _nobody_project() -> str:
    import tempfile

    path = tempfile.mkdtemp(prefix="tfclip-nobody-", dir="/tmp")
    os.chown(path, sub.NOBODY, sub.NOBODY)
    os.chmod(path, 0o755)
    return path


_REAL_CLI = "import sys\nfrom codemods.cli import main\nsys.exit(main(sys.argv[1:]))\n"


def _real_cli(args, cwd, *, nobody=False, extra_env=None) -> subprocess.CompletedProcess:
    """``tfclip-migrate ARGS`` with the package's rules, in a subprocess (optionally as nobody)."""
    script = Path(cwd) / "_cli.py"
    script.write_text(_REAL_CLI)
    os.chmod(script, 0o644)
    prefix = [sys.executable, "-c", sub._AS_NOBODY] if nobody else [sys.executable]
    env = sub.env(PYTHONPATH=os.pathsep.join((str(sub.TESTS), str(sub.TESTS.parent))), **(extra_env or {}))
    return subprocess.run([*prefix, str(script), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


class TestDamagedCache:
    def _cold(self, tree, capsys):
        (tree / "train.py").write_text(SEED)
        (tree / "other.py").write_text(SEED.replace("5.0", "2.0"))
        (tree / "plain.py").write_text("import os\n")
        return run(capsys, "check", ".", "-j1", "--format", "json")

    @pytest.mark.parametrize("row", [
        '["unchanged", "", true]', '[1, 2, 3, 4, 5]', '["unchanged", "", true, "utf-8", [[1]]]',
        '["rewritten", "", true, "utf-8", []]', '["unchanged", "", true, "no-such-codec", []]',
        '["unchanged", "", true, "utf-8", [[1, 1, "TFC001", "m", "safe", true, null]]]',
        '{"status": "unchanged"}', '["unchanged", "", 1, "utf-8", []]',
    ])
    def test_wrong_shaped_rows_are_misses_and_repaired(self, tree, capsys, row):
        """A tree-index row of valid JSON but the wrong shape (or a result a check never stores)
        is a miss: the run reports what a cold run reports, and the index is rewritten valid."""
        cold = self._cold(tree, capsys)
        [index] = trees()
        lines = index.read_bytes().split(b"\n")
        lines[1:] = [line.split(b" ", 1)[0] + b" " + row.encode() if line else line for line in lines[1:]]
        index.write_bytes(b"\n".join(lines))
        for path in entries():
            path.unlink()
        assert run(capsys, "check", ".", "-j1", "--format", "json") == cold
        assert all(_cache.valid_row(r) for r in _cache.read_tree(str(index)).values())

    @pytest.mark.parametrize("entry", [
        lambda key: {"key": key}, lambda key: [key], lambda key: {"key": key, "status": "unchanged", "reason": "",
                                                                  "parsed": True, "encoding": "utf-8", "findings": {}},
        lambda key: {"key": key, "status": "changed", "reason": "", "parsed": True, "encoding": "utf-8", "findings": []},
    ])
    def test_wrong_shaped_entries_are_misses(self, tree, capsys, entry):
        """A per-file entry of the wrong shape (`{"key": K}` made the run exit 2) is a miss."""
        (tree / "train.py").write_text(SEED)
        cold = run(capsys, "check", "train.py", "-j1")
        [path] = entries()
        path.write_text(json.dumps(entry(path.parent.name + path.stem)))
        assert run(capsys, "check", "train.py", "-j1") == cold
        assert _cache.valid_row([json.loads(path.read_text())[k] for k in _cache._ROW_FIELDS])

    def test_crafted_unchanged_entry_never_skips_a_fix(self, tree, capsys):
        """A well-formed entry "unchanged, no findings" for a file `fix` would rewrite does not stop
        the rewrite (`fix` never consults the cache), and `applied` is true only for bytes written."""
        (tree / "train.py").write_text(SEED)
        run(capsys, "check", "train.py", "-j1")
        for path in entries():
            data = json.loads(path.read_text())
            data.update(status="unchanged", reason="", findings=[])
            path.write_text(json.dumps(data))
        rc, out, err = run(capsys, "fix", "train.py", "-j1", "--format", "json")
        doc = json.loads(out)
        assert rc == 1 and doc["files"][0]["status"] == "rewritten" and (tree / "train.py").read_text() != SEED
        assert [f["applied"] for f in doc["findings"] if f["code"] == "TFC001"] == [True]

    def test_reasons_from_the_cache_are_escaped(self, tree, capsys):
        """A (well-formed) cached reason or message holding terminal escapes is printed escaped."""
        (tree / "py2.py").write_text("print 'x'\nopt.minimize(loss)\n")
        run(capsys, "check", "py2.py", "-j1")
        [path] = entries()
        data = json.loads(path.read_text())
        assert data["status"] == "skipped"
        data["reason"] = "bad \x1b]0;pwned\x07 \x1b[31mred"
        data["findings"][0][3] = "msg \x1b[2J\nforged.py:1:1: TFC001 fake"
        path.write_text(json.dumps(data))
        rc, out, err = run(capsys, "check", "py2.py", "-j1")
        assert "\x1b" not in out + err and "\x07" not in out + err
        assert "\\033[2J\\nforged.py:1:1: TFC001 fake" in out and "\nforged.py" not in out


# Fuzz: rows and entries replaced by arbitrary JSON, or one field of a real one replaced.
try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover
    given = None

if given is not None:
    _json = st.recursive(
        st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["", "unchanged", "skipped", "utf-8", "TFC001",
                                                                             "safe", "none", "x\x1b"]),
        lambda children: st.lists(children, max_size=7) | st.dictionaries(st.sampled_from(
            ["key", "status", "reason", "parsed", "encoding", "findings"]), children, max_size=6),
        max_leaves=12)

    def _mutate(value, path, new):
        if not path:
            return new
        head, rest = path[0], path[1:]
        if isinstance(value, list) and value:
            value = list(value)
            value[head % len(value)] = _mutate(value[head % len(value)], rest, new)
        elif isinstance(value, dict) and value:
            key = sorted(value)[head % len(value)]
            value = dict(value, **{key: _mutate(value[key], rest, new)})
        else:
            return new
        return value

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(new=_json, path=st.lists(st.integers(0, 6), max_size=3), whole=st.booleans(), target=st.booleans())
    def test_fuzzed_rows_and_entries_are_misses(tmp_path_factory, new, path, whole, target):
        """Rows and entries mutated into any other shape give the cold run's findings, never a crash."""
        project = tmp_path_factory.mktemp("fuzz")
        cache = tmp_path_factory.mktemp("fuzzcache")
        os.chmod(cache, 0o700)
        for i in range(2):
            (project / f"m{i}.py").write_text(SEED.replace("5.0", f"{i + 1}.0"))
        (project / "py2.py").write_text("print 'x'\nopt.minimize(loss)\n")
        old_cwd, old_env = os.getcwd(), os.environ.get(_cache.CACHE_ENV)
        os.chdir(project)
        os.environ[_cache.CACHE_ENV] = str(cache)
        try:
            import contextlib
            import io

            def check(*args):
                out, err = io.StringIO(), io.StringIO()
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    rc = main(["check", *args, "-j1", "--format", "json"])
                return rc, out.getvalue()

            cold = check(".")
            cold_files = check("m0.py", "py2.py")
            if target:  # the tree index rows
                [index] = cache.glob(f"*/{_cache.TREES}/*{_cache.TREE_SUFFIX}")
                lines = index.read_bytes().split(b"\n")
                key, row = lines[1].split(b" ", 1)
                mutated = new if whole else _mutate(json.loads(row), path, new)
                lines[1] = key + b" " + json.dumps(mutated).encode()
                index.write_bytes(b"\n".join(lines))
                valid = _cache.valid_row(mutated)
                again = check(".")
            else:  # a per-file entry
                entry = sorted(p for p in cache.rglob("*.json") if p.parent.name != _cache.TREES)[0]
                data = json.loads(entry.read_text())
                mutated = new if whole else _mutate(data, path, new)
                entry.write_text(json.dumps(mutated))
                valid = (isinstance(mutated, dict) and set(mutated) == _cache._ENTRY_FIELDS
                         and mutated.get("key") == data["key"]
                         and _cache.valid_row([mutated[k] for k in _cache._ROW_FIELDS]))
                again = check("m0.py", "py2.py")
                cold = cold_files
            assert again[0] in (0, 1, 2) and json.loads(again[1])["summary"] is not None
            if not valid:
                assert again == cold
        finally:
            os.chdir(old_cwd)
            if old_env is None:
                os.environ.pop(_cache.CACHE_ENV, None)
            else:
                os.environ[_cache.CACHE_ENV] = old_env
