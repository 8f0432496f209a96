"""Tests of the ``tfclip-migrate`` command (issue 4), mostly through ``main([...])`` in-process.

Test-only rules (``tests/_cli_rules.py``; ``TFC990``: ``legacy_clip`` -> ``modern_clip`` safe,
``risky_clip`` unsafe, ``manual_clip`` no fix) are swapped into the registry so the CLI is tested independently of the
real rules; ``TestRealRules`` runs the seed snippet through the real TFC001.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

import _cli_rules
import libcst as cst
import pytest

import codemods.cli.discovery as discovery_mod
import codemods.notebooks.cells as notebooks_mod
import codemods.cli.writes as writes_mod
import codemods.engine.registry
import codemods.api
from _cli_rules import RenameRule
from codemods.cli.report import unified_diff
from codemods.cli import main

REPO = Path(__file__).resolve().parents[2]


LEGACY = "import numpy as np\n\n\ndef step(x):\n    return legacy_clip(x, 1.0)\n"
FIXED = "import numpy as np\n\n\ndef step(x):\n    return modern_clip(x, 1.0)\n"
SEED = (
    "import tensorflow as tf\n\n"
    "original_optimizer = tf.train.AdamOptimizer(learning_rate=learning_rate)\n"
    "optimizer = tf.contrib.estimator.clip_gradients_by_norm(original_optimizer, clip_norm=5.0)\n"
    "train_op = optimizer.minimize(loss)\n"
)


@pytest.fixture
def rules():
    """The test-only rules (the ``run`` helper passes them to ``main``)."""
    return _cli_rules.TEST_RULES


@pytest.fixture
def tree(tmp_path, monkeypatch, rules):
    """An empty project directory (cwd) without any pyproject.toml above it that matters."""
    project = tmp_path / "proj"
    project.mkdir()
    monkeypatch.chdir(project)
    return project


def run(capsys, *argv: str, rules=_cli_rules.TEST_RULES) -> Tuple[int, str, str]:
    """``main(argv)`` with the test-only rules (``rules=None``: the package's)."""
    rc = main(list(argv), rules=rules)
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def write(path: Path, content, mode: str = "w") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def snapshot(root: Path) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


# --------------------------------------------------------------------------------------
# exit codes


class TestExitCodes:
    def test_check_clean_exits_0(self, tree, capsys):
        """`check` on files without findings exits 0 and prints no finding."""
        write(tree / "a.py", "x = 1\n")
        rc, out, err = run(capsys, "check", "a.py", "-j1")
        assert rc == 0 and out == ""
        assert "1 file scanned" in err

    def test_check_findings_exits_1(self, tree, capsys):
        """`check` prints `path:line:col: CODE [*] message` and exits 1 without writing."""
        write(tree / "a.py", LEGACY)
        rc, out, _ = run(capsys, "check", "a.py", "-j1")
        assert rc == 1
        assert out == "a.py:5:12: TFC990 [*] `legacy_clip` is legacy: use `modern_clip`\n"
        assert (tree / "a.py").read_text() == LEGACY

    def test_fix_rewrites_exits_1_then_0(self, tree, capsys):
        """`fix` rewrites, says `Rewriting path` on stderr, exits 1; a second run exits 0."""
        write(tree / "a.py", LEGACY)
        rc, out, err = run(capsys, "fix", "a.py", "-j1")
        assert rc == 1 and out == ""
        assert "Rewriting a.py" in err
        assert (tree / "a.py").read_text() == FIXED
        rc, out, err = run(capsys, "fix", "a.py", "-j1")
        assert rc == 0 and "Rewriting" not in err

    def test_exit_zero_even_if_changed(self, tree, capsys):
        """`--exit-zero-even-if-changed` exits 0 after a rewrite with nothing left."""
        write(tree / "a.py", LEGACY)
        rc, _, _ = run(capsys, "fix", "--exit-zero-even-if-changed", "a.py", "-j1")
        assert rc == 0 and (tree / "a.py").read_text() == FIXED

    def test_exit_zero_even_if_changed_still_1_on_remaining(self, tree, capsys):
        """Remaining (unfixable) findings exit 1 even with `--exit-zero-even-if-changed`."""
        write(tree / "a.py", LEGACY + "y = manual_clip(3)\n")
        rc, out, _ = run(capsys, "fix", "--exit-zero-even-if-changed", "a.py", "-j1")
        assert rc == 1
        assert "a.py:6:5: TFC990 `manual_clip`" in out
        assert "legacy_clip" not in out  # applied fixes are not listed as findings

    def test_nonexistent_path_exits_2_and_continues(self, tree, capsys):
        """A missing path is named on stderr without a traceback, other paths still run, exit 2."""
        write(tree / "a.py", LEGACY)
        rc, out, err = run(capsys, "fix", "missing.py", "a.py", "-j1")
        assert rc == 2
        assert "tfclip-migrate: error: missing.py: no such file or directory" in err
        assert "Traceback" not in err
        assert (tree / "a.py").read_text() == FIXED

    @pytest.mark.parametrize(
        "argv, message",
        [
            pytest.param(["check"], "the following arguments are required: PATH", id="no-path"),
            pytest.param([], "a command is required", id="no-command"),
            pytest.param(["check", "--bogus", "a.py"], "unrecognized arguments: --bogus", id="bad-flag"),
            pytest.param(["check", "--select", "XYZ1", "a.py"], "unknown rule code or prefix 'XYZ1'", id="bad-select"),
            pytest.param(["fix", "--add-clip-norm", "-1", "a.py"], "must be a finite number > 0", id="bad-norm"),
            pytest.param(["fix", "--add-clip-norm", "nan", "a.py"], "must be a finite number > 0", id="nan-norm"),
            pytest.param(["check", "--jobs", "-3", "a.py"], "must be >= 1", id="bad-jobs"),
            pytest.param(["check", "--select", "", "a.py"], "--select: empty rule selection", id="empty-select"),
            pytest.param(["check", "--select", " , ", "a.py"], "--select: empty rule selection", id="blank-select"),
            pytest.param(["check", "--max-file-size", "huge", "a.py"], "expected a size such as 4M", id="bad-size"),
            pytest.param(["check", "-", "a.py"], "cannot be combined", id="stdin-and-path"),
            pytest.param(["rules", "TFC999"], "unknown rule 'TFC999'", id="bad-rule"),
        ],
    )
    def test_usage_errors_exit_2(self, tree, capsys, argv, message):
        """Usage errors exit 2 with a message naming the problem, never a traceback."""
        write(tree / "a.py", "x = 1\n")
        rc, _, err = run(capsys, *argv)
        assert rc == 2
        assert message in err
        assert "Traceback" not in err

    def test_help_exits_0(self, capsys):
        """`--help` returns 0 instead of raising SystemExit."""
        rc, out, _ = run(capsys, "--help")
        assert rc == 0 and "check" in out and "Exit codes" in out

    def test_unexpected_failure_exits_2(self, tree, capsys, monkeypatch):
        """An unexpected exception outside a file (e.g. a dead worker) is one line on stderr, exit 2."""
        def broken(*args, **kwargs):
            raise RuntimeError("worker died")

        monkeypatch.setattr(discovery_mod, "discover", broken)
        rc, _, err = run(capsys, "check", ".")
        assert rc == 2
        assert re.fullmatch(r"tfclip-migrate: error: internal error: RuntimeError: worker died "
                            r"\(at codemods/cli/app\.py:\d+\) \(rerun with --jobs 1 to narrow it down\)\n", err)

    def test_internal_error_is_one_short_line(self, tree, capsys, monkeypatch):
        """An exception whose text is a whole syntax tree (a KeyError on a node) is reported as its
        first line, cut to 200 characters, with the innermost frame of our code to file a bug by."""
        import codemods.cli.process as process_mod

        def handler(*args, **kwargs):
            raise KeyError("SimpleStatementLine(\n    body=[\n" + "x" * 5000 + "\n])")

        monkeypatch.setattr(process_mod, "_process_python", handler)
        write(tree / "a.py", "x = 1\n")
        rc, _, err = run(capsys, "check", ".", "-j1")
        assert rc == 2
        line = err.strip().splitlines()[0]
        assert line.startswith("tfclip-migrate: error: a.py: internal error, file left untouched: KeyError: ")
        assert "xxx" in line and len(line) < 400 and "body=[" not in line.split("KeyError: ")[1][30:]
        assert "(at codemods/cli/process.py:" in line

    def test_internal_error_exits_2_file_untouched(self, tree, capsys):
        """A crashing rule leaves its file byte-identical, the run goes on, exit 2."""
        write(tree / "boom.py", "boom_clip(1)\n")
        write(tree / "ok.py", LEGACY)
        rc, _, err = run(capsys, "fix", ".", "-j1")
        assert rc == 2
        assert "boom.py: internal error, file left untouched: RuntimeError: rule exploded (at codemods/" in err
        assert (tree / "boom.py").read_text() == "boom_clip(1)\n"
        assert (tree / "ok.py").read_text() == FIXED


# --------------------------------------------------------------------------------------
# fixes, diff, stdin, json, rules


class TestFixModes:
    def test_unsafe_fix_needs_flag(self, tree, capsys):
        """Unsafe fixes are only reported by default and applied with `--unsafe-fixes`; the summary
        counts them in good English ("4 unsafe fixes")."""
        write(tree / "a.py", "risky_clip(1)\n")
        rc, out, err = run(capsys, "fix", "a.py", "-j1")
        assert rc == 1 and (tree / "a.py").read_text() == "risky_clip(1)\n"
        assert "TFC990 [*unsafe]" in out
        assert "1 unsafe fix available: add --unsafe-fixes" in err
        rc, out, err = run(capsys, "fix", "--unsafe-fixes", "a.py", "-j1")
        assert rc == 1 and (tree / "a.py").read_text() == "modern_clip(1)\n"
        assert out == "" and "Rewriting a.py" in err
        write(tree / "b.py", "risky_clip(1)\nrisky_clip(2)\nrisky_clip(3)\nrisky_clip(4)\n")
        assert "4 unsafe fixes available: add --unsafe-fixes" in run(capsys, "check", "b.py", "-j1")[2]

    def test_diff_writes_nothing(self, tree, capsys):
        """`fix --diff` prints a unified diff, writes nothing (bytes and mtime kept), exits 1."""
        path = write(tree / "a.py", LEGACY)
        before = os.stat(path)
        rc, out, err = run(capsys, "fix", "--diff", "a.py", "-j1")
        assert rc == 1
        assert path.read_text() == LEGACY and os.stat(path).st_mtime_ns == before.st_mtime_ns
        assert out.startswith("--- a.py\n+++ a.py\n")
        assert "-    return legacy_clip(x, 1.0)\n+    return modern_clip(x, 1.0)\n" in out
        assert "Rewriting" not in err and "1 would be rewritten" in err
        assert sorted(os.listdir(tree)) == ["a.py"]

    @pytest.mark.skipif(shutil.which("patch") is None, reason="patch(1) not installed")
    def test_diff_applies_with_patch(self, tree, capsys):
        """The `--diff` output applies with `patch -p0`, also for a file without final newline."""
        src = LEGACY.rstrip("\n")
        write(tree / "a.py", src)
        rc, out, _ = run(capsys, "fix", "--diff", "a.py", "-j1")
        assert rc == 1 and "\\ No newline at end of file" in out
        subprocess.run(["patch", "-p0", "-s"], input=out.encode(), cwd=tree, check=True)
        assert (tree / "a.py").read_text() == FIXED.rstrip("\n")

    def test_unified_diff_marks_missing_newline(self):
        """`unified_diff` marks a last line without newline as patch(1) expects."""
        diff = unified_diff("a\nb", "a\nc", "f.py")
        assert diff.endswith("-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n")

    def test_stdin_fix_writes_stdout(self, tree, capsys, monkeypatch):
        """`fix -` reads stdin, writes the fixed code to stdout, exits 1 when it changed."""
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(LEGACY.encode())))
        rc, out, err = run(capsys, "fix", "-")
        assert rc == 1 and out == FIXED
        assert os.listdir(tree) == []

    def test_stdin_check_reports_on_stdout(self, tree, capsys, monkeypatch):
        """`check -` names the input `--stdin-filename` (or `-`) in findings on stdout."""
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(LEGACY.encode())))
        rc, out, _ = run(capsys, "check", "-", "--stdin-filename", "train.py")
        assert rc == 1 and out.startswith("train.py:5:12: TFC990")

    def test_stdin_unparsable_echoes_input(self, tree, capsys, monkeypatch):
        """Unparsable stdin is echoed unchanged to stdout (nothing lost), TFC900 on stderr at
        the line CPython names, exit 1."""
        src = b'x = 1\nprint "x"\nlegacy_clip(1)\n'
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(src)))
        rc, out, err = run(capsys, "fix", "-")
        assert rc == 1 and out.encode() == src
        assert "-:2:1: TFC900 cannot parse: Missing parentheses in call to 'print'" in err

    def test_stdin_clean_exits_0(self, tree, capsys, monkeypatch):
        """`fix -` on clean input echoes it and exits 0."""
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"x = 1\n")))
        rc, out, _ = run(capsys, "fix", "-")
        assert rc == 0 and out == "x = 1\n"

    def test_json_check(self, tree, capsys):
        """`--format json` prints one object per finding with path, line, col, code, message, fix."""
        write(tree / "a.py", LEGACY + "risky_clip(2)\nmanual_clip(3)\n")
        rc, out, _ = run(capsys, "check", "--format", "json", "a.py", "-j1")
        assert rc == 1
        document = json.loads(out)
        assert document["exit_code"] == 1 and document["files"] == [{"path": "a.py", "status": "unchanged", "reason": ""}]
        rows = document["findings"]
        assert [(r["line"], r["col"], r["code"], r["fix"], r["applied"]) for r in rows] == [
            (5, 12, "TFC990", "safe", False),
            (6, 1, "TFC990", "unsafe", False),
            (7, 1, "TFC990", "none", False),
        ]
        assert {r["path"] for r in rows} == {"a.py"}
        assert set(rows[0]) == {"path", "line", "col", "code", "message", "fix", "applied", "cell", "end_line", "end_col",
                                "edits"}
        assert (rows[0]["end_line"], rows[0]["end_col"]) == (5, 31)  # `legacy_clip(x, 1.0)`: columns 12-30
        # the edit `fix` applies for the safe fix; none for the unsafe one (no --unsafe-fixes) or no fix
        assert [r["edits"] for r in rows] == [
            [{"location": {"line": 5, "col": 1}, "end_location": {"line": 6, "col": 1},
              "content": "    return modern_clip(x, 1.0)\n"}], None, None]

    def test_json_fix_marks_applied(self, tree, capsys):
        """In `fix --format json` applied fixes are listed with `applied: true`."""
        write(tree / "a.py", LEGACY)
        rc, out, _ = run(capsys, "fix", "--format", "json", "a.py", "-j1")
        document = json.loads(out)
        assert rc == 1 and [(r["code"], r["applied"]) for r in document["findings"]] == [("TFC990", True)]
        assert document["files"] == [{"path": "a.py", "status": "rewritten", "reason": ""}]
        assert document["summary"]["rewritten"] == 1 and document["summary"]["findings_by_code"] == {
            "TFC990": {"found": 1, "fixed": 1}
        }

    def test_rules_list_and_doc(self, rules, capsys):
        """`rules` lists code, name and summary; `rules CODE` prints the rule's docstring."""
        rc, out, _ = run(capsys, "rules")
        assert rc == 0
        assert re.search(r"^TFC990  test-rename +test-only: `legacy_clip` -> `modern_clip`$", out, re.M)
        assert "TFC900  unparsable-file" in out
        rc, out, _ = run(capsys, "rules", "tfc990")
        assert rc == 0 and out.startswith("TFC990 (test-rename)\n\nTest-only rule")
        assert "## Fix safety" in out
        rc, out, _ = run(capsys, "rules", "--format", "json")
        assert {"code": "TFC990", "name": "test-rename", "summary": RenameRule.SUMMARY} in json.loads(out)

    def test_select_and_ignore(self, tree, capsys):
        """`--ignore` turns a rule off (by code or prefix); `--select` limits to it."""
        write(tree / "a.py", LEGACY)
        assert run(capsys, "check", "--ignore", "TFC99", "a.py", "-j1")[0] == 0
        assert run(capsys, "check", "--select", "TFC991,TFC990", "a.py", "-j1")[0] == 1
        assert run(capsys, "check", "--select", "TFC991", "a.py", "-j1")[0] == 0

    def test_summary_counts(self, tree, capsys):
        """The stderr summary gives files scanned/rewritten/unchanged/skipped and findings by code."""
        write(tree / "a.py", LEGACY)
        write(tree / "b.py", "x = 1\n")
        write(tree / "c.py", 'print "x"\nlegacy_clip(1)\n')
        rc, _, err = run(capsys, "fix", ".", "-j1")
        assert rc == 1
        assert "3 files scanned: 1 rewritten, 1 unchanged, 1 skipped" in err
        assert "2 parsed, 1 ruled out by the text pre-filter" in err
        assert "findings: TFC900 x1, TFC990 x1 (1 fixed)" in err

    def test_quiet(self, tree, capsys):
        """`--quiet` drops the summary and `Rewriting` lines."""
        write(tree / "a.py", LEGACY)
        rc, _, err = run(capsys, "fix", "-q", "a.py", "-j1")
        assert rc == 1 and err == ""


# --------------------------------------------------------------------------------------
# discovery and configuration


class TestDiscovery:
    def test_walk_skips_vendor_dirs(self, tree, capsys):
        """`.git`, virtualenvs (pyvenv.cfg), site-packages, build, dist, __pycache__ are never entered."""
        for rel in [".git/x.py", "env/lib/x.py", "lib/site-packages/x.py", "build/x.py", "dist/x.py",
                    "__pycache__/x.py", "pkg/.ipynb_checkpoints/x.py"]:
            write(tree / rel, LEGACY)
        write(tree / "env/pyvenv.cfg", "home = /usr\n")
        write(tree / "pkg/real.py", LEGACY)
        write(tree / "pkg/notes.txt", LEGACY)
        rc, out, err = run(capsys, "check", ".", "-j1")
        assert rc == 1
        assert out.splitlines() == ["pkg/real.py:5:12: TFC990 [*] `legacy_clip` is legacy: use `modern_clip`"]

    def test_explicit_dir_is_walked_even_if_named_build(self, tree, capsys):
        """A directory named on the command line is walked even when its name is skipped in walks."""
        write(tree / "build/x.py", LEGACY)
        rc, out, _ = run(capsys, "check", "build", "-j1")
        assert rc == 1 and out.startswith("build/x.py:5:12")

    def test_explicit_file_any_suffix(self, tree, capsys):
        """An explicitly named file is checked whatever its suffix (pre-commit passes scripts)."""
        write(tree / "train", "#!/usr/bin/env python\n" + LEGACY)
        rc, out, _ = run(capsys, "check", "train", "-j1")
        assert rc == 1 and out.startswith("train:6:12")

    def test_pyproject_config(self, tree, capsys):
        """`[tool.tfclip-migrate]` exclude globs and ignore apply; CLI --select wins over config."""
        write(tree / "pyproject.toml", '[tool.tfclip-migrate]\nexclude = ["legacy_*", "src/vendor/*"]\nignore = ["TFC990"]\n')
        write(tree / "legacy_a.py", LEGACY)
        write(tree / "src/vendor/v.py", LEGACY)
        write(tree / "src/main.py", LEGACY)
        rc, out, err = run(capsys, "check", ".", "-j1")
        assert rc == 0 and out == ""
        assert "2 excluded by config" in err
        rc, out, _ = run(capsys, "check", "--ignore", "TFC991", ".", "-j1")
        assert rc == 1 and out.splitlines()[0].startswith("src/main.py:5:12: TFC990")
        # excludes also apply to files named explicitly (as pre-commit passes them)
        rc, out, err = run(capsys, "check", "--ignore", "TFC991", "legacy_a.py", "src/vendor/v.py", "-j1")
        assert rc == 0 and out == ""

    def test_pyproject_select_found_from_subdirectory(self, tree, capsys, monkeypatch):
        """The nearest pyproject.toml upward from the cwd is used, e.g. from a subdirectory."""
        write(tree / "pyproject.toml", '[tool.tfclip-migrate]\nselect = ["TFC991"]\n')
        write(tree / "sub/a.py", LEGACY)
        monkeypatch.chdir(tree / "sub")
        assert run(capsys, "check", "a.py", "-j1")[0] == 0
        assert run(capsys, "check", "--isolated", "a.py", "-j1")[0] == 1

    @pytest.mark.parametrize(
        "table, message",
        [
            pytest.param('selct = ["TFC990"]', "unknown key(s) in [tool.tfclip-migrate]: selct", id="typo"),
            pytest.param("select = 3", "select must be a list of strings", id="type"),
            pytest.param('select = ["NOPE"]', "unknown rule code or prefix 'NOPE'", id="code"),
            pytest.param("select = [", "invalid TOML", id="toml"),
        ],
    )
    def test_bad_config_exits_2(self, tree, capsys, table, message):
        """A broken `[tool.tfclip-migrate]` table is a usage error naming the file and the key."""
        write(tree / "pyproject.toml", f"[tool.tfclip-migrate]\n{table}\n")
        write(tree / "a.py", LEGACY)
        rc, _, err = run(capsys, "check", "a.py", "-j1")
        assert rc == 2 and message in err and "pyproject.toml" in err

    def test_prefilter_never_parses_files_without_tokens(self, tree, capsys, monkeypatch):
        """Files without a candidate token are never handed to libcst's parser."""
        calls: List[str] = []
        real_parse = cst.parse_module
        monkeypatch.setattr(cst, "parse_module", lambda src, *a, **k: calls.append(src) or real_parse(src, *a, **k))
        for i in range(5):
            write(tree / f"plain{i}.py", f"import numpy as np\nx = np.clip(a, {i}, 2)\n")
        write(tree / "legacy.py", LEGACY)
        rc, _, err = run(capsys, "check", ".", "-j1")
        assert rc == 1
        assert calls == [LEGACY]
        assert "1 parsed, 5 ruled out by the text pre-filter" in err


# --------------------------------------------------------------------------------------
# bad input and byte preservation


class TestBadInput:
    @pytest.mark.parametrize(
        "content, reason",
        [
            pytest.param(b'print "step"\nlegacy_clip(1)\n', "TFC900 cannot parse", id="python2"),
            pytest.param(b"\x00\x01legacy_clip\xff\xfe\x00", "TFC900 binary file (contains NUL bytes)", id="binary"),
            pytest.param(b"x = 1\n\n\nlegacy_clip('\xff\xfe')\n", "TFC900 cannot decode as utf-8", id="bad-utf8"),
            pytest.param(b"legacy_clip('\xff\xfe')\n", "TFC900 cannot detect the encoding", id="bad-utf8-line1"),
            pytest.param(b"# -*- coding: klingon -*-\nlegacy_clip(1)\n", "TFC900 cannot detect the encoding", id="bad-cookie"),
        ],
    )
    def test_unparsable_left_identical_and_reported(self, tree, capsys, content, reason):
        """Unparsable files stay byte-identical, are reported by name with the reason, the run goes on."""
        write(tree / "bad.py", content)
        write(tree / "good.py", LEGACY)
        rc, out, err = run(capsys, "fix", "bad.py", "good.py", "-j1")
        assert rc == 1
        assert (tree / "bad.py").read_bytes() == content
        assert (tree / "good.py").read_text() == FIXED
        line = [l for l in out.splitlines() if l.startswith("bad.py:")]
        assert len(line) == 1 and reason in line[0] and "file left untouched" in line[0]
        assert "Traceback" not in err

    def test_unparsable_ignored_with_tfc900(self, tree, capsys):
        """`--ignore TFC900` silences unparsable files (still skipped and counted)."""
        write(tree / "bad.py", b'print "step"\nlegacy_clip(1)\n')
        rc, out, err = run(capsys, "check", "--ignore", "TFC900", "bad.py", "-j1")
        assert rc == 0 and out == "" and "1 skipped" in err

    @pytest.mark.parametrize(
        "before, after",
        [
            pytest.param(
                "# -*- coding: latin-1 -*-\n# caf\xe9\nlegacy_clip(1)\n".encode("latin-1"),
                "# -*- coding: latin-1 -*-\n# caf\xe9\nmodern_clip(1)\n".encode("latin-1"),
                id="latin1-cookie",
            ),
            pytest.param(b"\xef\xbb\xbflegacy_clip('\xc3\xa9')\n", b"\xef\xbb\xbfmodern_clip('\xc3\xa9')\n", id="utf8-bom"),
            pytest.param(b"x = 1\r\nlegacy_clip(1)\r\n", b"x = 1\r\nmodern_clip(1)\r\n", id="crlf"),
            pytest.param(b"x = 1\nlegacy_clip(1)", b"x = 1\nmodern_clip(1)", id="no-final-newline"),
        ],
    )
    def test_bytes_preserved(self, tree, capsys, before, after):
        """Encoding cookie / latin-1, BOM, CRLF and a missing final newline survive a rewrite."""
        write(tree / "a.py", before)
        rc, _, _ = run(capsys, "fix", "a.py", "-j1")
        assert rc == 1 and (tree / "a.py").read_bytes() == after

    def test_file_mode_preserved(self, tree, capsys):
        """The rewritten file keeps its permission bits (an executable script stays executable)."""
        path = write(tree / "a.py", LEGACY)
        os.chmod(path, 0o751)
        assert run(capsys, "fix", "a.py", "-j1")[0] == 1
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o751 and path.read_text() == FIXED

    def test_empty_file(self, tree, capsys):
        """An empty .py file is a valid empty module: unchanged, no finding, exit 0."""
        write(tree / "empty.py", b"")
        rc, out, err = run(capsys, "fix", "empty.py", "-j1")
        assert rc == 0 and out == "" and (tree / "empty.py").read_bytes() == b""
        assert "1 unchanged" in err

    def test_unreadable_file_simulated(self, tree, capsys, monkeypatch):
        """A file that cannot be read is reported (TFC900, reason) and the run goes on.

        Tests run as root, for whom chmod 000 changes nothing, so the read is made to fail."""
        write(tree / "locked.py", LEGACY)
        write(tree / "ok.py", LEGACY)
        real = writes_mod.read_file

        def read_file(path, *expected):
            if path.endswith("locked.py"):
                raise PermissionError(13, "Permission denied", path)
            return real(path, *expected)

        monkeypatch.setattr(writes_mod, "read_file", read_file)
        rc, out, err = run(capsys, "fix", ".", "-j1")
        assert rc == 1
        assert "locked.py:1:1: TFC900 cannot read: Permission denied (file left untouched)" in out
        assert (tree / "locked.py").read_text() == LEGACY and (tree / "ok.py").read_text() == FIXED

    def test_fifo_is_not_read(self, tree, capsys):
        """A FIFO named like a Python file is never read (it would block forever): named, exit 2;
        met in a walk it is skipped with a message."""
        os.mkfifo(tree / "pipe.py")
        rc, _, err = run(capsys, "check", "pipe.py", "-j1")
        assert rc == 2 and "tfclip-migrate: error: pipe.py: not a regular file" in err
        rc, _, err = run(capsys, "check", ".", "-j1")
        assert rc == 0 and "pipe.py: skipped: not a regular file" in err

    def test_interrupted_write_keeps_original(self, tree, capsys, monkeypatch):
        """If the final rename fails the original is intact, no temp file is left, exit 2."""
        path = write(tree / "a.py", LEGACY)

        def failing_replace(src, dst):
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(os, "replace", failing_replace)
        rc, _, err = run(capsys, "fix", "a.py", "-j1")
        assert rc == 2
        assert "a.py: not written (file left untouched): No space left on device" in err
        assert path.read_text() == LEGACY
        assert os.listdir(tree) == ["a.py"]

    def test_atomic_write_interrupted_midway(self, tmp_path, monkeypatch):
        """A crash while the temp file is being written (after partial data) leaves the original."""
        path = write(tmp_path / "a.py", "original\n")
        real_fsync = os.fsync

        def crash(fd):
            raise KeyboardInterrupt

        monkeypatch.setattr(os, "fsync", crash)
        with pytest.raises(KeyboardInterrupt):
            writes_mod.atomic_write(str(path), b"new content that is half written")
        monkeypatch.setattr(os, "fsync", real_fsync)
        assert path.read_text() == "original\n" and os.listdir(tmp_path) == ["a.py"]


# --------------------------------------------------------------------------------------
# symlinks


class TestSymlinks:
    def test_symlink_in_tree_stays_link(self, tree, capsys):
        """A symlinked file in a walk is not followed; its in-tree target is rewritten once; the link stays a link."""
        target = write(tree / "real.py", LEGACY)
        os.symlink("real.py", tree / "alias.py")
        rc, out, err = run(capsys, "fix", ".", "-j1")
        assert rc == 1
        assert os.path.islink(tree / "alias.py") and os.readlink(tree / "alias.py") == "real.py"
        assert target.read_text() == FIXED
        assert err.count("Rewriting") == 1 and "1 symlink not followed" in err

    def test_symlink_out_of_tree_not_followed(self, tmp_path, tree, capsys):
        """Symlinks (file and directory) pointing out of the walked tree leave their targets untouched."""
        outside = write(tmp_path / "outside" / "ext.py", LEGACY)
        os.symlink(outside, tree / "ext.py")
        os.symlink(outside.parent, tree / "extdir")
        rc, out, err = run(capsys, "fix", ".", "-j1")
        assert rc == 0 and outside.read_text() == LEGACY
        assert os.path.islink(tree / "ext.py") and "2 symlinks not followed" in err

    def test_symlink_loop_ends(self, tree, capsys):
        """Directory symlink loops and self-referencing links do not hang the walk."""
        write(tree / "a/x.py", LEGACY)
        os.symlink("..", tree / "a" / "up")
        os.symlink("loop1", tree / "loop2")
        os.symlink("loop2", tree / "loop1")
        rc, out, err = run(capsys, "check", ".", "-j1")
        assert rc == 1 and out.count("TFC990") == 1
        rc, _, err = run(capsys, "check", "loop1", "-j1")
        assert rc == 2 and "tfclip-migrate: error: loop1: symlink loop" in err

    def test_explicit_symlink_inside_project(self, tree, capsys):
        """A symlink named explicitly is followed inside the project: target rewritten, link kept."""
        target = write(tree / "src/real.py", LEGACY)
        os.symlink("src/real.py", tree / "link.py")
        rc, _, err = run(capsys, "fix", "link.py", "-j1")
        assert rc == 1 and "Rewriting link.py" in err
        assert os.path.islink(tree / "link.py") and target.read_text() == FIXED

    def test_explicit_symlink_outside_project(self, tmp_path, tree, capsys):
        """A symlink named explicitly that points outside the project is refused, named, exit 2."""
        outside = write(tmp_path / "elsewhere.py", LEGACY)
        os.symlink(outside, tree / "link.py")
        rc, _, err = run(capsys, "fix", "link.py", "-j1")
        assert rc == 2 and "tfclip-migrate: error: link.py: symlink leads outside the project" in err
        assert outside.read_text() == LEGACY

    def test_broken_symlink(self, tree, capsys):
        """A dangling symlink named explicitly is an error naming it (exit 2)."""
        os.symlink("nowhere.py", tree / "dangling.py")
        rc, _, err = run(capsys, "check", "dangling.py", "-j1")
        assert rc == 2 and "tfclip-migrate: error: dangling.py: broken symlink" in err


# --------------------------------------------------------------------------------------
# notebooks


def make_notebook(cells, *, indent=1, ensure_ascii=False, trailing="\n", nbformat=4) -> bytes:
    nb = {
        "cells": cells,
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                     "language_info": {"name": "python", "version": "3.11.7"}},
        "nbformat": nbformat,
        "nbformat_minor": 5,
    }
    return (json.dumps(nb, indent=indent, ensure_ascii=ensure_ascii) + trailing).encode("utf-8")


def code_cell(source, outputs=None):
    return {"cell_type": "code", "execution_count": 3, "id": "abc", "metadata": {"tags": ["x"]},
            "outputs": outputs or [], "source": source}


OUTPUT = [{"name": "stdout", "output_type": "stream", "text": ["legacy_clip(1) é\n"]}]


class TestNotebooks:
    def test_cells_migrated_layout_preserved(self, tree, capsys):
        """Code cells (list or string source) are rewritten; markdown, outputs, metadata and the
        JSON layout (indent 1, non-ASCII kept, trailing newline) are untouched."""
        cells = [
            {"cell_type": "markdown", "id": "m", "metadata": {}, "source": ["Use legacy_clip(x) — old"]},
            code_cell(["import numpy as np\n", "y = legacy_clip(x)  # é\n", "z = 1"], OUTPUT),
            code_cell("w = legacy_clip(v)\n"),
        ]
        raw = make_notebook(cells)
        write(tree / "nb.ipynb", raw)
        rc, _, err = run(capsys, "fix", ".", "-j1")
        assert rc == 1 and "Rewriting nb.ipynb" in err
        cells[1]["source"] = ["import numpy as np\n", "y = modern_clip(x)  # é\n", "z = 1"]
        cells[2]["source"] = "w = modern_clip(v)\n"
        assert (tree / "nb.ipynb").read_bytes() == make_notebook(cells)

    @pytest.mark.parametrize("indent, ensure_ascii, trailing", [(2, True, ""), (4, False, "\n"), (None, True, "")])
    def test_other_layouts_preserved(self, tree, capsys, indent, ensure_ascii, trailing):
        """Other json.dumps layouts (indent 2/4/none, ASCII escapes, no trailing newline) survive."""
        cells = [code_cell(["a = 'é'\n", "b = legacy_clip(a)"], OUTPUT)]
        write(tree / "nb.ipynb", make_notebook(cells, indent=indent, ensure_ascii=ensure_ascii, trailing=trailing))
        assert run(capsys, "fix", "nb.ipynb", "-j1")[0] == 1
        cells[0]["source"] = ["a = 'é'\n", "b = modern_clip(a)"]
        expected = make_notebook(cells, indent=indent, ensure_ascii=ensure_ascii, trailing=trailing)
        assert (tree / "nb.ipynb").read_bytes() == expected

    def test_unchanged_notebook_byte_identical(self, tree, capsys):
        """A notebook with nothing to fix is not rewritten (bytes and mtime identical)."""
        raw = make_notebook([code_cell(["x = 1\n"], OUTPUT)], indent=3)
        path = write(tree / "nb.ipynb", raw)
        mtime = os.stat(path).st_mtime_ns
        assert run(capsys, "fix", "nb.ipynb", "-j1")[0] == 0
        assert path.read_bytes() == raw and os.stat(path).st_mtime_ns == mtime

    def test_magics_masked(self, tree, capsys):
        """`%`/`!`/`?` lines do not break parsing: the cell is migrated and the magic lines kept."""
        src = ["%matplotlib inline\n", "!pip install foo\n", "if True:\n", "    %time y = 1\n",
               "legacy_clip?\n", "z = legacy_clip(x)\n"]
        write(tree / "nb.ipynb", make_notebook([code_cell(src)]))
        rc, out, _ = run(capsys, "fix", "nb.ipynb", "-j1")
        new = json.loads((tree / "nb.ipynb").read_text())["cells"][0]["source"]
        assert new == src[:-1] + ["z = modern_clip(x)\n"]
        assert rc == 1 and out == ""

    def test_cell_magic_cell_untouched(self, tree, capsys):
        """A `%%bash`-style cell is not Python: never parsed nor changed; `%%time` cells are migrated."""
        cells = [code_cell(["%%bash\n", "echo legacy_clip(1)\n"]), code_cell(["%%time\n", "legacy_clip(1)\n"])]
        write(tree / "nb.ipynb", make_notebook(cells))
        rc, out, _ = run(capsys, "fix", "nb.ipynb", "-j1")
        new = json.loads((tree / "nb.ipynb").read_text())["cells"]
        assert new[0]["source"] == ["%%bash\n", "echo legacy_clip(1)\n"]
        assert new[1]["source"] == ["%%time\n", "modern_clip(1)\n"]
        assert rc == 1 and out == ""

    def test_cell_magic_header_stays_first(self, tree, capsys):
        """Code a rule adds at the top of a `%%time` cell goes below the header; positions count it."""
        write(tree / "nb.ipynb", make_notebook([code_cell(["%%time\n", "x = 1\n", "legacy_clip(1)\n"])]))
        rc, out, _ = run(capsys, "check", "nb.ipynb", "-j1")
        assert rc == 1 and out.startswith("nb.ipynb:cell 1:3:1: TFC990")
        masked = notebooks_mod.mask_ipython("%%time\nx = 1\n!ls\n")
        assert masked.header == "%%time\n" and not masked.source.startswith("%%")
        added = "import tfclip_compat\n" + masked.source
        assert masked.unmask(added) == "%%time\nimport tfclip_compat\nx = 1\n!ls\n"

    def test_moved_magic_line_aborts_cell(self):
        """If a rewrite changes a placeholder line, unmasking refuses (the cell is left as it was)."""
        masked = notebooks_mod.mask_ipython("!ls\nx = 1\n")
        assert masked.unmask(masked.source.replace("pass", "    pass")) is None

    def test_bad_cell_reported_notebook_report_only(self, tree, capsys):
        """An unparsable code cell is reported at its cell and line; the other cells are analysed
        without it, and a fix that is not a drop-in `tfclip_compat` fix (here the test rule
        TFC990) is reported, not applied, nor advertised (no `[*]`: `fix` cannot apply it)."""
        raw = make_notebook([code_cell(["x = 1\n", 'print "x"\n', "legacy_clip(1)\n"]), code_cell(["legacy_clip(2)\n"])])
        write(tree / "nb.ipynb", raw)
        rc, out, _ = run(capsys, "fix", "nb.ipynb", "-j1")
        assert rc == 1 and (tree / "nb.ipynb").read_bytes() == raw
        lines = out.splitlines()
        assert lines[0].startswith("nb.ipynb:cell 1:2:1: TFC900 cannot parse: Missing parentheses")
        assert lines[0].endswith("(cell left untouched)")
        assert lines[1].startswith("nb.ipynb:cell 2:1:1: TFC990 `legacy_clip`")
        assert "not applied: cell 1 of this notebook does not parse" in lines[1] and "[*]" not in out

    def test_check_reports_cell_positions(self, tree, capsys):
        """Findings in notebooks are `path:cell N:line:col` (JSON: `cell` key)."""
        cells = [{"cell_type": "markdown", "metadata": {}, "source": "hi"}, code_cell(["x = 1\n", "legacy_clip(2)\n"])]
        write(tree / "nb.ipynb", make_notebook(cells))
        rc, out, _ = run(capsys, "check", "nb.ipynb", "-j1")
        assert rc == 1 and out.startswith("nb.ipynb:cell 2:2:1: TFC990 [*]")
        rc, out, _ = run(capsys, "check", "--format", "json", "nb.ipynb", "-j1")
        finding = json.loads(out)["findings"][0]
        assert finding["cell"] == 2 and finding["line"] == 2

    @pytest.mark.parametrize(
        "raw, reason",
        [
            pytest.param(b"", "empty file is not a Jupyter notebook", id="empty"),
            pytest.param(b'{"cells": [legacy_clip', "invalid notebook JSON", id="bad-json"),
            pytest.param(b'{"worksheets": []}', "nbformat 3 notebook", id="nbformat3"),
            pytest.param(b"[1, 2]", "not a Jupyter notebook", id="not-notebook"),
        ],
    )
    def test_bad_notebooks(self, tree, capsys, raw, reason):
        """Broken notebooks are reported by name with the reason and left byte-identical."""
        write(tree / "nb.ipynb", raw)
        rc, out, _ = run(capsys, "fix", "nb.ipynb", "-j1")
        assert rc == 1 and out.startswith("nb.ipynb:1:1: TFC900 ") and reason in out
        assert (tree / "nb.ipynb").read_bytes() == raw

    def test_irregular_layout_spliced(self, tree, capsys):
        """A JSON layout no `json.dumps` call makes is kept: only the changed source string differs."""
        raw = b'{"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "source": ["legacy_clip(1)"]}],\n   "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n'
        write(tree / "nb.ipynb", raw)
        rc, out, _ = run(capsys, "fix", "nb.ipynb", "-j1")
        assert rc == 1 and out == ""
        assert (tree / "nb.ipynb").read_bytes() == raw.replace(b"legacy_clip(1)", b"modern_clip(1)")

    def test_stdin_notebook(self, tree, capsys, monkeypatch):
        """`fix - --stdin-filename x.ipynb` treats stdin as a notebook."""
        raw = make_notebook([code_cell(["legacy_clip(1)\n"])])
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw)))
        rc, out, _ = run(capsys, "fix", "-", "--stdin-filename", "x.ipynb")
        assert rc == 1 and json.loads(out)["cells"][0]["source"] == ["modern_clip(1)\n"]


# --------------------------------------------------------------------------------------
# large trees: jobs, idempotence, progress


def build_tree(root: Path, n: int = 24) -> None:
    for i in range(n):
        if i % 3 == 0:
            write(root / f"pkg{i % 4}" / f"m{i}.py", LEGACY.replace("1.0", str(i)))
        elif i % 3 == 1:
            write(root / f"pkg{i % 4}" / f"m{i}.py", f"x = {i}\nrisky_clip(x)\nmanual_clip(x)\n")
        else:
            write(root / f"pkg{i % 4}" / f"m{i}.py", f"x = {i}\n")
    write(root / "bad.py", b'print "x"\nlegacy_clip(1)\n')
    write(root / "nb.ipynb", make_notebook([code_cell(["legacy_clip(1)\n"])]))


class TestTrees:
    def test_jobs_byte_identical(self, tmp_path, rules, capsys, monkeypatch):
        """`--jobs 2` (worker processes) gives the same files, stdout and exit code as `--jobs 1`."""
        results = {}
        for jobs in ("1", "2"):
            root = tmp_path / f"t{jobs}"
            build_tree(root)
            monkeypatch.chdir(root)
            rc, out, err = run(capsys, "fix", ".", "--jobs", jobs)
            results[jobs] = (rc, out, err, snapshot(root))
        assert results["1"] == results["2"]
        assert results["1"][0] == 1 and results["1"][2].count("Rewriting") == 9

    def test_idempotent_over_tree(self, tmp_path, rules, capsys, monkeypatch):
        """A second `fix` over a rewritten tree changes no byte and rewrites nothing."""
        build_tree(tmp_path)
        monkeypatch.chdir(tmp_path)
        run(capsys, "fix", ".", "-j2")
        first = snapshot(tmp_path)
        rc, out, err = run(capsys, "fix", ".", "-j2")
        assert snapshot(tmp_path) == first
        assert "Rewriting" not in err and "0 rewritten" in err
        assert rc == 1  # unfixable findings and the py2 file remain

    def test_progress_only_on_tty(self, tree, capsys, monkeypatch):
        """The progress bar is drawn on a terminal stderr and never when stderr is piped."""
        build_tree(tree, 6)
        rc, out, err = run(capsys, "check", ".", "-j1")
        assert "\r" not in err

        class Tty(io.StringIO):
            def isatty(self):
                return True

        fake = Tty()
        monkeypatch.setattr(sys, "stderr", fake)
        main(["check", ".", "-j1"], rules=_cli_rules.TEST_RULES)
        assert "\rtfclip-migrate [" in fake.getvalue() and "8/8" in fake.getvalue()


# --------------------------------------------------------------------------------------
# the real rules (TFC001 from codemods-compat) on the seed snippet


def _has_real(code: str) -> bool:
    return any(rule.CODE == code for rule in codemods.engine.registry.RULES)


@pytest.mark.skipif(not _has_real("TFC001"), reason="TFC001 is not registered yet")
class TestRealRules:
    def test_seed_fixed_through_tfc001(self, tmp_path, capsys, monkeypatch):
        """The seed's contrib clip_gradients_by_norm is rewritten to tfclip_compat, then stays put."""
        monkeypatch.chdir(tmp_path)
        write(tmp_path / "train.py", SEED)
        rc, out, _ = run(capsys, "check", "--select", "TFC001", "train.py", rules=None)
        assert rc == 1 and out.startswith("train.py:4:13: TFC001 [*]")
        rc, _, err = run(capsys, "fix", "--select", "TFC001", "train.py", rules=None)
        new = (tmp_path / "train.py").read_text()
        assert rc == 1 and "Rewriting train.py" in err
        assert "tf.contrib" not in new and "tfclip_compat.clip_gradients_by_norm(original_optimizer, clip_norm=5.0)" in new
        assert "import tfclip_compat" in new
        compile(new, "train.py", "exec")
        assert run(capsys, "fix", "--select", "TFC001", "train.py", rules=None)[0] == 0
        assert (tmp_path / "train.py").read_text() == new

    def test_seed_in_notebook(self, tmp_path, capsys, monkeypatch):
        """The seed inside a notebook cell (with a magic line) is migrated; layout preserved."""
        monkeypatch.chdir(tmp_path)
        src = ["%load_ext autoreload\n"] + SEED.splitlines(keepends=True)
        write(tmp_path / "nb.ipynb", make_notebook([code_cell(src, OUTPUT)]))
        rc, _, _ = run(capsys, "fix", "--select", "TFC001", "nb.ipynb", rules=None)
        cells = json.loads((tmp_path / "nb.ipynb").read_text())["cells"]
        new = "".join(cells[0]["source"])
        assert rc == 1 and "\n%load_ext autoreload\n" in new and "tfclip_compat.clip_gradients_by_norm" in new
        assert cells[0]["outputs"] == OUTPUT

    def test_seed_jobs_identical(self, tmp_path, capsys, monkeypatch):
        """With the real rules, `--jobs 2` and `--jobs 1` produce identical trees and output."""
        results = []
        for jobs in ("1", "2"):
            root = tmp_path / jobs
            for i in range(6):
                write(root / f"m{i}.py", SEED.replace("5.0", f"{i}.5"))
            monkeypatch.chdir(root)
            rc, out, err = run(capsys, "fix", ".", "--jobs", jobs, "--format", "json", rules=None)
            results.append((rc, out, snapshot(root)))
        assert results[0] == results[1]


# --------------------------------------------------------------------------------------
# through the console script, in subprocesses


def _script() -> str:
    candidate = Path(sys.executable).with_name("tfclip-migrate")
    return str(candidate) if candidate.exists() else shutil.which("tfclip-migrate") or ""


@pytest.mark.skipif(not _script(), reason="console script not installed (pip install -e .)")
class TestConsoleScript:
    def test_console_script_check_and_fix(self, tmp_path):
        """The installed `tfclip-migrate` script runs check (exit 1) and fix (exit 1, then 0)."""
        path = write(tmp_path / "train.py", SEED)
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
        check = subprocess.run([_script(), "check", "train.py"], cwd=tmp_path, capture_output=True, text=True, env=env)
        assert check.returncode == 1 and "train.py:4:13: TFC001" in check.stdout, check.stderr
        fix = subprocess.run([_script(), "fix", "train.py"], cwd=tmp_path, capture_output=True, text=True, env=env)
        assert fix.returncode == 1 and "Rewriting train.py" in fix.stderr
        assert "tf.contrib" not in path.read_text()
        bad = subprocess.run([_script(), "fix", "nope.py"], cwd=tmp_path, capture_output=True, text=True, env=env)
        assert bad.returncode == 2 and "nope.py: no such file or directory" in bad.stderr
        assert "Traceback" not in bad.stderr

    def test_never_imports_tensorflow(self, tmp_path):
        """A full check + fix run imports neither TensorFlow nor Keras (checked in a fresh interpreter)."""
        write(tmp_path / "train.py", SEED)
        write(tmp_path / "nb.ipynb", make_notebook([code_cell(SEED.splitlines(keepends=True))]))
        code = (
            "import sys\n"
            "from codemods.cli import main\n"
            "rc1 = main(['check', '.', '-j1'])\n"
            "rc2 = main(['fix', '.', '-j1'])\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'keras', 'tfclip_compat'))\n"
            "assert (rc1, rc2) == (1, 1), (rc1, rc2)\n"
            "assert not bad, bad\n"
            "assert 'libcst' in sys.modules\n"
        )
        proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert "tfclip_compat.clip_gradients_by_norm" in (tmp_path / "train.py").read_text()

    def test_help_is_lazy(self):
        """`--help` and argument errors load neither libcst nor TensorFlow (imports are lazy)."""
        code = (
            "import sys\n"
            "from codemods.cli import main\n"
            "assert main(['--help']) == 0\n"
            "assert main(['check']) == 2\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('libcst', 'tensorflow', 'keras'))\n"
            "assert not heavy, heavy\n"
        )
        proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
