"""docs/cli.md cannot lie: every command in its ``console`` blocks is run (through the installed
``tfclip-migrate`` script, in a fresh directory holding the files the page defines) and its
output -- stdout and stderr together -- must be the one shown (``...`` stands for any lines;
``$ echo $?`` checks the previous command's exit code)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
SCRIPT_DIR = Path(sys.executable).parent

pytestmark = pytest.mark.skipif(
    not (SCRIPT_DIR / "tfclip-migrate").exists() and shutil.which("tfclip-migrate") is None,
    reason="console script not installed (pip install -e .)",
)


def _files(text: str) -> List[Tuple[str, str]]:
    return re.findall(r"<!-- file: (\S+) -->\n```\w*\n(.*?)```", text, re.S)


def _blocks(text: str) -> List[Tuple[str, str]]:
    return re.findall(r"^```(\w*)\n(.*?)^```", text, re.S | re.M)


def _steps(block: str) -> List[Tuple[str, List[str]]]:
    steps: List[Tuple[str, List[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            assert steps, f"output before any command in a console block: {line!r}"
            steps[-1][1].append(line)
    return steps


def _matches(expected: List[str], actual: List[str]) -> bool:
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(_matches(expected[1:], actual[i:]) for i in range(len(actual) + 1))
    return bool(actual) and expected[0] == actual[0] and _matches(expected[1:], actual[1:])


def test_the_page_has_examples_and_only_known_block_kinds():
    """The page defines its example files and every fenced block is of a kind this test knows."""
    text = DOC.read_text()
    assert [name for name, _ in _files(text)] == ["train.py"]
    kinds = {kind for kind, _ in _blocks(text)}
    assert kinds <= {"console", "python", "json", "toml", "yaml"}, kinds  # no unrun bash blocks
    assert sum(kind == "console" for kind, _ in _blocks(text)) >= 4


@pytest.mark.parametrize("index", range(sum(k == "console" for k, _ in _blocks(DOC.read_text()))))
def test_console_block_runs_as_shown(tmp_path, index):
    """Each command of the console block runs with the output and exit code the page shows."""
    text = DOC.read_text()
    block = [body for kind, body in _blocks(text) if kind == "console"][index]
    for name, content in _files(text):
        (tmp_path / name).write_text(content)
    env = dict(os.environ, PATH=f"{SCRIPT_DIR}{os.pathsep}{os.environ.get('PATH', '')}", COLUMNS="200")
    last_rc = None
    for command, expected in _steps(block):
        if command == "echo $?":
            assert expected == [str(last_rc)], f"exit code of the previous command: {last_rc}, page says {expected}"
            continue
        proc = subprocess.run(command, shell=True, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=120)
        last_rc = proc.returncode
        actual = proc.stdout.splitlines()
        assert _matches(expected, actual), f"$ {command}\n--- page:\n" + "\n".join(expected) + "\n--- got:\n" + proc.stdout
