"""Bytes and positions (issue 11): ``fix`` never changes a byte outside a finding, ``check`` never
counts a file libcst cannot reproduce as changed, ``--diff`` is in the file's own encoding, and
every position (findings after a rewrite, TFC900 errors) points at the file as it was read.

Test-only rules (``tests/_cli_rules.py``) unless the test says otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import _cli_rules
import _cli_subprocess as sub
import libcst as cst
import pytest

from codemods.engine.splice import SpliceConflict, line_mapper, splice
from codemods.cli import main

SEED = (
    "import tensorflow as tf\n\n"
    "original_optimizer = tf.train.AdamOptimizer(learning_rate=learning_rate)\n"
    "optimizer = tf.contrib.estimator.clip_gradients_by_norm(original_optimizer, clip_norm=5.0)\n"
    "train_op = optimizer.minimize(loss)\n"
)


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys, *argv, rules=_cli_rules.TEST_RULES):
    """``main(argv)`` with the test-only rules (``rules=None``: the package's)."""
    rc = main(list(argv), rules=rules)
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


# Files libcst does not reproduce byte for byte (parse_module(s).code != s), each with
# `legacy_clip` away from the inexact spot.
INEXACT = [
    pytest.param("try:\n    pass\nexcept (A, B) :\n    pass\n", id="except-space-colon"),
    pytest.param("try:\n    pass\nexcept E :\n    pass\n", id="except-name-space"),
    pytest.param("try:\n    pass\nexcept (A, B)\t:\n    pass\n", id="except-tab-colon"),
    pytest.param("try:\n    pass\nexcept* E :\n    pass\n", id="except-star-space"),
    pytest.param("x = 1\n\x0cdef f():\n    pass\n", id="form-feed-before-def"),
    pytest.param("x = 1\n\x0cclass A:\n    pass\n", id="form-feed-before-class"),
    pytest.param("def f():\n    x = 1\n\x0c    y = 2\n", id="form-feed-in-block"),
    pytest.param("x = 1\r", id="final-lone-cr"),
    pytest.param("x = 1\n\r", id="cr-after-final-newline"),
    pytest.param("x = 1  # note\r", id="comment-final-lone-cr"),
]


class TestOnlyFindingsChange:
    @pytest.mark.parametrize("defect", INEXACT)
    def test_libcst_round_trip_is_inexact_here(self, defect):
        """The precondition of this class: libcst really changes these files' bytes on a round trip."""
        assert cst.parse_module(defect).code != defect

    @pytest.mark.parametrize("defect", INEXACT)
    def test_fix_changes_only_the_finding(self, tree, capsys, defect):
        """A finding elsewhere is fixed; every byte libcst would have changed is kept."""
        before = "y = legacy_clip(1)\n" + defect
        (tree / "a.py").write_bytes(before.encode())
        rc, _, err = run(capsys, "fix", "a.py", "-j1")
        assert rc == 1 and "Rewriting a.py" in err
        assert (tree / "a.py").read_bytes() == before.replace("legacy_clip", "modern_clip").encode()

    @pytest.mark.parametrize("defect", INEXACT)
    def test_file_without_fix_is_never_written(self, tree, capsys, defect):
        """A file whose only finding has no fix is not rewritten by fix (bytes and mtime kept), and
        check does not count it as changed."""
        path = tree / "a.py"
        path.write_bytes(("y = manual_clip(1)\n" + defect).encode())
        before = path.read_bytes(), os.stat(path).st_mtime_ns
        rc, _, err = run(capsys, "fix", "a.py", "-j1")
        assert rc == 1 and "Rewriting" not in err and "0 rewritten, 1 unchanged" in err
        assert (path.read_bytes(), os.stat(path).st_mtime_ns) == before
        rc, out, _ = run(capsys, "check", "--format", "json", "a.py", "-j1")
        assert json.loads(out)["files"][0]["status"] == "unchanged"

    def test_fix_on_an_inexact_line_is_refused_with_a_report(self, tree, capsys):
        """When a fix would touch a line libcst cannot reproduce, the file is left alone and the
        reason is a TFC900 at that line; the finding is still reported."""
        source = "try:\n    pass\nexcept (A, legacy_clip(1)) :\n    pass\n"
        (tree / "a.py").write_text(source)
        rc, out, err = run(capsys, "fix", "a.py", "-j1")
        assert rc == 1 and (tree / "a.py").read_text() == source and "Rewriting" not in err
        assert out.splitlines() == [
            "a.py:3:1: TFC900 fixes not applied: libcst cannot reproduce this line byte for byte (e.g. a space "
            "before `:`, a form feed, a lone CR) and a fix touches it; file left unchanged",
            "a.py:3:12: TFC990 [*] `legacy_clip` is legacy: use `modern_clip`",
        ]

    def test_spliced_text_must_be_the_rewritten_program(self, tree, capsys, monkeypatch):
        """If splicing ever produced a program other than the rules' output, nothing is written."""
        import codemods.engine.splice

        source = "y = legacy_clip(1)\ntry:\n    pass\nexcept E :\n    pass\n"
        (tree / "a.py").write_text(source)
        monkeypatch.setattr(codemods.engine.splice, "splice", lambda original, roundtrip, rewritten: rewritten + "z = 2\n")
        rc, out, err = run(capsys, "fix", "a.py", "-j1")
        assert rc == 1 and (tree / "a.py").read_text() == source and "Rewriting" not in err
        assert "a.py:1:1: TFC900 fixes not applied" in out

    def test_splice_unit(self):
        """`splice` applies the rules' edits to the original text and refuses overlapping ones."""
        original = "a = 1\nexcept_line :\nb = legacy\n\x0cc = 3\r"
        roundtrip = "a = 1\nexcept_line:\nb = legacy\nc = 3"
        assert splice(original, roundtrip, roundtrip.replace("legacy", "modern")) == original.replace("legacy", "modern")
        assert splice(original, roundtrip, "import x\n" + roundtrip) == "import x\n" + original
        with pytest.raises(SpliceConflict) as conflict:
            splice(original, roundtrip, roundtrip.replace("except_line:", "except_line2:"))
        assert conflict.value.line == 2

    def test_line_mapper_unit(self):
        """`line_mapper` maps kept lines exactly and rewritten ones to the start of what they replaced."""
        mapper = line_mapper("a\n  b\nc\n", "import t\na\n  B1\n  B2\nc\n")
        assert [mapper(line, 7) for line in range(1, 6)] == [(1, 1), (1, 7), (2, 3), (2, 3), (3, 7)]


class TestPositions:
    def test_fix_reports_positions_in_the_original_file(self, tmp_path, capsys, monkeypatch):
        """Real rules: TFC001 adds an import line; the TFC202 that remains is reported where `check`
        reports it (line 5), not in the rewritten code (line 6)."""
        monkeypatch.chdir(tmp_path)
        (tmp_path / "a.py").write_text(SEED)
        rc, check_out, _ = run(capsys, "check", "a.py", "-j1", rules=None)
        assert rc == 1 and "a.py:5:12: TFC202" in check_out
        rc, diff_out, diff_err = run(capsys, "fix", "--diff", "a.py", "-j1", rules=None)
        assert rc == 1 and "a.py:5:12: TFC202" in diff_err and "+import tfclip_compat\n" in diff_out
        rc, fix_out, _ = run(capsys, "fix", "a.py", "-j1", rules=None)
        assert rc == 1 and fix_out.startswith("a.py:5:12: TFC202")
        new_lines = (tmp_path / "a.py").read_text().splitlines()
        assert new_lines[5].startswith("train_op = optimizer.minimize(loss)")  # line 6 after the fix

    @pytest.mark.parametrize(
        "content, expected",
        [
            pytest.param(b'x = 1\ny = 2\ns = """abc\nlegacy_clip(1)\n', "a.py:3:5: TFC900 cannot parse: unterminated "
                         "triple-quoted string literal", id="unterminated-string"),
            pytest.param(b"x = 1\nif x:\n    legacy_clip(1)\n  z = 2\n", "a.py:4:8: TFC900 cannot parse: unindent "
                         "does not match any outer indentation level", id="bad-dedent"),
            pytest.param(b"legacy_clip(1)\nx = (1,\n", "a.py:2:5: TFC900 cannot parse: '(' was never closed",
                         id="unclosed-bracket"),
            pytest.param(b"x = 1\n\n\nlegacy_clip('\xff\xfe')\n", "a.py:4:14: TFC900 cannot decode as utf-8",
                         id="bad-utf8-byte"),
            pytest.param(b"\xef\xbb\xbfx = 1\nlegacy_clip('\xff')\n", "a.py:2:14: TFC900 cannot decode as utf-8",
                         id="bad-utf8-after-bom"),
        ],
    )
    def test_tfc900_points_at_the_error(self, tree, capsys, content, expected):
        """TFC900 for tokenizer, syntax and decoding errors names the line and column of the error."""
        (tree / "a.py").write_bytes(content)
        rc, out, _ = run(capsys, "check", "a.py", "-j1")
        assert rc == 1 and out.startswith(expected), out


class TestDiffEncoding:
    @pytest.mark.skipif(shutil.which("patch") is None, reason="patch(1) not installed")
    @pytest.mark.parametrize(
        "before",
        [
            pytest.param("# -*- coding: latin-1 -*-\n# caf\xe9 cr\xe8me\nx = legacy_clip('\xe9')\n".encode("latin-1"),
                         id="latin-1"),
            pytest.param(b"\xef\xbb\xbfx = legacy_clip(1)\r\ny = 2\r\n", id="bom-crlf"),
            pytest.param("# coding: cp1252\ns = '\u20ac'\nlegacy_clip(s)".encode("cp1252"), id="cp1252-no-final-newline"),
        ],
    )
    def test_diff_is_in_the_files_encoding_and_applies(self, tree, capsys, tmp_path, before):
        """`fix --diff` emits the file's own bytes (latin-1 stays latin-1, BOM and CRLF kept); `patch -p0`
        applied to a copy gives exactly what `fix` writes."""
        (tree / "a.py").write_bytes(before)
        proc = sub.popen(["fix", "--diff", "a.py", "-j1"], tree)  # a real stdout: the diff's bytes
        patch, err = proc.communicate(timeout=60)
        assert proc.returncode == 1, err
        if b"coding: latin-1" in before:
            assert b"+x = modern_clip('\xe9')\n" in patch  # latin-1 bytes, not UTF-8
        copy = tmp_path / "copy"
        copy.mkdir()
        (copy / "a.py").write_bytes(before)
        subprocess.run(["patch", "-p0", "-s", "--binary"], input=patch, cwd=copy, check=True)
        run(capsys, "fix", "a.py", "-j1")
        assert (copy / "a.py").read_bytes() == (tree / "a.py").read_bytes() != before


class TestConfigFiles:
    @pytest.mark.parametrize(
        "content",
        [
            pytest.param(b"[project]\nname = 'caf\xe9'\n", id="not-utf8"),
            pytest.param(b"[project\nname = 1\n", id="invalid-toml"),
            pytest.param(b"[tool.black]\nline-length = 100\n", id="valid-no-table"),
        ],
    )
    def test_unrelated_pyproject_above_does_not_stop_the_run(self, tmp_path, capsys, monkeypatch, content):
        """A pyproject.toml in a parent directory that cannot hold [tool.tfclip-migrate] is passed over."""
        (tmp_path / "pyproject.toml").write_bytes(content)
        project = tmp_path / "proj"
        project.mkdir()
        (project / "a.py").write_text("legacy_clip(1)\n")
        monkeypatch.chdir(project)
        rc, out, err = run(capsys, "check", "a.py", "-j1")
        assert rc == 1 and out.startswith("a.py:1:1: TFC990") and "error" not in err

    @pytest.mark.parametrize(
        "content, message",
        [
            pytest.param(b"[tool.tfclip-migrate]\nselect = ['TFC990']\n# caf\xe9\n",
                         "not valid UTF-8 (TOML files must be UTF-8)", id="not-utf8"),
            pytest.param(b"[tool.tfclip-migrate\nselect = 1\n", "invalid TOML", id="invalid-toml"),
        ],
    )
    def test_broken_own_table_is_a_clear_error(self, tmp_path, capsys, monkeypatch, content, message):
        """A pyproject.toml that mentions tfclip-migrate but cannot be read is an error naming the file."""
        (tmp_path / "pyproject.toml").write_bytes(content)
        (tmp_path / "a.py").write_text("legacy_clip(1)\n")
        monkeypatch.chdir(tmp_path)
        rc, out, err = run(capsys, "check", "a.py", "-j1", "--format", "json")
        assert rc == 2 and "Traceback" not in err
        error = json.loads(out)["errors"][0]["message"]
        assert error.startswith(str(tmp_path / "pyproject.toml")) and message in error
