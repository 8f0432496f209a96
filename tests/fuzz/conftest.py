"""The fuzzer's modules import as ``tests.fuzz.*`` (the same names in pytest, in the worker
processes and in ``benchmarks/fuzz.py``): put the repository root on ``sys.path``."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import _tf_devices  # noqa: E402 - tests/ is on sys.path (pyproject.toml)

_tf_devices.configure()
