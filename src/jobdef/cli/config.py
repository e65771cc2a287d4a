"""The command-line face of the project configuration (:mod:`jobdef.project`)."""

from __future__ import annotations

import argparse


def add_pythonpath(parser: argparse.ArgumentParser) -> None:
    """The ``--pythonpath`` flag of the commands that import handlers."""
    parser.add_argument(
        "--pythonpath",
        metavar="DIRS",
        help="folders to import handlers from, first on sys.path, separated as in "
        "PYTHONPATH (default: JOBDEF_PYTHONPATH, [tool.jobdef] pythonpath, the folder of "
        "the pyproject.toml holding [tool.jobdef], else the working directory)",
    )
