"""Optimizers built by tfclip_compat itself: never a TF1 training site.

``tfclip_compat.wrap_optimizer(opt, transform)`` (like ``tfclip_compat.clip_gradients_by_norm``)
returns the shim's own optimizer, whose ``minimize`` / ``compute_gradients`` run the shim's
gradient pipeline: code that already uses it is the migration's *output* (the compat form), so
the TF 2 rules must neither rewrite it nor decline it with "cannot prove this is a `tf.train`
optimizer" -- a reason that is untrue of the shim, whose classes are known here.

``codemods.rules.tape.optimizers.classify`` recognises ``tfclip_compat.clip_gradients_by_norm`` only;
:func:`built_by_shim` recognises every optimizer factory of the shim, following plain
assignments as ``classify`` does. The TF 2 site rules (TFC101, TFC103) skip such a receiver.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

# Every public tfclip_compat name that returns an optimizer (tests/codemods/test_examples_clean.py checks
# each is in tfclip_compat.__all__).
SHIM_OPTIMIZER_FACTORIES = frozenset({
    "tfclip_compat.wrap_optimizer",
    "tfclip_compat.clip_gradients_by_norm",
    "tfclip_compat.TransformedKerasOptimizer",
})


def built_by_shim(facts: Any, receiver: cst.BaseExpression, depth: int = 0) -> bool:
    """Whether ``receiver`` is an optimizer a tfclip_compat factory built: a call of one, or a
    name every binding of which (plain assignments only) is one."""
    if depth > 5:
        return False
    if isinstance(receiver, cst.Call):
        return bool(facts.qualified(receiver.func) & SHIM_OPTIMIZER_FACTORIES)
    if isinstance(receiver, cst.Name):
        found = facts.assignments(receiver)
        if not found:
            return False
        for assignment in found:
            value = facts.assigned_value(assignment)
            if value is None or not built_by_shim(facts, value, depth + 1):
                return False
        return True
    return False
