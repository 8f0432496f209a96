"""Issue 25 (precision): an optimizer held in a field (``self.optimizer.minimize(loss)``) is
resolved to its ``tf.train`` class when every write to that field provably builds that class and
reaches the call; otherwise the site still declines, naming the true cause.

(Engine-only checks; executed equivalence of a rewrite is ``tests/proofs/test_equivalence_fields.py``.)
"""

from __future__ import annotations

from typing import List, Tuple

import pytest

from codemods.api import migrate_source
from codemods.engine.core import FixSafety, Options

ATTRIBUTE_REASON = "is an attribute; its class is unknown here"

MODEL = '''import tensorflow.compat.v1 as tf


class Model(object):
    def __init__(self{params}):
        self.x = tf.placeholder(tf.float32, [None, 3])
        self.w = tf.get_variable("w", [3, 1])
        self.loss = tf.reduce_mean(tf.square(tf.matmul(self.x, self.w)))
{init}
    def build(self):
{build}
{extra}'''

MINIMIZE = "        self.train_op = self.optimizer.minimize(self.loss)\n"
COMPUTE_APPLY = ("        gvs = self.optimizer.compute_gradients(self.loss)\n"
                 "        capped = [(tf.clip_by_norm(g, 1.0), v) for g, v in gvs]\n"
                 "        self.train_op = self.optimizer.apply_gradients(capped)\n")
# the call in `build`, on a loss computed there (a tape must wrap the loss's computation)
BUILD = ("        loss = tf.reduce_mean(tf.square(tf.matmul(self.x, self.w)))\n"
         "        self.train_op = self.optimizer.minimize(loss)\n")
ADAM = "        self.optimizer = tf.train.AdamOptimizer(0.1)\n"


def _run(source: str) -> Tuple[str, List[Tuple[str, FixSafety, str]]]:
    result = migrate_source(source, Options(), path="m.py")
    return result.code, [(d.code, d.fix, d.message) for d in result.diagnostics]


def _program(init: str = "", build: str = "        pass\n", params: str = "", extra: str = "") -> str:
    return MODEL.format(init=init, build=build, params=params, extra=extra)


def _declines(source: str) -> List[str]:
    return [message for code, _, message in _run(source)[1] if code == "TFC202"]


@pytest.mark.parametrize("init, build", [
    (ADAM + MINIMIZE, "        pass\n"),
    (ADAM, BUILD),
    (ADAM + COMPUTE_APPLY, "        pass\n"),
    ("", ADAM + "        self.step = 0\n" + BUILD),
    ("        opt = tf.train.MomentumOptimizer(0.1, 0.9)\n        self.optimizer = opt\n", BUILD),
    ("", "        if self.x is not None:\n" + "".join("    " + line for line in (ADAM + BUILD).splitlines(True))),
    ("        self.vars = {}\n" + ADAM, BUILD),
    (ADAM, BUILD + "\n\nclass Value(object):\n    def __init__(self):\n" + ADAM),
    (ADAM, BUILD + "\n\nm = Model()\nm.optimizer = tf.train.AdamOptimizer(0.5)\n"),
])
def test_a_field_set_to_a_tf_train_optimizer_before_the_call_is_rewritten(init: str, build: str) -> None:
    """A field every write of which (any object's) builds one `tf.train` class, set in `__init__` or above the call, is rewritten."""
    source = _program(init=init, build=build)
    code, found = _run(source)
    assert code != source and "apply_gradients(" in code and ".minimize(" not in code
    assert not any(code_ == "TFC202" for code_, _, _ in found), found
    assert not any(ATTRIBUTE_REASON in message for _, _, message in found)


def test_a_field_set_from_a_parameter_declines_naming_the_parameter() -> None:
    """`self.optimizer = opt` with `opt` a constructor parameter no caller in the file passes declines, naming `opt`."""
    declines = _declines(_program(init="        self.optimizer = opt\n", build=BUILD, params=", opt"))
    assert any("`self.optimizer` is set from the parameter `opt`" in m for m in declines), declines


def test_a_field_set_to_two_different_classes_declines() -> None:
    """A field set to an Adam optimizer in one method and a GradientDescent optimizer in another declines, naming both."""
    extra = ("    def reset(self):\n"
             "        self.optimizer = tf.train.GradientDescentOptimizer(0.1)\n")
    declines = _declines(_program(init=ADAM, build=BUILD, extra=extra))
    assert any("different optimizer classes" in m and "AdamOptimizer" in m and "GradientDescentOptimizer" in m
               for m in declines), declines


def test_a_field_set_from_an_unknown_call_declines() -> None:
    """A field set from a call of an unknown function declines, quoting that call."""
    declines = _declines(_program(init="        self.optimizer = make_optimizer(0.1)\n", build=BUILD))
    assert any("`self.optimizer` is set to `make_optimizer(0.1)`" in m for m in declines), declines


@pytest.mark.parametrize("extra, cause", [
    ("\nm = Model()\nm.optimizer = tf.train.GradientDescentOptimizer(0.1)\nm.build()\n", "different optimizer classes"),
    ("\nm = Model()\nsetattr(m, 'optimizer', tf.train.GradientDescentOptimizer(0.1))\nm.build()\n", "setattr"),
    ("\nm = Model()\nwith make() as m.optimizer:\n    m.build()\n", "`with`"),
    ("\nclass Other(object):\n    optimizer = None\n", "is set to `None`"),
    ("\nclass Other(object):\n    def __init__(self):\n        self.a = self.optimizer = None\n", "also set by"),
])
def test_a_field_written_elsewhere_in_the_file_declines(extra: str, cause: str) -> None:
    """A field also set to another class on another object, by `setattr`, as a `with` target or to `None` declines."""
    declines = _declines(_program(init=ADAM, build=BUILD, extra=extra))
    assert any("`self.optimizer`" in m and cause in m for m in declines), declines


def test_a_field_set_only_in_another_method_declines() -> None:
    """A field set only in a method other than `__init__` (which may not have run) declines."""
    extra = "    def setup(self):\n" + ADAM
    declines = _declines(_program(build=BUILD, extra=extra))
    assert any("neither in `__init__` nor in straight-line code above this call" in m for m in declines), declines


def test_a_field_set_after_the_call_in_the_same_method_declines() -> None:
    """A field set in the method only after the call (an earlier value may come from elsewhere) declines."""
    declines = _declines(_program(build=BUILD + ADAM))
    assert any("neither in `__init__` nor in straight-line code above this call" in m for m in declines), declines


def test_a_field_set_under_a_branch_of_the_method_declines() -> None:
    """A field set only inside an `if` of the method (it may not have run) declines."""
    build = "        if self.x is not None:\n    " + ADAM + BUILD
    declines = _declines(_program(build=build))
    assert any("neither in `__init__` nor in straight-line code above this call" in m for m in declines), declines


@pytest.mark.parametrize("old, new, cause", [
    ("class Model(object):", "class Model(Base):", "base class defined elsewhere"),
    ("class Model(object):", "class Model(object, metaclass=Meta):", "base class defined elsewhere"),
    ("    def build(self):", "    @property\n    def optimizer(self):\n        return None\n\n    def build(self):",
     "a function or class named `optimizer`"),
])
def test_a_field_another_definition_may_supply_declines(old: str, new: str, cause: str) -> None:
    """A field of a class with a base from elsewhere, a metaclass, or a property of that name declines, saying so."""
    source = _program(init=ADAM, build=BUILD).replace(old, new)
    declines = _declines(source)
    assert any("`self.optimizer`" in m and cause in m for m in declines), declines


def test_a_field_that_holds_a_keras_optimizer_is_no_tf1_site() -> None:
    """A field every write of which builds a Keras optimizer, set above the call, is no TF 1 training site (no decline)."""
    source = _program(init="        self.optimizer = tf.keras.optimizers.Adam(0.1)\n", build=BUILD)
    code, found = _run(source)
    assert code == source and not any(c == "TFC202" or c.startswith("TFC1") for c, _, _ in found), found


def test_a_keras_optimizer_field_set_in_another_method_still_declines() -> None:
    """A Keras optimizer field set only in a method other than `__init__` still declines (it may hold something else)."""
    extra = "    def setup(self):\n        self.optimizer = tf.keras.optimizers.Adam(0.1)\n"
    declines = _declines(_program(build=BUILD, extra=extra))
    assert any("neither in `__init__` nor in straight-line code above this call" in m for m in declines), declines
