"""TFC202: a training site the TF 2 rules recognise but cannot prove equivalent."""

from __future__ import annotations

from typing import ClassVar

from codemods.rules import Phase, Spec, all_of, any_of, calls, method_calls, names
from codemods.rules.tape.applies import tf1_evidence_names
from codemods.rules.tape.rule import GradientSiteRule


class UnprovableGradientSite(GradientSiteRule):
    """## What it does
    Reports ``minimize``/``compute_gradients``/``tf.gradients`` training sites that the TF 2
    rules (TFC101-TFC103) recognise but cannot rewrite with a proof of equivalence, and says
    why: a gradient transform we cannot see through (``MyCapper(gv[0])``, a lambda, an
    unknown function), a loss that comes from nowhere (a fragment), from a parameter or from
    another file, ``minimize`` inside ``tf.cond`` or an expression, statements under
    ``control_dependencies`` that do not also compute the loss, CrossShardOptimizer /
    SyncReplicasOptimizer / Horovod ``DistributedOptimizer`` / custom optimizer subclasses,
    ``gate_gradients``/``aggregation_method``/``colocate_gradients_with_ops``/``grad_loss``,
    variable lists not provably trainable, modules that disable resource variables, or
    distribution strategies. Training sites the TF 2 rules cannot follow at all are reported
    too, never left silent: ``compute_gradients`` whose gradients reach ``apply_gradients``
    through a loop of towers, attributes or another method; ``tf.gradients`` applied from another
    block or object (A3C's local gradients applied to the global network); the removed
    ``tf.contrib.eager`` gradient functions (``implicit_gradients`` and friends); a
    ``compute_gradients`` whose gradients are returned, stored or only measured; and an
    ``apply_gradients`` of a TF1 optimizer whose gradients no rule starts from (an optimizer
    wrapper's parameter, an eager gradient function, a loop clipping ``tf.gradients`` element by
    element, constants). Left silent: gradients from a ``tf.GradientTape`` (the TF 2 form),
    Keras optimizers, classes of the user's own, and, in eager code or in modules with no TF1
    API, gradients a caller passes in.

    ## Why is this bad?
    These sites still call TF1-only APIs. Rewriting them by pattern would be a guess, and a
    migration that silently changes how a model trains is worse than none.

    ## Example
    ```python
    import numpy as np
    import tensorflow.compat.v1 as tf


    def MyCapper(gradient):
        return tf.clip_by_value(gradient, -0.01, 0.01) * 0.5


    x = tf.constant(np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(8, 3))
    y = tf.constant(np.linspace(0.0, 1.0, 8, dtype=np.float32).reshape(8, 1))
    w = tf.get_variable("w", [3, 1])
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    opt = tf.train.GradientDescentOptimizer(0.1)
    grads_and_vars = opt.compute_gradients(loss)
    capped_grads_and_vars = [(MyCapper(gv[0]), gv[1]) for gv in grads_and_vars]
    train_op = opt.apply_gradients(capped_grads_and_vars)
    ```

    ## Use instead
    ```python
    import numpy as np
    import tensorflow.compat.v1 as tf


    def MyCapper(gradient):
        return tf.clip_by_value(gradient, -0.01, 0.01) * 0.5


    x = tf.constant(np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(8, 3))
    y = tf.constant(np.linspace(0.0, 1.0, 8, dtype=np.float32).reshape(8, 1))
    w = tf.get_variable("w", [3, 1])
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    opt = tf.train.GradientDescentOptimizer(0.1)
    variables = tf.trainable_variables()
    gradients = [MyCapper(g) for g in tape.gradient(loss, variables)]
    train_op = opt.apply_gradients(zip(gradients, variables))
    ```
    Move the loss computation inside ``with tf.GradientTape() as tape:`` yourself, take
    ``tape.gradient(loss, variables)``, apply your transform, then
    ``opt.apply_gradients(zip(gradients, variables))``; or keep the code as is (it runs on
    TF 2 as ``tf.compat.v1``; contrib helpers are handled by TFC001-TFC004).

    ## Fix safety
    No fix: diagnostic only, the code is left untouched.
    """

    CODE: ClassVar[str] = "TFC202"
    NAME: ClassVar[str] = "unprovable-gradient-site"
    SUMMARY: ClassVar[str] = "training site not provably convertible to the TF 2 form (manual edit required)"
    DESCRIPTION = SUMMARY
    PHASE: ClassVar[Phase] = Phase.REPORT
    # The planner's declines are at the sites TFC101-TFC103 match (see their SITES) and at
    # `minimize`/`compute_gradients` calls that are not statements of their own.
    SITES: ClassVar[Spec] = any_of(method_calls("minimize", "compute_gradients"),
                                   # `step = opt.minimize`: a method used as a value, in TF code
                                   all_of(names("minimize", "compute_gradients"), names("tensorflow")),
                                   all_of(calls("gradients"), names("apply_gradients")),
                                   # an `apply_gradients` of gradients no rule starts from
                                   all_of(method_calls("apply_gradients"), names("tensorflow"),
                                          names(*tf1_evidence_names())),
                                   calls("implicit_gradients", "implicit_value_and_gradients",
                                         "gradients_function", "value_and_gradients_function"))
    REPORT_DECLINES: ClassVar[bool] = True
