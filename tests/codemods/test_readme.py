"""README.md cannot lie: it fits on a page, its rules table names every registered rule, every
relative link in it and in docs/ resolves, and the commands it shows run (through the installed
``tfclip-migrate`` script, on a temporary copy of ``examples/``) with the exit codes and the
output it describes."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Set

import pytest

from codemods.engine import registry as _registry

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SCRIPT_DIR = Path(sys.executable).parent
MAX_BYTES = 10 * 1024

needs_script = pytest.mark.skipif(
    not (SCRIPT_DIR / "tfclip-migrate").exists() and shutil.which("tfclip-migrate") is None,
    reason="console script not installed (pip install -e .)",
)


def _section(text: str, heading: str) -> str:
    """The text under ``heading`` up to the next heading of the same level."""
    match = re.search(rf"^{re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, f"README.md has no {heading!r} section"
    return match.group(1)


def _blocks(text: str, kind: str) -> List[str]:
    return re.findall(rf"^```{kind}\n(.*?)^```", text, re.S | re.M)


def table_codes(section: str) -> Set[str]:
    """Codes named in the first column of a markdown table; ``TFC001–004`` (or ``TFC001-TFC004``)
    names every code it spans."""
    codes: Set[str] = set()
    for line in section.splitlines():
        if not line.startswith("|"):
            continue
        first = line.split("|")[1]
        for start, end in re.findall(r"TFC(\d{3})(?:\s*[–-]\s*(?:TFC)?(\d{3}))?", first):
            codes.update(f"TFC{n:03d}" for n in range(int(start), int(end or start) + 1))
    return codes


def test_readme_fits_on_a_page():
    """README.md is at most 10 KB (10,240 bytes); details belong in docs/."""
    size = len(README.read_bytes())
    assert size <= MAX_BYTES, f"README.md is {size} bytes (limit {MAX_BYTES}): move details to docs/"


def test_rules_table_names_every_registered_rule():
    """Every registered code (the codemods and TFC900) is in README's rules table, and the table
    names no code that is not registered."""
    named = table_codes(_section(README.read_text(encoding="utf-8"), "## The rules"))
    registered = {rule.CODE for rule in _registry.DOCUMENTED}
    assert registered - named == set(), f"missing from README's rules table: {sorted(registered - named)}"
    assert named - registered == set(), f"README's rules table names unknown codes: {sorted(named - registered)}"


def test_table_codes_reads_ranges():
    """The table reader expands ranges in both spellings and ignores other columns."""
    table = "| code | x |\n|---|---|\n| TFC001–004 | TFC900 |\n| TFC101-TFC102 | y |\n| TFC202 | z |\n"
    assert table_codes(table) == {"TFC001", "TFC002", "TFC003", "TFC004", "TFC101", "TFC102", "TFC202"}


_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|^\[[^\]\n]+\]:\s*(\S+)", re.M)


def relative_links(text: str) -> List[str]:
    """The link targets of ``[text](target)`` and ``[ref]: target`` outside code, minus URLs and
    in-page anchors, without their ``#fragment``."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)  # fenced code
    text = re.sub(r"`[^`\n]*`", "", text)  # inline code
    targets = []
    for inline, reference in _LINK.findall(text):
        target = (inline or reference).split("#", 1)[0]
        if target and not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, mailto:...
            targets.append(target)
    return targets


DOC_FILES = [README, ROOT / "CONTRIBUTING.md"] + sorted((ROOT / "docs").rglob("*.md"))

# Files a full run of a script writes (and so may be absent from a checkout): a link to one
# resolves while the script exists and says it writes that file.
GENERATED_BY = {"benchmarks/README.md": "benchmarks/run.py"}


def resolves(doc: Path, target: str) -> bool:
    path = (doc.parent / target).resolve()
    if path.exists():
        return True
    relative = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else None
    script = ROOT / GENERATED_BY.get(relative, "-")
    return script.is_file() and f"writes {relative}" in script.read_text(encoding="utf-8")


@pytest.mark.parametrize("doc", [p for p in DOC_FILES if p.exists()], ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc):
    """Every relative link in README.md, CONTRIBUTING.md and docs/**/*.md names an existing file
    or directory of the repository (or one a script of it writes, see GENERATED_BY)."""
    broken = [t for t in relative_links(doc.read_text(encoding="utf-8")) if not resolves(doc, t)]
    assert not broken, f"{doc.relative_to(ROOT)}: broken links {broken}"


def test_generated_file_link_needs_its_generator(tmp_path):
    """A link to a not-yet-generated file resolves only through GENERATED_BY; other missing files
    are broken."""
    assert resolves(ROOT / "docs" / "x.md", "../benchmarks/run.py")
    assert resolves(ROOT / "docs" / "x.md", "../benchmarks/README.md")
    assert not resolves(ROOT / "docs" / "x.md", "../benchmarks/MISSING.md")
    assert not resolves(ROOT / "docs" / "x.md", "benchmarks/README.md")


def test_relative_links_reader():
    """The link reader finds inline and reference links, drops URLs, anchors and code."""
    text = ("[a](docs/a.md#x) [b](https://x.org) [c](#top) `[d](no.md)`\n"
            "```\n[e](no.md)\n```\n[f]: ../f.md\n")
    assert relative_links(text) == ["docs/a.md", "../f.md"]


# --------------------------------------------------------------------------------------
# the commands README shows, run as a new user would (on a copy of examples/)

# What README says each command does: exit code, and text its output must hold (and must not).
EXPECTED = {
    "tfclip-migrate check examples/": (1, ["examples/legacy_clipping.py:", "TFC301"], ["examples/legacy_train.py:"]),
    "tfclip-migrate fix --diff --select TFC001 examples/legacy_clipping.py": (
        1, ["+    optimizer = tfclip_compat.clip_gradients_by_norm(", "+import tfclip_compat"], ["GradientTape"]),
    "tfclip-migrate rules TFC103": (0, ["TFC103 (minimize-to-tape)", "## Fix safety"], []),
    "tfclip-migrate fix --diff examples/legacy_clipping.py": (
        1, ["+class Model(tf.keras.layers.Layer):", "+    outputs = model(x, y)",
            "tfclip_compat.clip_gradients_by_norm(", "x_clipped = tf.clip_by_value(x, -1, 1, name=None)"],
        ["+    with tf.Session("]),
}


def readme_commands() -> List[str]:
    """The ``tfclip-migrate`` commands of README's ``console`` block and its set-up ``bash`` block,
    without prompts and comments."""
    text = README.read_text(encoding="utf-8")
    commands = []
    for body in _blocks(text, "console") + _blocks(text, "bash")[:1]:
        for line in body.splitlines():
            line = re.sub(r"^\$ ", "", line).split("#", 1)[0].strip()
            if line.startswith("tfclip-migrate "):
                commands.append(" ".join(line.split()))
    return commands


def test_every_readme_command_is_checked():
    """The set of commands README shows is exactly the set this module knows the outcome of (a new
    or changed command in README fails here until its expectation is written down)."""
    assert sorted(readme_commands()) == sorted(EXPECTED)


@needs_script
@pytest.mark.parametrize("command", sorted(EXPECTED))
def test_readme_command_runs_as_described(tmp_path, command):
    """The command exits with the code README implies (1: findings / something to change, 0: docs)
    and prints what README says it does; `--diff` leaves the file as it was."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    before = (tmp_path / "examples" / "legacy_clipping.py").read_bytes()
    env = dict(os.environ, PATH=f"{SCRIPT_DIR}{os.pathsep}{os.environ.get('PATH', '')}",
               TFCLIP_MIGRATE_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run(command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    code, present, absent = EXPECTED[command]
    output = proc.stdout + proc.stderr
    assert proc.returncode == code, f"$ {command}\nexit {proc.returncode}, README implies {code}\n{output}"
    missing = [s for s in present if s not in proc.stdout]
    assert not missing, f"$ {command}\nstdout lacks {missing}:\n{output}"
    assert not [s for s in absent if s in output], f"$ {command}\n{output}"
    assert (tmp_path / "examples" / "legacy_clipping.py").read_bytes() == before
