"""Where the rules come from: every ``tfcNNN_<what_it_fixes>.py`` module of the package,
its rule classes ordered by their declared phase.

Adding a rule is adding one file (plus its fixtures): :func:`discover` imports each
``codemods/rules/tfc[0-9][0-9][0-9]_*.py`` module and takes the rule classes it defines --
:class:`~codemods.engine.base.TfcCodemod` subclasses with a ``CODE`` (codemods), and classes
that only document a code the CLI reports itself (TFC900) -- and orders the codemods by
``(PHASE, CODE)``: the TF 2 form first (TFC101-TFC104), then reports (TFC201, TFC202),
then the compat form (TFC001-TFC004). Each class is checked when it is created
(:func:`codemods.engine.base.check_rule`).

``RULES`` (the default rule set) and ``DOCUMENTED`` (``RULES`` plus the documentation-only
rules) are computed on first access: importing this module imports neither the rules nor
libcst.

**The static index.** Deciding whether a file needs a rule at all (the text and ast stages
of ``codemods.engine.prepass``) must not import the rules (they import libcst). So the rules'
codes and ``SITES`` are also written to ``codemods/engine/rule_index.py``, generated from the
rules by ``python -m codemods.engine.registry`` and checked by ``tests/test_registry.py`` (CI
fails when it is stale). At run time the index is trusted only while the rule files on
disk are the ones it lists (a new rule file means: import the rules instead, and say so).
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
from typing import TYPE_CHECKING, Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from codemods.engine.core import RULE_MODULE, Options, Phase, enabled

if TYPE_CHECKING:  # pragma: no cover
    from codemods.engine.prepass import Spec

PACKAGE = "codemods"
INDEX_MODULE = "codemods.engine.rule_index"
_RULE_MODULE_PREFIX = "tfc"


class Discovered(NamedTuple):
    """What :func:`discover` found in a package."""

    rules: Tuple[type, ...]  # the codemods, in run order
    documented: Tuple[type, ...]  # every rule, codemods first, then documentation-only ones
    modules: Tuple[str, ...]  # the rule modules' names, sorted


def _rule_module_names(path: Sequence[str]) -> List[str]:
    return sorted(info.name for info in pkgutil.iter_modules(list(path)) if RULE_MODULE.match(info.name))


def discover(package: str = PACKAGE) -> Discovered:
    """Import every ``tfcNNN_*`` module of ``package`` and collect its rule classes.

    Raises ``RuleDefinitionError`` for a rule module without a rule, a duplicate code, or a
    documentation-only class that breaks the rule contract.
    """
    from codemods.engine.base import RuleDefinitionError, TfcCodemod, check_rule

    pkg = importlib.import_module(package)
    modules = _rule_module_names(pkg.__path__)
    codemods: List[type] = []
    others: List[type] = []
    seen: Dict[str, str] = {}
    for name in modules:
        module = importlib.import_module(f"{package}.{name}")
        found = [
            obj for obj in vars(module).values()
            if isinstance(obj, type) and obj.__module__ == module.__name__ and isinstance(getattr(obj, "CODE", None), str)
            and obj.__dict__.get("CODE")
        ]
        if not found:
            raise RuleDefinitionError(f"rule module {module.__name__} defines no rule class (a class with a CODE)")
        for rule in found:
            if rule.CODE in seen:
                raise RuleDefinitionError(f"rule code {rule.CODE} is defined twice: {seen[rule.CODE]} and "
                                          f"{module.__name__}.{rule.__qualname__} (codes are never reused)")
            seen[rule.CODE] = f"{module.__name__}.{rule.__qualname__}"
            if issubclass(rule, TfcCodemod):
                codemods.append(rule)
            else:
                check_rule(rule, codemod=False)  # documentation only (e.g. TFC900)
                others.append(rule)
    codemods.sort(key=lambda r: (int(r.PHASE), r.CODE))
    others.sort(key=lambda r: r.CODE)
    return Discovered(tuple(codemods), tuple(codemods) + tuple(others), tuple(modules))


_DEFAULT: Optional[Discovered] = None


def _default() -> Discovered:
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = discover(PACKAGE)
    return _DEFAULT


def __getattr__(name: str) -> Any:  # PEP 562: RULES and DOCUMENTED are discovered on first use
    if name == "RULES":
        return _default().rules
    if name == "DOCUMENTED":
        return _default().documented
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def default_rules() -> Tuple[type, ...]:
    """The package's rules, in run order (imports them, and libcst)."""
    return _default().rules


def rules_by_code(rules: Optional[Sequence[type]] = None) -> Dict[str, type]:
    return {rule.CODE: rule for rule in (default_rules() if rules is None else rules)}


def known_codes(rules: Optional[Sequence[type]] = None) -> List[str]:
    """Every code ``--select``/``--ignore`` may name (the rules' and TFC900), without
    importing libcst when the static index is fresh."""
    if rules is None:
        index = static_index()
        if index is not None:
            return [entry.code for entry in index.entries] + list(index.documented)
        return [rule.CODE for rule in _default().documented]
    from codemods.rules.tfc900_unparsable_file import UnparsableFile

    return [rule.CODE for rule in rules] + [UnparsableFile.CODE]


# --------------------------------------------------------------------------------------
# the pre-filter: which rules a file needs (text and ast stages, no libcst)


class IndexEntry(NamedTuple):
    """One rule as the static index knows it."""

    code: str
    name: str
    phase: Phase
    sites: "Spec"


class StaticIndex(NamedTuple):
    entries: Tuple[IndexEntry, ...]
    documented: Tuple[str, ...]  # documentation-only codes (TFC900)


_STATIC: Optional[Tuple[bool, Optional[StaticIndex]]] = None


def static_index() -> Optional[StaticIndex]:
    """The generated index when it lists exactly the rule modules on disk, else None (and a
    warning on stderr, once: the rules are imported instead, which is slower but exact)."""
    global _STATIC
    if _STATIC is None:
        _STATIC = (True, _load_static_index())
    return _STATIC[1]


def _load_static_index() -> Optional[StaticIndex]:
    try:
        index = importlib.import_module(INDEX_MODULE)
        pkg = sys.modules[PACKAGE]
        on_disk = tuple(_rule_module_names(pkg.__path__))
    except (ImportError, OSError, AttributeError):
        return None
    if tuple(index.MODULES) != on_disk:
        sys.stderr.write(
            f"tfclip-migrate: warning: {INDEX_MODULE.replace('.', '/')}.py is stale (the rule files changed); "
            "loading the rules to pre-filter instead (regenerate it: python -m codemods.engine.registry)\n")
        return None
    entries = tuple(IndexEntry(code, name, Phase(phase), sites) for code, name, phase, sites in index.RULES)
    return StaticIndex(entries, tuple(index.DOCUMENTED))


def prefilter_specs(options: Options, rules: Optional[Sequence[type]] = None) -> List[Tuple[str, "Spec"]]:
    """``(code, SITES)`` of every enabled rule, in run order: from ``rules`` when given,
    else from the static index (no libcst) when it is fresh, else from the discovered rules."""
    if rules is None:
        index = static_index()
        if index is not None:
            return [(e.code, e.sites) for e in index.entries if enabled(e.code, options)]
        rules = default_rules()
    return [(rule.CODE, rule.sites()) for rule in rules if enabled(rule.CODE, options)]


# --------------------------------------------------------------------------------------
# writing the index

_HEADER = '''"""GENERATED by ``python -m codemods.engine.registry`` from the rule files: do not edit.

The rules' codes, names, phases and pre-pass specs (``SITES``), so the CLI can decide which
files need which rule without importing the rules (and libcst). ``tests/test_registry.py``
fails when this file is stale.
"""

from codemods.engine.prepass import (  # noqa: F401 - the specs below are spelled with these
    ALWAYS,
    all_of,
    any_of,
    calls,
    dynamic_access,
    keywords,
    method_calls,
    names,
    star_import,
    text,
)

'''


def render_index(found: Optional[Discovered] = None) -> str:
    """The text of ``codemods/engine/rule_index.py`` for the discovered rules."""
    found = found or _default()
    lines = [_HEADER, "# The rule modules the index was generated from (a new one makes it stale).", "MODULES = ("]
    lines += [f"    {name!r}," for name in found.modules]
    lines += [")", "", "# (code, name, phase, SITES), in run order.", "RULES = ("]
    for rule in found.rules:
        lines.append(f"    ({rule.CODE!r}, {rule.NAME!r}, {int(rule.PHASE)}, {rule.sites()!r}),")
    lines += [")", "", "# Codes documented by a rule module that are not codemods (reported by the CLI).",
              "DOCUMENTED = ("]
    lines += [f"    {rule.CODE!r}," for rule in found.documented if rule not in found.rules]
    lines += [")", ""]
    return "\n".join(lines)


def index_path() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_rule_index.py")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m codemods.engine.registry [--check]``: write (or check) ``codemods/engine/rule_index.py``."""
    args = list(sys.argv[1:] if argv is None else argv)
    text = render_index()
    path = index_path()
    try:
        with open(path, encoding="utf-8") as handle:
            current = handle.read()
    except OSError:
        current = None
    if args == ["--check"]:
        if current != text:
            sys.stderr.write(f"{path} is stale: run python -m codemods.engine.registry\n")
            return 1
        return 0
    if args:
        sys.stderr.write("usage: python -m codemods.engine.registry [--check]\n")
        return 2
    if current != text:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        sys.stderr.write(f"wrote {path}\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
