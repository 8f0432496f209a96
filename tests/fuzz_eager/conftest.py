"""Fixtures of the eager-migration fuzzer: one pair of side workers for a whole test module."""

from __future__ import annotations

import pytest

from tests.fuzz_eager.harness import Harness


@pytest.fixture(scope="module")
def harness():
    """Both side processes (before: TF 1 graph mode; after: eager), shared by a module's tests."""
    with Harness() as h:
        yield h
