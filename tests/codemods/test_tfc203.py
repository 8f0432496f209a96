"""TFC203 (training site still in TF 1 form after ``fix``): off unless selected, and after ``fix``
it lists what the fixes left -- the bundled example's decoder, in the shim form, included."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from codemods.cli import app as cli
from codemods.engine.core import Options, enabled

ROOT = Path(__file__).resolve().parents[2]


def run(capsys: pytest.CaptureFixture, *argv: str):
    """(exit code, stdout) of ``tfclip-migrate ARGV``."""
    rc = cli.main(list(argv))
    return rc, capsys.readouterr().out


def test_opt_in_rule_runs_only_when_selected() -> None:
    """TFC203 is off by default and under ``--ignore``; any ``--select`` naming it or a prefix of it
    turns it on; other rules stay on by default."""
    assert not enabled("TFC203", Options(), opt_in=True)
    assert enabled("TFC202", Options())
    for prefix in ("TFC203", "TFC2", "TFC"):
        assert enabled("TFC203", Options(select=frozenset({prefix})), opt_in=True)
    assert not enabled("TFC203", Options(select=frozenset({"TFC1"})), opt_in=True)
    assert not enabled("TFC203", Options(select=frozenset({"TFC"}), ignore=frozenset({"TFC203"})), opt_in=True)


def test_after_fix_the_example_decoder_is_listed(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """After the per-site ``fix`` of the bundled example (TFC301, which makes the whole script eager,
    ignored), a default ``check`` is silent while ``--select TFC`` lists the decoder's
    ``clip_gradients_by_norm(...).minimize`` (the shim form TFC001 wrote) with why."""
    path = tmp_path / "legacy_clipping.py"
    shutil.copy(ROOT / "examples" / "legacy_clipping.py", path)
    assert run(capsys, "fix", "--no-cache", "--ignore", "TFC301", str(path))[0] == 1
    rc, out = run(capsys, "check", "--no-cache", "--ignore", "TFC301", str(path))
    assert rc == 0 and "TFC" not in out.replace("tfclip-migrate", "")
    rc, out = run(capsys, "check", "--no-cache", "--select", "TFC", "--ignore", "TFC301", str(path))
    lines = [line for line in out.splitlines() if ": TFC" in line]
    assert rc == 1 and len(lines) == 1, out
    assert ":65:12: TFC203 training site still in TF 1 form: its optimizer is " \
           "`tfclip_compat.clip_gradients_by_norm(...)`" in lines[0]


def test_check_lists_what_fix_will_leave(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Before ``fix``, ``check --select TFC`` lists the fixes and, at the decoder, what ``fix`` leaves
    (TFC203 on the shim form), exactly as ``check`` after ``fix`` does (per-site rules: TFC301
    ignored); with TFC301 the whole script becomes eager and nothing is left."""
    path = tmp_path / "legacy_clipping.py"
    shutil.copy(ROOT / "examples" / "legacy_clipping.py", path)
    per_site = ("--select", "TFC", "--ignore", "TFC301")
    rc, before = run(capsys, "check", "--no-cache", *per_site, str(path))
    left = [line.split(": ", 1)[1] for line in before.splitlines() if ": TFC203" in line]
    assert rc == 1 and len(left) == 1 and "TFC101 [*]" in before
    rc, whole = run(capsys, "check", "--no-cache", "--select", "TFC", str(path))
    assert rc == 1 and "TFC301 [*]" in whole and "TFC203" not in whole
    run(capsys, "fix", "--no-cache", *per_site, str(path))
    rc, after = run(capsys, "check", "--no-cache", *per_site, str(path))
    assert [line.split(": ", 1)[1] for line in after.splitlines() if ": TFC203" in line] == left
