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

from typing import Any


def main(*args: Any, **kwargs: Any) -> int:
    """The ``tfclip-migrate`` entry point: :func:`codemods.cli.app.main`, imported on call so that
    importing any module of this package never imports the whole command."""
    from codemods.cli.app import main as run

    return run(*args, **kwargs)


__all__ = ["main"]
