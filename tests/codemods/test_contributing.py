"""CONTRIBUTING.md cannot drift: it is short, points to the engine page, every command it shows
names something that exists (and the generators' checks pass), and its lint command is run here.
Its rule file and fixtures are added to a copy of the repository by
tests/codemods/test_registry.py::test_adding_the_guides_files_to_a_copy_is_all_it_takes."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "CONTRIBUTING.md"
SCRIPT_DIR = Path(sys.executable).parent


def commands() -> List[List[str]]:
    """The command lines of the guide's ``bash`` blocks, split as the shell would, without comments."""
    text = GUIDE.read_text(encoding="utf-8")
    lines = []
    for body in re.findall(r"^ *```bash\n(.*?)^ *```", text, re.S | re.M):
        lines += [shlex.split(line, comments=True) for line in body.splitlines() if line.strip()]
    return lines


def test_guide_is_short_and_points_to_the_engine():
    """CONTRIBUTING.md is at most 5 KB and links docs/engine.md for how the engine works."""
    text = GUIDE.read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) <= 5 * 1024
    assert "](docs/engine.md)" in text


def test_every_command_names_something_that_exists():
    """Each command is one this test knows: pip's dev install, the rule pages generator (its --check
    passes), pytest on existing test files, or the lint command; nothing else."""
    seen = set()
    for argv in commands():
        seen.add(argv[0] if argv[0] != "python" else " ".join(argv[:3]))
        if argv[:2] == ["pip", "install"]:
            assert argv[2:] == ["-e", ".[dev]"]
        elif argv[:2] == ["python", "-m"]:
            assert argv[2] == "tools.rule_pages" and len(argv) == 3, argv
            proc = subprocess.run([sys.executable, "-m", argv[2], "--check"], cwd=ROOT, capture_output=True, text=True)
            assert proc.returncode == 0, f"{' '.join(argv)} --check: {proc.stderr}"
        elif argv[0] == "pytest":
            paths = [a for a in argv[1:] if not a.startswith("-") and a != "TFC105"]
            assert paths and all((ROOT / p).is_file() for p in paths), argv
        else:
            assert argv[:2] == ["ruff", "check"], f"a command this test does not know: {argv}"
    assert seen == {"pip", "python -m tools.rule_pages", "pytest", "ruff"}


def test_lint_command_passes():
    """The guide's ruff command (ruff is in the dev extra) reports nothing on the repository."""
    [argv] = [argv for argv in commands() if argv[0] == "ruff"]
    ruff = SCRIPT_DIR / "ruff" if (SCRIPT_DIR / "ruff").exists() else shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff not installed (pip install -e '.[dev]')")
    proc = subprocess.run([str(ruff)] + argv[1:] + ["--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
