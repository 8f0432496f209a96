"""Run one command in a fresh child process and report its cost as one JSON line.

Usage: ``python benchmarks/_measure.py [--cwd DIR] [--stdout FILE] -- CMD ARGS...``

Printed keys: ``wall`` (s, around the child only, not this wrapper's start-up), ``cpu`` (s, user +
system of the child and every descendant it waited for, e.g. ``--jobs`` workers), ``maxrss_mb``
(peak resident set of the largest single descendant, ``getrusage(RUSAGE_CHILDREN).ru_maxrss``) and
``rc``. This wrapper runs *one* command, so ``RUSAGE_CHILDREN`` covers exactly that command.
With ``--timeout S`` the command (its whole process group) is killed after S seconds and
``timed_out`` is true: ``wall`` and ``cpu`` are then lower bounds.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import time


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, run the command once, print the JSON measurement."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cwd", default=None, help="working directory of the command")
    parser.add_argument("--stdout", default=None, help="file that receives the command's stdout")
    parser.add_argument("--stderr", default=None, help="file that receives the command's stderr")
    parser.add_argument("--timeout", type=float, default=None, help="kill the command after this many s")
    parser.add_argument("cmd", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args(argv)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        parser.error("no command given after --")
    out = open(args.stdout, "wb") if args.stdout else subprocess.DEVNULL
    err = open(args.stderr, "wb") if args.stderr else subprocess.DEVNULL
    timed_out = False
    try:
        start = time.perf_counter()
        # A process group of its own, so a timeout also ends the command's workers.
        child = subprocess.Popen(cmd, cwd=args.cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                 start_new_session=True)
        try:
            rc = child.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(child.pid, signal.SIGKILL)
            rc = child.wait()
        wall = time.perf_counter() - start
    finally:
        for handle in (out, err):
            if handle is not subprocess.DEVNULL:
                handle.close()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    # Linux reports ru_maxrss in KiB (macOS in bytes).
    rss_kib = usage.ru_maxrss / 1024 if sys.platform == "darwin" else usage.ru_maxrss
    print(json.dumps({
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "maxrss_mb": rss_kib / 1024,
        "rc": rc,
        "timed_out": timed_out,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
