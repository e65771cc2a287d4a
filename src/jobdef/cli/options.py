"""Options shared by the commands that read sheets and render them (docs, tsv, explain),
and the job id of the commands that take one."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from jobdef.cli.config import Config, load_config
from jobdef.errors import ConfigError

if TYPE_CHECKING:
    from jobdef.policy.registry import Registry


# Job ids are 64-bit signed integers in both engines (SQLite INTEGER, PostgreSQL bigint).
MAX_JOB_ID = 2**63 - 1


def job_id(text: str) -> int:
    """An argparse ``type`` for a job id: checked here, so no engine sees a number it
    cannot hold (SQLite raised OverflowError, PostgreSQL NumericValueOutOfRange)."""
    try:
        value = int(text, 10)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_JOB_ID:
        raise argparse.ArgumentTypeError(
            f"{text[:40]!r} is not a job id; write a whole number from 1 to "
            f"{MAX_JOB_ID} (see jobdef jobs)"
        )
    return value


def add_sheets(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sheets",
        metavar="PATH",
        help="folder (or file) of job definition sheets (default: [tool.jobdef] sheets, "
        "else jobdefs)",
    )


def add_lang(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--lang",
        choices=("en", "ja"),
        help="language of the output (default: [tool.jobdef] lang, else en)",
    )


def add_templates(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--templates",
        metavar="DIR",
        help="folder of Jinja2 templates that replace built-in ones of the same name "
        "(default: [tool.jobdef] templates)",
    )


def config_from(args: argparse.Namespace, **extra: str | None) -> Config:
    """The configuration with this command's flags applied on top."""
    flags = {key: getattr(args, key, None) for key in ("sheets", "lang", "templates")}
    return load_config({**flags, **extra})


def registry_from(config: Config) -> Registry:
    """The registry of the configured sheets; a missing folder is a clear error."""
    from jobdef.sheets.pipeline import load_registry  # not for the job-store commands

    if not Path(config.sheets).exists():
        raise ConfigError(
            f"sheets folder {config.sheets!r} does not exist; pass --sheets PATH "
            "or set [tool.jobdef] sheets"
        )
    return load_registry([config.sheets])
