"""Routing transforms by variable name: per-group transforms and exclusions."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from tfclip_compat._fast_norm import fast_global_norm
from tfclip_compat._tf import tf
from tfclip_compat._transforms._util import _common_stats, _grads, _no_autograph, variable_name
from tfclip_compat._transforms.base import GradientTransform, TransformResult

Patterns = Union[str, Sequence[str]]

__all__ = ["PerGroup", "Select"]


def _compile(patterns: Optional[Patterns], argument: str) -> List[Any]:
    if patterns is None:
        return []
    if isinstance(patterns, str):
        patterns = [patterns]
    compiled = []
    for p in patterns:
        if not isinstance(p, str):
            raise TypeError(f"{argument} must be a regex string or a list of them, got {p!r}.")
        try:
            compiled.append(re.compile(p))
        except re.error as exc:
            raise ValueError(f"{argument}: invalid regular expression {p!r}: {exc}.") from None
    return compiled


def _matches(name: str, patterns: Sequence[Any]) -> bool:
    return any(p.search(name) for p in patterns)


def _check_transform(t: Any, argument: str) -> None:
    if t is not None and not isinstance(t, GradientTransform):
        raise TypeError(f"{argument} must be a GradientTransform or None, got {type(t).__name__}.")


class PerGroup(GradientTransform):
    """Route variables to transforms by name: per-group thresholds and exclusions.

    ``groups`` is a sequence of ``(patterns, transform)``; a variable goes to the FIRST group
    with a pattern (a regex, ``re.search`` on :func:`variable_name`, e.g. ``"dense_1/kernel"``)
    that matches; unmatched variables go to ``default``. A ``None`` transform leaves its
    gradients unchanged (an exclusion). Each transform sees only its own variables (e.g. its
    own global norm), skip flags are OR-ed, stats are prefixed ``"<transform name>/"``;
    ``global_norm`` / ``clipped_global_norm`` are those of all gradients::

        PerGroup([("embedding", ClipByGlobalNorm(10.0)), (["bias", "norm"], None)],
                 default=ClipByGlobalNorm(1.0))
    """

    def __init__(
        self,
        groups: Sequence[Tuple[Patterns, Optional[GradientTransform]]],
        default: Optional[GradientTransform] = None,
        name: Optional[str] = None,
    ) -> None:
        super().__init__(name=name or "per_group")
        self._patterns: List[List[Any]] = []
        transforms: List[Optional[GradientTransform]] = []
        for i, item in enumerate(groups):
            try:
                patterns, transform = item
            except (TypeError, ValueError):
                raise TypeError(f"groups[{i}] must be a (patterns, transform) pair, got {item!r}.") from None
            _check_transform(transform, f"groups[{i}] transform")
            self._patterns.append(_compile(patterns, f"groups[{i}] patterns"))
            transforms.append(transform)
        _check_transform(default, "default")
        self.group_transforms = transforms
        self.default = default

    def _route(self, variables: Sequence[Any]) -> List[int]:
        """Group index per variable (len(groups) = default)."""
        out = []
        for v in variables:
            name = variable_name(v)
            for i, pats in enumerate(self._patterns):
                if _matches(name, pats):
                    out.append(i)
                    break
            else:
                out.append(len(self._patterns))
        return out

    def _all(self) -> List[Optional[GradientTransform]]:
        return list(self.group_transforms) + [self.default]

    @_no_autograph
    def build(self, var_list: Sequence[Any]) -> None:
        """Build each transform with its own variables."""
        var_list = list(var_list)
        route = self._route(var_list)
        for i, t in enumerate(self._all()):
            if t is not None:
                t.build([v for v, r in zip(var_list, route) if r == i])

    @_no_autograph
    def __call__(self, grads_and_vars: Sequence[Tuple[Any, Any]]) -> TransformResult:
        """Run each group's transform on its own pairs."""
        gvs = list(grads_and_vars)
        route = self._route([v for _, v in gvs])
        out: List[Any] = list(gvs)
        skip = None
        stats: Dict[str, Any] = {}
        clipped = []
        for i, t in enumerate(self._all()):
            idx = [k for k, r in enumerate(route) if r == i and gvs[k][0] is not None]
            if t is None or not idx:
                continue
            result = t([gvs[k] for k in idx])
            for k, pair in zip(idx, result.grads_and_vars):
                out[k] = pair
            if result.skip is not None:
                skip = result.skip if skip is None else tf.logical_or(skip, result.skip)
            for key, value in result.stats.items():
                stats[f"{t.name}/{key}"] = value
            if "clipped" in result.stats:
                clipped.append(result.stats["clipped"] > 0)
        pre = fast_global_norm(_grads(gvs))
        post = fast_global_norm(_grads(out))
        any_clipped = tf.reduce_any(tf.stack(clipped)) if clipped else tf.constant(False)
        stats.update(_common_stats(pre, post, any_clipped))
        return TransformResult(out, skip, stats)


class Select(PerGroup):
    """Apply ``transform`` only to variables whose name matches ``include`` (all when None)
    and no ``exclude`` pattern; the others' gradients pass unchanged::

        Select(AdaptiveGradClip(0.01), exclude=["logits", "bias"])
    """

    def __init__(
        self,
        transform: GradientTransform,
        include: Optional[Patterns] = None,
        exclude: Optional[Patterns] = None,
        name: Optional[str] = None,
    ) -> None:
        _check_transform(transform, "transform")
        groups: List[Tuple[Patterns, Optional[GradientTransform]]] = []
        if exclude is not None:
            groups.append((exclude, None))
        groups.append((include if include is not None else [""], transform))
        super().__init__(groups, default=None, name=name or "select")
