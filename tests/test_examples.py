"""The bundled examples run and do what their docstrings say."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_legacy_train_loss_falls():
    """examples/legacy_train.py trains in a v1 Session with the shim and its loss falls."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "legacy_train.py")],
        capture_output=True, text=True, timeout=300, env=env, cwd=str(ROOT),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    losses = [float(v) for v in re.findall(r"loss ([0-9.]+)", proc.stdout)]
    assert len(losses) >= 3, proc.stdout
    assert losses[-1] < losses[0], proc.stdout
