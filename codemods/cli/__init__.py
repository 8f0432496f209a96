"""``tfclip-migrate``: the command over files, trees and notebooks (never imports TensorFlow).

* :mod:`~codemods.cli.app` -- argument parsing and the subcommands (``main``);
* :mod:`~codemods.cli.config`, :mod:`~codemods.cli.discovery` -- configuration and which files run;
* :mod:`~codemods.cli.process`, :mod:`~codemods.cli.runner`, :mod:`~codemods.cli.pool` -- one file,
  the run, worker processes;
* :mod:`~codemods.cli.results` -- what processing one file produces (findings, the file's report);
* :mod:`~codemods.cli.cache`, :mod:`~codemods.cli.writes`, :mod:`~codemods.cli.signals` -- results
  cache, safe writes, clean stops;
* :mod:`~codemods.cli.report`, :mod:`~codemods.cli.spool`, :mod:`~codemods.cli.formats`,
  :mod:`~codemods.cli.quoting` -- what is printed (text, JSON, SARIF, GitHub, JUnit).
"""

import sys
from typing import Any, NoReturn


def main(*args: Any, **kwargs: Any) -> int:
    """Run the command in this process and return its exit code (tests, embedders):
    :func:`codemods.cli.app.main`, imported on call so that importing any module of this package
    never imports the whole command."""
    from codemods.cli.app import main as run

    return run(*args, **kwargs)


def console(argv: Any = None, **kwargs: Any) -> NoReturn:
    """The ``tfclip-migrate`` script: run the command and exit with its code. The signal handlers
    stay installed until the process is gone, so a SIGTERM that arrives after the report is
    complete cannot turn a finished run into a process killed by a signal."""
    from codemods.cli.app import main as run

    sys.exit(run(argv, own_process=True, **kwargs))


__all__ = ["console", "main"]
