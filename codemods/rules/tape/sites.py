"""The planner's vocabulary: a recognised site, a provable rewrite (:class:`Plan`), a decline."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Union

import libcst as cst

from codemods.engine.core import FixSafety

Block = Union[cst.Module, cst.IndentedBlock]


class Reject(Exception):
    """A gate failed: the site is reported (TFC202) with ``reason`` and left untouched."""

    def __init__(self, reason: str, node: Optional[cst.CSTNode] = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.node = node


@dataclass
class Decline:
    """A recognised site that cannot be rewritten provably; reported as TFC202."""

    kind: str
    node: cst.CSTNode
    reason: str


@dataclass
class Plan:
    """A provable rewrite of one site, applied to one block.

    Statements ``[region_start, region_end)`` of ``block`` move inside ``tape_header``'s ``with``
    (followed by ``tape_extra``); ``replacements`` maps statement indices to what replaces them.
    """

    kind: str
    node: cst.CSTNode  # the gradient call: diagnostic position
    block: Block
    region_start: int
    region_end: int
    grad_index: int  # the statement computing the gradients
    tape_header: str  # "with tf.GradientTape() as tape:"
    tape_extra: List[cst.BaseStatement]
    replacements: Dict[int, List[cst.BaseStatement]]
    last_index: int  # last statement touched (for overlap checks)
    safety: FixSafety = FixSafety.SAFE
    note: str = ""
    renames: Dict[cst.CSTNode, str] = field(default_factory=dict)
    message: str = ""
    removed: List[cst.CSTNode] = field(default_factory=list)  # deleted calls (imports to drop)
    # the block holding the gradient statement when it is not ``block`` (a site inside
    # ``with tf.control_dependencies(...)`` whose loss is computed above it); ``replacements``
    # and ``grad_index`` then refer to that block, and ``anchor`` is the index in ``block`` of the
    # statement that contains it
    site_block: Optional[Block] = None
    anchor: Optional[int] = None
    # plans that are applied together or not at all, and the name every use of which they must
    # cover (a `clip_gradients_by_norm` optimizer bound elsewhere, rebound to the inner optimizer)
    group: Optional[cst.Name] = None
    group_uses: List[cst.CSTNode] = field(default_factory=list)  # uses of `group` this plan rewrites
    deletions: List[cst.CSTNode] = field(default_factory=list)  # statements removed (anywhere)
    # plans sharing this plan's `with` of several tapes (GAN losses); applied by this plan's rule,
    # all together or not at all; `leader` is set on those followers
    followers: List["Plan"] = field(default_factory=list)
    leader: Optional["Plan"] = None
