"""``jobdef diff OLD NEW``: what a change to the sheets does to the behaviour of each job."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from jobdef.cli import EXIT_FINDINGS, EXIT_OK
from jobdef.cli.options import add_lang, add_sheets, config_from


def run(args: argparse.Namespace) -> int:
    from jobdef.review.diff import diff_registries
    from jobdef.review.render import render
    from jobdef.review.sources import is_git_spec, load_side, resolve_folder

    config = config_from(args)
    cwd = Path.cwd()
    sheets, root = Path(config.sheets), Path(config.root)
    # A bare git:REV reads the folder that the other side names, so both cover the same sheets.
    folders = [resolve_folder(s, sheets, root) for s in (args.old, args.new) if not is_git_spec(s)]
    git_folder = folders[0] if folders else sheets
    old, new = (
        load_side(spec, sheets=sheets, project_root=root, cwd=cwd, git_folder=git_folder)
        for spec in (args.old, args.new)
    )
    for side in (old, new):
        if side.files == 0:
            note = f"{side.label} holds no sheets; every job counts as added or removed"
            print(f"jobdef diff: note: {note}", file=sys.stderr)
    from jobdef.review.diff import DiffContext
    from jobdef.review.handler_source import calls_first_run

    code_folders = [*config.pythonpath, *sys.path]  # read, never imported
    first_run = frozenset(
        job.name for job in old.registry if calls_first_run(job.handler, code_folders)
    )
    active = recorded = None
    if args.db:
        from jobdef.cli.active_jobs import active_jobs, recorded_jobs

        active = active_jobs(args.db)
        recorded = recorded_jobs(args.db, old.registry, time.time())
    context = DiffContext(active=active, recorded=recorded, first_run=first_run)
    diff = diff_registries(old.registry, new.registry, active, context)
    print(render(diff, old.label, new.label, args.format, config.lang), end="")
    if args.fail_on == "breaking" and diff.breaking:
        return EXIT_FINDINGS
    return EXIT_OK


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "diff",
        help="what a change to the sheets does to each job (for pull request review)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Compare the effective policies of two versions of the sheets: added, removed\n"
            "and renamed jobs, every changed value (a Defaults change shows on each job it\n"
            "reaches) and its consequence in words. OLD and NEW are folders or git\n"
            "revisions (git:main, git:HEAD~1, git:REV:PATH), read without a checkout."
        ),
        epilog=(
            "examples:\n"
            "  jobdef diff git:main .\n"
            "  jobdef diff git:HEAD~1 git:HEAD --format markdown\n"
            "  jobdef diff old-sheets/ new-sheets/ --fail-on breaking"
        ),
    )
    parser.add_argument("old", metavar="OLD", help="folder or git:REV of the version before")
    parser.add_argument("new", metavar="NEW", help="folder or git:REV of the version after")
    parser.add_argument(
        "--format",
        choices=("text", "markdown", "json"),
        default="text",
        help="text for a terminal, markdown for a pull request comment, json for tools "
        "(default: text)",
    )
    parser.add_argument(
        "--fail-on",
        choices=("breaking", "never"),
        default="never",
        help="exit 1 when a change is breaking (default: never, exit 0)",
    )
    add_sheets(parser, purpose="that a project folder or a bare git:REV stands for")
    parser.add_argument(
        "--db",
        metavar="URL",
        help="also count the jobs queued or running under the old policy in this job "
        "database (read only; sqlite:///jobdef.db or postgresql://host/db; default: none, "
        "no counts)",
    )
    add_lang(parser)
    parser.set_defaults(handler=run)
