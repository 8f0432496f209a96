"""Checkpoint compatibility (placeholder; filled in below)."""


def check(seed, index):
    raise NotImplementedError
