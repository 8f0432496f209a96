"""``benchmarks/corpus.py`` counts what the migration tool did on a corpus correctly.

Two runs on tiny synthetic corpora in ``tmp_path``:

* against a scripted stand-in for ``tfclip-migrate`` (``--tool``) whose findings, fixes, crashes,
  broken outputs and non-idempotent rewrites are written into the corpus files as comments, so
  every count of the report is known in advance and independent of how the real rules evolve;
* against the real command, checking only what must hold for any version of the rules.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "corpus.py"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the script uses resource / process groups (POSIX)")

# A stand-in for tfclip-migrate. A line ending in "# fake: CODE SAFETY [flags]" gets a finding there;
# `fix` applies it (safe, or unsafe with --unsafe-fixes) by removing the directive and turning
# `tf.contrib.training.` into `tfclip_compat.`. Flags: skip (never applied), break (the fix writes
# invalid syntax), unbind (the fix drops the name the line bound), flip (every fix appends a line:
# not idempotent), own (the fixed line is flagged again: a finding on the tool's own output), eager
# (the whole file loses its session and placeholders, as TFC301 does).
# "# fake-crash" makes the file an internal error.
FAKE_TOOL = r'''
import ast, json, os, re, sys

args = sys.argv[1:]
command, unsafe, root = args[0], "--unsafe-fixes" in args, args[-1]
DIRECTIVE = re.compile(r"#\s*fake:\s*(TFC\d+)\s+(safe|unsafe|none)((?:\s+\w+)*)")
rows, err, rc, parsed = [], [], 1, 0
file_rows, errors = [], []  # the schema-1 document (FAKE_SCHEMA=1): per-file status and errors
schema1 = os.environ.get("FAKE_SCHEMA") == "1"


def handle(lines, path, cell=None):
    """Findings for the lines; returns (new lines, changed)."""
    changed = eager = False
    out = []
    for number, line in enumerate(lines, 1):
        if "# fake-own" in line:
            rows.append(dict(path=path, line=number, col=1, code="TFC202", fix="none", applied=False, cell=cell,
                             message="cannot prove `own` output (manual edit required)"))
        match = DIRECTIVE.search(line)
        if match:
            code, safety, flags = match.group(1), match.group(2), match.group(3).split()
            apply = command == "fix" and "skip" not in flags and (
                safety == "safe" or (safety == "unsafe" and unsafe))
            stem = os.path.basename(path).split(".")[0]
            rows.append(dict(path=path, line=number, col=1, code=code, fix=safety, applied=apply, cell=cell,
                             message=f"cannot prove `{stem}` is a `tf.train` optimizer (manual edit required)"))
            if apply:
                changed = True
                line = line[: match.start()].rstrip().replace("tf.contrib.training.", "tfclip_compat.")
                if "break" in flags:
                    line = "def broken(:"
                if "unbind" in flags:
                    line = "gradients = tape.gradient(loss)"
                if "own" in flags:
                    line += "  # fake-own"
                eager = eager or "eager" in flags
        if command == "fix" and "# fake-flip" in line:
            changed = True
            out.append(line)
            out.append("# fake-flip (again)")
            continue
        out.append(line)
    if eager:
        out = [l.replace("tf.Session()", "contextlib.nullcontext()").replace("tf.placeholder(", "tf.zeros(")
               for l in out]
    return out, changed


for folder, dirs, files in os.walk(root):
    dirs.sort()
    for name in sorted(files):
        full = os.path.join(folder, name)
        path = os.path.relpath(full, root)
        text = open(full, encoding="utf-8").read()
        parsed += 1
        if "# fake-crash" in text:
            reason = "internal error, file left untouched: RuntimeError: boom"
            if schema1:
                file_rows.append(dict(path=path, status="failed", reason=reason))
                errors.append(dict(path=path, message=reason))
            else:
                err.append(f"tfclip-migrate: error: {path}: {reason}")
            rc = 2
            continue
        if name.endswith(".ipynb"):
            nb = json.loads(text)
            changed = False
            for number, cell in enumerate(nb["cells"], 1):
                if cell["cell_type"] == "code":
                    new, did = handle("".join(cell["source"]).split("\n"), path, number)
                    if did:
                        cell["source"] = "\n".join(new)
                        changed = True
            new_text = json.dumps(nb, indent=1) + "\n" if changed else text
        else:
            try:
                ast.parse(text)
            except SyntaxError:
                rows.append(dict(path=path, line=1, col=1, code="TFC900", fix="none", applied=False, cell=None,
                                 message="cannot parse: Python 2 (file left untouched)"))
                file_rows.append(dict(path=path, status="skipped", reason="cannot parse"))
                continue
            new, changed = handle(text.split("\n"), path)
            new_text = "\n".join(new)
        if changed and new_text != text:
            open(full, "w", encoding="utf-8").write(new_text)
            if schema1:
                file_rows.append(dict(path=path, status="rewritten", reason=""))
            else:
                err.append(f"Rewriting {path}")
        elif schema1:
            file_rows.append(dict(path=path, status="unchanged", reason=""))
if schema1:
    print(json.dumps(dict(tool="tfclip-migrate", schema=1, command=command, exit_code=rc, interrupted=None,
                          findings=rows, files=file_rows, errors=errors, warnings=[],
                          summary=dict(scanned=parsed, parsed=parsed))))
else:
    print(json.dumps(rows, indent=2))
    err.append(f"tfclip-migrate {command}: {parsed} files scanned: ... ({parsed} parsed, 0 ruled out by the text pre-filter)")
sys.stderr.write("\n".join(err) + "\n")
sys.exit(rc)
'''

FAKE_CORPUS = {
    "r/rewritten.py": """\
        import tensorflow as tf
        opt = tf.train.AdamOptimizer(0.1)
        gvs = opt.compute_gradients(loss)  # fake: TFC101 safe own unbind
        capped = [(tf.clip_by_value(g, -1.0, 1.0), v) for g, v in gvs]
        train_op = opt.apply_gradients(capped)
        """,
    "r/reported.py": """\
        import tensorflow as tf
        x = 1  # fake: TFC004 safe skip
        train_op = tf.train.AdamOptimizer(0.1).minimize(loss)  # fake: TFC202 none
        """,
    "r/unsafe.py": """\
        import tensorflow as tf
        train_op = tf.train.AdamOptimizer(0.1).minimize(loss)  # fake: TFC103 unsafe
        """,
    "r/missed.py": """\
        import tensorflow as tf
        x = tf.placeholder(tf.float32)
        train_op = optimizer.minimize(loss)
        """,
    "r/session.py": """\
        import tensorflow as tf
        x = tf.placeholder(tf.float32, [None])
        train_op = tf.train.AdamOptimizer(0.1).minimize(loss)  # fake: TFC301 safe eager
        with tf.Session() as sess:
            sess.run(train_op, {x: [1.0]})
        """,
    "r/contrib.py": """\
        import tensorflow as tf
        op1 = tf.contrib.training.create_train_op(loss, opt)  # fake: TFC002 safe
        op2 = tf.contrib.layers.optimize_loss(loss2, gs, 0.1, "Adam")
        """,
    "r/broken.py": """\
        import tensorflow as tf
        train_op = opt.minimize(loss)  # fake: TFC103 safe break
        """,
    "r/flip.py": """\
        import tensorflow as tf
        sess = tf.InteractiveSession()
        train_op = opt.minimize(loss)  # fake: TFC103 safe
        # fake-flip
        """,
    "r/crash.py": """\
        import tensorflow as tf
        train_op = opt.minimize(loss)  # fake-crash
        """,
    "r/py2.py": """\
        import tensorflow as tf
        print "step", 1
        train_op = opt.minimize(loss)
        """,
    "r/elsewhere.py": """\
        import tensorflow as tf


        def build(loss):
            y = 1  # fake: TFC202 none
            return opt.minimize(loss)
        """,
    "r/later.py": """\
        import tensorflow as tf

        train_op = opt.minimize(loss)
        loss = 2  # fake: TFC202 none
        """,
    "r/tf2.py": """\
        import tensorflow as tf

        optimizer = tf.keras.optimizers.SGD(0.1)
        with tf.GradientTape() as tape:
            loss = model(x)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        """,
    "r/fed.py": """\
        import tensorflow as tf

        holders = [tf.placeholder(tf.float32, name=str(i)) for i in range(2)]
        update = tf.train.AdamOptimizer(0.1).apply_gradients(zip(holders, tvars))
        """,
    "r/lookalike.py": """\
        import scipy.optimize
        import tensorflow as tf
        res = scipy.optimize.minimize(f, 1.0)  # fake: TFC202 none
        penalty = tf.gradients(tf.reduce_sum(x), [x])[0]
        """,
}


def _notebook() -> str:
    def code(src: str) -> Dict[str, Any]:
        return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                "source": src.splitlines(keepends=True)}

    cells = [
        code("import tensorflow as tf\n"),
        {"cell_type": "markdown", "metadata": {}, "source": ["# Training\n"]},
        code("loss = tf.reduce_mean(x)\ntrain_op = opt.minimize(loss)  # fake: TFC202 none\n"),
        code("%time\ntrain2 = opt2.minimize(loss2)\n"),
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 2}, indent=1) + "\n"


def _write_corpus(root: Path, files: Dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text) if rel.endswith(".py") else text, encoding="utf-8")


def _run(tmp_path: Path, corpus: Path, *extra: str, schema: str = "0") -> Dict[str, Any]:
    out = tmp_path / "out" / "corpus.md"
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "FAKE_SCHEMA": schema}
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--corpus", str(corpus), "--out", str(out), "--jobs", "1",
         "--work", str(tmp_path / "work"), *extra],
        capture_output=True, text=True, timeout=300, cwd=REPO, env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert out.read_text(encoding="utf-8") == proc.stdout
    return json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("schema", ["0", "1"], ids=["findings-array", "schema-1-document"])
def test_counts_against_a_scripted_tool(tmp_path: Path, schema: str) -> None:
    """Every figure (file and unit statuses, crashes, broken, dangling and non-idempotent outputs, contrib left,
    Python 2, declines, own-output findings, unapplied fixes, sites not counted) matches what the
    scripted tool did, whichever JSON output the tool prints (a bare findings array, or the schema-1
    document with files / errors / summary and nothing on stderr)."""
    corpus = tmp_path / "corpus"
    _write_corpus(corpus, {**FAKE_CORPUS, "nb/train.ipynb": _notebook()})
    tool = tmp_path / "fake-tfclip-migrate"
    tool.write_text(f"#!{sys.executable}\n{FAKE_TOOL}", encoding="utf-8")
    tool.chmod(0o755)
    data = _run(tmp_path, corpus, "--tool", str(tool), schema=schema)

    assert data["sites"]["files"] == 12
    assert data["sites"]["sites"] == 15 and data["sites"]["units"] == 14
    assert data["sites"]["tf_gradients_not_training"] == 1  # the gradient penalty in lookalike.py
    assert data["sites"]["tf2_form"] == 1  # tape-fed apply_gradients in tf2.py
    assert data["sites"]["fed_gradients"] == 1  # placeholders in fed.py
    assert data["inventory"]["python2"] == ["r/py2.py"]
    assert data["tfc900"]["python2_reported"] == ["r/py2.py"]

    safe, unsafe = data["modes"]["safe"], data["modes"]["unsafe"]
    assert safe["files"] == {"rewritten": 5, "reported": 5, "missed": 2}
    assert safe["units"] == {"rewritten": 5, "reported": 3, "elsewhere": 2, "missed": 4}
    assert unsafe["files"] == {"rewritten": 6, "reported": 4, "missed": 2}
    assert unsafe["units"] == {"rewritten": 6, "reported": 2, "elsewhere": 2, "missed": 4}
    # issue 22: session.py loses its session and placeholder (eager); flip.py is rewritten and keeps its
    # InteractiveSession (tape form); missed.py keeps its placeholder; the rest never had either
    for mode in (safe, unsafe):
        forms = mode["eager"]["file_form"]
        assert mode["eager"]["forms"] == {"converted": 1, "tape": 1, "graph": 1, "eager_before": 9}
        assert (forms["r/session.py"], forms["r/flip.py"], forms["r/missed.py"]) == ("converted", "tape", "graph")
        assert mode["eager"]["session_files"] == 2 and mode["eager"]["session_files_converted"] == 1
        assert mode["eager"]["tfc301_applied"] == ["r/session.py"]
    assert safe["per_repo"] == [
        {"repo": "nb", "files": 1, "rewritten": 0, "reported": 1, "missed": 0, "eager": 0, "tape": 0},
        {"repo": "r", "files": 11, "rewritten": 5, "reported": 4, "missed": 2, "eager": 1, "tape": 1}]
    status = {(s["path"], s["line"], s["cell"]): s["status"] for s in safe["sites"]}
    assert status[("nb/train.ipynb", 2, 3)] == "reported"  # cell 3, line 2, imports in cell 1
    assert status[("nb/train.ipynb", 2, 4)] == "missed"  # after a %time magic line
    assert status[("r/rewritten.py", 5, None)] == "rewritten"  # apply_gradients linked to compute_gradients
    assert status[("r/elsewhere.py", 6, None)] == "elsewhere"  # its only finding sits on line 5
    assert status[("r/later.py", 3, None)] == "elsewhere"  # its only finding sits on a later line

    assert [(c["path"], c["phases"]) for c in safe["crashes"]] == [("r/crash.py", ["check", "fix", "fix again"])]
    assert list(safe["broken"]) == ["r/broken.py"]
    assert safe["dangling"] == {"r/rewritten.py": ["gvs"]}  # the comprehension still reads it
    assert safe["non_idempotent"] == ["r/flip.py"]
    assert [(s["path"], s["kind"]) for s in safe["contrib_left"]] == [("r/contrib.py", "optimize_loss")]
    assert safe["contrib_before"] == 2
    # the flagged fixed line, and TFC900 on the output the fix broke
    assert [(g["code"], g["files"]) for g in safe["new_findings_after_fix"]] == [("TFC202", 1), ("TFC900", 1)]
    assert safe["safe_not_applied"] == [{"path": "r/reported.py", "code": "TFC004", "count": 1}]
    # five messages naming different files are one reason once names are normalised out
    declines = [(g["code"], g["reason"], g["files"]) for g in data["declines"]]
    assert declines == [("TFC202", "cannot prove `…` is a `…` optimizer (manual edit required)", 5)]
    assert [(g["code"], g["files"]) for g in data["findings_without_sites"]] == [("TFC202", 1)]


def test_real_tool_on_a_small_corpus(tmp_path: Path) -> None:
    """With the real ``tfclip-migrate`` the canonical TFC101 site is rewritten, a session script made
    eager by TFC301 counts its training site as rewritten (was: "silently missed", the whole-program
    finding sits on another line), the contrib wrapper is gone after ``fix``, the Python 2 file gets
    TFC900, and nothing crashes, breaks or flip-flops."""
    corpus = tmp_path / "corpus"
    _write_corpus(corpus, {
        "r/rewritable.py": """\
            import tensorflow as tf

            x = tf.placeholder(tf.float32, [None, 3])
            w = tf.Variable(tf.zeros([3, 1]))
            loss = tf.reduce_mean(tf.matmul(x, w))
            optimizer = tf.train.AdamOptimizer(1e-3)
            gradients, variables = zip(*optimizer.compute_gradients(loss))
            gradients, _ = tf.clip_by_global_norm(gradients, 5.0)
            train_op = optimizer.apply_gradients(zip(gradients, variables))
            """,
        "r/contrib.py": """\
            import tensorflow as tf

            def model_fn(features, labels, mode):
                opt = tf.train.GradientDescentOptimizer(0.1)
                opt = tf.contrib.estimator.clip_gradients_by_norm(opt, 5.0)
                return tf.estimator.LinearRegressor(feature_columns=[], optimizer=opt)
            """,
        "r/session.py": """\
            import numpy as np
            import tensorflow as tf

            x_data = np.ones([4, 3], np.float32)
            x = tf.placeholder(tf.float32, [None, 3])
            w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
            cost = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
            train = tf.train.GradientDescentOptimizer(learning_rate=0.1).minimize(cost)

            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                for step in range(3):
                    _, c = sess.run([train, cost], feed_dict={x: x_data})
                    print(step, c)
            """,
        "r/py2.py": FAKE_CORPUS["r/py2.py"],
    })
    data = _run(tmp_path, corpus, "--no-unsafe")
    safe = data["modes"]["safe"]
    assert safe["crashes"] == [] and safe["broken"] == {} and safe["non_idempotent"] == []
    assert safe["dangling"] == {}
    status = {(s["path"], s["kind"]): s["status"] for s in safe["sites"]}
    assert status[("r/rewritable.py", "compute_gradients")] == "rewritten"
    assert status[("r/rewritable.py", "apply_gradients")] == "rewritten"
    assert status[("r/contrib.py", "clip_gradients_by_norm")] == "rewritten"
    assert status[("r/session.py", "minimize")] == "rewritten"
    assert safe["contrib_before"] == 1 and safe["contrib_left"] == []
    assert data["tfc900"]["python2_reported"] == ["r/py2.py"]
    assert "unsafe" not in data["modes"]


def test_missing_corpus_is_a_clear_error(tmp_path: Path) -> None:
    """A nonexistent ``--corpus`` exits 2 with a message naming the directory and how to build it."""
    proc = subprocess.run([sys.executable, str(SCRIPT), "--corpus", str(tmp_path / "nope")],
                          capture_output=True, text=True, timeout=60, cwd=REPO)
    assert proc.returncode == 2
    assert "nope" in proc.stderr and "--build MIRRORS" in proc.stderr


def test_normalised_messages_group_one_reason() -> None:
    """Names, numbers and repeated clauses are taken out of a message, so one reason groups together."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        from corpus import normalise_message
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    clause = "the loss reads the parameter `{}`: if the caller computed it, paths are outside the tape"
    one = f"`minimize` -> `tf.GradientTape` (unsafe: {clause.format('a')})"
    three = f"`minimize` -> `tf.GradientTape` (unsafe: {'; '.join(clause.format(n) for n in 'abc')})"
    assert normalise_message(one) == normalise_message(three)
    assert normalise_message("measured up to 7e-5 after 20 steps") == "measured up to 7e-N after N steps"
    assert normalise_message("a; b") == "a; b"


def test_dangling_names_sees_names_and_attributes(tmp_path: Path) -> None:
    """A rewrite that drops a name or a ``self.`` attribute still read elsewhere is flagged; renames that keep
    every read bound, and builtins, are not."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        from corpus import dangling_names
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    before, after = tmp_path / "before", tmp_path / "after"
    files = {
        "a.py": ("gvs = opt.compute_gradients(loss)\nop = opt.apply_gradients(gvs)\nprint(gvs)\n",
                 "grads = tape.gradient(loss, v)\nop = opt.apply_gradients(zip(grads, v))\nprint(gvs)\n"),
        "b.py": ("class M:\n    def build(self):\n        self.gvs = opt.compute_gradients(self.loss)\n"
                 "    def run(self, sess):\n        return sess.run(self.gvs)\n",
                 "class M:\n    def build(self):\n        self.grads = tape.gradient(self.loss, v)\n"
                 "    def run(self, sess):\n        return sess.run(self.gvs)\n"),
        "c.py": ("gvs = opt.compute_gradients(loss)\nop = opt.apply_gradients(gvs)\n",
                 "grads = tape.gradient(loss, v)\nop = opt.apply_gradients(zip(grads, v))\nprint(len(grads))\n"),
    }
    for name, (old, new) in files.items():
        for root, text in ((before, old), (after, new)):
            root.mkdir(exist_ok=True)
            (root / name).write_text(text, encoding="utf-8")
    assert dangling_names(before, after, set(files)) == {"a.py": ["gvs"], "b.py": ["self.gvs"]}


def test_graph_markers_read_code_not_text() -> None:
    """A session or placeholder is seen in any spelling the code uses (attribute, bare or imported name,
    ``get_session()``), in a notebook's cells too, and never in a docstring, comment or string."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        from _corpus_scan import scan_file
    finally:
        sys.path.remove(str(REPO / "benchmarks"))

    def markers(path: str, text: str) -> tuple:
        result = scan_file(path, text.encode("utf-8"))
        return result.session, result.placeholder

    assert markers("a.py", "import tensorflow as tf\nx = tf.compat.v1.placeholder(tf.float32)\n"
                           "with tf.compat.v1.Session() as s:\n    pass\n") == (True, True)
    assert markers("b.py", "from tensorflow.compat.v1 import InteractiveSession, placeholder_with_default\n") == (True, True)
    assert markers("c.py", "import keras.backend as K\nsess = K.get_session()\n") == (True, False)
    assert markers("d.py", '"""What ``Session.run`` returned: a tf.placeholder fed."""\n# tf.Session()\n'
                           "s = 'tf.placeholder'\nsess = None\nsess.run(x)\n") == (False, False)
    nb = json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                                "source": ["import tensorflow as tf\n"]},
                               {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                                "source": ["x = tf.placeholder(tf.float32)\n"]}],
                     "metadata": {}, "nbformat": 4, "nbformat_minor": 2})
    assert markers("e.ipynb", nb) == (False, True)
