"""TFC301 and TensorFlow imports besides ``import tensorflow as tf`` (no TensorFlow needed): the
``from tensorflow.python.framework import ops`` alias of ``reset_default_graph`` is followed and
dropped, other uses of it, the TF 1 MNIST tutorial loader and a session bound to a name
(`sess = tf.InteractiveSession()`) are declined with their true cause."""

from __future__ import annotations

import ast

import libcst as cst
import pytest

from codemods.rules.eager.emit import emit
from codemods.rules.eager.model import Decline, Reader

HEADER = "import numpy as np\nimport tensorflow as tf\n"
GRAPH = '''x = tf.placeholder(tf.float32, [None, 3])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.get_variable("w", [3, 1])
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
'''
SESSION = '''
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(3):
        _, loss_value = sess.run([train_op, loss], {x: np.ones((4, 3)), y: np.ones((4, 1))})
        print(loss_value)
'''
OPS = "from tensorflow.python.framework import ops\n"


def _migrate(source: str) -> str:
    reader = Reader(cst.parse_module(source))
    return emit(reader.read(), reader)


def _decline(source: str) -> str:
    with pytest.raises(Decline) as info:
        _migrate(source)
    return info.value.reason


@pytest.mark.parametrize("alias", ["ops", "framework_ops"])
def test_ops_reset_before_the_graph_is_followed_and_dropped(alias):
    """`ops.reset_default_graph()` before the graph (ops imported under any name) is dropped with its import."""
    imp = OPS if alias == "ops" else OPS.replace("import ops", f"import ops as {alias}")
    out = _migrate(HEADER + imp + f"\n{alias}.reset_default_graph()\ntf.set_random_seed(1)\n" + GRAPH + SESSION)
    assert "tensorflow.python" not in out and "reset_default_graph" not in out
    assert alias not in {n.id for n in ast.walk(ast.parse(out)) if isinstance(n, ast.Name)}
    assert "tf.compat.v1.set_random_seed(1)" in out and "@tf.function" in out
    compile(out, "<migrated>", "exec")


def test_tf_and_ops_reset_give_the_same_program():
    """`tf.reset_default_graph()` and `ops.reset_default_graph()` are the same function: same output."""
    via_tf = _migrate(HEADER + "\ntf.reset_default_graph()\n" + GRAPH + SESSION)
    via_ops = _migrate(HEADER + OPS + "\nops.reset_default_graph()\n" + GRAPH + SESSION)
    assert via_tf == via_ops


@pytest.mark.parametrize("prefix", ["tf", "ops"])
def test_reset_after_tensorflow_was_used_is_declined(prefix):
    """A reset after the seed or graph ops discards them in TF 1: declined, the cause named."""
    reason = _decline(HEADER + OPS + f"tf.set_random_seed(1)\n{prefix}.reset_default_graph()\n" + GRAPH + SESSION)
    assert reason.startswith("`reset_default_graph()` after TensorFlow was first used")


@pytest.mark.parametrize("use", ["print(ops)\n", "g = ops.get_default_graph()\n", "ops = None\n",
                                 "from numpy import ops\n"])
def test_other_uses_of_ops_are_declined(use):
    """Any use of `ops` besides a dropped module-level reset is declined (the import is dropped)."""
    reason = _decline(HEADER + OPS + "ops.reset_default_graph()\n" + GRAPH + SESSION + use)
    assert "is used other than by a module-level `ops.reset_default_graph()`" in reason


def test_other_tensorflow_framework_imports_are_declined():
    """`from tensorflow.python.framework import dtypes` is not an alias the rule follows."""
    reason = _decline(HEADER + "from tensorflow.python.framework import ops, dtypes\n" + GRAPH + SESSION)
    assert reason.startswith("`from tensorflow... import`")


@pytest.mark.parametrize("imp,expected", [
    ("from tensorflow.examples.tutorials.mnist import input_data\n", "from tfclip_compat import mnist as input_data\n"),
    ("import tensorflow.examples.tutorials.mnist.input_data as input_data\n", "import tfclip_compat.mnist as input_data\n"),
    ("from tensorflow.examples.tutorials.mnist import input_data as data\n", "from tfclip_compat import mnist as data\n"),
    ("from tensorflow.examples.tutorials.mnist.input_data import read_data_sets\n",
     "from tfclip_compat.mnist import read_data_sets\n")])
def test_mnist_tutorial_loader_becomes_tfclip_compat_mnist(imp, expected):
    """TF 2 does not ship TF 1's MNIST tutorial loader: its import becomes the same import of
    ``tfclip_compat.mnist`` (TF 1's loader: the same batches)."""
    from codemods.api import Options, migrate_source

    result = migrate_source(HEADER + imp + GRAPH + SESSION, Options(select=frozenset({"TFC301"})))
    assert result.changed and expected in result.code and "tensorflow.examples" not in result.code


@pytest.mark.parametrize("imp", ["from tensorflow.examples.tutorials.mnist import mnist\n",
                                 "from tensorflow.examples.tutorials.mnist.input_data import *\n",
                                 "import tensorflow.examples.tutorials.mnist.input_data\n"])
def test_other_mnist_tutorial_imports_are_declined(imp):
    """The tutorial's other modules, a star import, or the loader used by its dotted path: declined."""
    reason = _decline(HEADER + imp + GRAPH + SESSION)
    assert reason.startswith("imports `tensorflow.examples.tutorials.mnist` other than its `input_data` loader")


@pytest.mark.parametrize("call", ["tf.Session()", "tf.compat.v1.Session()", "tf.InteractiveSession()"])
def test_session_bound_to_a_name(call):
    """`sess = tf.Session()` before the graph's use is read as the `with` block it runs like (the
    program is migrated); an `InteractiveSession` is declined naming it (it rounds differently)."""
    from codemods.api import Options, migrate_source

    loop = SESSION.replace("with tf.Session() as sess:\n", "").replace("\n    ", "\n")
    source = HEADER + f"sess = {call}\n" + GRAPH + loop + "sess.close()\n"
    result = migrate_source(source, Options(select=frozenset({"TFC301"})))
    [diag] = [d for d in result.diagnostics if d.code == "TFC301"]
    if "Interactive" in call:
        assert not result.changed and "an `InteractiveSession`" in diag.message
    else:
        assert diag.applied and "Session()" not in result.code and "sess.close" not in result.code

PLOT = '''

def plot_images(images, title):
    fig, axes = plt.subplots(1, len(images))
    for ax, image in zip(axes, images):
        ax.imshow(image.reshape(1, -1))
    print(title, np.random.rand())
'''


def test_a_plotting_helper_stays_plain_python():
    """The tutorials' `plot_images` (matplotlib, print, numpy's random draws) is plain Python: it and
    the module-level calls of it stay where they were, in the same order; the graph moves."""
    source = (HEADER + "import matplotlib.pyplot as plt\n" + PLOT + "\nplot_images(np.ones((2, 3)), 'data')\n"
              + GRAPH + "plot_images(np.zeros((2, 3)), 'again')\n" + SESSION)
    out = _migrate(source)
    compile(out, "<migrated>", "exec")
    module = ast.parse(out)
    top = [ast.unparse(s) for s in module.body]
    calls = [i for i, s in enumerate(top) if s.startswith("plot_images(")]
    assert len(calls) == 2 and "def plot_images" in "".join(top[:calls[0]])
    model = next(i for i, s in enumerate(top) if s.startswith("class Model"))
    assert calls[0] < model < calls[1] or calls[0] < calls[1] < model  # module code keeps its order
    assert "plot_images" not in top[model]


@pytest.mark.parametrize("module", ["import matplotlib.pyplot as plt", "from PIL import Image as plt"])
def test_the_forward_pass_calling_a_plotting_helper_is_declined(module):
    """A forward pass that calls a plotting helper would plot at every trace of the eager step."""
    graph = GRAPH.replace("loss = ", "images = plot_images(w, 'w')\nloss = ")  # reads the variable `w`
    reason = _decline(HEADER + module + "\n" + PLOT + "\n" + graph + SESSION)
    assert "calls `plot_images`, which calls" in reason and "every trace of the eager step" in reason
