"""The explicit, ordered list of rules. Order matters: earlier rules rewrite first.

Add a rule by importing its class here and appending it to ``RULES``.
"""

from __future__ import annotations

from typing import Dict, Tuple, Type

from codemods._base import TfcCodemod

RULES: Tuple[Type[TfcCodemod], ...] = ()


def rules_by_code() -> Dict[str, Type[TfcCodemod]]:
    return {rule.CODE: rule for rule in RULES}
