"""Fixture discovery and the ``# fixture-options:`` line (used by tests/codemods/test_fixtures.py).

Kept apart from the test module so tools can regenerate/inspect fixtures without
collecting tests. Conventions: ``fixtures/README.md``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

from codemods.api import Options

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
_OPTIONS_LINE = re.compile(r"#\s*fixture-options:(?P<opts>.*)$")
_BOOL = {"true": True, "false": False}


@dataclass(frozen=True)
class Case:
    code: str
    name: str
    source: Path  # .before.py or .noop.py
    expected: Optional[Path]  # .after.py, None for a no-op case
    diagnostics: Optional[Path]

    @property
    def id(self) -> str:
        return f"{self.code}/{self.name}"


def parse_options(text: str, where: str = "fixture") -> Options:
    """Engine options from a ``# fixture-options:`` first line (defaults otherwise)."""
    first = text.split("\n", 1)[0].rstrip("\r")
    match = _OPTIONS_LINE.match(first)
    if match is None:
        return Options()
    values: Dict[str, object] = {}
    for item in match.group("opts").split():
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"{where}: fixture option {item!r} is not key=value")
        if key in ("unsafe_fixes", "apply_fixes"):
            if value.lower() not in _BOOL:
                raise ValueError(f"{where}: {key} must be true or false, not {value!r}")
            values[key] = _BOOL[value.lower()]
        elif key == "add_clip_norm":
            values[key] = float(value)
        elif key in ("select", "ignore"):
            values[key] = frozenset(c for c in value.split(",") if c)
        else:
            raise ValueError(
                f"{where}: unknown fixture option {key!r} "
                "(use unsafe_fixes, apply_fixes, add_clip_norm, select, ignore)"
            )
    return Options(**values)  # type: ignore[arg-type]


def discover(root: Path = FIXTURES) -> List[Case]:
    """Every case under ``root``; a ``.before.py`` without its ``.after.py`` is an error."""
    cases = []
    for path in sorted(root.glob("*/*.py")):
        code = path.parent.name
        if path.name.endswith(".before.py"):
            name = path.name[: -len(".before.py")]
            expected = path.with_name(f"{name}.after.py")
            if not expected.exists():
                raise FileNotFoundError(f"{path}: missing {expected.name} (add the expected rewrite)")
        elif path.name.endswith(".noop.py"):
            name = path.name[: -len(".noop.py")]
            expected = None
        else:
            continue
        diagnostics = path.with_name(f"{name}.diagnostics.txt")
        cases.append(Case(code, name, path, expected, diagnostics if diagnostics.exists() else None))
    return cases
