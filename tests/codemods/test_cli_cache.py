"""The result cache (``codemods/cli/cache.py``) and the streaming reporter (``codemods/cli/report.py``).

The cache may only ever make a run faster: a warm run prints exactly what a cold one prints,
``fix`` never writes from it, a changed file, other settings or another tool version are
misses, a damaged entry is a miss, concurrent runs are safe. These tests use the package's
rules (the cache is keyed by their sources) and the per-test cache directory that
``conftest.py`` puts in ``$TFCLIP_MIGRATE_CACHE_DIR``.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codemods.cli import cache as _cache
from codemods.cli.report import Reporter
from codemods.cli.spool import Spool
from codemods.cli import main

ROOT = Path(__file__).resolve().parents[2]
SEED = (
    "import tensorflow as tf\n\n"
    "original_optimizer = tf.train.AdamOptimizer(learning_rate=0.01)\n"
    "optimizer = tf.contrib.estimator.clip_gradients_by_norm(original_optimizer, clip_norm=5.0)\n"
    "train_op = optimizer.minimize(loss)\n"
)
NOTEBOOK = json.dumps({
    "cells": [{"cell_type": "code", "execution_count": None, "id": "c1", "metadata": {}, "outputs": [],
               "source": SEED.splitlines(keepends=True)}],
    "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
}, indent=1) + "\n"


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A project with findings of several rules, a notebook, a Python 2 file and an unrelated file."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text(SEED)
    (project / "nb.ipynb").write_text(NOTEBOOK)
    (project / "py2.py").write_text("print 'x'\nopt.minimize(loss)\n")
    (project / "plain.py").write_text("import os\n")
    for case in sorted((ROOT / "fixtures").rglob("*.before.py"))[:6]:
        (project / f"{case.parent.name}_{case.name}").write_bytes(case.read_bytes())
    monkeypatch.chdir(project)
    return project


def cache_dir() -> Path:
    return Path(os.environ[_cache.CACHE_ENV])


def entries() -> list:
    """The per-file entries (the tree indexes are listed by :func:`trees`)."""
    return sorted(p for p in cache_dir().rglob("*.json") if p.parent.name != _cache.TREES)


def trees() -> list:
    return sorted(cache_dir().glob(f"*/{_cache.TREES}/*{_cache.TREE_SUFFIX}"))


def run(capsys, *argv: str):
    rc = main(list(argv))
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def snapshot(root: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(root.iterdir()) if p.is_file()}


class TestWarmRuns:
    @pytest.mark.parametrize("argv", [["check", ".", "-j1"], ["check", ".", "-j1", "--format", "json"]],
                             ids=["check", "check-json"])
    def test_warm_run_prints_what_the_cold_run_printed(self, tree, capsys, argv):
        """Cold, warm and --no-cache runs give the same exit code, stdout and stderr, byte for byte."""
        cold = run(capsys, *argv)
        stored = entries()
        assert stored, "the cold run stored nothing"
        warm = run(capsys, *argv)
        assert warm == cold and entries() == stored
        assert run(capsys, *argv, "--no-cache") == cold

    def test_fix_neither_reads_nor_writes_the_cache(self, tree, capsys):
        """`fix --diff` (and `fix`) never consult the cache: nothing is stored, and a warm `check`
        cache leaves its output as a --no-cache run's."""
        argv = ["fix", "--diff", ".", "-j1", "--format", "json"]
        cold = run(capsys, *argv)
        assert entries() == [] and trees() == []
        run(capsys, "check", ".", "-j1")
        assert entries() and run(capsys, *argv) == cold == run(capsys, *argv, "--no-cache")

    def test_warm_check_never_loads_the_engine(self, tree, capsys):
        """A warm `check` of an unchanged tree is served from the cache: libcst is never imported."""
        run(capsys, "check", ".", "-j1")
        code = ("import sys\nfrom codemods.cli import main\nrc = main(['check', '.', '-j1', '-q'])\n"
                "print(rc, 'libcst' in sys.modules)\n")
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tree)
        assert proc.stdout.strip().splitlines()[-1] == "1 False", proc.stderr

    def test_no_cache_writes_nothing(self, tree, capsys):
        """`--no-cache` neither reads nor writes the cache directory (results, nor the rule index)."""
        run(capsys, "check", ".", "-j1", "--no-cache")
        assert not entries()

    def test_no_cache_in_a_fresh_process_leaves_the_cache_directory_empty(self, tree, tmp_path):
        """A first run with `--no-cache` (the rule index not yet derived) creates no file at all in
        the cache directory: not even the rule index."""
        cache_dir = tmp_path / "fresh-cache"
        proc = subprocess.run([sys.executable, "-m", "codemods.cli.app", "check", ".", "-j1", "--no-cache"],
                              cwd=tree, capture_output=True, text=True, timeout=300,
                              env={**os.environ, "TFCLIP_MIGRATE_CACHE_DIR": str(cache_dir),
                                   "PYTHONPATH": str(ROOT)})
        assert proc.returncode in (0, 1), proc.stderr
        assert not cache_dir.exists() or not any(cache_dir.rglob("*"))


class TestNeverStale:
    def test_fix_never_writes_from_the_cache(self, tree, capsys):
        """A file `fix` rewrote is recomputed every time: put back, it is rewritten again; and a
        `check` entry for the same bytes does not stand in for `fix`."""
        original = (tree / "train.py").read_bytes()
        run(capsys, "check", "train.py", "-j1")
        rc, _, err = run(capsys, "fix", "train.py", "-j1")
        fixed = (tree / "train.py").read_bytes()
        assert rc == 1 and "Rewriting train.py" in err and fixed != original
        (tree / "train.py").write_bytes(original)
        rc, _, err = run(capsys, "fix", "train.py", "-j1")
        assert rc == 1 and "Rewriting train.py" in err and (tree / "train.py").read_bytes() == fixed

    def test_changed_file_is_a_miss(self, tree, capsys):
        """New bytes, new result: a site added since the last run is reported."""
        (tree / "a.py").write_text("import tensorflow as tf\nx = 1\n")
        assert run(capsys, "check", "a.py", "-j1")[0] == 0
        (tree / "a.py").write_text("import tensorflow as tf\nx = tf.clip_by_average_norm(t, 1.0)\n")
        rc, out, _ = run(capsys, "check", "a.py", "-j1")
        assert rc == 1 and "a.py:2:5: TFC004" in out

    def test_settings_are_part_of_the_key(self, tree, capsys):
        """An entry made with --select TFC001 is not used by a run of every rule."""
        _, narrow, _ = run(capsys, "check", "train.py", "-j1", "--select", "TFC001")
        _, full, _ = run(capsys, "check", "train.py", "-j1")
        assert "TFC001" in narrow and "TFC202" not in narrow and "TFC202" in full

    def test_another_tool_version_is_a_miss(self, tree, capsys, monkeypatch):
        """Entries live under the tool fingerprint: another fingerprint sees none of them."""
        run(capsys, "check", ".", "-j1")
        before = entries()
        monkeypatch.setattr(_cache, "_FINGERPRINT", "0" * 64)
        run(capsys, "check", ".", "-j1")
        after = entries()
        assert len(after) == 2 * len(before)
        assert len({p.relative_to(cache_dir()).parts[0] for p in after}) == 2

    @pytest.mark.parametrize("damage", [b"", b"{", b"[1, 2]", b'{"key": "other"}', b"\xff\xfe"],
                             ids=["empty", "truncated", "not-an-object", "wrong-key", "not-utf8"])
    def test_damaged_entry_is_a_miss(self, tree, capsys, damage):
        """A partial, corrupt or misplaced entry is ignored (the result recomputed) and rewritten."""
        cold = run(capsys, "check", ".", "-j1", "--format", "json")
        assert trees(), "a run over a directory keeps a tree index"
        for path in entries() + trees():
            path.write_bytes(damage)
        assert run(capsys, "check", ".", "-j1", "--format", "json") == cold
        assert all(json.loads(p.read_bytes())["key"] == p.parent.name + p.stem for p in entries())
        assert all(_cache.read_tree(p) for p in trees())

    def test_concurrent_runs_share_one_cache(self, tree):
        """Four runs at once on an empty cache all print the right thing; every entry is whole."""
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
        cmd = [sys.executable, "-m", "codemods.cli", "check", ".", "-j2", "--format", "json"]
        expected = subprocess.run(cmd + ["--no-cache"], capture_output=True, cwd=tree, env=env).stdout
        procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tree, env=env)
                 for _ in range(4)]
        outputs = [proc.communicate(timeout=300)[0] for proc in procs]
        assert all(out == expected for out in outputs)
        assert entries() and all(json.loads(p.read_bytes()) for p in entries())
        assert trees() and all(_cache.read_tree(p) for p in trees())
        assert not [p for p in cache_dir().rglob("*.tmp")]


class TestTreeIndex:
    """A run over a directory keeps one index of its files' results (``_cache.Tree``)."""

    @pytest.mark.parametrize("jobs", ["1", "2"])
    def test_warm_run_over_a_tree_processes_no_file(self, tree, capsys, monkeypatch, jobs):
        """Warm, every file is reported from the tree index (nothing is read by the engine or
        the pre-filter), and the output is the cold run's, byte for byte, for -j1 and -j2."""
        argv = ["check", ".", "-j", jobs, "--format", "json"]
        cold = run(capsys, *argv)
        assert len(trees()) == 1
        index = _cache.read_tree(trees()[0])
        assert len(index) == len(list(tree.iterdir()))  # every file, those without candidates too
        stamp = trees()[0].stat().st_mtime_ns

        def refuse(*args, **kwargs):
            raise AssertionError("a file of an unchanged tree was processed")

        monkeypatch.setattr("codemods.cli.runner.process", refuse)
        monkeypatch.setattr("codemods.cli.pool.process", refuse)
        assert run(capsys, *argv) == cold
        assert len(trees()) == 1 and _cache.read_tree(trees()[0]) == index
        assert trees()[0].stat().st_mtime_ns >= stamp

    @pytest.mark.parametrize("jobs", ["1", "2"])
    def test_changed_and_new_files_are_processed(self, tree, capsys, jobs):
        """A file changed since the index was written, and a new one, are misses: their new
        findings are reported, in order, and the index is rewritten to hold them."""
        argv = ["check", ".", "-j", jobs]
        run(capsys, *argv)
        (tree / "plain.py").write_text("import tensorflow as tf\nx = tf.clip_by_average_norm(t, 1.0)\n")
        (tree / "new.py").write_text("import tensorflow as tf\ny = tf.clip_by_average_norm(t, 2.0)\n")
        warm = run(capsys, *argv)
        assert "plain.py:2:5: TFC004" in warm[1] and "new.py:2:5: TFC004" in warm[1]
        assert warm == run(capsys, *argv, "--no-cache")
        assert len(_cache.read_tree(trees()[0])) == len(list(tree.iterdir()))

    def test_damaged_rows_are_misses(self, tree, capsys, monkeypatch):
        """In an index whose header is intact, a row that is not a row (garbage, a cut last
        line) is a miss: that file alone is processed, the others still come from the index,
        and the output is the cold run's."""
        argv = ["check", ".", "-j1", "--format", "json"]
        cold = run(capsys, *argv)
        path = trees()[0]
        header, *lines = path.read_bytes().split(b"\n")[:-1]
        assert len(lines) >= 3
        lines[0] = lines[0].split(b" ")[0] + b" {not json"
        lines[-1] = lines[-1][: len(lines[-1]) // 2]
        path.write_bytes(b"\n".join([header, *lines]))
        processed = []
        from codemods.cli import runner as _runner

        real_process = _runner.process
        monkeypatch.setattr(_runner, "process", lambda *a, **k: processed.append(a[1]) or real_process(*a, **k))
        assert run(capsys, *argv) == cold
        assert len(processed) == 2
        assert len(_cache.read_tree(path)) == len(lines) == len(list(tree.iterdir()))  # rewritten whole

    def test_a_few_named_files_keep_no_index(self, tree, capsys):
        """A pre-commit run over a few files writes no tree index (its path list changes with
        every commit); entries of the files with candidates are stored as before."""
        run(capsys, "check", "train.py", "plain.py", "-j1")
        assert not trees() and entries()

    def test_other_settings_or_version_use_another_index(self, tree, capsys, monkeypatch):
        """Rule selection and the tool fingerprint pick the index: none is shared."""
        run(capsys, "check", ".", "-j1")
        _, narrow, _ = run(capsys, "check", ".", "-j1", "--select", "TFC001")
        assert "TFC202" not in narrow and len(trees()) == 2
        monkeypatch.setattr(_cache, "_FINGERPRINT", "0" * 64)
        run(capsys, "check", ".", "-j1")
        assert len(trees()) == 3

    def test_least_recently_used_indexes_are_pruned(self, tree, capsys, monkeypatch):
        """At most ``_MAX_TREES`` indexes are kept: a new one removes the least recently used."""
        monkeypatch.setattr(_cache, "_MAX_TREES", 2)
        for name in ("a", "b", "c"):
            (tree / name).mkdir()
            (tree / name / "x.py").write_text(f"import os  # {name}\n")
        run(capsys, "check", "a", "-j1")
        run(capsys, "check", "b", "-j1")
        first = set(trees())
        run(capsys, "check", "c", "-j1")
        assert len(trees()) == 2 and len(first & set(trees())) == 1


def test_default_directory(monkeypatch, tmp_path):
    """$TFCLIP_MIGRATE_CACHE_DIR wins; else $XDG_CACHE_HOME/tfclip-migrate; else ~/.cache/tfclip-migrate."""
    monkeypatch.setenv(_cache.CACHE_ENV, str(tmp_path / "mine"))
    assert _cache.default_dir() == str(tmp_path / "mine")
    monkeypatch.delenv(_cache.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _cache.default_dir() == str(tmp_path / "xdg" / "tfclip-migrate")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _cache.default_dir() == str(tmp_path / "home" / ".cache" / "tfclip-migrate")


def test_unwritable_cache_is_not_an_error(tree, capsys, monkeypatch):
    """A cache directory that cannot be created (a file is in the way) only costs speed."""
    blocker = tree.parent / "blocker"
    blocker.write_text("not a directory")
    monkeypatch.setenv(_cache.CACHE_ENV, str(blocker / "cache"))
    rc, out, err = run(capsys, "check", "train.py", "-j1")
    assert rc == 1 and "train.py:4:13: TFC001" in out and "error" not in err


# --------------------------------------------------------------------------------------
# streaming: the JSON document without keeping the run in memory


def test_spooled_document_is_json_dumps_byte_for_byte():
    """The streamed document equals json.dumps(document, indent=2) of the same data, also when
    the spools went to disk (a 1-byte limit) and for empty lists."""
    findings = [{"path": "a.py", "line": i, "message": "x\ny \u00e9 \"q\"", "cell": None} for i in range(5)]
    files = [{"path": f"f{i}.py", "status": "unchanged", "reason": ""} for i in range(3)]
    for limit in (1 << 20, 1):
        for found in (findings, []):
            out, err = io.StringIO(), io.StringIO()
            reporter = Reporter(out, err, command="check", json_format=True)
            reporter.findings, reporter.files = Spool(limit), Spool(limit)
            for entry in found:
                reporter.findings.add(entry)
            for entry in files:
                reporter.files.add(entry)
            reporter.warnings.append("w")
            reporter._emit_document(1, None, {"scanned": 3})
            expected = {"tool": "tfclip-migrate", "schema": 2, "command": "check", "mode": "check", "exit_code": 1,
                        "interrupted": False, "signal": None, "findings": found, "files": files, "errors": [], "warnings": ["w"],
                        "summary": {"scanned": 3}}
            assert out.getvalue() == json.dumps(expected, indent=2, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("entry", [
    {}, {"path": "a.py", "status": "unchanged", "reason": ""},
    {"path": "d\u00e9j\u00e0 \"q\"\n\t\x00\u2028\ud800", "line": 3, "col": -1, "fix": "safe", "applied": False,
     "cell": None, "ok": True, "big": 10 ** 30},
    {"x": 1.5}, {"x": [1, {"y": None}]}, {"x": {"y": "z"}}, {1: 2},
], ids=["empty", "file", "finding", "float", "list", "dict", "int-key"])
def test_spool_entries_are_json_dumps_byte_for_byte(entry):
    """Spool.add writes each entry as json.dumps(entry, indent=2) indented for its place, the
    directly formatted flat entries included."""
    spool = Spool()
    spool.add(entry)
    expected = "    " + json.dumps(entry, indent=2, ensure_ascii=False).replace("\n", "\n    ")
    assert "".join(spool.chunks()) == "[\n" + expected + "\n  ]"
