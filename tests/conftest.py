"""Test session setup shared by every test folder.

``tests/`` is on ``sys.path`` (``pythonpath`` in ``pyproject.toml``): the shared support modules
(``_equivalence``, ``_cli_rules``, ``reference``...) import by their plain names from any folder.
TensorFlow is set up only by the folders that run it (``tests/_tf_devices.py``).
"""

import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


@pytest.fixture(autouse=True)
def _tfclip_migrate_cache(tmp_path_factory, monkeypatch):
    """tfclip-migrate's result cache: a fresh directory for each test (and the subprocesses it
    starts), never the user's ~/.cache, and never a result computed by another test."""
    monkeypatch.setenv("TFCLIP_MIGRATE_CACHE_DIR", str(tmp_path_factory.mktemp("tfclip-cache")))
