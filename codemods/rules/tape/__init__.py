"""The TF 2 planner: prove a training site can become ``tf.GradientTape`` form, or decline it.

A *site* is ``opt.minimize(loss)`` (TFC103), ``opt.compute_gradients(loss)`` -> clipping ->
``opt.apply_gradients`` (TFC101), or ``tf.gradients(loss, vars)`` reaching ``apply_gradients``
(TFC102). Each rule file holds its matcher and plan; this package holds what they share:

* :mod:`~codemods.rules.tape.facts` -- one module's metadata, TF spelling and the module gates;
* :mod:`~codemods.rules.tape.tfapi` -- what each TF API does to the gradient path (the allowlist);
* :mod:`~codemods.rules.tape.effects` -- the :class:`~codemods.rules.tape.effects.Analyzer`, composed of collaborators that share one memo
  (:mod:`~codemods.rules.tape.values`): :mod:`~codemods.rules.tape.kinds` (whether a value can carry a
  gradient), :mod:`~codemods.rules.tape.callsites` (what parameters callers pass),
  :mod:`~codemods.rules.tape.mutations` (which objects change) and :mod:`~codemods.rules.tape.walker`
  (what a statement does);
* :mod:`~codemods.rules.tape.slicing` -- the backward slice of the loss and the boundary proof;
* :mod:`~codemods.rules.tape.optimizers` -- which optimizer a site uses;
* :mod:`~codemods.rules.tape.gates`, :mod:`~codemods.rules.tape.clipping` -- the shared gates and clip shapes;
* :mod:`~codemods.rules.tape.planner`, :mod:`~codemods.rules.tape.overlaps` -- the driver (its gates are
  ``planner.gates``), overlapping sites (one ``with`` of several tapes) and groups;
* :mod:`~codemods.rules.tape.emit`, :mod:`~codemods.rules.tape.rule` -- the tape-form emitter and the codemod base.

The trust model: outside the tape may stay only what provably carries no gradient -- data sources,
constants, pure ops of those, and variable/layer/optimizer *objects* (their reads happen where
they are used). Everything else the loss depends on is computed inside the tape, or the site is
declined with the dependency named. Unknown means decline; calls of code in other modules and
parameters whose callers are not in the file make a fix unsafe (opt-in), never safe.
"""
