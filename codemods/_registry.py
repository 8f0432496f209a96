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
from codemods.tfc101_compute_apply_tape import ComputeApplyToTape
from codemods.tfc102_tf_gradients_tape import TfGradientsToTape
from codemods.tfc103_minimize_tape import MinimizeToTape
from codemods.tfc104_keras_optimizer import KerasOptimizerInEagerCode
from codemods.tfc201_per_replica_clipping import PerReplicaClipping
from codemods.tfc202_unprovable_gradient_site import UnprovableGradientSite

RULES: Tuple[Type[TfcCodemod], ...] = (
    # TF 2 form (codemods-tf2): first pick at every site with a provable tape rewrite;
    # TFC202 then reports the recognised sites none of them could prove.
    ComputeApplyToTape,
    TfGradientsToTape,
    MinimizeToTape,
    KerasOptimizerInEagerCode,
    PerReplicaClipping,
    UnprovableGradientSite,
    # Compat form (codemods-compat): after the TF 2 form rules, whatever they left.
    ContribClipGradientsByNorm,
    ContribTraining,
    ContribOptimizeLoss,
    ClipByAverageNorm,
)


def rules_by_code() -> Dict[str, Type[TfcCodemod]]:
    return {rule.CODE: rule for rule in RULES}
