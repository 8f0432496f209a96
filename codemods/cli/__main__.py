"""``python -m codemods.cli``: the same as ``tfclip-migrate``."""

import sys

from codemods.cli.app import main

sys.exit(main())
