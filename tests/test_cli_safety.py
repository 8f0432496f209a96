"""``tfclip-migrate`` never loses an edit, never writes where it must not, survives any file
and any signal (issue 11). Real files, real permissions (as ``nobody`` where root would mask
the refusal), real signals to a real subprocess.

The subprocess runs use the test-only rules of ``tests/_cli_rules.py``: ``legacy_clip`` is
rewritten, ``gate_clip`` makes the process wait until the test opens a gate (so the test can
edit a file or send a signal while the CLI is busy), ``segv_clip`` kills the process with
SIGSEGV as a crashing native parser would.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import _cli_rules
import _cli_subprocess as sub
import pytest

import codemods.cli.writes as writes_mod
from codemods.cli import main

needs_root = pytest.mark.skipif(not sub.can_drop_to_nobody(), reason="running a child as nobody needs root")


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """An empty project directory (cwd), test-only rules in the registry."""
    project = tmp_path / "proj"
    project.mkdir()
    monkeypatch.chdir(project)
    return project


@pytest.fixture
def gate(tmp_path):
    path = tmp_path / "gate"
    path.mkdir()
    return path


@pytest.fixture
def nobody_dir():
    """A directory owned by nobody that nobody can reach (under /tmp, not pytest's 0700 tmp)."""
    path = Path(tempfile.mkdtemp(prefix="tfclip-nobody-", dir="/tmp"))
    os.chown(path, sub.NOBODY, sub.NOBODY)
    os.chmod(path, 0o755)
    yield path
    for child in path.rglob("*"):
        if child.is_file():
            child.chmod(0o644)
    subprocess.run(["rm", "-rf", str(path)], check=False)


def temp_files(root: Path):
    return sorted(str(p) for p in root.rglob("*" + writes_mod.TEMP_SUFFIX))


def run_in(capsys, *argv, rules=_cli_rules.TEST_RULES):
    """``main(argv)`` with the test-only rules (``rules=None``: the package's)."""
    rc = main(list(argv), rules=rules)
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


# --------------------------------------------------------------------------------------
# compare-and-swap


class TestCompareAndSwap:
    def _start(self, root: Path, gate: Path):
        (root / "a.py").write_text("gate_clip(1)\nx = legacy_clip(2)\n")
        (root / "b.py").write_text("y = legacy_clip(3)\n")
        proc = sub.popen(["fix", ".", "-j1"], root, extra_env={"TFCLIP_TEST_GATE": str(gate)})
        sub.wait_for(lambda: sub.started_pids(gate), what="the CLI to reach a.py")
        return proc

    def test_edit_during_the_run_is_never_overwritten(self, tmp_path, gate):
        """A file edited while fix works on it is left with the edit, reported, exit 2; the run goes on."""
        proc = self._start(tmp_path, gate)
        with open(tmp_path / "a.py", "a") as handle:  # an editor's save, meanwhile
            handle.write("# edited meanwhile\n")
        (gate / "go").touch()
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 2, err
        assert b"a.py: not written: changed on disk since it was read" in err
        assert (tmp_path / "a.py").read_text() == "gate_clip(1)\nx = legacy_clip(2)\n# edited meanwhile\n"
        assert (tmp_path / "b.py").read_text() == "y = modern_clip(3)\n"
        assert temp_files(tmp_path) == []

    def test_same_size_and_mtime_edit_is_caught_by_the_hash(self, tmp_path, gate):
        """An in-place edit that keeps size, inode and mtime_ns is still caught (content hash)."""
        proc = self._start(tmp_path, gate)
        path = tmp_path / "a.py"
        before = os.stat(path)
        with open(path, "r+b") as handle:
            handle.write(b"gate_clip(9)")  # same length, same inode
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert os.stat(path).st_mtime_ns == before.st_mtime_ns and os.stat(path).st_size == before.st_size
        (gate / "go").touch()
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 2 and b"changed on disk since it was read" in err
        assert path.read_text() == "gate_clip(9)\nx = legacy_clip(2)\n"

    def test_write_back_refuses_a_stale_snapshot(self, tmp_path):
        """`write_back` with a snapshot that no longer matches raises and leaves file and directory clean."""
        path = tmp_path / "a.py"
        path.write_bytes(b"old\n")
        data, snapshot = writes_mod.read_file(str(path))
        path.write_bytes(b"new content\n")
        with pytest.raises(writes_mod.WriteRefused, match="changed on disk"):
            writes_mod.write_back(str(path), b"fixed\n", snapshot, writes_mod.digest(data))
        assert path.read_bytes() == b"new content\n" and os.listdir(tmp_path) == ["a.py"]


# --------------------------------------------------------------------------------------
# permissions, owner, mode, extended attributes


def _xattrs_supported(path: Path) -> bool:
    try:
        os.setxattr(path, "user.tfclip-probe", b"1")
        os.removexattr(path, "user.tfclip-probe")
        return True
    except (OSError, AttributeError):
        return False


class TestPermissions:
    @needs_root
    def test_read_only_file_refused_as_nobody(self, nobody_dir):
        """As an ordinary user, a mode-0444 file in the user's own directory is not replaced."""
        path = nobody_dir / "a.py"
        path.write_text("x = legacy_clip(1)\n")
        os.chown(path, sub.NOBODY, sub.NOBODY)
        os.chmod(path, 0o444)
        result = sub.run(["fix", "a.py", "-j1"], nobody_dir, nobody=True)
        assert result.returncode == 2, result.stderr
        assert "a.py: not written: read-only file (mode 0444)" in result.stderr
        assert path.read_text() == "x = legacy_clip(1)\n" and stat.S_IMODE(os.stat(path).st_mode) == 0o444

    @needs_root
    def test_unreadable_file_is_tfc900_as_nobody(self, nobody_dir):
        """A file the user may not read (mode 000) is a TFC900 naming the reason; the run goes on."""
        locked = nobody_dir / "locked.py"
        locked.write_text("x = legacy_clip(1)\n")
        os.chmod(locked, 0)
        ok = nobody_dir / "ok.py"
        ok.write_text("y = legacy_clip(2)\n")
        os.chown(ok, sub.NOBODY, sub.NOBODY)
        result = sub.run(["fix", ".", "-j1"], nobody_dir, nobody=True)
        assert result.returncode == 1, result.stderr
        assert "locked.py:1:1: TFC900 cannot read: Permission denied (file left untouched)" in result.stdout
        assert ok.read_text() == "y = modern_clip(2)\n"
        os.chmod(locked, 0o644)
        assert locked.read_text() == "x = legacy_clip(1)\n"

    def test_read_only_file_refused_even_for_root(self, tree, capsys):
        """A file without any write bit is refused whoever runs fix (root could replace it)."""
        path = tree / "a.py"
        path.write_text("x = legacy_clip(1)\n")
        os.chmod(path, 0o444)
        rc, out, err = run_in(capsys, "fix", "a.py", "-j1", "--format", "json")
        document = json.loads(out)
        assert rc == 2 and path.read_text() == "x = legacy_clip(1)\n"
        assert document["files"][0]["status"] == "failed" and "read-only" in document["files"][0]["reason"]
        assert [f["applied"] for f in document["findings"]] == [False]

    @needs_root
    def test_file_of_another_user_refused_as_nobody(self, nobody_dir):
        """A writable file owned by someone else, in the user's directory, keeps owner and content."""
        path = nobody_dir / "a.py"
        path.write_text("x = legacy_clip(1)\n")
        os.chmod(path, 0o666)  # root's file, writable by all: a rename would make it nobody's
        result = sub.run(["fix", "a.py", "-j1"], nobody_dir, nobody=True)
        assert result.returncode == 2, result.stderr
        assert "a.py: not written: owned by another user (uid 0)" in result.stderr
        st = os.stat(path)
        assert (st.st_uid, st.st_gid) == (0, 0) and path.read_text() == "x = legacy_clip(1)\n"

    @needs_root
    def test_owner_group_special_bits_and_xattrs_kept(self, tree, capsys):
        """Owner, group, setuid/setgid/sticky bits and user.* xattrs survive a rewrite by root."""
        path = tree / "a.py"
        path.write_text("x = legacy_clip(1)\n")
        os.chown(path, sub.NOBODY, sub.NOBODY)
        os.chmod(path, 0o7754)
        has_xattrs = _xattrs_supported(path)
        if has_xattrs:
            os.setxattr(path, "user.origin", b"kept")
        assert run_in(capsys, "fix", "a.py", "-j1")[0] == 1
        st = os.stat(path)
        assert path.read_text() == "x = modern_clip(1)\n"
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (sub.NOBODY, sub.NOBODY, 0o7754)
        if has_xattrs:
            assert os.getxattr(path, "user.origin") == b"kept"

    @needs_root
    def test_setgid_and_xattrs_kept_as_nobody(self, nobody_dir):
        """An ordinary user's own setgid file keeps its bits and xattrs through a rewrite."""
        path = nobody_dir / "a.py"
        path.write_text("x = legacy_clip(1)\n")
        os.chown(path, sub.NOBODY, sub.NOBODY)
        os.chmod(path, 0o2664)
        has_xattrs = _xattrs_supported(path)
        if has_xattrs:
            os.setxattr(path, "user.origin", b"kept")
        result = sub.run(["fix", "a.py", "-j1"], nobody_dir, nobody=True)
        assert result.returncode == 1, result.stderr
        st = os.stat(path)
        assert path.read_text() == "x = modern_clip(1)\n"
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (sub.NOBODY, sub.NOBODY, 0o2664)
        if has_xattrs:
            assert os.getxattr(path, "user.origin") == b"kept"

    def test_user_xattrs_work_on_this_filesystem(self, tmp_path):
        """The xattr tests above are meaningful here: user.* xattrs work in the test directories."""
        probe = tmp_path / "probe"
        probe.write_text("")
        if not _xattrs_supported(probe):
            pytest.skip("this filesystem has no user.* extended attributes")
        os.setxattr(probe, "user.x", b"1")
        assert os.listxattr(probe) == ["user.x"]


# --------------------------------------------------------------------------------------
# explicit paths through symlinks


class TestExplicitSymlinks:
    @pytest.mark.parametrize("arg", ["linkdir", "linkdir/", "linkdir/x.py", "./linkdir/./x.py"])
    def test_link_out_of_the_project_refused(self, tmp_path, tree, capsys, arg):
        """`fix linkdir/`, `fix linkdir/x.py` with linkdir -> outside: refused, named, exit 2, nothing written."""
        outside = tmp_path / "outside"
        outside.mkdir()
        (outside / "x.py").write_text("legacy_clip(1)\n")
        os.symlink(outside, tree / "linkdir")
        rc, out, err = run_in(capsys, "fix", arg, "-j1")
        assert rc == 2
        assert f"tfclip-migrate: error: {arg}: symlink leads outside the project" in err
        assert (outside / "x.py").read_text() == "legacy_clip(1)\n"

    def test_link_inside_the_project_followed_and_kept(self, tree, capsys):
        """`fix linkdir/x.py` with linkdir -> a directory of the project rewrites the target; the link stays."""
        (tree / "src").mkdir()
        (tree / "src" / "x.py").write_text("legacy_clip(1)\n")
        os.symlink("src", tree / "linkdir")
        rc, out, err = run_in(capsys, "fix", "linkdir/x.py", "-j1")
        assert rc == 1 and "Rewriting linkdir/x.py" in err
        assert os.path.islink(tree / "linkdir") and (tree / "src" / "x.py").read_text() == "modern_clip(1)\n"

    def test_absolute_path_outside_the_project(self, tmp_path, tree, capsys):
        """Outside the project, a link must stay in the directory holding it."""
        elsewhere = tmp_path / "elsewhere"
        (elsewhere / "pkg").mkdir(parents=True)
        (tmp_path / "far.py").write_text("legacy_clip(1)\n")
        os.symlink(tmp_path / "far.py", elsewhere / "pkg" / "link.py")
        rc, _, err = run_in(capsys, "check", str(elsewhere / "pkg" / "link.py"), "-j1")
        assert rc == 2 and f"symlink leads outside {elsewhere / 'pkg'}" in err


# --------------------------------------------------------------------------------------
# parsing isolated: deep nesting, crashing workers, size limit, Python 2


class TestParserIsolation:
    @pytest.mark.parametrize("jobs", ["1", "2"])
    def test_deep_nesting_is_tfc900_and_the_run_goes_on(self, tmp_path, jobs):
        """1,500 nested brackets (which segfault libcst's parser) are a named TFC900; later files are fixed."""
        (tmp_path / "a_deep.py").write_text("x = legacy_clip(" + "(" * 1500 + "1" + ")" * 1500 + ")\n")
        (tmp_path / "b.py").write_text("y = legacy_clip(2)\n")
        result = sub.run(["fix", ".", "-j", jobs], tmp_path)
        assert result.returncode == 1, result.stderr
        assert "a_deep.py:1:" in result.stdout and "TFC900 cannot parse: too many nested parentheses" in result.stdout
        assert (tmp_path / "b.py").read_text() == "y = modern_clip(2)\n"
        assert "1 rewritten" in result.stderr

    def test_dying_worker_is_named_and_the_pool_survives(self, tmp_path):
        """With --jobs 2, each file whose worker dies (SIGSEGV) is a named TFC900; every other file is fixed."""
        for i in range(8):
            (tmp_path / f"m{i}.py").write_text("segv_clip(1)\n" if i in (1, 2, 6) else f"x = legacy_clip({i})\n")
        result = sub.run(["fix", ".", "-j", "2"], tmp_path)
        assert result.returncode == 1, result.stderr
        crashed = sorted(line.split(":")[0] for line in result.stdout.splitlines() if "parser crashed" in line)
        assert crashed == ["m1.py", "m2.py", "m6.py"]
        assert "worker process killed by SIGSEGV" in result.stdout
        for i in (0, 3, 4, 5, 7):
            assert (tmp_path / f"m{i}.py").read_text() == f"x = modern_clip({i})\n"
        assert "5 rewritten" in result.stderr and "3 skipped" in result.stderr

    def test_size_limit_skips_with_a_reason_and_can_be_raised(self, tree, capsys):
        """A file over --max-file-size is a TFC900 naming the limit and the option; raising it fixes the file."""
        path = tree / "big.py"
        path.write_text("x = legacy_clip(1)\n" + "y = 1\n" * 400)
        rc, out, _ = run_in(capsys, "fix", "big.py", "-j1", "--max-file-size", "1K")
        assert rc == 1 and "TFC900 too large to analyse: 2.4 KiB of Python is over the 1.0 KiB limit" in out
        assert "--max-file-size" in out and path.read_text().startswith("x = legacy_clip(1)")
        (tree / "pyproject.toml").write_text('[tool.tfclip-migrate]\nmax-file-size = "2K"\n')
        assert "over the 2.0 KiB limit" in run_in(capsys, "check", "big.py", "-j1")[1]
        assert run_in(capsys, "fix", "big.py", "-j1", "--max-file-size", "0")[0] == 1
        assert path.read_text().startswith("x = modern_clip(1)")

    def test_python2_except_comma_is_tfc900(self, tree, capsys):
        """`except E, e:` (which libcst accepts) is TFC900 at its line: CPython must parse the file first."""
        source = "try:\n    legacy_clip(1)\nexcept ValueError, e:\n    pass\n"
        (tree / "py2.py").write_text(source)
        rc, out, _ = run_in(capsys, "fix", "py2.py", "-j1")
        assert rc == 1 and (tree / "py2.py").read_text() == source
        assert out.startswith("py2.py:3:8: TFC900 cannot parse: multiple exception types must be parenthesized")


# --------------------------------------------------------------------------------------
# signals


def _gated_tree(root: Path) -> None:
    for i in range(5):
        (root / f"m{i}.py").write_text(f"x = legacy_clip({i})\n")
    (root / "m2.py").write_text("gate_clip(1)\nx = legacy_clip(2)\n")


class TestSignals:
    @pytest.mark.parametrize(
        "signum, code, jobs",
        [
            pytest.param(signal.SIGINT, 130, "2", id="SIGINT-jobs2"),
            pytest.param(signal.SIGTERM, 143, "1", id="SIGTERM-jobs1"),
            pytest.param(signal.SIGTERM, 143, "2", id="SIGTERM-jobs2"),
            pytest.param(signal.SIGHUP, 129, "2", id="SIGHUP-jobs2"),
        ],
    )
    def test_signal_stops_cleanly(self, tmp_path, gate, signum, code, jobs):
        """A signal mid-run: no new file is started or written, workers are gone, no temp file is
        left, the summary says what was written, exit 128 + signal number."""
        root = tmp_path / "proj"
        root.mkdir()
        _gated_tree(root)
        proc = sub.popen(["fix", ".", "-j", jobs], root, extra_env={"TFCLIP_TEST_GATE": str(gate)})
        sub.wait_for(lambda: sub.started_pids(gate), what="the CLI to reach m2.py")
        # m0 and m1 come before m2 in order; with 2 workers one may still be on its way
        sub.wait_for(lambda: all("modern" in (root / f"m{i}.py").read_text() for i in (0, 1)), what="m0, m1")
        workers = [pid for pid in sub.started_pids(gate) if pid != proc.pid]
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
        text = err.decode()
        assert proc.returncode == code, text
        assert f"interrupted by {signal.Signals(signum).name}: stopped; 3 files not processed" in text
        assert "2 rewritten" in text and text.count("Rewriting") == 2
        assert [(root / f"m{i}.py").read_text() for i in range(5)] == [
            "x = modern_clip(0)\n", "x = modern_clip(1)\n", "gate_clip(1)\nx = legacy_clip(2)\n",
            "x = legacy_clip(3)\n", "x = legacy_clip(4)\n",
        ]
        assert temp_files(root) == []
        if jobs == "2":
            assert workers, "the gate was reached in a worker process"
        for pid in workers:
            sub.wait_for(lambda: not sub.alive(pid), timeout=10, what=f"worker {pid} to exit")

    def test_signal_during_a_write_lets_it_finish(self, tree, capsys, monkeypatch):
        """SIGTERM arriving in the middle of an atomic write: the write completes, nothing after it
        starts, no temp file is left, exit 143."""
        for name in ("a.py", "b.py"):
            (tree / name).write_text("x = legacy_clip(1)\n")
        real = writes_mod._copy_metadata

        def copy_then_signal(path, st, fd):
            os.kill(os.getpid(), signal.SIGTERM)  # delivered now; handled after the write
            real(path, st, fd)

        monkeypatch.setattr(writes_mod, "_copy_metadata", copy_then_signal)
        rc, _, err = run_in(capsys, "fix", ".", "-j1")
        assert rc == 143
        assert (tree / "a.py").read_text() == "x = modern_clip(1)\n"
        assert (tree / "b.py").read_text() == "x = legacy_clip(1)\n"
        assert "Rewriting a.py" in err and "interrupted by SIGTERM: stopped; 1 file not processed" in err
        assert temp_files(tree) == []

    def test_workers_die_with_a_killed_parent(self, tmp_path, gate):
        """SIGKILL to the main process (no handler can run) still takes the workers down."""
        root = tmp_path / "proj"
        root.mkdir()
        _gated_tree(root)
        proc = sub.popen(["fix", ".", "-j", "2"], root, extra_env={"TFCLIP_TEST_GATE": str(gate)})
        sub.wait_for(lambda: sub.started_pids(gate), what="a worker to reach m2.py")
        workers = [pid for pid in sub.started_pids(gate) if pid != proc.pid]
        assert workers
        proc.kill()
        proc.communicate(timeout=30)
        for pid in workers:
            sub.wait_for(lambda: not sub.alive(pid), timeout=10, what=f"orphaned worker {pid} to die")


# --------------------------------------------------------------------------------------
# a closed stdout, honest reports


class TestReports:
    def test_broken_stdout_is_named_and_no_work_is_lost(self, tmp_path):
        """`fix | head -1`: the closed pipe is named on stderr, exit 2, and every file is still fixed."""
        (tmp_path / "a.py").write_text("x = legacy_clip(1)\n" + "manual_clip(2)\n" * 1500)
        (tmp_path / "b.py").write_text("y = legacy_clip(3)\n")
        proc = sub.popen(["fix", ".", "-j1"], tmp_path)
        first = proc.stdout.readline()
        proc.stdout.close()  # the reader goes away, as `head -1` does
        err = proc.stderr.read().decode()
        proc.wait(timeout=60)
        assert first.startswith(b"a.py:2:1: TFC990")
        assert proc.returncode == 2, err
        assert "tfclip-migrate: error: <stdout>: cannot write: broken pipe" in err
        assert "Rewriting a.py" in err and "Rewriting b.py" in err
        assert (tmp_path / "a.py").read_text().startswith("x = modern_clip(1)\n")
        assert (tmp_path / "b.py").read_text() == "y = modern_clip(3)\n"
        assert "Traceback" not in err and "Exception ignored" not in err

    @pytest.mark.parametrize(
        "argv, message",
        [
            pytest.param(["check", "--select", "", "a.py"], "--select: empty rule selection", id="empty-select"),
            pytest.param(["check", "--bogus", "a.py"], "unrecognized arguments: --bogus", id="bad-flag"),
            pytest.param(["check", "a.py", "--config", "nope.toml"], "--config: nope.toml: no such file", id="config"),
            pytest.param(["check"], "the following arguments are required: PATH", id="no-path"),
        ],
    )
    def test_json_document_on_usage_errors(self, tree, capsys, argv, message):
        """With --format json, usage and configuration errors still print one valid JSON document."""
        (tree / "a.py").write_text("x = 1\n")
        rc, out, err = run_in(capsys, *argv, "--format", "json")
        document = json.loads(out)
        assert rc == 2 and document["exit_code"] == 2 and document["findings"] == []
        assert any(message in e["message"] for e in document["errors"]), document["errors"]
        assert message in err

    def test_json_reports_each_file_written_or_not(self, tree, capsys, monkeypatch):
        """JSON lists every file with its status and reason; a failed write is `failed`, its fixes not applied."""
        (tree / "a.py").write_text("x = legacy_clip(1)\n")
        (tree / "b.py").write_text("y = legacy_clip(2)\n")
        (tree / "c.py").write_text("z = 1\n")
        real_replace = os.replace

        def failing_replace(src, dst):
            if str(dst).endswith("b.py"):
                raise OSError(28, "No space left on device")
            return real_replace(src, dst)

        monkeypatch.setattr(os, "replace", failing_replace)
        rc, out, _ = run_in(capsys, "fix", ".", "missing.py", "-j1", "--format", "json")
        document = json.loads(out)
        assert rc == 2 and document["exit_code"] == 2
        assert document["files"] == [
            {"path": "a.py", "status": "rewritten", "reason": ""},
            {"path": "b.py", "status": "failed", "reason": "not written (file left untouched): No space left on device"},
            {"path": "c.py", "status": "unchanged", "reason": ""},
        ]
        assert [(f["path"], f["applied"]) for f in document["findings"]] == [("a.py", True), ("b.py", False)]
        assert document["errors"][0] == {"path": "missing.py", "message": "no such file or directory"}
        assert document["summary"]["rewritten"] == 1 and document["summary"]["failed"] == 1
        assert (tree / "b.py").read_text() == "y = legacy_clip(2)\n" and temp_files(tree) == []

    def test_diff_with_json_puts_the_diff_in_the_document(self, tree, capsys):
        """`fix --diff --format json`: one JSON document on stdout, each file's diff in it; nothing written."""
        (tree / "a.py").write_text("x = legacy_clip(1)\n")
        rc, out, err = run_in(capsys, "fix", "--diff", "--format", "json", "a.py", "-j1")
        document = json.loads(out)
        assert rc == 1 and document["mode"] == "diff"
        assert document["files"][0]["status"] == "would-rewrite"
        assert document["files"][0]["diff"] == "--- a.py\n+++ a.py\n@@ -1 +1 @@\n-x = legacy_clip(1)\n+x = modern_clip(1)\n"
        assert (tree / "a.py").read_text() == "x = legacy_clip(1)\n"


def test_module_is_importable_without_tensorflow():
    """The safety machinery (writes, signals, pool) imports no TensorFlow and no libcst."""
    code = (
        "import sys\n"
        "import codemods.cli.writes, codemods.cli.signals, codemods.cli.pool, codemods.cli.runner, codemods.cli\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'keras', 'libcst'))\n"
        "assert not bad, bad\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=sub.env())
    assert proc.returncode == 0, proc.stderr
