"""``jobdef validate``: check sheets and report every finding, with file:line:col.

Exit codes are decided here, in :func:`exit_code`: 0 clean, 1 findings (errors,
or warnings under ``--strict``), 2 usage error or unreadable input (raised as a
:class:`~jobdef.errors.JobdefError` and turned into exit 2 by :func:`jobdef.cli.main`).
Imports are lazy: ``jobdef --help`` and the other commands never pay for the
validator, and validating never imports the runtime.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from jobdef.cli import EXIT_FINDINGS, EXIT_OK

if TYPE_CHECKING:
    from jobdef.sheets.diagnostics import Diagnostic

FORMATS = ("text", "json", "github", "sarif", "junit")


# The rules about a handler itself (its shape, its import, its parameters).
HANDLER_RULES = frozenset({"JD301", "JD302", "JD303"})
# What --check-imports says of each handler that imports: how the worker will call it.
HOW_RUN = {
    "sync": "a plain function, called in a handler process",
    "async": "a coroutine function, awaited on an event loop in a handler process",
    "celery": "a Celery task, which a Celery worker calls with the args alone",
    "rq": "a function that RQ calls with the args alone (its job names runtime.rq)",
}


def exit_code(diagnostics: Sequence[Diagnostic], strict: bool) -> int:
    """0 when nothing fails the run, 1 when an error (or, with ``strict``, a warning) does."""
    for diagnostic in diagnostics:
        if diagnostic.severity == "error" or strict:
            return EXIT_FINDINGS
    return EXIT_OK


def run(args: argparse.Namespace) -> int:
    from jobdef.reporters import Report, render
    from jobdef.sheets.files import project_root
    from jobdef.sheets.pipeline import validate_sheets

    started, clock = datetime.now(UTC), time.perf_counter()
    paths = args.paths
    if not paths or args.check_imports:
        from jobdef.project import load_config, use_pythonpath

        config = load_config({"pythonpath": args.pythonpath, "sheets": args.sheets})
        paths = paths or [config.sheets]
        if args.check_imports:
            use_pythonpath(config)  # as the worker will import the handlers
    result = validate_sheets(paths, check_imports=args.check_imports)
    diagnostics = result.diagnostics
    if args.check_env and not any(d.severity == "error" for d in diagnostics):
        from jobdef.sheets.build import build_registry
        from jobdef.sheets.diagnostics import sort_diagnostics
        from jobdef.sheets.rules.notify import check_env

        registry = build_registry(result.documents)
        diagnostics = sort_diagnostics([*diagnostics, *check_env(registry, os.environ)])
    report = Report(
        diagnostics,
        result.files,
        strict=args.strict,
        root=str(project_root()),
        started=started,
        elapsed=time.perf_counter() - clock,
    )
    sys.stdout.write(render(args.format, report))
    if args.check_imports and args.format == "text":
        from jobdef.sheets.rules.imports import handler_kinds

        # A handler with a finding at its line is not said to import and fit.
        flagged = {(d.file, d.line) for d in diagnostics if d.code in HANDLER_RULES}
        fine = [
            job
            for job in result.jobs
            if (origin := job.origin("handler")) is None
            or (origin.file, origin.line) not in flagged
        ]
        for handler, kind in handler_kinds(fine):
            sys.stdout.write(f"handler {handler} imports and takes its args: {HOW_RUN[kind]}\n")
    if args.format == "github" and os.environ.get("GITHUB_STEP_SUMMARY"):
        from jobdef.reporters.github_report import summary

        with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as stream:
            stream.write(summary(report))
    from jobdef.sheets.local_schema import is_stale, stale_note

    if is_stale(Path(report.root or ".")):
        print(stale_note(Path(report.root or ".")), file=sys.stderr)
    return exit_code(diagnostics, args.strict)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from jobdef.cli.config import add_pythonpath
    from jobdef.cli.options import add_sheets

    parser = subparsers.add_parser(
        "validate",
        help="check sheets: strict YAML, the schema and every semantic rule",
        description="Check job definition sheets and report every finding with "
        "file:line:col. Exit 0 when clean, 1 on findings, 2 on usage errors or "
        "unreadable input.",
    )
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="sheet files or folders (default: --sheets, else [tool.jobdef] sheets, else jobdefs)",
    )
    add_sheets(parser, purpose="to check when no PATH is given")
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="output format, one of text, json, github (annotations, and the table in "
        "$GITHUB_STEP_SUMMARY), sarif (code scanning), junit (test reports) (default: text)",
    )
    parser.add_argument("--strict", action="store_true", help="warnings fail the run too")
    parser.add_argument(
        "--check-imports",
        action="store_true",
        help="import handlers and dotted error classes and check what they are",
    )
    add_pythonpath(parser)
    parser.add_argument(
        "--check-env",
        action="store_true",
        help="also check this environment: every variable the channels in use name is set "
        "(as the worker checks at start; runs when the sheets have no errors)",
    )
    parser.set_defaults(handler=run)
