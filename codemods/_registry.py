"""The explicit, ordered list of rules. Order matters: earlier rules rewrite first.

Add a rule by importing its class here and appending it to ``RULES``.
"""

from __future__ import annotations

from typing import Dict, Tuple, Type

from codemods._base import TfcCodemod
from codemods.tfc001_contrib_clip_gradients_by_norm import ContribClipGradientsByNorm
from codemods.tfc002_contrib_training import ContribTraining
from codemods.tfc003_contrib_optimize_loss import ContribOptimizeLoss
from codemods.tfc004_clip_by_average_norm import ClipByAverageNorm

RULES: Tuple[Type[TfcCodemod], ...] = (
    # Compat form (codemods-compat): after the TF 2 form rules, whatever they left.
    ContribClipGradientsByNorm,
    ContribTraining,
    ContribOptimizeLoss,
    ClipByAverageNorm,
)


def rules_by_code() -> Dict[str, Type[TfcCodemod]]:
    return {rule.CODE: rule for rule in RULES}
