"""``jobdef tsv``: the classic job definition sheet as TSV, for pasting into a spreadsheet."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from jobdef.cli.options import add_lang, add_output, add_sheets, config_from, registry_from
from jobdef.errors import UsageError
from jobdef.render.tsv import flow_tsv, job_tsv, overview_tsv
from jobdef.sheets.files import write_atomic


def run(args: argparse.Namespace) -> int:
    config = config_from(args)
    registry = registry_from(config)
    if args.name:
        registry.known(args.name)
    if args.name and args.name in registry.workflows:
        flow = registry.workflow(args.name)
        text = flow_tsv(flow, registry, config.lang, bom=args.bom)
    elif args.name:
        text = job_tsv(registry.job(args.name), registry, config.lang, bom=args.bom)
    else:
        text = overview_tsv(registry, config.lang, bom=args.bom)
    data = text.encode("utf-8")
    if args.output and args.output != "-":
        write_output(Path(args.output), data)
    else:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    return 0


def write_output(path: Path, data: bytes) -> None:
    """Write ``-o FILE`` (a symlink there is replaced, never written through); a folder or
    a path that cannot be written is one line."""
    if path.is_dir():
        raise UsageError(f"-o {path} is a folder; give a file name, such as {path / 'jobs.tsv'}")
    try:
        write_atomic(path, data)
    except OSError as exc:
        raise UsageError(
            f"cannot write -o {path}: {exc.strerror or exc}; give a file in a folder that "
            "exists and that you can write to"
        ) from None


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "tsv",
        help="print a job's definition sheet, a workflow's steps, or an overview of all jobs "
        "as TSV",
        description="Print tab-separated text that pastes cleanly into a spreadsheet. With "
        "NAME: the three-column sheet of that job (item, what to write, value; 14 lines), or "
        "for a workflow one row per step (step, job, waits for, if it fails, args, latest "
        "start, step worst case, latest end, critical path). "
        "Without: one row per job and one column per item. Cells never contain tabs or "
        "line breaks and never start a formula.",
    )
    parser.add_argument(
        "name",
        nargs="?",
        metavar="NAME",
        help="the job or workflow (default: all jobs, one row each)",
    )
    add_sheets(parser)
    add_lang(parser)
    parser.add_argument(
        "--bom", action="store_true", help="start with a UTF-8 byte order mark (for Excel)"
    )
    add_output(parser, what="the table", default="standard output")
    parser.set_defaults(handler=run)
