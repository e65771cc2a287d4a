"""The ``jobdef`` command line.

Each subcommand lives in its own module under :mod:`jobdef.cli` and exposes
``register(subparsers)``, which adds its parser and sets ``handler`` to a
function ``(args) -> int``. Exit codes are decided here and in those handlers
only: 0 clean, 1 findings, 2 usage error or unreadable input.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import importlib
import os
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from jobdef import __version__
from jobdef.errors import JobdefError
from jobdef.render.escape import clip, visible

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2

# Commands that read, check or store and then exit, run without the cyclic garbage
# collector: what they make holds next to no cycles (`jobdef validate` of 2,000 sheets
# peaks at the same memory without it), yet each collection walks every object the
# imports and the sheets made, a fifth of such a run's CPU. It is on again when the
# command returns: main is called in-process too (tests, an application's own code).
WITHOUT_GC = frozenset({"validate", "enqueue"})

# Subcommand modules, in the order `jobdef --help` lists them.
COMMANDS: tuple[str, ...] = (
    "init",
    "schema",
    "validate",
    "docs",
    "tsv",
    "explain",
    "export",
    "check",
    "diff",
    "new",
    "worker",
    "enqueue",
    "start",
    "result",
    "wait",
    "status",
    "jobs",
    "queues",
    "workers",
    "requeue",
    "resolve",
    "cancel",
    "prune",
    "demo",
    "db",
    "notify",
    "dashboard",
)


def terminal_columns() -> int:
    """``shutil.get_terminal_size().columns``, read as it reads it (``COLUMNS``, else
    the terminal of stdout, else 80), without importing shutil: argparse asks for the
    width at every parser and argument it makes, and shutil loads the compression
    modules with it, 2 ms of each command's start."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    stdout = sys.__stdout__
    try:
        columns = os.get_terminal_size(stdout.fileno()).columns if stdout is not None else 0
    except (AttributeError, ValueError, OSError):  # closed, detached, or not a terminal
        columns = 0
    return columns or 80


class TerminalWidthFormatter(argparse.HelpFormatter):
    """argparse's help layout, at the width it would choose (:func:`terminal_columns`)."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        if width is None:
            width = terminal_columns() - 2  # as argparse does
        super().__init__(prog, indent_increment, max_help_position, width)


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a wrong argument is one line, as every other error of the CLI:
    what is wrong and where the options are listed, without the usage block before it.
    The commands' parsers are of this class too (subparsers take their parent's)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", TerminalWidthFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of ``only`` that one (its module alone is imported,
    so `jobdef validate` does not load the job store's code)."""
    parser = OneLineParser(
        prog="jobdef",
        description="Job definition sheets that validate, document and run your background jobs.",
    )
    parser.add_argument("--version", action="version", version=f"jobdef {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS if only is None else (only,):
        importlib.import_module(f"jobdef.cli.{name}_cmd").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    own_process = argv is None  # this process's command line: it ends with the command
    argv = sys.argv[1:] if argv is None else list(argv)
    first = next((arg for arg in argv if not arg.startswith("-")), None)
    pause = first in WITHOUT_GC and gc.isenabled()
    if pause:
        gc.disable()
    try:
        return _run(argv, first, own_process)
    finally:
        if pause:
            _age_what_was_made()
            gc.enable()


def _no_scan_at_exit() -> None:
    """Leave every object out of the collections the interpreter makes while it exits.

    They look for cycles among all objects, a twentieth of the instructions of `jobdef
    validate` of a few sheets, whose objects hold no file, connection or other resource
    that a collection would close (its findings are written and flushed before), and
    the memory goes with the process. Registered only by a process that is `jobdef
    validate` without --check-imports (which imports the project's own code): never by
    main called in-process, whose caller's objects stay collectable.
    """
    gc.freeze()


def _age_what_was_made() -> None:
    """Count what the command made as old, so that turning the collector on again does
    not start a collection of all of it at the next allocation (2.6 ms after `jobdef
    validate` of two sheets in a fresh interpreter).

    freeze() then unfreeze() moves every tracked object to the oldest generation, whose
    turn comes only after ten collections of the younger ones, and zeroes the count
    that starts a collection of the youngest; nothing is scanned and nothing is kept
    from the collector. Skipped when the process froze objects of its own (a server
    that forks), which unfreeze() would hand back to the collector."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


def _run(argv: list[str], first: str | None, own_process: bool) -> int:
    _printable_streams()
    parser = build_parser(first if first in COMMANDS else None)
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return EXIT_USAGE
    if own_process and args.command == "validate" and not args.check_imports:
        atexit.register(_no_scan_at_exit)  # no code but jobdef's and its libraries' ran
    # A command may treat this process as its own (a worker freezes its start-up's
    # objects out of the collector's scans); main called in-process leaves its caller's.
    args.own_process = own_process
    try:
        return int(args.handler(args))
    except JobdefError as exc:
        print(
            f"jobdef {args.command}: error: {_without_secrets(exc.message, args)}", file=sys.stderr
        )
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except UnicodeEncodeError:
        # Bytes of argv that are not UTF-8 arrive as lone surrogates; a name or a note
        # holding one cannot be stored or sent (a path can, and is used as given).
        from jobdef.redact import redact  # as in _without_secrets: on errors only

        not_utf8 = re.compile("[\ud800-\udfff]")  # lone surrogates: undecodable bytes
        bad = next((arg for arg in argv if not_utf8.search(arg)), "")
        message = (
            f"the argument {clip(redact(bad), 80)!r} holds bytes that are not UTF-8; "
            "pass it as UTF-8 text"
        )
        print(f"jobdef {args.command}: error: {_without_secrets(message, args)}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        if exc.filename is None:
            raise
        # A path no command checked for this (too long, a loop of links): one line.
        path = clip(os.fsdecode(exc.filename), 80)
        message = f"cannot use the path {path!r}: {exc.strerror or exc}; give a path that exists"
        print(f"jobdef {args.command}: error: {_without_secrets(message, args)}", file=sys.stderr)
        return EXIT_USAGE


def _printable_streams() -> None:
    """Print what the terminal cannot encode as an escape (``\\udc80``), not a traceback.

    A path from argv with bytes that are not UTF-8 holds lone surrogates; a strict
    stdout (a UTF-8 locale's) fails on them, and surrogateescape (the C locale's)
    would write the raw bytes, a C1 control among them, to the terminal.
    """
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def _without_secrets(message: str, args: argparse.Namespace) -> str:
    """``message`` redacted, its control characters escaped, and without the pieces of
    the database URL's password that a driver may quote out of context (a "port" cut
    from a password with a '/')."""
    # Imported here: a command that ends without an error never needs it.
    from jobdef.redact import redact, url_secrets

    urls = [getattr(args, "db", None) or "", os.environ.get("JOBDEF_DATABASE_URL", "")]
    shown = redact(message, [secret for url in urls for secret in url_secrets(url)])
    # Lines stay lines; what is inside them (args, a receiver's answer) is shown escaped.
    return "\n".join(visible(line) for line in shown.split("\n"))
