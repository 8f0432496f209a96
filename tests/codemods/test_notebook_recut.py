"""codemods.notebooks.recut: a rewritten notebook program cut into its cells again (no TensorFlow).

Whatever the rewrite did with the cell-boundary markers, the result has each marker once, in
order, at column 0 between top-level statements, so every cell parses on its own and the cells
run, in order, the rewritten program."""

from __future__ import annotations

import ast
import re

from codemods.notebooks.recut import recut

NOTE = "# (moved)"
MARK = "# tfclip-migrate:cell-boundary {}\n"


def program(*cells: str) -> str:
    """Cells 1, 2, 3, ... joined the way ``build_program`` joins them."""
    out = cells[0]
    for number, text in enumerate(cells[1:], start=2):
        out += MARK.format(number) + text
    return out


def cells_of(text: str):
    return re.split(r"^# tfclip-migrate:cell-boundary \d+\n", text, flags=re.M)


def markers(text: str):
    return [int(n) for n in re.findall(r"^# tfclip-migrate:cell-boundary (\d+)$", text, flags=re.M)]


def code_lines(text: str):
    """The program's code, markers, notes and blank lines left out."""
    return [line for line in text.splitlines() if line.strip() and "cell-boundary" not in line and line != NOTE]


def assert_valid(old: str, new: str, out: str) -> None:
    assert markers(out) == markers(old)
    for cell in cells_of(out):
        ast.parse(cell)
    assert code_lines(out) == code_lines(new)


def test_a_rewrite_that_keeps_every_marker_is_left_as_it_is():
    old = program("import tensorflow as tf\n", "x = 1\n", "y = x + 1\n")
    new = old.replace("x + 1", "x + 2")
    assert recut(old, new, NOTE) == new


def test_moved_code_lands_in_the_first_cell_it_replaces_and_emptied_cells_say_so():
    old = program("import tensorflow as tf\n", "data = [1, 2]\n", "w = make()\n", "loss = f(w)\n",
                  "for step in range(3):\n    train(data)\n")
    # the rewrite: cells 3 and 4 became a class (their markers went inside it, indented)
    new = ("import tensorflow as tf\n" + MARK.format(2) + "data = [1, 2]\n\n\n"
           "class Model:\n    " + MARK.format(3) + "    def call(self):\n        " + MARK.format(4)
           + "        return 1\n\n\nmodel = Model()\n" + MARK.format(5) + "for step in range(3):\n    train(data)\n")
    out = recut(old, new, NOTE)
    assert_valid(old, new, out)
    cells = cells_of(out)
    assert cells[1] == "data = [1, 2]\n"  # an unchanged cell keeps its bytes
    assert cells[2].startswith("class Model:") and "model = Model()" in cells[2]
    assert cells[3] == NOTE + "\n"
    assert cells[4] == "for step in range(3):\n    train(data)\n"


def test_a_dropped_first_statement_loses_its_marker_and_the_rest_of_its_cell_stays():
    old = program("import tensorflow as tf\n", "init = tf.global_variables_initializer()\nprint(1)\n", "print(2)\n")
    new = "import tensorflow as tf\nprint(1)\n" + MARK.format(3) + "print(2)\n"
    out = recut(old, new, NOTE)
    assert_valid(old, new, out)
    assert cells_of(out) == ["import tensorflow as tf\n", "print(1)\n", "print(2)\n"]


def test_markers_out_of_order_or_inside_a_statement_are_placed_again():
    old = program("a = 1\n", "b = 2\n", "c = 3\n", "d = 4\n")
    new = ("a = 1\n" + MARK.format(4) + "b = 2\n" + MARK.format(3) + "c = (3 +\n" + MARK.format(2) + "4)\nd = 4\n")
    out = recut(old, new, NOTE)
    assert_valid(old, new, out)
    for cell in cells_of(out):
        compile(cell, "<cell>", "exec")


def test_a_decorated_function_and_its_comment_are_never_cut_apart():
    old = program("import tensorflow as tf\n", "x = 1\n", "y = 2\n")
    new = ("import tensorflow as tf\n# the step\n@tf.function\ndef step():\n    return 1\n"
           + MARK.format(3) + "y = 2\n")
    out = recut(old, new, NOTE)
    assert_valid(old, new, out)
    assert any(cell.startswith("# the step\n@tf.function\ndef step") for cell in cells_of(out)) or \
        "# the step\n@tf.function\ndef step" in cells_of(out)[0]


def test_an_ipython_placeholder_stays_in_its_own_cell():
    placeholder = "pass  # tfclip-migrate:ipython-line:3.0:inert\n"
    old = program("import tensorflow as tf\n", "w = make()\n", placeholder + "loss = f(w)\n", "train()\n")
    new = "import tensorflow as tf\n\n\nclass Model:\n    pass\n\n\n" + placeholder + MARK.format(4) + "train()\n"
    out = recut(old, new, NOTE)
    assert_valid(old, new, out)
    assert placeholder in cells_of(out)[2]


def test_a_program_of_one_cell_is_returned_as_it_is():
    assert recut("x = 1\n", "y = 2\n", NOTE) == "y = 2\n"
