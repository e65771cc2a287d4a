"""``jobdef tsv``: the classic job definition sheet as TSV, for pasting into a spreadsheet."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from jobdef.cli.options import add_lang, add_sheets, config_from, registry_from
from jobdef.render.tsv import job_tsv, overview_tsv


def run(args: argparse.Namespace) -> int:
    config = config_from(args)
    registry = registry_from(config)
    if args.name:
        text = job_tsv(registry.job(args.name), registry, config.lang, bom=args.bom)
    else:
        text = overview_tsv(registry, config.lang, bom=args.bom)
    data = text.encode("utf-8")
    if args.output:
        Path(args.output).write_bytes(data)
    else:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "tsv",
        help="print a job's definition sheet (or an overview of all jobs) as TSV",
        description="Print tab-separated text that pastes cleanly into a spreadsheet. With "
        "NAME: the three-column sheet of that job (item, what to write, value; 14 lines). "
        "Without: one row per job and one column per item. Cells never contain tabs or "
        "line breaks and never start a formula.",
    )
    parser.add_argument(
        "name", nargs="?", metavar="NAME", help="the job (default: all jobs, one row each)"
    )
    add_sheets(parser)
    add_lang(parser)
    parser.add_argument(
        "--bom", action="store_true", help="start with a UTF-8 byte order mark (for Excel)"
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    parser.set_defaults(handler=run)
