"""``python -m tests.fuzz_eager --seed S --programs N``: the eager-migration fuzzer's CLI."""

from __future__ import annotations

import argparse
import json
import sys

from tests.fuzz_eager import runner


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz_eager", description=__doc__)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--programs", type=int, default=20, help="indices 0..N-1 (or --start..)")
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--index", type=int, help="one program")
    parser.add_argument("--show", action="store_true", help="print the program, its verdict and its rewrite")
    parser.add_argument("--rtol", type=float, default=0.0, help="0 (default): bit for bit")
    parser.add_argument("--json", help="write every result to this file")
    parser.add_argument("--progress", action="store_true")
    parser.add_argument("--notebook", action="store_true", help="each program cut into notebook cells (.ipynb)")
    parser.add_argument("--tag", help="only the programs of the range with a grammar tag starting with this "
                                      "(e.g. `rnn:` for the round-14 RNN forms); generating is cheap, running is not")
    args = parser.parse_args(argv)
    if args.index is not None and args.show:
        print(runner.show(args.seed, args.index, args.rtol))
        return 0
    indices = [args.index] if args.index is not None else range(args.start, args.start + args.programs)
    if args.tag:
        from tests.fuzz_eager.generator import program

        indices = [i for i in indices if any(t.startswith(args.tag) for t in program(args.seed, i).tags)]
    report = runner.run(args.seed, indices, rtol=args.rtol, progress=args.progress, notebook=args.notebook)
    print(runner.format_summary(report))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1, default=str)
    return 1 if report["summary"]["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
