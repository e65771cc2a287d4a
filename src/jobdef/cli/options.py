"""Options shared by the commands that read sheets and render them (docs, tsv, explain),
and the job id of the commands that take one."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jobdef.errors import ConfigError

if TYPE_CHECKING:
    from jobdef.policy.registry import Registry
    from jobdef.project import Config


# Job ids are 64-bit signed integers in both engines (SQLite INTEGER, PostgreSQL bigint).
MAX_JOB_ID = 2**63 - 1


def job_id(text: str) -> int | None:
    """``text`` as a job id, or None when it is not one (not a whole number from 1 to
    :data:`MAX_JOB_ID`)."""
    try:
        value = int(text, 10)
    except ValueError:
        return None
    return value if 1 <= value <= MAX_JOB_ID else None


def whole_number(low: int, high: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number from ``low`` to ``high``. Anything else is
    argparse's one line naming the option and the range, before any engine sees a
    number it cannot hold (SQLite raised OverflowError on a --limit of 10**20, and read
    a negative LIMIT as none)."""

    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"expected a whole number from {low:,} to {high:,}, got {text[:40]!r}"
            )
        return value

    return parse


class JobIds(argparse.Action):
    """``action=JobIds`` for a job id argument (one or, with ``nargs``, several): each is
    checked while the arguments are parsed, so no engine sees a number it cannot hold
    (SQLite raised OverflowError, PostgreSQL NumericValueOutOfRange). A bad one is one
    line and exit 2, without argparse's usage lines."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        if values is None:  # an optional id left out (nargs="?"): its default
            setattr(namespace, self.dest, self.default)
            return
        texts = [values] if isinstance(values, str) else list(values)
        ids = []
        for text in texts:
            value = job_id(text)
            if value is None:
                parser.exit(
                    2,
                    f"{parser.prog}: error: {str(text)[:40]!r} is not a job id; write a "
                    f"whole number from 1 to {MAX_JOB_ID} (see jobdef jobs)\n",
                )
            ids.append(value)
        setattr(namespace, self.dest, ids[0] if isinstance(values, str) else ids)


def add_sheets(parser: argparse.ArgumentParser, purpose: str = "") -> None:
    """``--sheets`` of a command that reads sheets (``purpose``: what else it does there)."""
    parser.add_argument(
        "--sheets",
        metavar="PATH",
        help=f"folder (or file) of job definition sheets{' ' + purpose if purpose else ''} "
        "(default: JOBDEF_SHEETS, [tool.jobdef] sheets, else jobdefs)",
    )


def add_output(
    parser: argparse.ArgumentParser,
    *,
    what: str,
    default: str,
    metavar: str = "FILE",
    aliases: Sequence[str] = (),
) -> None:
    """``-o/--output`` of a command that writes a file (``aliases``: older spellings such as
    ``--out``, kept working). ``what`` is what is written, ``default`` where it goes without
    the option; both go into the help text."""
    stdout = ", - for standard output" if metavar == "FILE" else ""
    parser.add_argument(
        "-o",
        "--output",
        *aliases,
        dest="output",
        metavar=metavar,
        help=f"write {what} to {metavar}{stdout} (default: {default})",
    )


# The output formats of commands that list or show things.
LIST_FORMATS = ("text", "json")


def add_format(
    parser: argparse.ArgumentParser,
    choices: Sequence[str] = LIST_FORMATS,
    default: str = "text",
    note: str = "json holds the same facts as the text, for scripts",
) -> None:
    """``--format`` of a command that lists or shows things: ``text`` for people, ``json``
    for scripts."""
    parser.add_argument(
        "--format",
        choices=tuple(choices),
        default=default,
        help=f"output format, one of {', '.join(choices)} (default: {default}; {note})",
    )


def plain(docstring: str | None) -> str:
    """A module docstring as a command's description: plain sentences, without the
    reStructuredText of the source (the leading ````jobdef x````: label, ````literals````,
    ``:func:`x``` roles)."""
    text = re.sub(r"^``[^`]+``:\s*", "", (docstring or "").strip())
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"\1", text)
    text = text.replace("``", "")
    return text[:1].upper() + text[1:]


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
    # Not at the top: `jobdef validate PATH` reads no configuration (nor pyproject.toml).
    from jobdef.project import load_config

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
