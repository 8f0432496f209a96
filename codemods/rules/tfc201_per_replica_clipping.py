"""TFC201: gradient clipping inside a replica context clips per replica (advisory, no fix)."""

from __future__ import annotations

from typing import ClassVar, List, Optional, Set

import libcst as cst
from libcst.metadata import (
    Assignment,
    ParentNodeProvider,
    QualifiedNameProvider,
    ScopeProvider,
)

from codemods.rules import FixSafety, Phase, Spec, TfcCodemod, all_of, any_of, calls, keywords, method_calls, names
from codemods.rules.tfnames import tf_names_of

_CLIPS = {"tf.clip_by_global_norm", "tf.clip_by_norm", "tf.clip_by_average_norm"}
_KERAS_CLIP_ARGS = ("global_clipnorm", "clipnorm")
_RUN_METHODS = ("run", "experimental_run_v2")


class PerReplicaClipping(TfcCodemod):
    """## What it does
    Flags gradient clipping that runs inside a replica context, where each replica sees only
    its own gradients: ``tf.clip_by_global_norm``/``clip_by_norm`` inside a function passed to
    ``strategy.run(fn)`` (or ``experimental_run_v2``), and Keras optimizers built with
    ``global_clipnorm=``/``clipnorm=`` in a module that uses a ``tf.distribute`` strategy.

    ## Why is this bad?
    The norm is computed from one replica's *local* gradients, before they are summed
    across replicas, so the model is clipped by a different (and replica-count-dependent)
    norm than on one device. Measured on TF 2.21 / Keras 3: ``global_clipnorm`` and a
    tape + ``tf.clip_by_global_norm`` inside ``strategy.run`` both clip per replica.

    ## Example
    ```python
    import tensorflow as tf

    strategy = tf.distribute.MirroredStrategy()
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        optimizer = tf.keras.optimizers.SGD(0.1)


    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        grads, _ = tf.clip_by_global_norm(grads, 1.0)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))


    @tf.function
    def train(x, y):
        strategy.run(step, args=(x, y))
    ```

    ## Use instead
    ```python
    import tensorflow as tf
    import tfclip_compat

    strategy = tf.distribute.MirroredStrategy()
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        # aggregate across replicas, then clip: 2 replicas train like 1 device
        optimizer = tfclip_compat.clip_gradients_by_norm(tf.keras.optimizers.SGD(0.1), 1.0)


    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))


    @tf.function
    def train(x, y):
        strategy.run(step, args=(x, y))
    ```
    With ``model.fit``, pass the same optimizer to ``model.compile`` (it is a Keras optimizer)
    instead of ``clipnorm=``/``global_clipnorm=``.

    ## Fix safety
    No fix: moving the clip across the all-reduce changes numerics on purpose; the
    diagnostic points to ``tfclip_compat.clip_gradients_by_norm`` (aggregate-then-clip).
    """

    CODE: ClassVar[str] = "TFC201"
    NAME: ClassVar[str] = "per-replica-clipping"
    SUMMARY: ClassVar[str] = "gradient clipping inside a replica context clips per replica"
    DESCRIPTION = SUMMARY
    PHASE: ClassVar[Phase] = Phase.REPORT
    # A tf.distribute name, and either a clip call plus `strategy.run(fn)`, or a Keras
    # clipping keyword.
    SITES: ClassVar[Spec] = all_of(
        names("distribute"),
        any_of(all_of(method_calls(*_RUN_METHODS), calls(*sorted(n.split(".")[-1] for n in _CLIPS))),
               keywords(*_KERAS_CLIP_ARGS)),
    )
    METADATA_DEPENDENCIES = (QualifiedNameProvider, ScopeProvider, ParentNodeProvider)

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self._replica_functions: List[cst.FunctionDef] = []
        self._uses_strategy = False
        self._keras_sites: List[cst.Arg] = []

    def _is_strategy(self, node: cst.BaseExpression) -> bool:
        """A ``tf.distribute`` strategy object: a call of a ``tf.distribute.*`` name, or a name bound to one."""
        if isinstance(node, cst.Call):
            return any(n.startswith("tf.distribute.") for n in tf_names_of(self, node.func))
        if isinstance(node, cst.Name):
            scope = self.get_metadata(ScopeProvider, node, None)
            if scope is None:
                return False
            for assignment in scope[node.value]:
                if not isinstance(assignment, Assignment):
                    continue
                parent = self.get_metadata(ParentNodeProvider, assignment.node, None)
                assign = self.get_metadata(ParentNodeProvider, parent, None) if parent is not None else None
                if isinstance(assign, cst.Assign) and self._is_strategy(assign.value):
                    return True
        return False

    def _function_named(self, node: cst.BaseExpression) -> Optional[cst.FunctionDef]:
        if not isinstance(node, cst.Name):
            return None
        scope = self.get_metadata(ScopeProvider, node, None)
        if scope is None:
            return None
        for assignment in scope[node.value]:
            if isinstance(assignment, Assignment) and isinstance(assignment.node, cst.FunctionDef):
                return assignment.node
        return None

    def visit_Call(self, node: cst.Call) -> None:
        names: Set[str] = tf_names_of(self, node.func)
        if any(n.startswith("tf.distribute.") for n in names):
            self._uses_strategy = True
        if any(n.startswith("tf.keras.optimizers.") for n in names):
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value in _KERAS_CLIP_ARGS:
                    self._keras_sites.append(arg)
        if (
            isinstance(node.func, cst.Attribute)
            and node.func.attr.value in _RUN_METHODS
            and node.args
            and self._is_strategy(node.func.value)
        ):
            self._uses_strategy = True
            fn = self._function_named(node.args[0].value)
            if fn is not None:
                self._replica_functions.append(fn)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        seen: Set[int] = set()
        for fn in self._replica_functions:
            if id(fn) in seen:
                continue
            seen.add(id(fn))
            for call in _calls_in(fn):
                clip = tf_names_of(self, call.func) & _CLIPS
                if clip:
                    self.report(
                        call,
                        f"`{sorted(clip)[0]}` inside `strategy.run({fn.name.value})` clips each replica's "
                        "gradients by their local norm, before the cross-replica sum; use "
                        "`tfclip_compat.clip_gradients_by_norm(optimizer, clip_norm)` to aggregate, then clip",
                        fix=FixSafety.NONE,
                    )
        if self._uses_strategy:
            for arg in self._keras_sites:
                self.report(
                    arg,
                    f"Keras `{arg.keyword.value}=` with a distribution strategy clips per replica "  # type: ignore[union-attr]
                    "(measured on Keras 3); use `tfclip_compat.clip_gradients_by_norm(optimizer, clip_norm)` "
                    "to aggregate, then clip",
                    fix=FixSafety.NONE,
                )
        return updated_node


def _calls_in(node: cst.CSTNode) -> List[cst.Call]:
    found: List[cst.Call] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Call):
            found.append(current)
        stack.extend(current.children)
    return found
