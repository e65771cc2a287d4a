"""Options shared by the commands that read sheets and render them (docs, tsv, explain)."""

from __future__ import annotations

import argparse
from pathlib import Path

from jobdef.cli.config import Config, load_config
from jobdef.errors import ConfigError
from jobdef.policy.registry import Registry
from jobdef.sheets.pipeline import load_registry


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
    if not Path(config.sheets).exists():
        raise ConfigError(
            f"sheets folder {config.sheets!r} does not exist; pass --sheets PATH "
            "or set [tool.jobdef] sheets"
        )
    return load_registry([config.sheets])
