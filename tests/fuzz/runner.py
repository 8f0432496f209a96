"""Run many fuzz programs in a pool of worker processes and summarise the verdicts.

:func:`run_programs` hands ``(seed, index)`` jobs to ``jobs`` worker processes
(``python -m tests.fuzz._worker``, TensorFlow imported once each). A worker that dies (a
segfault in TensorFlow, the OOM killer) or runs past ``timeout`` seconds on one program is
replaced; that program gets the verdict ``worker-died`` / ``timeout`` and the run goes on.

:func:`summarise` turns the results into the figures of the long mode; :func:`failures` picks
the safe-fix failures; :func:`format_failure` prints one with everything needed to reproduce it.
"""

from __future__ import annotations

import collections
import difflib
import json
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAFE_FAILURES = ("differs", "crashes", "unparsable", "engine-error")
PROGRAM_FAILURES = ("before-invalid", "worker-died", "timeout", "harness-error")


class _Worker:
    def __init__(self) -> None:
        self.log = tempfile.TemporaryFile()
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=ROOT + os.pathsep + os.path.join(ROOT, "tests"))
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.fuzz._worker"], cwd=ROOT, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.lines: "queue.Queue[Optional[str]]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def wait_line(self, timeout: float) -> Tuple[str, Optional[dict]]:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            return "timeout", None
        if line is None:
            return "died", None
        return "ok", json.loads(line)

    def tail(self) -> str:
        self.log.seek(0, os.SEEK_END)
        self.log.seek(max(0, self.log.tell() - 1500))
        return self.log.read().decode("utf-8", "replace")

    def close(self) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001 - best effort, then kill this worker (ours)
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def run_programs(seed: int, indices: Iterable[int], *, jobs: int = 2, mode: str = "diff",
                 timeout: float = 120.0, exact_unsafe: bool = False,
                 progress: Optional[Callable[[dict], None]] = None) -> List[dict]:
    """Check every ``(seed, index)`` in ``jobs`` worker processes; results sorted by index."""
    todo: "queue.Queue[int]" = queue.Queue()
    for index in indices:
        todo.put(index)
    results: List[dict] = []
    lock = threading.Lock()

    def slot() -> None:
        worker = None
        while True:
            try:
                index = todo.get_nowait()
            except queue.Empty:
                break
            if worker is None:
                worker = _Worker()
                status, _ = worker.wait_line(300)
                if status != "ok":
                    raise RuntimeError(f"fuzz worker did not start ({status}):\n{worker.tail()}")
            worker.proc.stdin.write(json.dumps({"seed": seed, "index": index, "mode": mode,
                                                 "exact_unsafe": exact_unsafe}) + "\n")
            worker.proc.stdin.flush()
            status, result = worker.wait_line(timeout)
            if status != "ok":
                detail = f"worker {status} (exit code {worker.proc.poll()}); its last output:\n{worker.tail()}"
                result = {"seed": seed, "index": index, "verdict": "worker-died" if status == "died" else "timeout",
                          "detail": detail}
                worker.proc.kill()
                worker.close()
                worker = None
            with lock:
                results.append(result)
            if progress is not None:
                progress(result)
        if worker is not None:
            worker.close()

    threads = [threading.Thread(target=slot) for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(results, key=lambda r: r["index"])


def failures(results: List[dict], mode: str = "safe") -> List[dict]:
    """Programs whose ``mode`` fix failed, plus programs the harness could not check at all."""
    bad = []
    for r in results:
        if r.get("verdict") in PROGRAM_FAILURES:
            bad.append(r)
        elif r.get(mode, {}).get("verdict") in SAFE_FAILURES:
            bad.append(r)
    return bad


_NORMALISE = [
    (re.compile(r"`[^`]*`"), "`…`"),
    (re.compile(r"'[^']*'"), "'…'"),
    (re.compile(r'"[^"]*"'), '"…"'),
    (re.compile(r"\b\d+(\.\d+)?\b"), "N"),
]


def normalise(message: str) -> str:
    """A decline message with the program's own names and numbers taken out (for ranking)."""
    for pattern, repl in _NORMALISE:
        message = pattern.sub(repl, message)
    return message


def summarise(results: List[dict], seconds: float) -> Dict[str, Any]:
    """The figures of a run (counts by verdict per mode, decline reasons ranked)."""
    n = len(results)
    valid = [r for r in results if r.get("verdict") == "ok"]
    summary: Dict[str, Any] = {"programs": n, "seconds": round(seconds, 1),
                               "program_verdicts": dict(collections.Counter(r.get("verdict") for r in results))}
    for mode in ("safe", "unsafe"):
        verdicts = collections.Counter(r[mode]["verdict"] for r in valid if mode in r)
        rewritten = sum(v for k, v in verdicts.items() if k != "unchanged")
        summary[mode] = {"verdicts": dict(verdicts), "rewritten": rewritten,
                         "rewritten_pct": round(100.0 * rewritten / max(1, len(valid)), 1),
                         "failures": sum(verdicts[k] for k in SAFE_FAILURES)}
    reasons: collections.Counter = collections.Counter()
    declined = 0
    for r in valid:
        found = {normalise(d["message"]) for d in r["safe"].get("diagnostics", [])
                 if not d["applied"] and d["code"] == "TFC202"}
        if found:
            declined += 1
        reasons.update(found)
    summary["declined_unchanged"] = sum(
        1 for r in valid if r["safe"]["verdict"] == "unchanged"
        and any(not d["applied"] and d["code"] == "TFC202" for d in r["safe"].get("diagnostics", [])))
    summary["unsafe_only_failures"] = sum(
        1 for r in valid if r["unsafe"]["verdict"] in SAFE_FAILURES and r["unsafe"].get("code") != r["safe"].get("code"))
    summary["declined"] = declined
    summary["declined_pct"] = round(100.0 * declined / max(1, len(valid)), 1)
    summary["decline_reasons"] = reasons.most_common()
    return summary


def format_failure(r: dict, mode: str = "safe") -> str:
    """One failing program: how to reproduce it, the verdict, the source and the diff."""
    lines = [f"=== seed {r['seed']} index {r['index']} ({r.get('kind', '?')}): "
             f"{r.get('verdict') if r.get('verdict') != 'ok' else mode + ' fix ' + r[mode]['verdict']}",
             f"reproduce: python benchmarks/fuzz.py --seed {r['seed']} --index {r['index']} --show"]
    detail = r.get("detail") if r.get("verdict") != "ok" else r[mode].get("detail")
    lines.append(f"detail: {detail}")
    entry = r.get(mode) or {}
    applied = [f"{d['line']}: {d['code']} {d['message']}" for d in entry.get("diagnostics", []) if d["applied"]]
    if applied:
        lines.append("applied: " + " | ".join(applied))
    source = r.get("source", "")
    lines += ["--- source", source.rstrip()]
    if entry.get("code"):
        diff = difflib.unified_diff(source.splitlines(), entry["code"].splitlines(), "before", "after", lineterm="")
        lines += ["--- diff"] + list(diff)
    return "\n".join(lines)


def timed_run(seed: int, indices: Iterable[int], **kwargs: Any) -> Tuple[List[dict], float]:
    start = time.perf_counter()
    results = run_programs(seed, indices, **kwargs)
    return results, time.perf_counter() - start
