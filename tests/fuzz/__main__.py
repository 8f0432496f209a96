"""``python -m tests.fuzz``: the fuzzer's command line (see ``tests/fuzz/cli.py``)."""

import sys

from tests.fuzz.cli import main

sys.exit(main())
