"""A libcst codemod command without ``libcst.codemod``: what the rules' base class is built on.

``import libcst.codemod`` imports ``libcst.matchers`` (its ``ContextAwareTransformer`` is a
``MatcherDecoratableTransformer``), about 0.25 s -- twice ``import libcst`` -- on every
pre-commit ``check`` of a training script. The rules use only a small part of that API, so
:class:`Command` implements it on a plain ``libcst.CSTTransformer``, behaving as libcst's
``VisitorBasedCodemodCommand`` does:

* ``Command(context)`` keeps ``context`` (a :class:`RuleContext`, or libcst's own
  ``CodemodContext``: the two have the same fields); ``warn``, ``module``,
  ``get_metadata``/``resolve``/``metadata`` (libcst's ``MetadataDependent``),
  ``should_allow_multiple_passes``, ``DESCRIPTION``, ``add_args``;
* ``transform_module(tree)``: libcst's ``Codemod.transform_module`` (metadata, one pass or
  passes until the tree stops changing), then, as ``CodemodCommand`` does, the
  ``AddImportsVisitor`` / ``RemoveImportsVisitor`` work scheduled in ``context.scratch`` --
  ``libcst.codemod.visitors`` is imported only then, i.e. only for a file being rewritten;
* ``add_needed_import`` / ``remove_unused_import`` / ``remove_unused_import_by_node`` and
  the matcher helpers ``matches`` / ``findall`` / ``extract`` / ``extractall`` /
  ``replace``, importing what they need on first use;
* a class that uses libcst's matcher decorators (``@m.visit``, ``@m.call_if_inside``, ...)
  in its own body or in a base of ours gets ``libcst.matchers.MatcherDecoratableTransformer``
  added to its bases when it is created (:class:`_CommandMeta`): libcst's full matcher
  behaviour, exactly as a ``VisitorBasedCodemodCommand``. A class can only carry those
  decorators if ``libcst.matchers`` is already imported, so the check costs nothing when it
  is not.

``python -m libcst.tool codemod`` needs no more than this (it instantiates the class with a
``CodemodContext`` and calls ``transform_module``); ``codemods.engine.base`` registers the rule
base as a virtual ``CodemodCommand`` when ``libcst.codemod`` is already loaded
(as under ``libcst.tool``), so ``python -m libcst.tool list`` lists the rules.
``tests/test_command.py`` checks these against libcst's own classes.
"""

from __future__ import annotations

import argparse
import sys
from abc import ABCMeta
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Dict, Iterator, List, Optional

import libcst as cst
from libcst.metadata import MetadataWrapper

__all__ = ["Command", "RuleContext"]

# The ``context.scratch`` keys of libcst's import visitors (``AddImportsVisitor.CONTEXT_KEY``,
# ``RemoveImportsVisitor.CONTEXT_KEY``; ``tests/test_command.py`` checks they still are).
ADD_IMPORTS_KEY = "AddImportsVisitor"
REMOVE_IMPORTS_KEY = "RemoveImportsVisitor"

# The attributes libcst's matcher decorators set on a function (``libcst.matchers._decorators``).
_MATCHER_MARKS = (
    "CONSTRUCTED_VISIT_MATCHER_ATTR",
    "CONSTRUCTED_LEAVE_MATCHER_ATTR",
    "VISIT_POSITIVE_MATCHER_ATTR",
    "VISIT_NEGATIVE_MATCHER_ATTR",
)


@dataclass(frozen=True)
class RuleContext:
    """libcst's ``CodemodContext`` (same fields, same meaning), without importing
    ``libcst.codemod``: what the engine gives each rule."""

    warnings: List[str] = field(default_factory=list)
    scratch: Dict[str, Any] = field(default_factory=dict)
    filename: Optional[str] = None
    full_module_name: Optional[str] = None
    full_package_name: Optional[str] = None
    wrapper: Optional[cst.MetadataWrapper] = None
    metadata_manager: Any = None  # a libcst.metadata.FullRepoManager

    @property
    def module(self) -> Optional[cst.Module]:
        """The module being transformed (None outside a transform)."""
        wrapper = self.wrapper
        return None if wrapper is None else wrapper.module


def _matcher_marks() -> Optional[tuple]:
    """The decorator attribute names, or None when ``libcst.matchers`` is not imported (then
    nothing can carry them). If libcst moved them, assume any function may: see below."""
    decorators = sys.modules.get("libcst.matchers._decorators")
    if decorators is None:
        return None
    try:
        return tuple(getattr(decorators, name) for name in _MATCHER_MARKS)
    except AttributeError:  # pragma: no cover - another libcst: take the full behaviour
        return ()


def _declares_matchers(namespace: Dict[str, Any], bases: tuple) -> bool:
    """Whether the class body or one of our (non-libcst) bases defines an attribute that
    carries a libcst matcher decorator. Only those can: libcst's own classes carry none."""
    marks = _matcher_marks()
    if marks is None:
        return False
    if marks == ():  # pragma: no cover - another libcst
        return True
    spaces = [namespace]
    for base in bases:
        spaces += [vars(k) for k in base.__mro__ if not k.__module__.startswith("libcst")]
    for space in spaces:
        for value in space.values():
            value = getattr(value, "__func__", value)  # staticmethod / classmethod
            if any(hasattr(value, mark) for mark in marks):
                return True
    return False


class _CommandMeta(ABCMeta):
    """Adds ``MatcherDecoratableTransformer`` to the bases of a class that uses libcst's
    matcher decorators (see the module docstring), and sets ``_MATCHER_DECORATED``."""

    def __new__(mcls, name, bases, namespace, **kwargs):  # type: ignore[no-untyped-def]
        if _declares_matchers(namespace, bases):
            from libcst.matchers import MatcherDecoratableTransformer

            # (the real MROs, not issubclass: an ABC's virtual subclasses do not count)
            if not any(MatcherDecoratableTransformer in base.__mro__ for base in bases):
                bases = (*bases, MatcherDecoratableTransformer)
        cls = super().__new__(mcls, name, bases, namespace, **kwargs)
        matchers = sys.modules.get("libcst.matchers")
        cls._MATCHER_DECORATED = matchers is not None and matchers.MatcherDecoratableTransformer in cls.__mro__
        return cls


class Command(cst.CSTTransformer, metaclass=_CommandMeta):
    """libcst's ``VisitorBasedCodemodCommand`` on a plain ``CSTTransformer`` (module docstring)."""

    #: What ``python -m libcst.tool codemod --help`` and ``list`` show.
    DESCRIPTION: str = "No description."
    # True when the class got libcst's matcher machinery (set by the metaclass).
    _MATCHER_DECORATED: bool = False

    def __init__(self, context: Any) -> None:
        self.context = context
        super().__init__()  # CSTTransformer's, or MatcherDecoratableTransformer's for a decorated class

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        """Arguments for ``python -m libcst.tool codemod`` (passed to ``__init__``)."""

    # -- libcst's Codemod ------------------------------------------------------------------

    def should_allow_multiple_passes(self) -> bool:
        """True: run ``transform_module_impl`` until the tree stops changing."""
        return False

    def warn(self, warning: str) -> None:
        """A warning shown to whoever runs the codemod (``context.warnings``)."""
        self.context.warnings.append(warning)

    @property
    def module(self) -> cst.Module:
        """The module being transformed (only inside ``transform_module``)."""
        module = self.context.module
        if module is None:
            raise ValueError(f"Attempted access of {self.__class__.__name__}.module outside of transform_module().")
        return module

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        """The transform: by default, visit the tree with this transformer."""
        return tree.visit(self)

    @contextmanager
    def _handle_metadata_reference(self, module: cst.Module) -> Iterator[cst.Module]:
        # libcst's Codemod._handle_metadata_reference: a wrapper (full-repo cache when the
        # context has a metadata manager and a filename), resolved for this codemod.
        oldwrapper = self.context.wrapper
        metadata_manager = self.context.metadata_manager
        filename = self.context.filename
        if metadata_manager is not None and filename:
            wrapper = MetadataWrapper(module, cache=metadata_manager.get_cache_for_path(filename))
        else:
            wrapper = MetadataWrapper(module)
        with self.resolve(wrapper):
            self.context = replace(self.context, wrapper=wrapper)
            try:
                yield wrapper.module
            finally:
                self.context = replace(self.context, wrapper=oldwrapper)

    def transform_module(self, tree: cst.Module) -> cst.Module:
        """Run the codemod on ``tree`` (metadata resolved), then the import visitors the
        transform scheduled, as libcst's ``CodemodCommand.transform_module``."""
        if not self.should_allow_multiple_passes():
            with self._handle_metadata_reference(tree) as tree_with_metadata:
                tree = self.transform_module_impl(tree_with_metadata)
        else:
            previous = tree
            while True:
                with self._handle_metadata_reference(tree) as tree_with_metadata:
                    tree = self.transform_module_impl(tree_with_metadata)
                if tree.deep_equals(previous):
                    break
                previous = tree
        scratch = self.context.scratch
        if ADD_IMPORTS_KEY in scratch or REMOVE_IMPORTS_KEY in scratch:
            from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor

            for transform in (AddImportsVisitor, RemoveImportsVisitor):
                if transform.CONTEXT_KEY in scratch:
                    tree = transform(self.context).transform_module(tree)
        return tree

    # -- libcst's CodemodCommand helpers ---------------------------------------------------

    def add_needed_import(self, module: str, obj: Optional[str] = None, asname: Optional[str] = None,
                          relative: int = 0) -> None:
        """Schedule ``import module`` / ``from module import obj [as asname]`` (if missing)."""
        from libcst.codemod.visitors import AddImportsVisitor

        AddImportsVisitor.add_needed_import(self.context, module, obj, asname, relative)

    def remove_unused_import(self, module: str, obj: Optional[str] = None, asname: Optional[str] = None) -> None:
        """Schedule the removal of an import, done only if nothing references it any more."""
        from libcst.codemod.visitors import RemoveImportsVisitor

        RemoveImportsVisitor.remove_unused_import(self.context, module, obj, asname)

    def remove_unused_import_by_node(self, node: cst.CSTNode) -> None:
        """Schedule the removal of the imports ``node`` (an original node) references."""
        from libcst.codemod.visitors import RemoveImportsVisitor

        RemoveImportsVisitor.remove_unused_import_by_node(self.context, node)

    # -- libcst's MatcherDecoratableTransformer helpers (this instance resolves metadata) ---

    def matches(self, node: Any, matcher: Any) -> bool:
        """``libcst.matchers.matches(node, matcher)`` with this codemod's metadata."""
        from libcst import matchers

        return matchers.matches(node, matcher, metadata_resolver=self)

    def findall(self, tree: Any, matcher: Any) -> Any:
        """``libcst.matchers.findall(tree, matcher)`` with this codemod's metadata."""
        from libcst import matchers

        return matchers.findall(tree, matcher, metadata_resolver=self)

    def extract(self, node: Any, matcher: Any) -> Any:
        """``libcst.matchers.extract(node, matcher)`` with this codemod's metadata."""
        from libcst import matchers

        return matchers.extract(node, matcher, metadata_resolver=self)

    def extractall(self, tree: Any, matcher: Any) -> Any:
        """``libcst.matchers.extractall(tree, matcher)`` with this codemod's metadata."""
        from libcst import matchers

        return matchers.extractall(tree, matcher, metadata_resolver=self)

    def replace(self, tree: Any, matcher: Any, replacement: Any) -> Any:
        """``libcst.matchers.replace(tree, matcher, replacement)`` with this codemod's metadata."""
        from libcst import matchers

        return matchers.replace(tree, matcher, replacement, metadata_resolver=self)
