"""Tests of the CI-facing output of ``tfclip-migrate`` (issue 24): ``--output-format`` github /
sarif / junit, JSON end positions and edits, ``--statistics``, ``--exit-zero``, ``--show-fixes``,
colour, ``extend-exclude``, ``--report-file``, usage errors, and notebook positions
(``cell N, line M``) in every format. Real rules, in-process ``main`` unless a terminal is needed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import List, Tuple

import pytest

from codemods.cli import main

REPO = Path(__file__).resolve().parents[2]
SCHEMA = Path(__file__).resolve().parents[1] / "data" / "sarif-schema-2.1.0.json"

TRAIN = (
    "import tensorflow as tf\n\n"
    "x = tf.placeholder(tf.float32, [None, 3])\n"
    'w = tf.get_variable("w", [3, 1])\n'
    "loss = tf.reduce_sum(tf.square(tf.matmul(x, w)))\n\n"
    "base_optimizer = tf.train.AdamOptimizer(learning_rate=0.01)\n"
    "optimizer = tf.contrib.estimator.clip_gradients_by_norm(base_optimizer, clip_norm=5.0)\n"
    "train_op = optimizer.minimize(loss)\n"
)
# A decline (TFC202) whose reason names another statement, after a site TFC103 rewrites.
OVERLAP = (REPO / "fixtures" / "TFC103" / "overlapping_sites_inline_optimizer.before.py").read_text()
PARAM_LOSS = "import tensorflow as tf\nopt = tf.train.AdamOptimizer(0.1)\n\n\ndef step(loss):\n    return opt.minimize(loss)\n"


@pytest.fixture
def proj(tmp_path, monkeypatch):
    """A project directory (cwd) with train.py; no cache, no configuration above it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TFCLIP_MIGRATE_CACHE_DIR", str(tmp_path / ".cache"))
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    (tmp_path / "train.py").write_text(TRAIN)
    return tmp_path


def run(capsys, *argv: str) -> Tuple[int, str, str]:
    rc = main(list(argv))
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def notebook(path: Path, cells: List[str]) -> Path:
    """Write a notebook of code cells ``cells``."""
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                     "source": source.splitlines(True)} for source in cells],
          "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb, indent=1))
    return path


def overlap_notebook(path: Path) -> Path:
    """OVERLAP split into three cells, 30 filler lines in the middle one: program lines and
    cell lines differ by 32."""
    lines = OVERLAP.splitlines(True)
    return notebook(path, ["".join(lines[:2]), "x = 1\n" * 30, "".join(lines[2:])])


def apply_edits(text: str, edits) -> str:
    """Apply whole-line edits (1-based [start, end) line ranges in ``text``), bottom up."""
    lines = text.splitlines(True)
    for edit in sorted(edits, key=lambda e: (e["location"]["line"], e["end_location"]["line"]), reverse=True):
        start, end = edit["location"]["line"] - 1, edit["end_location"]["line"] - 1
        lines[start:end] = [edit["content"]]
    return "".join(lines)


# --------------------------------------------------------------------------------------
# SARIF


class TestSarif:
    def test_validates_against_the_official_schema(self, proj, capsys):
        """The SARIF log of a run with .py findings, notebook findings and an error validates
        against the OASIS SARIF 2.1.0 schema (tests/data, vendored), and carries each finding."""
        jsonschema = pytest.importorskip("jsonschema")
        overlap_notebook(proj / "n.ipynb")
        rc, out, err = run(capsys, "check", "--output-format", "sarif", "-j1", "train.py", "n.ipynb", "missing.py")
        assert rc == 2 and "missing.py" in err
        log = json.loads(out)
        schema = json.loads(SCHEMA.read_text())
        jsonschema.Draft4Validator.check_schema(schema)
        errors = sorted(jsonschema.Draft4Validator(schema).iter_errors(log), key=str)
        assert not errors, [e.message for e in errors[:5]]
        run_ = log["runs"][0]
        assert log["version"] == "2.1.0" and run_["invocations"][0]["exitCode"] == 2
        assert run_["invocations"][0]["executionSuccessful"] is False
        assert "missing.py" in run_["invocations"][0]["toolExecutionNotifications"][0]["message"]["text"]
        results = run_["results"]
        py = [r for r in results if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "train.py"]
        assert [(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]) for r in py] == [
            ("TFC103", {"startLine": 9, "startColumn": 12, "endLine": 9, "endColumn": 36}),
        ]  # no TFC001: `fix` rewrites its site through TFC103, and check lists what fix would do
        assert {rule["id"] for rule in run_["tool"]["driver"]["rules"]} == {r["ruleId"] for r in results}

    def test_notebook_results_name_the_cell(self, proj, capsys):
        """A notebook result has no region (file lines are JSON lines), its message starts with
        `cell N, line M, col C`, and its properties hold the cell position."""
        overlap_notebook(proj / "n.ipynb")
        rc, out, _ = run(capsys, "check", "--output-format", "sarif", "-j1", "n.ipynb")
        results = json.loads(out)["runs"][0]["results"]
        decline = next(r for r in results if r["ruleId"] == "TFC202")
        assert "region" not in decline["locations"][0]["physicalLocation"]
        assert decline["message"]["text"].startswith("cell 3, line 16, col 32: another gradient computation")
        assert "(cell 3, line 12)" in decline["message"]["text"]
        assert decline["properties"] == {"fix": "none", "cell": 3, "line": 16, "column": 32,
                                         "endLine": 16, "endColumn": 86}

    def test_no_findings_is_an_empty_result_list(self, proj, capsys):
        """A clean run is a valid log with no results, exit 0."""
        (proj / "clean.py").write_text("import tensorflow as tf\nx = tf.constant(1)\n")
        rc, out, _ = run(capsys, "check", "--format", "sarif", "clean.py")
        log = json.loads(out)
        assert rc == 0 and log["runs"][0]["results"] == [] and log["runs"][0]["tool"]["driver"]["rules"] == []


# --------------------------------------------------------------------------------------
# GitHub annotations and JUnit


class TestGithub:
    def test_one_workflow_command_per_finding(self, proj, capsys):
        """Each finding is `::error file=,line=,col=,endLine=,endColumn=,title=CODE::CODE message`."""
        rc, out, _ = run(capsys, "check", "--output-format", "github", "-j1", "train.py")
        lines = out.splitlines()
        assert rc == 1 and len(lines) == 1
        assert lines[0].startswith("::error file=train.py,line=9,col=12,endLine=9,endColumn=36,title=TFC103::TFC103 ")

    def test_escaping(self):
        """Properties escape `%`, `:`, `,` and line breaks; the message escapes `%` and line breaks."""
        from codemods.engine.core import Diagnostic, FixSafety
        from codemods.cli.formats import github_line
        from codemods.cli.results import Finding

        diag = Diagnostic("a,b:c%.py", 1, 2, "TFC900", "50% done\nnext", FixSafety.NONE, end_line=1, end_col=3)
        assert github_line(Finding(diag)) == (
            "::error file=a%2Cb%3Ac%25.py,line=1,col=2,endLine=1,endColumn=3,title=TFC900::TFC900 50%25 done%0Anext\n")

    def test_notebook_annotation_is_file_level_with_the_cell(self, proj, capsys):
        """A notebook finding names no JSON line: the message starts with `cell N, line M, col C`."""
        overlap_notebook(proj / "n.ipynb")
        rc, out, _ = run(capsys, "check", "--output-format", "github", "-j1", "n.ipynb")
        decline = next(line for line in out.splitlines() if "title=TFC202" in line)
        assert decline.startswith("::error file=n.ipynb,title=TFC202::TFC202 cell 3, line 16, col 32: another")
        assert "line=" not in decline.split("::")[1]

    def test_fix_annotates_only_what_is_left(self, proj, capsys):
        """In `fix`, applied fixes are no annotations: only the findings left are."""
        (proj / "p.py").write_text(PARAM_LOSS)
        rc, out, _ = run(capsys, "fix", "--output-format", "github", "-j1", "train.py", "p.py")
        assert rc == 1 and [line.split("title=")[1][:6] for line in out.splitlines()] == ["TFC202"]


class TestJunit:
    def test_a_failed_test_case_per_finding(self, proj, capsys):
        """JUnit XML: one test suite per file with findings, a failed test case per finding."""
        (proj / "p.py").write_text(PARAM_LOSS)
        rc, out, _ = run(capsys, "check", "--output-format", "junit", "-j1", "train.py", "p.py")
        root = ET.fromstring(out)
        assert rc == 1 and root.tag == "testsuites" and root.get("tests") == "2" and root.get("failures") == "2"
        suites = {s.get("name"): [c.get("name") for c in s] for s in root}
        assert suites == {"p.py": ["tfclip-migrate.TFC202"],
                          "train.py": ["tfclip-migrate.TFC103"]}
        failure = root.find("testsuite[@name='p.py']/testcase/failure")
        assert failure is not None and failure.text.startswith("line 6, col 12: the loss `loss` is a parameter")

    def test_clean_run_is_one_passing_case(self, proj, capsys):
        """No findings: one passing test case, exit 0."""
        (proj / "clean.py").write_text("x = 1\n")
        rc, out, _ = run(capsys, "check", "--output-format", "junit", "clean.py")
        root = ET.fromstring(out)
        assert rc == 0 and root.get("failures") == "0" and root.find("testsuite/testcase").get("name") == "No findings"


# --------------------------------------------------------------------------------------
# JSON: end positions and edits


class TestJsonEdits:
    @pytest.mark.parametrize("path", ["train.py", "examples/legacy_clipping.py"], ids=["train", "legacy"])
    def test_edits_rebuild_the_fixed_file(self, proj, capsys, path):
        """The edits of the applied fixes (`fix --diff --format json`), applied to the file as
        read, give exactly the file `fix` writes; each edit is listed once per fix."""
        source = TRAIN if path == "train.py" else (REPO / path).read_text()
        (proj / "t.py").write_text(source)
        rc, out, _ = run(capsys, "fix", "--diff", "--format", "json", "-j1", "t.py")
        document = json.loads(out)
        applied = [f for f in document["findings"] if f["applied"]]
        assert applied and all(f["edits"] for f in applied)
        edits = {json.dumps(e, sort_keys=True): e for f in applied for e in f["edits"]}.values()
        run(capsys, "fix", "-j1", "t.py")
        assert apply_edits(source, edits) == (proj / "t.py").read_text() != source

    def test_end_positions(self, proj, capsys):
        """Findings carry the end of the node they report (1-based, exclusive column)."""
        rc, out, _ = run(capsys, "check", "--format", "json", "-j1", "train.py")
        rows = [(f["code"], f["line"], f["col"], f["end_line"], f["end_col"]) for f in json.loads(out)["findings"]]
        assert rows == [("TFC103", 9, 12, 9, 36)]
        assert TRAIN.splitlines()[8][11:35] == "optimizer.minimize(loss)"

    @pytest.mark.parametrize("cache", [True, False], ids=["cached", "no-cache"])
    def test_check_gives_the_edits_fix_applies(self, proj, capsys, cache):
        """`check --format json` carries, for each fixable finding, the edit `fix` applies (also
        from a warm cache), and lists only what `fix` would fix (no TFC001: TFC103 rewrites its
        site first)."""
        flags = [] if cache else ["--no-cache"]
        run(capsys, "check", "--format", "json", "-j1", *flags, "train.py")
        check = json.loads(run(capsys, "check", "--format", "json", "-j1", *flags, "train.py")[1])["findings"]
        diff = json.loads(run(capsys, "fix", "--diff", "--format", "json", "-j1", "train.py")[1])["findings"]
        assert [(f["code"], f["edits"] is None) for f in check] == [("TFC103", False)]
        assert check[0]["edits"] == next(f["edits"] for f in diff if f["code"] == "TFC103")
        sarif = json.loads(run(capsys, "check", "--format", "sarif", "-j1", *flags, "train.py")[1])
        fixes = sarif["runs"][0]["results"][0]["fixes"][0]["artifactChanges"][0]["replacements"]
        assert [(r["deletedRegion"]["startLine"], r["deletedRegion"]["endLine"], r["insertedContent"]["text"])
                for r in fixes] == [(e["location"]["line"], e["end_location"]["line"], e["content"])
                                    for e in check[0]["edits"]]


# --------------------------------------------------------------------------------------
# --statistics, --exit-zero, --show-fixes


class TestCounts:
    def test_statistics(self, proj, capsys):
        """`--statistics` prints count, code, fixable marker and rule name per code instead of the findings."""
        (proj / "p.py").write_text(PARAM_LOSS + PARAM_LOSS.replace("step", "step2").split("\n\n\n")[1])
        rc, out, err = run(capsys, "check", "--statistics", "-j1", "train.py", "p.py")
        assert rc == 1 and "findings: " in err
        assert out == ("2\tTFC202\t[ ] unprovable-gradient-site\n"
                       "1\tTFC103\t[*] minimize-to-tape\n")

    def test_statistics_needs_text(self, proj, capsys):
        """`--statistics` with a document format is a usage error naming where the counts are."""
        rc, out, err = run(capsys, "check", "--statistics", "--format", "json", "train.py")
        assert rc == 2 and "summary.findings_by_code" in json.loads(out)["errors"][0]["message"]

    def test_exit_zero(self, proj, capsys):
        """`--exit-zero`: findings and rewrites exit 0; an error still exits 2."""
        assert run(capsys, "check", "--exit-zero", "train.py")[0] == 0
        assert run(capsys, "check", "--exit-zero", "train.py", "missing.py")[0] == 2
        assert run(capsys, "fix", "--exit-zero", "train.py")[0] == 0
        assert run(capsys, "check", "train.py")[0] == 0  # fixed: nothing left

    def test_show_fixes(self, proj, capsys):
        """`--show-fixes` lists per file the findings fixed (fix) or fixable (check), on stderr."""
        rc, out, err = run(capsys, "check", "--show-fixes", "train.py")
        assert "Would fix 1 finding:\n- train.py:\n    1 \u00d7 TFC103 (minimize-to-tape)\n" in err
        rc, out, err = run(capsys, "fix", "--show-fixes", "train.py")
        assert rc == 1 and "Fixed 1 finding:\n- train.py:\n    1 \u00d7 TFC103 (minimize-to-tape)\n" in err
        rc, out, err = run(capsys, "fix", "--show-fixes", "train.py")
        assert rc == 0 and "No findings fixed.\n" in err


# --------------------------------------------------------------------------------------
# colour


def _pty_run(args: List[str], env_extra: dict, cwd: Path) -> bytes:
    """Run the CLI with stdout on a pseudo-terminal; return what it wrote there."""
    import pty

    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env.update(env_extra, PYTHONPATH=str(REPO), TERM="xterm")
    proc = subprocess.Popen([sys.executable, "-m", "codemods.cli", *args], stdout=slave, stderr=subprocess.PIPE,
                            cwd=cwd, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=120)
    os.close(master)
    return b"".join(chunks)


class TestColour:
    def test_terminal_gets_colour(self, proj):
        """On a terminal the code is bold red and the path bold; the text is the same."""
        out = _pty_run(["check", "--no-cache", "train.py"], {}, proj)
        assert b"\x1b[1mtrain.py\x1b[0m:9:12: \x1b[1m\x1b[31mTFC103\x1b[0m \x1b[36m[*]\x1b[0m" in out

    def test_no_color_wins_on_a_terminal(self, proj):
        """NO_COLOR (not empty) turns colour off on a terminal, FORCE_COLOR notwithstanding."""
        out = _pty_run(["check", "--no-cache", "train.py"], {"NO_COLOR": "1", "FORCE_COLOR": "1"}, proj)
        assert b"\x1b[" not in out and b"train.py:9:12: TFC103 [*]" in out

    def test_force_color_through_a_pipe(self, proj):
        """FORCE_COLOR colours a pipe; without it a pipe gets plain text."""
        env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
        env["PYTHONPATH"] = str(REPO)
        cmd = [sys.executable, "-m", "codemods.cli", "check", "--no-cache", "train.py"]
        plain = subprocess.run(cmd, capture_output=True, cwd=proj, env=env).stdout
        forced = subprocess.run(cmd, capture_output=True, cwd=proj, env={**env, "FORCE_COLOR": "1"}).stdout
        assert b"\x1b[" not in plain and b"\x1b[31mTFC103" in forced

    def test_rule(self):
        """color_enabled: NO_COLOR > FORCE_COLOR > a terminal; an empty value counts as unset."""
        from codemods.cli.formats import color_enabled

        class Tty:
            def isatty(self):
                return True

        assert color_enabled(Tty(), {}) and not color_enabled(Tty(), {"TERM": "dumb"})
        assert not color_enabled(Tty(), {"NO_COLOR": "1"}) and color_enabled(Tty(), {"NO_COLOR": ""})
        assert color_enabled(object(), {"FORCE_COLOR": "1"}) and not color_enabled(object(), {"FORCE_COLOR": ""})


# --------------------------------------------------------------------------------------
# extend-exclude and the report file


class TestExtendExclude:
    def test_cli_and_config_add_to_exclude(self, proj, capsys):
        """`--extend-exclude` and `extend-exclude` add globs to `exclude`: all three apply."""
        for name in ("a", "b", "c"):
            (proj / "pkg" / name).mkdir(parents=True)
            (proj / "pkg" / name / "m.py").write_text(TRAIN)
        (proj / "train.py").unlink()
        (proj / "pyproject.toml").write_text(
            '[tool.tfclip-migrate]\nexclude = ["pkg/a"]\nextend-exclude = ["pkg/b"]\n')
        rc, out, err = run(capsys, "check", ".", "--extend-exclude", "pkg/c", "-j1")
        assert rc == 0 and out == "" and "3 excluded by config" in err
        rc, out, _ = run(capsys, "check", ".", "-j1")
        assert rc == 1 and "pkg/c/m.py" in out and "pkg/a" not in out and "pkg/b" not in out

    def test_cli_glob_is_relative_to_the_current_directory(self, proj, capsys, monkeypatch):
        """A CLI glob with `/` is relative to the current directory, as ruff's command line is."""
        (proj / "sub" / "gen").mkdir(parents=True)
        (proj / "sub" / "gen" / "m.py").write_text(TRAIN)
        (proj / "pyproject.toml").write_text('[tool.tfclip-migrate]\nexclude = []\n')
        monkeypatch.chdir(proj / "sub")
        rc, out, err = run(capsys, "check", ".", "--extend-exclude", "gen/*", "-j1")
        assert rc == 0 and "1 excluded by config" in err

    def test_bad_config_value(self, proj, capsys):
        """A non-list `extend-exclude` is a configuration error naming the key."""
        (proj / "pyproject.toml").write_text('[tool.tfclip-migrate]\nextend-exclude = 3\n')
        rc, _, err = run(capsys, "check", "train.py")
        assert rc == 2 and "extend-exclude must be a list of glob strings" in err


class TestReportFile:
    def test_markdown_report(self, proj, capsys):
        """`--report-file`: per file what was rewritten and what was left and why; reasons ranked by count."""
        (proj / "p.py").write_text(PARAM_LOSS + PARAM_LOSS.replace("step", "step2").split("\n\n\n")[1])
        rc, out, err = run(capsys, "fix", "--report-file", "report.md", "-j1", "train.py", "p.py")
        report = (proj / "report.md").read_text()
        assert rc == 1
        ranked = report.split("## Why sites were left, most frequent first\n\n")[1].split("\n")[0]
        assert ranked == ("- 2 \u00d7 TFC202: the loss `\u2026` is a parameter (a tensor or a callable computed by "
                          "the caller, maybe in another file); a tape must record its computation (manual edit "
                          "required)")
        assert "| TFC103 | 1 | 0 |" in report and "| TFC202 | 0 | 2 |" in report
        train = report.split("### `train.py`")[1].split("###")[0]
        assert "Status: rewritten" in train and "- line 9, col 12: **TFC103** `minimize`" in train
        p = report.split("### `p.py`")[1]
        assert "Left, and why:" in p and "- line 6, col 12: **TFC202**" in p

    def test_check_report_separates_fixable_from_left(self, proj, capsys):
        """Under `check`, findings `fix` would fix are listed as such and are no reason to rank;
        API names in a reason are kept, the user's code and line numbers become `…`."""
        (proj / "o.py").write_text(OVERLAP)
        rc, out, err = run(capsys, "check", "--report-file", "report.md", "-j1", "train.py", "o.py")
        report = (proj / "report.md").read_text()
        assert rc == 1 and "| TFC103 | 2 | 0 |" in report and "| TFC202 | 0 | 1 |" in report
        assert report.split("most frequent first\n\n")[1].split("\n\n")[0] == (
            "- 1 \u00d7 TFC202: another gradient computation (`\u2026` (line \u2026)) sits among the statements "
            "that compute the loss (manual edit required)")
        train = report.split("### `train.py`")[1]
        assert "Status: `fix` would rewrite it" in train and "Would be rewritten by `fix`:" in train

    def test_unwritable_report_is_an_error(self, proj, capsys):
        """A report that cannot be written makes the exit code 2 (the run itself goes on)."""
        rc, _, err = run(capsys, "check", "--report-file", str(proj / "no" / "such" / "r.md"), "train.py")
        assert rc == 2 and "cannot write the report" in err


# --------------------------------------------------------------------------------------
# usage


class TestUsage:
    def test_check_diff_hints_at_fix_diff(self, proj, capsys):
        """`check --diff` is a usage error that says to use `fix --diff`."""
        rc, _, err = run(capsys, "check", "--diff", "train.py")
        assert rc == 2 and "use `fix --diff`" in err

    def test_check_help_says_unsafe_fixes_never_write(self, capsys):
        """`check --help` does not claim `--unsafe-fixes` applies fixes; `fix --help` does."""
        def help_text(command: str) -> str:
            with pytest.raises(SystemExit):
                from codemods.cli.app import _build_parser

                _build_parser().parse_args([command, "--help"])
            return " ".join(capsys.readouterr().out.split())

        check, fix = help_text("check"), help_text("fix")
        assert "apply" not in check.split("--unsafe-fixes", 1)[1].split("--", 1)[0]
        assert "check never writes" in check
        assert "also apply fixes that may change numerics" in fix

    @pytest.mark.parametrize("value", ["0", "-1"])
    def test_jobs_below_one(self, proj, capsys, value):
        """`--jobs 0` (and below) is a usage error: omit --jobs for the number of CPUs."""
        rc, _, err = run(capsys, "check", "--jobs", value, "train.py")
        assert rc == 2 and "must be >= 1 (omit --jobs for the number of CPUs)" in err

    @pytest.mark.parametrize("fmt", ["github", "sarif", "junit"])
    def test_document_formats_refuse_diff(self, proj, capsys, fmt):
        """A format that is not text or JSON cannot carry `fix --diff`'s diff: a usage error."""
        rc, _, err = run(capsys, "fix", "--diff", "--output-format", fmt, "train.py")
        assert rc == 2 and "use text or json" in err and (proj / "train.py").read_text() == TRAIN


# --------------------------------------------------------------------------------------
# positions: notebooks, and blame after a rewrite


class TestPositions:
    def test_notebook_messages_name_cell_lines(self, proj, capsys):
        """A reason naming another statement names it as `(cell C, line M)`, never a program line."""
        overlap_notebook(proj / "n.ipynb")
        for fmt in ("text", "json"):
            rc, out, _ = run(capsys, "check", "--format", fmt, "-j1", "n.ipynb")
            assert "(cell 3, line 12)" in out and "(line 46)" not in out
        finding = next(f for f in json.loads(out)["findings"] if f["code"] == "TFC202")
        assert (finding["cell"], finding["line"], finding["end_line"]) == (3, 16, 16)

    @pytest.mark.parametrize("notebook_file", [False, True], ids=["py", "ipynb"])
    def test_fix_blames_the_users_code_as_check_does(self, proj, capsys, notebook_file):
        """After TFC103 rewrites the critic, `fix --diff` reports the actor's decline as `check`
        does, naming the user's `minimize` -- never the tool's inserted `tf.GradientTape()`."""
        if notebook_file:
            overlap_notebook(proj / "o.ipynb")
            target = "o.ipynb"
        else:
            (proj / "o.py").write_text(OVERLAP)
            target = "o.py"
        declines = []
        for argv in (["check"], ["fix", "--diff"]):
            rc, out, _ = run(capsys, *argv, "--format", "json", "-j1", target)
            declines.append([f for f in json.loads(out)["findings"] if f["code"] == "TFC202"])
        assert declines[0] == declines[1] and len(declines[0]) == 1
        assert "tf.GradientTape()" not in declines[1][0]["message"]
        assert "`tf.train.AdamOptimizer(0.01).minimize(self.crit...`" in declines[1][0]["message"]

    def test_line_mentions_outside_code_only(self):
        """`(line N)` and a parser's `(line N, column C)` are converted; code in backticks is not."""
        from codemods.engine.core import map_line_mentions

        convert = lambda n: f"cell 2, line {n - 40}"  # noqa: E731
        assert map_line_mentions("x (line 46, column 3)", convert) == "x (cell 2, line 6, column 3)"
        assert map_line_mentions("`f(line 45)` (line 45)", convert) == "`f(line 45)` (cell 2, line 5)"
        assert map_line_mentions("no mention", convert) == "no mention"
