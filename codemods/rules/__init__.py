"""The rules, and the public API for writing one.

Every ``tfcNNN_<what_it_fixes>.py`` module of this package is a rule (the registry,
:mod:`codemods.engine.registry`, finds it here). A rule imports what it needs from this package::

    from codemods.rules import FixSafety, Phase, Spec, TfcCodemod, calls

Names are resolved on first use (PEP 562), so importing a rule module that needs none of them --
or the package itself, as the CLI does before it knows whether any file needs parsing -- imports
neither libcst nor the engine's rule base.

Subpackages: :mod:`codemods.rules.compat` (the shim form of TFC001-TFC004) and
:mod:`codemods.rules.tape` (the TF 2 planner of TFC101-TFC104, TFC201, TFC202).
"""

from __future__ import annotations

import importlib
from typing import Any, Dict

# public name -> the module that defines it
_EXPORTS: Dict[str, str] = {
    # the rule base class and its vocabulary
    "TfcCodemod": "codemods.engine.base",
    "RuleDefinitionError": "codemods.engine.base",
    "FixSafety": "codemods.engine.core",
    "Phase": "codemods.engine.core",
    "Diagnostic": "codemods.engine.core",
    # the pre-pass specs: which files can hold a rule's sites (decided without libcst)
    "Spec": "codemods.engine.prepass",
    "ALWAYS": "codemods.engine.prepass",
    "all_of": "codemods.engine.prepass",
    "any_of": "codemods.engine.prepass",
    "calls": "codemods.engine.prepass",
    "dynamic_access": "codemods.engine.prepass",
    "keywords": "codemods.engine.prepass",
    "method_calls": "codemods.engine.prepass",
    "names": "codemods.engine.prepass",
    "star_import": "codemods.engine.prepass",
    "text": "codemods.engine.prepass",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(__all__))
