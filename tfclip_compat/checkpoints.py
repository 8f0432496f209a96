"""``tf.train.Saver`` for an eager program migrated from a TF 1 session script: TF 1 checkpoints.

A TF 1 script saves with ``saver = tf.train.Saver()`` (every global variable of the graph, under
its graph name) and ``saver.save(sess, path[, global_step=...])``. Its eager migration (TFC301)
keeps the variables' TF 1 names, but they exist only once the model and the optimizers have run
(a ``track_tf1_style_variables`` layer creates them at its first call, a ``tf.compat.v1.train``
optimizer its slots at its first step), so the saver cannot be built where TF 1 built it::

    import tfclip_compat.checkpoints

    saver = tfclip_compat.checkpoints.Saver(lambda: model.tf1_variables + optimizer.variables())
    ...
    saver.save(None, "model.ckpt", global_step=step)

:class:`Saver` builds ``tf.compat.v1.train.Saver(var_list=variables())`` at its first ``save``
and delegates to it: the same checkpoint format, file names, ``checkpoint`` state file and
``max_to_keep`` rotation, and the same tensors under the same keys as the TF 1 program's
(weights, optimizer slots, ``beta1_power``..., the global step), so TF 1 code restores it.
One difference: eagerly there is no graph, so no ``.meta`` file is written.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

__all__ = ["Saver", "tf1_names"]


def tf1_names(variables: List[Any]) -> Dict[str, Any]:
    """``{TF 1 graph name: variable}``. Eagerly two variables may share a name that a TF 1 graph
    made unique: two Adam optimizers each make ``beta1_power``, which the graph named
    ``beta1_power`` and ``beta1_power_1`` in the order they were built. ``variables`` come in that
    order; the k-th repeat of a name gets ``_k`` (the next one free), as the graph's ``unique_name``."""
    named: Dict[str, Any] = {}
    seen: Dict[str, int] = {}
    for variable in variables:
        if any(variable is known for known in named.values()):
            continue
        base = variable.name.split(":")[0]
        name = base
        while name in named:
            seen[base] = seen.get(base, 0) + 1
            name = f"{base}_{seen[base]}"
        named[name] = variable
    return named


class Saver:
    """``tf.train.Saver(**kwargs)`` over ``variables()``, built at the first :meth:`save`."""

    def __init__(self, variables: Callable[[], List[Any]], **kwargs: Any) -> None:
        if not callable(variables):
            raise TypeError("tfclip_compat.checkpoints.Saver(variables): pass a function returning the variables "
                            "to save (they exist only once the eager model and optimizers have run)")
        if "var_list" in kwargs:
            raise TypeError("tfclip_compat.checkpoints.Saver: the variables come from `variables`, not `var_list=`")
        self._variables = variables
        self._kwargs = kwargs
        self._saver: Optional[Any] = None

    def _built(self) -> Any:
        if self._saver is None:
            from tfclip_compat._tf import tf

            variables = list(self._variables())
            if not variables:
                raise ValueError("tfclip_compat.checkpoints.Saver: no variables to save yet (run a step first)")
            self._saver = tf.compat.v1.train.Saver(var_list=tf1_names(variables), **self._kwargs)
        return self._saver

    def save(self, sess: Any, save_path: str, global_step: Any = None, **kwargs: Any) -> Optional[str]:
        """``Saver.save``: ``sess`` is ignored (eager); returns the checkpoint's path prefix."""
        return self._built().save(None, save_path, global_step=global_step, **kwargs)
