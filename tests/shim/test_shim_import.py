"""Importing the shim: never pulls in libcst; without TensorFlow gives the pip hint."""

from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
        env={"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"},
    )


def test_import_does_not_import_libcst():
    """``import tfclip_compat`` (and using it) leaves libcst out of sys.modules."""
    proc = _run(
        "import sys, tfclip_compat\n"
        "tfclip_compat.global_norm([tfclip_compat._tf.tf.constant([3.0, 4.0])])\n"
        "print('libcst' in sys.modules, any(m.startswith('libcst') for m in sys.modules))\n"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "False False"


def test_import_without_tensorflow_gives_pip_hint():
    """With TensorFlow blocked, ``import tfclip_compat`` raises ImportError naming the tf extra."""
    proc = _run(
        "import sys\n"
        "sys.modules['tensorflow'] = None\n"
        "try:\n"
        "    import tfclip_compat\n"
        "except ImportError as exc:\n"
        "    print('IMPORTERROR', exc)\n"
        "else:\n"
        "    print('IMPORTED')\n"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "IMPORTERROR" in proc.stdout
    assert 'pip install "tfclip-compat[tf]"' in proc.stdout


def test_tensorflow_floor_is_the_one_pyproject_declares():
    """The TF floor of tfclip_compat._tf equals the `tf` extra's lower bound in pyproject.toml."""
    import re
    from pathlib import Path

    try:
        import tomllib
    except ImportError:  # Python < 3.11: the backport the project depends on there
        import tomli as tomllib

    import tfclip_compat._tf as shim_tf

    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]
    (requirement,) = project["optional-dependencies"]["tf"]
    match = re.fullmatch(r"tensorflow>=(\d+)\.(\d+)", requirement)
    assert match, requirement  # `tensorflow`, never tensorflow-cpu: tf-keras requires `tensorflow`
    floor = (int(match.group(1)), int(match.group(2)))
    assert f"TensorFlow >= {floor[0]}.{floor[1]}" in shim_tf._INSTALL_HINT
    assert shim_tf.TF_VERSION >= floor

