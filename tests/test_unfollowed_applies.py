"""TFC202's catch-all for ``apply_gradients`` / ``compute_gradients`` sites no rule follows names
where the gradients come from (``codemods/rules/tape/applies.py``), and leaves TF 2 code silent."""

from __future__ import annotations

from pathlib import Path

from codemods.api import migrate_source

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "TFC202"


def _messages(name: str) -> dict:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    result = migrate_source(text, path=name)
    assert result.code == text
    return {d.line: d.message for d in result.diagnostics if d.code == "TFC202"}


def test_each_unfollowed_apply_names_its_origin() -> None:
    """A wrapper's parameter, a clip loop over `tf.gradients`, constants and placeholders are each named."""
    found = _messages("unfollowed_apply_of_unfollowed_gradients.noop.py")
    assert "they arrive as `grads_and_vars`, a parameter of `apply_gradients`" in found[13]
    assert "they come from `tf.gradients(loss, params)` (line 20)" in found[22]
    assert "is not computed from a loss in this function" in found[29]
    assert "they are fed through `tf.placeholder(" in found[40]


def test_compute_gradients_not_applied_says_where_they_go() -> None:
    """Measured, returned and caller-supplied gradients are reported with where they go."""
    found = _messages("unfollowed_compute_gradients_not_applied_here.noop.py")
    assert "only read in this function" in found[6]
    assert "the `return` of its function" in found[13]
    assert "they arrive as `grads`, `variables`, parameters of `apply`" in found[18]


def test_tf2_code_and_user_classes_stay_silent() -> None:
    """Tape gradients, Keras optimizers, a caller's gradients in TF 2 code and user classes: no finding."""
    assert _messages("unfollowed_tf2_apply_lookalikes_left_silent.noop.py") == {}


def test_eager_apply_names_the_removed_gradient_function() -> None:
    """`optimizer.apply_gradients(grad(...))` with `grad = tfe.implicit_gradients(...)` is reported at the apply."""
    found = _messages("contrib_eager_implicit_gradients.noop.py")
    assert "a `tf.contrib.eager` gradient function, removed in TF 2" in found[15]
