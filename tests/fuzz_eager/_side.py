"""One side of the equivalence harness, in its own process: runs a complete script and reports
what it printed, what its sessions fetched, and every variable by TF 1 name.

Started by :mod:`tests.fuzz_eager.harness` as ``python -m tests.fuzz_eager._side before|after``;
one JSON job per stdin line, one JSON answer per line on the *original* stdout (the scripts'
own prints are captured per job). Both sides run with ``TF_USE_LEGACY_KERAS=1`` (tf-keras: the
real ``tf.compat.v1.layers`` and ``track_tf1_style_variables``).

* ``before``: ``tf.compat.v1.disable_eager_execution()`` once at start; each script in a fresh
  ``tf.Graph`` with TF 1.15's namespace (``import tensorflow as tf`` is ``tf.compat.v1`` plus the
  test-only ``tf.contrib`` reference, :mod:`reference`). ``Session.run`` is patched to record
  every call's fetched values, the variables right after the first run that leaves them all
  initialised (the *initial values*), and the variables when the session closes (the *final
  values*; a session never closed is read at the end of the script).
* ``after``: eager, the real importer (``import tensorflow as tf`` is TF 2). The script runs
  inside ``tf.variable_creator_scope``: each variable whose TF 1 name has an initial value from
  the before run gets that value as its ``initial_value``; every created variable is recorded
  and read by name at the end (so slots, ``beta1_power``, the global step and batch-norm
  statistics are compared like model weights).

Arrays travel as base64 of their raw bytes, so comparisons can be bit for bit.
"""

from __future__ import annotations

import base64
import builtins
import contextlib
import io
import json
import os
import sys
import traceback
from typing import Any, Dict, List, Optional


def encode(value: Any) -> Dict[str, Any]:
    import numpy as np

    arr = np.asarray(value)
    if arr.dtype == object:
        return {"repr": repr(value)[:200]}
    return {"dtype": arr.dtype.str, "shape": list(arr.shape),
            "data": base64.b64encode(np.ascontiguousarray(arr).tobytes()).decode("ascii")}


def decode(blob: Dict[str, Any]) -> Any:
    import numpy as np

    if "data" not in blob:
        return blob.get("repr")
    return np.frombuffer(base64.b64decode(blob["data"]), dtype=np.dtype(blob["dtype"])).reshape(blob["shape"]).copy()


def _where(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    frame = next((f for f in reversed(tb) if f.filename == "<script>"), None)
    return f" (script line {frame.lineno})" if frame else ""


class _BeforeRecorder:
    """Patches ``BaseSession.run``/``close`` of ``tf.compat.v1`` for one script."""

    def __init__(self, tf: Any) -> None:
        self.tf = tf
        self.runs: List[Any] = []
        self.initial: Optional[Dict[str, Any]] = None
        self.final: Optional[Dict[str, Any]] = None
        self.sessions: List[Any] = []
        from tensorflow.python.client import session as session_lib

        self.cls = session_lib.BaseSession
        self.orig_run, self.orig_close = self.cls.run, self.cls.close

    def _read(self, sess: Any) -> Dict[str, Any]:
        graph = sess.graph
        variables = graph.get_collection(self.tf.compat.v1.GraphKeys.GLOBAL_VARIABLES)
        variables += [v for v in graph.get_collection(self.tf.compat.v1.GraphKeys.LOCAL_VARIABLES)
                      if v not in variables]
        values = self.orig_run(sess, variables) if variables else []
        return {v.op.name: encode(x) for v, x in zip(variables, values)}

    def _initializer(self, fetches: Any) -> bool:
        """Whether ``fetches`` is an initializer op (``global_variables_initializer()`` and kin: a
        NoOp whose control inputs are assignments, or NoOps grouping them)."""
        def initializes(op: Any) -> bool:
            if op.type != "NoOp":
                return op.type in ("Assign", "AssignVariableOp")
            return bool(op.control_inputs) and all(initializes(c) for c in op.control_inputs)

        return isinstance(fetches, self.tf.Operation) and initializes(fetches)

    def __enter__(self) -> "_BeforeRecorder":
        rec = self

        def run(sess, fetches, feed_dict=None, options=None, run_metadata=None):
            # the initial values are the ones the first run that is not an initializer run sees (a
            # second initializer run before training draws again: TF 1 trains from those)
            if rec.initial is None and not rec._initializer(fetches):
                try:
                    rec.initial = rec._read(sess)
                except rec.tf.errors.FailedPreconditionError:
                    pass  # not all variables initialised yet
            out = rec.orig_run(sess, fetches, feed_dict, options, run_metadata)
            if sess not in rec.sessions:
                rec.sessions.append(sess)
            rec.runs.append(_flatten(out))
            return out

        def close(sess):
            if not getattr(sess, "_closed", False) and sess in rec.sessions:
                with contextlib.suppress(Exception):
                    rec.final = rec._read(sess)
            return rec.orig_close(sess)

        self.cls.run, self.cls.close = run, close
        return self

    def finish(self) -> None:
        for sess in self.sessions:
            if not getattr(sess, "_closed", False):
                with contextlib.suppress(Exception):
                    self.final = self._read(sess)

    def __exit__(self, *exc: Any) -> None:
        self.cls.run, self.cls.close = self.orig_run, self.orig_close


def _flatten(out: Any) -> List[Any]:
    """The numeric leaves of one ``run`` result (ops fetch as None and are left out)."""
    import numpy as np

    leaves: List[Any] = []

    def walk(x: Any) -> None:
        if x is None:
            return
        if isinstance(x, dict):
            for k in sorted(x, key=str):
                walk(x[k])
        elif isinstance(x, (list, tuple)):
            for y in x:
                walk(y)
        else:
            arr = np.asarray(x)
            leaves.append(encode(arr) if arr.dtype != object else {"repr": repr(x)[:200]})

    walk(out)
    return leaves


def _reset_python_randomness() -> None:
    """Unseeded tf-keras initializers (``tf.layers``) draw their seeds from Python's ``random``:
    reset it (and numpy's) per script, so a script draws the same numbers whatever ran before it
    in this worker."""
    import random

    import numpy as np

    random.seed(0)
    np.random.seed(0)


def _before_import(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002
    """The legacy importer, except that ``tensorflow.python...`` (TF's internal modules, which
    TF 1.15 had too: ``from tensorflow.python.framework import ops``) is the real module."""
    import reference

    if level == 0 and name.startswith("tensorflow.python") and fromlist:
        return builtins.__import__(name, globals, locals, fromlist, level)
    return reference._legacy_import(name, globals, locals, fromlist, level)


def run_before(source: str) -> Dict[str, Any]:
    import tensorflow as tf
    import reference  # noqa: F401 - tests/ is on sys.path; imported before the script runs (its legacy importer)

    _reset_python_randomness()
    tf.keras.backend.clear_session()
    # a fresh default graph, not a nested ``with tf.Graph().as_default()``: a script may call
    # ``tf.reset_default_graph()``, which TF 1 forbids inside a nested graph
    tf.compat.v1.reset_default_graph()
    buf = io.StringIO()
    scope: Dict[str, Any] = {"__name__": "__main__"}
    legacy_builtins = dict(vars(builtins))
    legacy_builtins["__import__"] = _before_import
    scope["__builtins__"] = legacy_builtins
    result: Dict[str, Any] = {"ok": True}
    with _BeforeRecorder(tf) as rec:
        try:
            with contextlib.redirect_stdout(buf):
                exec(compile(source, "<script>", "exec"), scope)  # noqa: S102 - test harness
            rec.finish()
        except BaseException as exc:  # noqa: BLE001 - reported
            result = {"ok": False, "error": f"{type(exc).__name__}: {str(exc)[:800]}{_where(exc)}"}
    result.update(stdout=buf.getvalue(), runs=rec.runs, initial=rec.initial or {}, final=rec.final or {})
    return result


def run_after(source: str, initial: Dict[str, Any]) -> Dict[str, Any]:
    import tensorflow as tf

    _reset_python_randomness()
    tf.keras.backend.clear_session()
    tf.compat.v1.reset_default_graph()
    init = {name: decode(blob) for name, blob in initial.items()}
    created: List[Any] = []
    aligned: Dict[str, str] = {}
    occurrences: Dict[str, int] = {}
    renamed: Dict[int, str] = {}
    problems: List[str] = []

    def creator(next_creator, **kwargs):
        name = kwargs.get("name")
        predicted = None
        if name is not None:
            scope_name = tf.get_current_name_scope() if tf.executing_eagerly() else ""
            base = str(name)
            predicted = f"{scope_name}/{base}" if scope_name and not base.startswith(scope_name + "/") else base
            predicted = predicted.rstrip("/").split(":")[0]
        if predicted is not None:
            # Graph mode uniquified a repeated name (two TF 1 Adams: beta1_power, beta1_power_1);
            # eager does not: the k-th variable of a name stands for graph mode's `name_k`.
            count = occurrences.get(predicted, 0)
            occurrences[predicted] = count + 1
            if count:
                predicted = f"{predicted}_{count}"
        if predicted in init:
            value = init[predicted]
            kwargs["initial_value"] = lambda: tf.constant(value)
        var = next_creator(**kwargs)
        real = var.name.split(":")[0]
        if predicted is not None and real != predicted and real == predicted.rsplit("_", 1)[0]:
            renamed[id(var)] = predicted
            real = predicted
        if predicted in init:
            if real == predicted:
                aligned[real] = predicted
            else:
                problems.append(f"variable created as {real!r}, expected {predicted!r}: initial value not aligned")
        created.append(var)
        return var

    buf = io.StringIO()
    scope: Dict[str, Any] = {"__name__": "__main__"}
    result: Dict[str, Any] = {"ok": True}
    try:
        with tf.variable_creator_scope(creator), contextlib.redirect_stdout(buf):
            exec(compile(source, "<script>", "exec"), scope)  # noqa: S102 - test harness
    except BaseException as exc:  # noqa: BLE001 - reported
        result = {"ok": False, "error": f"{type(exc).__name__}: {str(exc)[:800]}{_where(exc)}"}
    final: Dict[str, Any] = {}
    seen: Dict[str, int] = {}
    for var in created:
        name = renamed.get(id(var)) or var.name.split(":")[0]
        seen[name] = seen.get(name, 0) + 1
        try:
            final[name] = encode(var.numpy())
        except Exception as exc:  # noqa: BLE001
            problems.append(f"cannot read {name}: {type(exc).__name__}")
    dup = sorted(n for n, c in seen.items() if c > 1)
    if dup:
        problems.append(f"several variables share a name: {dup}")
    unaligned = sorted(n for n in final if n in init and n not in aligned)
    if unaligned:
        problems.append(f"created outside the creator scope's alignment: {unaligned}")
    result.update(stdout=buf.getvalue(), final=final, aligned=sorted(aligned), problems=problems,
                  renamed=sorted(renamed.values()))
    return result


def _files(root: str) -> set:
    return {os.path.relpath(os.path.join(d, f), root) for d, _, files in os.walk(root) for f in files}


def _checkpoints(root: str, written: List[str]) -> Dict[str, Any]:
    """Each checkpoint among the files ``written`` (relative paths): its prefix -> {tensor key:
    encoded array}; each ``checkpoint`` state file -> its text with the work directory taken out."""
    import tensorflow as tf

    out: Dict[str, Any] = {}
    for path in written:
        if path.endswith(".index"):
            prefix = path[: -len(".index")]
            reader = tf.train.load_checkpoint(os.path.join(root, prefix))
            out[prefix] = {key: encode(reader.get_tensor(key)) for key in reader.get_variable_to_shape_map()}
        elif os.path.basename(path) == "checkpoint":
            with open(os.path.join(root, path)) as fh:
                out[path] = fh.read().replace(root + os.sep, "").replace(root, "")
    return out


def main() -> int:
    side = sys.argv[1]
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for path in (os.path.join(root, "tests"), root):
        if path not in sys.path:
            sys.path.insert(0, path)
    import warnings

    warnings.filterwarnings("ignore")
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.get_logger().setLevel("ERROR")
    if side == "before":
        tf.compat.v1.disable_eager_execution()
    from _aligned_dropout import align_dropout_masks  # tests/ is on sys.path

    align_dropout_masks()  # the same tf.nn.dropout masks on both sides (see that module)
    # scripts run in a fresh directory holding MNIST-format files in MNIST_data/ (the same files
    # on both sides: what TF 1's tutorial loader and tfclip_compat.mnist read)
    import shutil

    from reference.mnist_input_data import fake_mnist_workdir

    work = fake_mnist_workdir(f"tfclip-fuzz-{side}-")
    os.chdir(work)
    protocol.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        existing = _files(work)
        try:
            if side == "before":
                answer = run_before(job["source"])
            else:
                answer = run_after(job["source"], job.get("initial") or {})
        except BaseException as exc:  # noqa: BLE001 - keep serving
            answer = {"ok": False, "error": f"harness: {type(exc).__name__}: {exc}"}
        written = sorted(_files(work) - existing)
        if written:  # checkpoints the script saved: reported, then removed for the next job
            try:
                answer["checkpoints"] = _checkpoints(work, written)
            except BaseException as exc:  # noqa: BLE001 - reported
                answer.setdefault("problems", []).append(f"cannot read the checkpoints written: {exc}")
            for path in written:
                os.remove(os.path.join(work, path))
        protocol.write(json.dumps(answer) + "\n")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
