"""The engine: what runs rules over one source text, free of the CLI.

* :mod:`~codemods.engine.core` -- the vocabulary (findings, fix safety, phases, options), no libcst;
* :mod:`~codemods.engine.command`, :mod:`~codemods.engine.base` -- the rule base class;
* :mod:`~codemods.engine.registry` -- which rules exist, in run order, and their index derived from them;
* :mod:`~codemods.engine.prepass` -- which rules a file can need, decided without libcst;
* :mod:`~codemods.engine.splice` -- keeping every byte no rule changed;
* :mod:`~codemods.engine.fastcst` -- libcst traversals and metadata, faster and equal.

The public entry point is :mod:`codemods.api`.
"""
