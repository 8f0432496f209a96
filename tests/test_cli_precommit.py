"""The pre-commit hooks, run with the real ``pre-commit try-repo`` (issue 4).

The hook repository is a temporary git repository holding a copy of this working tree
(try-repo needs committed files); pre-commit builds the hook environment from it with
``pip install .``, which needs PyPI for libcst. ``PRE_COMMIT_HOME`` is a temp directory
shared by this module (``try-repo`` always builds in its own temporary store; the
``.pre-commit-config.yaml`` run uses ``PRE_COMMIT_HOME``, where the environment is inspected).
Takes about a minute, most of it pre-commit building hook environments.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Dict

import pytest

REPO = Path(__file__).resolve().parents[1]
SEED = (
    "import tensorflow as tf\n\n"
    "original_optimizer = tf.train.AdamOptimizer(learning_rate=learning_rate)\n"
    "optimizer = tf.contrib.estimator.clip_gradients_by_norm(original_optimizer, clip_norm=5.0)\n"
    "train_op = optimizer.minimize(loss)\n"
)
GIT = ["git", "-c", "user.name=tfclip-test", "-c", "user.email=test@example.invalid", "-c", "commit.gpgsign=false"]


def _pypi_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=5).close()
        return True
    except OSError:
        return False


def _tfc001_registered() -> bool:
    from codemods.engine.registry import RULES

    return any(rule.CODE == "TFC001" for rule in RULES)


pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None, reason="git not installed"),
    pytest.mark.skipif(not _tfc001_registered(), reason="TFC001 is not registered yet"),
    pytest.mark.skipif(not _pypi_reachable(), reason="pre-commit needs PyPI to install libcst in the hook env"),
]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(GIT + list(args), cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> Dict[str, str]:
    """Environment with a PRE_COMMIT_HOME shared by the module."""
    home = tmp_path_factory.mktemp("pre-commit-home")
    env = dict(os.environ, PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never")
    env.pop("PRE_COMMIT", None)
    return env


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory) -> Path:
    """A git repository holding this project's package files and .pre-commit-hooks.yaml."""
    dest = tmp_path_factory.mktemp("hook-repo")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml"):
        shutil.copy2(REPO / name, dest / name)
    for package in ("codemods", "tfclip_compat"):
        shutil.copytree(REPO / package, dest / package, ignore=ignore)
    _git(dest, "init", "-q")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "hook repo snapshot")
    return dest


def _consumer(root: Path, files: Dict[str, str]) -> Path:
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    return root


def _try_repo(hook_repo: Path, hook: str, cwd: Path, env: Dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), hook, "--all-files", "--verbose"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


NOTEBOOK = json.dumps(
    {
        "cells": [{"cell_type": "code", "execution_count": None, "id": "c1", "metadata": {},
                   "outputs": [], "source": SEED.splitlines(keepends=True)}],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    },
    indent=1,
) + "\n"

CONFIG = '[tool.tfclip-migrate]\nselect = ["TFC001"]\n'


def test_fix_hook_rewrites_then_passes(hook_repo, env, tmp_path):
    """The fixer hook rewrites a legacy file and a notebook and fails, then passes on the second run."""
    repo = _consumer(tmp_path / "consumer", {"train.py": SEED, "nb.ipynb": NOTEBOOK, "clean.py": "x = 1\n",
                                             "pyproject.toml": CONFIG})
    first = _try_repo(hook_repo, "tfclip-migrate", repo, env)
    assert first.returncode == 1, first.stdout + first.stderr
    assert "Rewriting train.py" in first.stdout and "Rewriting nb.ipynb" in first.stdout
    assert "files were modified by this hook" in first.stdout
    fixed = (repo / "train.py").read_text()
    assert "tf.contrib" not in fixed and "tfclip_compat.clip_gradients_by_norm" in fixed
    assert "tfclip_compat.clip_gradients_by_norm" in "".join(json.loads((repo / "nb.ipynb").read_text())["cells"][0]["source"])
    assert (repo / "clean.py").read_text() == "x = 1\n"

    second = _try_repo(hook_repo, "tfclip-migrate", repo, env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert (repo / "train.py").read_text() == fixed


def test_config_check_hook_and_clean_env(hook_repo, env, tmp_path):
    """With a `.pre-commit-config.yaml` (the README snippet form) the check-only hook fails on a
    legacy file without writing it, and the cached hook environment has libcst but no TensorFlow."""
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=hook_repo, capture_output=True, text=True, check=True)
    config = (
        "repos:\n"
        f"  - repo: {hook_repo}\n"
        f"    rev: {rev.stdout.strip()}\n"
        "    hooks:\n"
        "      - id: tfclip-migrate-check\n"
    )
    repo = _consumer(tmp_path / "consumer", {"train.py": SEED, "pyproject.toml": CONFIG,
                                             ".pre-commit-config.yaml": config})
    result = subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--all-files"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=900,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "train.py:4:13: TFC001 [*]" in result.stdout
    assert (repo / "train.py").read_text() == SEED

    home = Path(env["PRE_COMMIT_HOME"])
    site_dirs = [p for p in home.rglob("site-packages") if p.is_dir()]
    assert site_dirs, f"no hook environment under {home}"
    installed = {child.name.lower() for site in site_dirs for child in site.iterdir()}
    assert "libcst" in installed
    assert not any(name.startswith(("tensorflow", "keras", "tf_keras")) for name in installed), sorted(installed)
