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

from codemods.cli import cache as _cache
from codemods.cli import writes as writes_mod
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
        from codemods.cli import app as cli
        from codemods.cli.config import Config
        from codemods.cli.process import DEFAULT_MAX_SIZE

        (tree / "train.py").write_text(SEED)
        args = cli._build_parser().parse_args(["fix", "train.py"])
        args.rules = None
        text = _cache.settings_text(cli._options(args, Config()), diff=False, report_unparsable=True,
                                    max_size=DEFAULT_MAX_SIZE)
        cache = _cache.Cache(_cache.default_dir(), text)  # the key `fix train.py` would look up
        cache.put(cache.key(SEED.encode(), False), {"status": "unchanged", "reason": "", "parsed": True,
                                                    "encoding": "utf-8", "findings": []})
        assert len(entries()) == 1
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


# --------------------------------------------------------------------------------------
# 4. notebooks are bounded


def _notebook(code_bytes: int, out_bytes: int = 0) -> bytes:
    line = "x = legacy_clip(1)\n"
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
              "source": [line] * (code_bytes // len(line) // 100 + 1)} for _ in range(100)]
    if out_bytes:
        cells.append({"cell_type": "markdown", "metadata": {}, "source": ["y" * out_bytes]})
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()


def _limited_run(args, cwd):
    """The CLI (test rules) under a 1 GiB address-space limit; (process, seconds, peak RSS MiB)."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    # a wrapper process whose only child is the CLI reports that child's peak RSS (KiB) last on stderr
    wrapper = ("import resource, subprocess, sys\n"
               "rc = subprocess.run(sys.argv[1:]).returncode\n"
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
               "sys.exit(rc)\n")
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", wrapper, sys.executable, sub.RULES_SCRIPT, *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300, preexec_fn=limit,
                          env=sub.env(PYTHONPATH=os.pathsep.join((str(sub.TESTS), str(sub.TESTS.parent)))))
    seconds = time.monotonic() - start
    return proc, seconds, int(proc.stderr.split()[-1]) / 1024


@pytest.mark.parametrize("code_mb, out_mb, reason", [
    (25, 0, "notebook is over the 16.0 MiB limit for notebooks"),
    (8, 0, "of Python is over the 1.0 MiB limit"),
])
def test_large_notebook_refused_fast_with_bounded_memory(tmp_path, code_mb, out_mb, reason):
    """A 25 MB notebook is refused on its bytes before any parsing (it took 100 s and 3.4 GB), an
    8 MB one on its code before any cell is parsed (a 3.8 MB one took 15 s): both in a few seconds
    (measured here: about 2 s and 60-110 MiB; before: 23 s for 8 MB), under a 1 GiB address-space limit."""
    (tmp_path / "big.ipynb").write_bytes(_notebook(int(code_mb * (1 << 20)), int(out_mb * (1 << 20))))
    proc, seconds, peak = _limited_run(["check", "big.ipynb", "-j1"], tmp_path)
    assert proc.returncode == 1 and reason in proc.stdout, proc.stdout + proc.stderr
    print(f"{code_mb} MB notebook: {seconds:.1f} s, peak RSS {peak:.0f} MiB")
    assert seconds < 20 and peak < 400, (seconds, peak)


def test_notebook_with_large_outputs_and_little_code_is_analysed(tmp_path):
    """A 3 MB notebook holding 8 KB of code (the rest outputs) is still analysed: the byte limit is 16 x."""
    (tmp_path / "nb.ipynb").write_bytes(_notebook(8 << 10, 3 << 20))
    proc = sub.run(["check", "nb.ipynb", "-j1"], tmp_path)
    assert proc.returncode == 1 and "nb.ipynb:cell 1:1:5: TFC990" in proc.stdout, proc.stdout + proc.stderr


# --------------------------------------------------------------------------------------
# 5, 8. a file swapped after discovery


class TestSwappedFiles:
    def _start(self, root: Path, gate: Path, *args):
        (root / "a.py").write_text("gate_clip(1)\n")
        (root / "b.py").write_text("x = legacy_clip(2)\n")
        (root / "c.py").write_text("y = legacy_clip(3)\n")
        proc = sub.popen(["fix", ".", *args], root, extra_env={"TFCLIP_TEST_GATE": str(gate)})
        sub.wait_for(lambda: sub.started_pids(gate), what="the CLI to reach a.py")
        return proc

    @pytest.mark.parametrize("jobs", ["1", "2"])
    def test_file_turned_fifo_never_blocks(self, tmp_path, gate, jobs):
        """b.py replaced by a FIFO after discovery: no hang, TFC900, left alone; c.py is fixed."""
        root = tmp_path / "p"
        root.mkdir()
        proc = self._start(root, gate, "-j", jobs)
        (root / "b.py").unlink()
        os.mkfifo(root / "b.py")
        (gate / "go").touch()
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 1, err
        assert b"b.py:1:1: TFC900 cannot read: not a regular file" in out
        assert stat.S_ISFIFO(os.lstat(root / "b.py").st_mode)
        assert (root / "c.py").read_text() == "y = modern_clip(3)\n"

    def test_file_turned_symlink_is_not_followed(self, tmp_path, gate):
        """b.py replaced by a link to a setuid file outside the tree: nothing read through it, the
        link stays a link, the target keeps its bytes and mode, no file takes its mode."""
        root = tmp_path / "p"
        root.mkdir()
        outside = tmp_path / "outside.py"
        outside.write_text("z = legacy_clip(9)\n")
        os.chmod(outside, 0o4755)
        proc = self._start(root, gate, "-j1")
        (root / "b.py").unlink()
        (root / "b.py").symlink_to(outside)
        (gate / "go").touch()
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 1, err
        assert b"b.py:1:1: TFC900 cannot read: it is a symlink now" in out
        assert (root / "b.py").is_symlink() and outside.read_text() == "z = legacy_clip(9)\n"
        assert stat.S_IMODE(os.stat(outside).st_mode) == 0o4755
        assert stat.S_IMODE(os.stat(root / "c.py").st_mode) & 0o7000 == 0

    def test_write_back_keeps_the_files_own_mode_and_refuses_a_link(self, tmp_path):
        """write_back gives the new file the mode of the path itself; a path now a symlink is refused."""
        path = tmp_path / "a.py"
        path.write_bytes(b"old\n")
        os.chmod(path, 0o640)
        data, snap = writes_mod.read_file(str(path))
        writes_mod.write_back(str(path), b"new\n", snap, writes_mod.digest(data))
        assert path.read_bytes() == b"new\n" and stat.S_IMODE(os.stat(path).st_mode) == 0o640
        data, snap = writes_mod.read_file(str(path))
        target = tmp_path / "setuid"
        target.write_bytes(b"t\n")
        os.chmod(target, 0o4755)
        path.unlink()
        path.symlink_to(target)
        with pytest.raises(writes_mod.WriteRefused):
            writes_mod.write_back(str(path), b"x\n", snap, writes_mod.digest(data))
        assert path.is_symlink() and target.read_bytes() == b"t\n"


# --------------------------------------------------------------------------------------
# 6. every path that could not be read


@needs_root
def test_unreadable_directory_exits_2_and_is_named(tmp_path):
    """As nobody: a directory under the tree that cannot be listed is an error (exit 2) in the text
    and JSON reports, and is not counted as a file."""
    project = Path(_nobody_project())
    try:
        (project / "ok.py").write_text("import os\n")
        (project / "locked").mkdir()
        (project / "locked" / "x.py").write_text("x = legacy_clip(1)\n")
        for p in (project / "ok.py", project / "locked", project / "locked" / "x.py"):
            os.chown(p, sub.NOBODY, sub.NOBODY)
        os.chmod(project / "locked", 0)
        text = sub.run(["check", "."], project, nobody=True)
        assert text.returncode == 2, text.stderr
        assert "error: locked: cannot list directory: Permission denied" in text.stderr
        assert "1 file scanned" in text.stderr and "1 path could not be read" in text.stderr
        doc = json.loads(sub.run(["check", ".", "--format", "json"], project, nobody=True).stdout)
        assert doc["exit_code"] == 2 and doc["summary"]["scanned"] == 1 and doc["summary"]["unreadable"] == 1
        assert [e["path"] for e in doc["errors"]] == ["locked"]
    finally:
        os.chmod(project / "locked", 0o755)
        shutil.rmtree(project, ignore_errors=True)


def test_directory_beyond_path_max_exits_2(tmp_path):
    """A directory deeper than PATH_MAX cannot be listed by its path: named, exit 2."""
    root = tmp_path / "deep"
    root.mkdir()
    (root / "a.py").write_text("import os\n")
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(30):  # 30 x 200 bytes > PATH_MAX (4096)
            os.mkdir("d" * 200, dir_fd=fd)
            new = os.open("d" * 200, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = new
        with open(os.open("x.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as handle:
            handle.write("x = legacy_clip(1)\n")
    finally:
        os.close(fd)
    try:
        proc = sub.run(["check", ".", "-j1"], root)
        assert proc.returncode == 2 and "cannot list directory: File name too long" in proc.stderr, proc.stderr
        assert "1 file scanned" in proc.stderr and no_traceback(proc.stderr)
    finally:
        subprocess.run(["rm", "-rf", str(root)], check=False)


# --------------------------------------------------------------------------------------
# 7. JSON and signals: every exit ends in one document, or in none and one line


def _document(text) -> dict:
    """The JSON document in ``text`` (stderr in `fix -` mode also holds the error lines before it)."""
    text = text.decode() if isinstance(text, bytes) else text
    start = 0 if text.startswith("{") else text.index("\n{") + 1
    doc = json.loads(text[start:])
    assert isinstance(doc["interrupted"], bool)
    return doc


@pytest.mark.parametrize("fmt,name", [("json", "JSON"), ("sarif", "SARIF"), ("junit", "JUnit")])
def test_full_tmpdir_gives_no_document_and_one_line(tmp_path, fmt, name):
    """The spool's temporary file cannot be written (a 300 KB file size limit, SIGXFSZ ignored, as
    on a full TMPDIR): every file is still processed, no (truncated) document is printed, one error
    line, exit 2 (was, for SARIF: a valid log with no results and exit 1 -- CI saw a clean run; for
    JUnit: half a document and an internal error)."""
    for i in range(30):
        (tmp_path / f"m{i:02}.py").write_text("".join(f"x{j} = legacy_clip({j})\n" for j in range(200)))
    proc = _run_with_full_tmpdir(tmp_path, "check", ".", "-j1", "--format", fmt)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout[-300:]
    assert proc.stderr.count("\n") == 1 and f"cannot write the {name} document" in proc.stderr, proc.stderr
    assert "File too large" in proc.stderr and no_traceback(proc.stderr)


def test_full_tmpdir_writes_no_partial_report_file(tmp_path):
    """`--report-file` whose spooled sections cannot be kept: no report file (not a partial one), one
    error naming it, exit 2; the summary still comes."""
    for i in range(30):
        (tmp_path / f"m{i:02}.py").write_text("".join(f"x{j} = legacy_clip({j})\n" for j in range(200)))
    proc = _run_with_full_tmpdir(tmp_path, "check", ".", "-j1", "--report-file", "report.md")
    assert proc.returncode == 2 and not (tmp_path / "report.md").exists(), proc.stderr[-300:]
    assert "cannot write the report" in proc.stderr and "File too large" in proc.stderr
    assert no_traceback(proc.stderr) and not list(tmp_path.glob(".tfclip-report.*"))


def _run_with_full_tmpdir(cwd, *args):
    """The CLI (test rules) under a 300 KB file size limit with SIGXFSZ ignored (a full TMPDIR)."""

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (300_000, 300_000))

    return subprocess.run([sys.executable, sub.RULES_SCRIPT, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, preexec_fn=limit,
                          env=sub.env(PYTHONPATH=os.pathsep.join((str(sub.TESTS), str(sub.TESTS.parent)))))


def _in_syscall(pid: int, number: int, fd: int) -> bool:
    try:
        with open(f"/proc/{pid}/syscall") as handle:
            fields = handle.read().split()
    except OSError:
        return False
    return len(fields) > 1 and fields[0] == str(number) and int(fields[1], 16) == fd


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signal_while_fix_waits_on_stdin(tmp_path, signum):
    """`fix -` blocked reading stdin, then a signal: one valid document (on stderr: stdout is the
    code's), interrupted true, exit 128 + n, no traceback."""
    proc = sub.popen(["fix", "-", "--format", "json"], tmp_path, stdin=subprocess.PIPE)
    sub.wait_for(lambda: _in_syscall(proc.pid, 0, 0), what="the CLI to read stdin")
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum and out == b"", err
    doc = _document(err)
    assert doc["interrupted"] is True and doc["signal"] == signal.Signals(signum).name
    assert doc["exit_code"] == 128 + signum


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signal_during_discovery(tmp_path, signum):
    """A signal while the tree is walked: one valid document, interrupted true, exit 128 + n, and
    the walk stopped there (no file of the tree checked).

    The test-only walk gate holds discovery after its second directory, so the signal lands in
    the middle of the walk every time. (This test used to poll /proc for an open directory of a
    20,000-file tree; once in a CI run the poll missed the whole 3 s walk and check, the command
    blocked writing its 1.8 MB document into the unread pipe, and the test failed after 240 s.)"""
    root = tmp_path / "big"
    root.mkdir()
    for i in range(50):
        d = root / f"d{i:04}"
        d.mkdir()
        for j in range(20):
            (d / f"m{j}.py").write_text("x = legacy_clip(1)\n")
    gate = tmp_path / "gate"
    gate.mkdir()
    proc = sub.popen(["check", ".", "--format", "json", "-j1"], root, extra_env={"TFCLIP_TEST_WALK_GATE": str(gate)})
    sub.wait_for(lambda: (gate / "walking").exists() or proc.poll() is not None, timeout=240,
                 what="the walk to reach its gate")
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signum)
    time.sleep(0.2)
    (gate / "go").write_text("")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, err
    doc = _document(out)
    assert doc["interrupted"] is True and doc["signal"] == signal.Signals(signum).name and no_traceback(err)
    assert doc["findings"] == [], "the walk was interrupted: no file may have been checked"


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.1, 0.2, 0.3, 0.5])
def test_sigterm_at_any_moment_of_start_up(tmp_path, delay):
    """SIGTERM at any moment from the start: either killed before Python ran the tool's code (no
    output at all) or one valid document with interrupted true; never a traceback, never half a
    document."""
    (tmp_path / "a.py").write_text("x = legacy_clip(1)\n")
    proc = sub.popen(["check", ".", "--format", "json", "-j1"], tmp_path)
    time.sleep(delay)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert no_traceback(err), err
    if proc.returncode == -signal.SIGTERM:
        assert out == b""
    else:
        doc = _document(out)
        assert proc.returncode in (143, doc["exit_code"])


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signal_after_the_report_is_complete(tmp_path, signum):
    """A signal after the document is written, while the interpreter shuts down: the finished
    run keeps its exit code (was: killed by the signal's default action, exit -n, after a
    complete document saying `"interrupted": false` -- a red CI run on a clean clone)."""
    (tmp_path / "a.py").write_text("x = legacy_clip(1)\n")
    gate = tmp_path / "gate"
    gate.mkdir()
    proc = sub.popen(["check", "a.py", "--format", "json", "-j1"], tmp_path,
                     extra_env={"TFCLIP_TEST_LINGER_GATE": str(gate)})
    sub.wait_for(lambda: (gate / "exiting").exists() or proc.poll() is not None, what="the CLI to exit")
    assert proc.poll() is None
    proc.send_signal(signum)
    time.sleep(0.2)  # the signal is delivered (and, before the fix, acted on) at once
    (gate / "go").write_text("")
    out, err = proc.communicate(timeout=60)
    doc = _document(out)
    assert proc.returncode == doc["exit_code"] == 1 and doc["interrupted"] is False, err
    assert no_traceback(err), err


@pytest.mark.parametrize("command", ["check", "fix"])
def test_closed_stdin(tmp_path, command):
    """`fix - <&-`: one document naming stdin as unreadable, exit 2 (was: internal AttributeError)."""
    proc = subprocess.run(["bash", "-c", f'exec "$0" "$1" {command} - --format json <&-', sys.executable,
                           sub.RULES_SCRIPT], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=sub.env(PYTHONPATH=os.pathsep.join((str(sub.TESTS), str(sub.TESTS.parent)))))
    assert proc.returncode == 2 and no_traceback(proc.stderr)
    doc = _document(proc.stderr if command == "fix" else proc.stdout)
    assert doc["exit_code"] == 2 and doc["errors"][0]["message"].startswith("cannot read stdin")


def test_sigint_before_the_run_is_a_boolean(tree, capsys, monkeypatch):
    """A Ctrl-C before any file (here: during discovery, in-process) gives `"interrupted": true`."""
    from codemods.cli import discovery as _discovery

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(_discovery, "discover", interrupted)
    (tree / "a.py").write_text("import os\n")
    rc, out, err = run(capsys, "check", ".", "--format", "json")
    doc = _document(out)
    assert rc == 130 and doc["interrupted"] is True and doc["signal"] == "SIGINT" and doc["exit_code"] == 130


# --------------------------------------------------------------------------------------
# 9. names


NAMES = ["a\nb.py", "\x1b[31mred.py", "sp ace.py", 'q"uote.py']


def _named_tree(root: Path) -> None:
    for name in NAMES:
        (root / name).write_text("x = legacy_clip(1)\n")
    (root / os.fsdecode(b"caf\xe9.py")).write_text("x = legacy_clip(1)\n")


def test_control_characters_in_names_are_escaped(tmp_path):
    """Names with a newline or ESC are quoted with C escapes (as git and `ls -b` show them): no raw
    control character reaches the output, no line can be forged."""
    _named_tree(tmp_path)
    proc = subprocess.run([sys.executable, sub.RULES_SCRIPT, "check", ".", "-j1"], cwd=tmp_path,
                          capture_output=True, timeout=120,
                          env=sub.env(PYTHONPATH=os.pathsep.join((str(sub.TESTS), str(sub.TESTS.parent)))))
    out = proc.stdout
    assert proc.returncode == 1 and b"\x1b" not in out + proc.stderr
    lines = out.decode("utf-8").splitlines()
    assert len(lines) == 5, lines
    assert '"a\\nb.py":1:5: TFC990 [*]' in out.decode() and '"\\033[31mred.py":1:5: TFC990' in out.decode()
    assert '"caf\\351.py":1:5' in out.decode() and "sp ace.py:1:5" in out.decode()


def test_json_paths_are_utf8_with_raw_bytes(tmp_path):
    """A non-UTF-8 name is valid UTF-8 in JSON (`\\xe9`), its bytes in `path_bytes` (hex)."""
    _named_tree(tmp_path)
    proc = subprocess.run([sys.executable, sub.RULES_SCRIPT, "check", ".", "-j1", "--format", "json"], cwd=tmp_path,
                          capture_output=True, timeout=120,
                          env=sub.env(PYTHONPATH=os.pathsep.join((str(sub.TESTS), str(sub.TESTS.parent)))))
    doc = json.loads(proc.stdout.decode("utf-8", "strict"))
    [entry] = [f for f in doc["files"] if "path_bytes" in f]
    assert entry["path"] == "caf\\xe9.py" and bytes.fromhex(entry["path_bytes"]) == b"caf\xe9.py"
    assert {f["path"] for f in doc["findings"]} >= {"a\nb.py", "\x1b[31mred.py", "caf\\xe9.py"}


@pytest.mark.parametrize("tool", ["patch", "git"])
def test_diff_applies_with_patch_and_git_apply(tmp_path, tool):
    """`fix --diff` headers are quoted the way git writes them: `patch -p0` and `git apply -p0` apply
    the diff of names with a space, a quote, a newline, ESC and a non-UTF-8 byte, giving what `fix` writes."""
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} not installed")
    fixed, patched = tmp_path / "fixed", tmp_path / "patched"
    for root in (fixed, patched):
        root.mkdir()
        _named_tree(root)
    proc = subprocess.run([sys.executable, sub.RULES_SCRIPT, "fix", "--diff", ".", "-j1"], cwd=patched,
                          capture_output=True, timeout=120,
                          env=sub.env(PYTHONPATH=os.pathsep.join((str(sub.TESTS), str(sub.TESTS.parent)))))
    assert proc.returncode == 1 and proc.stdout.count(b"\n--- ") + proc.stdout.startswith(b"--- ") == 5
    assert sub.run(["fix", ".", "-j1"], fixed).returncode == 1
    argv = ["patch", "-p0", "--batch"] if tool == "patch" else ["git", "apply", "-p0", "--unsafe-paths"]
    applied = subprocess.run(argv, cwd=patched, input=proc.stdout, capture_output=True, timeout=60)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert {p.name: p.read_bytes() for p in patched.iterdir()} == {p.name: p.read_bytes() for p in fixed.iterdir()}


def test_long_file_name_can_be_fixed(tmp_path):
    """A 250-byte file name is fixed (the temp file gets a short name) and no temp file is left."""
    name = "a" * 247 + ".py"
    (tmp_path / name).write_text("x = legacy_clip(1)\n")
    proc = sub.run(["fix", name, "-j1"], tmp_path)
    assert proc.returncode == 1 and (tmp_path / name).read_text() == "x = modern_clip(1)\n", proc.stderr
    assert sorted(os.listdir(tmp_path)) == [name]


# --------------------------------------------------------------------------------------
# 11. configuration


@pytest.mark.parametrize("marker", [".git", ".git-file", ".hg"])
def test_config_discovery_stops_at_the_repository_root(tmp_path, capsys, monkeypatch, marker):
    """A pyproject.toml above the repository root (`exclude = ["*"]`) is not used."""
    (tmp_path / "pyproject.toml").write_text('[tool.tfclip-migrate]\nexclude = ["*"]\n')
    repo = tmp_path / "repo"
    repo.mkdir()
    if marker == ".git-file":
        (repo / ".git").write_text("gitdir: ../elsewhere\n")
    else:
        (repo / marker).mkdir()
    (repo / "a.py").write_text("x = legacy_clip(1)\n")
    monkeypatch.chdir(repo)
    import _cli_rules

    rc, out, err = run(capsys, "check", ".", "-j1", rules=_cli_rules.TEST_RULES)
    assert rc == 1 and "a.py:1:5: TFC990" in out and "config:" not in err, err


def test_summary_names_the_config_used(tmp_path, capsys, monkeypatch):
    """The summary names the pyproject.toml it used, in text and in JSON."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.tfclip-migrate]\nexclude = ["skip_*"]\n')
    (tmp_path / "a.py").write_text("x = legacy_clip(1)\n")
    monkeypatch.chdir(tmp_path)
    import _cli_rules

    rc, out, err = run(capsys, "check", ".", "-j1", rules=_cli_rules.TEST_RULES)
    assert f"config: {tmp_path / 'pyproject.toml'}\n" in err
    rc, out, err = run(capsys, "check", ".", "-j1", "--format", "json", rules=_cli_rules.TEST_RULES)
    assert json.loads(out)["summary"]["config"] == str(tmp_path / "pyproject.toml")
