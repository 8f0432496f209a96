"""``[tool.tfclip-migrate]`` in ``pyproject.toml``: finding, reading and validating it.

Imports neither libcst nor TensorFlow (the CLI reads its configuration before the engine
is loaded).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

CONFIG_TABLE = "tfclip-migrate"
CONFIG_KEYS = ("select", "ignore", "exclude")


class UsageError(Exception):
    """A problem with the command line or the configuration (exit code 2)."""


@dataclass(frozen=True)
class Config:
    """``[tool.tfclip-migrate]`` from the nearest ``pyproject.toml`` (empty when none)."""

    path: Optional[str] = None  # the pyproject.toml it came from
    select: Optional[Tuple[str, ...]] = None
    ignore: Tuple[str, ...] = ()
    exclude: Tuple[str, ...] = ()

    @property
    def base(self) -> str:
        """Directory the ``exclude`` globs are relative to."""
        return os.path.dirname(os.path.abspath(self.path)) if self.path else os.getcwd()


def _load_toml(path: str) -> Dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python < 3.11 only
        import tomli as tomllib
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: invalid TOML: {exc}") from None


def _codes_value(path: str, key: str, value: Any) -> Tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(
            f"{path}: [tool.{CONFIG_TABLE}] {key} must be a list of strings, got {value!r}"
        )
    return split_codes(value)


def split_codes(values: Sequence[str]) -> Tuple[str, ...]:
    """``["TFC001,TFC002", " tfc003"]`` -> ``("TFC001", "TFC002", "TFC003")``."""
    out: List[str] = []
    for value in values:
        out.extend(part.strip().upper() for part in value.split(",") if part.strip())
    return tuple(out)


def find_pyproject(start_dirs: Sequence[str]) -> Optional[str]:
    """Nearest ``pyproject.toml`` with a ``[tool.tfclip-migrate]`` table, searching upward
    from each of ``start_dirs`` in turn (the paths' common directory, then the cwd)."""
    seen = set()
    for start in start_dirs:
        directory = os.path.abspath(start)
        while directory not in seen:
            seen.add(directory)
            candidate = os.path.join(directory, "pyproject.toml")
            if os.path.isfile(candidate):
                data = _load_toml(candidate)
                if CONFIG_TABLE in data.get("tool", {}):
                    return candidate
            parent = os.path.dirname(directory)
            if parent == directory:
                break
            directory = parent
    return None


def load_config(path: Optional[str]) -> Config:
    """Read and validate ``[tool.tfclip-migrate]`` from ``path`` (``None``: empty config)."""
    if path is None:
        return Config()
    table = _load_toml(path).get("tool", {}).get(CONFIG_TABLE, {})
    if not isinstance(table, dict):
        raise UsageError(f"{path}: [tool.{CONFIG_TABLE}] must be a table")
    unknown = sorted(set(table) - set(CONFIG_KEYS))
    if unknown:
        raise UsageError(
            f"{path}: unknown key(s) in [tool.{CONFIG_TABLE}]: {', '.join(unknown)} "
            f"(known: {', '.join(CONFIG_KEYS)})"
        )
    select = _codes_value(path, "select", table["select"]) if "select" in table else None
    ignore = _codes_value(path, "ignore", table.get("ignore", []))
    exclude = table.get("exclude", [])
    if isinstance(exclude, str):
        exclude = [exclude]
    if not isinstance(exclude, list) or not all(isinstance(v, str) for v in exclude):
        raise UsageError(f"{path}: [tool.{CONFIG_TABLE}] exclude must be a list of glob strings")
    return Config(path=path, select=select, ignore=ignore, exclude=tuple(exclude))
