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
CONFIG_KEYS = ("select", "ignore", "exclude", "max-file-size")


class UsageError(Exception):
    """A problem with the command line or the configuration (exit code 2)."""


@dataclass(frozen=True)
class Config:
    """``[tool.tfclip-migrate]`` from the nearest ``pyproject.toml`` (empty when none)."""

    path: Optional[str] = None  # the pyproject.toml it came from
    select: Optional[Tuple[str, ...]] = None
    ignore: Tuple[str, ...] = ()
    exclude: Tuple[str, ...] = ()
    max_file_size: Optional[int] = None  # bytes; 0 = no limit; None = the default
    warnings: Tuple[str, ...] = ()  # pyproject.toml files passed over on the way, and why

    @property
    def base(self) -> str:
        """Directory the ``exclude`` globs are relative to."""
        return os.path.dirname(os.path.abspath(self.path)) if self.path else os.getcwd()


def _parse_toml(path: str, raw: bytes) -> Dict[str, Any]:
    """Parse TOML bytes; ``ValueError`` with a one-line reason when they are not TOML."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python < 3.11 only
        import tomli as tomllib
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not valid UTF-8 (TOML files must be UTF-8): {exc}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"invalid TOML: {exc}") from None


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _load_toml(path: str) -> Dict[str, Any]:
    try:
        return _parse_toml(path, _read(path))
    except ValueError as exc:
        raise UsageError(f"{path}: {exc}") from None


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


def find_pyproject(start_dirs: Sequence[str]) -> Tuple[Optional[str], Tuple[str, ...]]:
    """Nearest ``pyproject.toml`` with a ``[tool.tfclip-migrate]`` table, searching upward
    from each of ``start_dirs`` in turn (the paths' common directory, then the cwd), and
    warnings about the files passed over.

    A ``pyproject.toml`` whose bytes do not mention ``tfclip-migrate`` cannot hold the
    table: it is passed over unparsed, so an unrelated broken (or non-UTF-8) file in a
    parent directory never stops a run. One that mentions it must be valid (else
    :class:`UsageError`). An unreadable one is passed over with a warning.
    """
    seen = set()
    warnings: List[str] = []
    for start in start_dirs:
        directory = os.path.abspath(start)
        while directory not in seen:
            seen.add(directory)
            candidate = os.path.join(directory, "pyproject.toml")
            if os.path.isfile(candidate):
                try:
                    raw = _read(candidate)
                except UsageError as exc:
                    warnings.append(f"{exc}; passed over")
                    raw = b""
                if CONFIG_TABLE.encode() in raw:
                    try:
                        data = _parse_toml(candidate, raw)
                    except ValueError as exc:
                        raise UsageError(f"{candidate}: {exc}") from None
                    if CONFIG_TABLE in data.get("tool", {}):
                        return candidate, tuple(warnings)
            parent = os.path.dirname(directory)
            if parent == directory:
                break
            directory = parent
    return None, tuple(warnings)


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
    if select == ():
        raise UsageError(f"{path}: [tool.{CONFIG_TABLE}] select is empty: no rule would run (remove the key for all rules)")
    ignore = _codes_value(path, "ignore", table.get("ignore", []))
    max_file_size = None
    if "max-file-size" in table:
        try:
            max_file_size = parse_size(table["max-file-size"])
        except ValueError as exc:
            raise UsageError(f"{path}: [tool.{CONFIG_TABLE}] max-file-size: {exc}") from None
    exclude = table.get("exclude", [])
    if isinstance(exclude, str):
        exclude = [exclude]
    if not isinstance(exclude, list) or not all(isinstance(v, str) for v in exclude):
        raise UsageError(f"{path}: [tool.{CONFIG_TABLE}] exclude must be a list of glob strings")
    return Config(path=path, select=select, ignore=ignore, exclude=tuple(exclude), max_file_size=max_file_size)


_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(value: Any) -> int:
    """``1048576``, ``"512K"``, ``"4M"``, ``"1G"`` -> bytes (``0``: no limit)."""
    if isinstance(value, bool):
        raise ValueError(f"expected a size such as 4M, got {value!r}")
    if isinstance(value, int):
        number, unit = value, ""
    elif isinstance(value, str):
        text = value.strip().upper().removesuffix("B").removesuffix("I")
        unit = text[-1:] if text[-1:] in _UNITS and text[-1:] else ""
        try:
            number = int(text[: len(text) - len(unit)].strip())
        except ValueError:
            raise ValueError(f"expected a size such as 4M, 512K or 0 (no limit), got {value!r}") from None
    else:
        raise ValueError(f"expected a size such as 4M, got {value!r}")
    if number < 0:
        raise ValueError(f"must be >= 0 (0 = no limit), got {value!r}")
    return number * _UNITS[unit]


def resolve(paths: Sequence[str], *, isolated: bool, explicit: Optional[str], stdin_filename: Optional[str]) -> Config:
    """The configuration for a run over ``paths``: none (``--isolated``), the ``--config``
    file, or the nearest ``pyproject.toml`` with the table (see :func:`find_pyproject`)."""
    if isolated:
        return Config()
    if explicit is not None:
        if not os.path.isfile(explicit):
            raise UsageError(f"--config: {explicit}: no such file")
        return load_config(explicit)
    starts: List[str] = []
    existing = [os.path.abspath(p) for p in paths if p != "-" and os.path.lexists(p)]
    if existing:
        try:
            common = os.path.commonpath(existing)
        except ValueError:
            common = existing[0]
        starts.append(common if os.path.isdir(common) else os.path.dirname(common))
    if stdin_filename:
        starts.append(os.path.dirname(os.path.abspath(stdin_filename)))
    starts.append(os.getcwd())
    path, warnings = find_pyproject(starts)
    config = load_config(path)
    return Config(**{**config.__dict__, "warnings": warnings}) if warnings else config
