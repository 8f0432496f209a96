"""A fuzz worker process: imports TensorFlow once, then checks programs on request.

Protocol (one JSON object per line): the parent writes ``{"seed": S, "index": I, "mode": M}``
to stdin; the worker answers one line on the *original* stdout. Everything a program prints
(and TensorFlow's own chatter) goes to stderr, so it cannot corrupt the protocol. ``mode`` is
``"diff"`` (the differential check, ``oracle.check``) or ``"checkpoint"``
(``checkpoint.check``). Started by ``runner.Pool``: ``python -m tests.fuzz._worker``.
"""

from __future__ import annotations

import gc
import json
import os
import sys


def main() -> int:
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # print() of the executed programs lands on stderr
    sys.stdout = sys.stderr
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for path in (os.path.join(root, "tests"), root):
        if path not in sys.path:
            sys.path.insert(0, path)
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.get_logger().setLevel("ERROR")
    from tests.fuzz import checkpoint, oracle

    oracle.install_world()
    protocol.write(json.dumps({"ready": True}) + "\n")
    served = 0
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        try:
            if job.get("mode") == "checkpoint":
                result = checkpoint.check(job["seed"], job["index"])
            else:
                result = oracle.check(job["seed"], job["index"], exact_unsafe=bool(job.get("exact_unsafe")))
        except BaseException as exc:  # noqa: BLE001 - report, keep serving
            result = {"seed": job["seed"], "index": job["index"], "verdict": "harness-error",
                      "detail": f"{type(exc).__name__}: {exc}"}
        protocol.write(json.dumps(result, default=str) + "\n")
        served += 1
        if served % 25 == 0:
            gc.collect()  # clear_session(free_memory=False) per program leaves this to us
    return 0


if __name__ == "__main__":
    sys.exit(main())
