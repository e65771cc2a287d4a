"""``jobdef export``: the resolved policy of every job as JSON, or as a runtime's own settings."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from jobdef.cli.options import add_output, add_sheets, config_from, registry_from
from jobdef.cli.tsv_cmd import write_output
from jobdef.render.escape import visible
from jobdef.render.export import FORMATS, export


def run(args: argparse.Namespace) -> int:
    config = config_from(args)
    registry = registry_from(config)
    result = export(registry, args.format, args.names, base=config.root)
    data = result.text.encode("utf-8")
    if args.output and args.output != "-":
        write_output(Path(args.output), data)
    else:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    for note in result.notes:
        print(f"jobdef export: note: {visible(note.line())}", file=sys.stderr)
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "export",
        help="export the resolved policy of the jobs as JSON, or as SQS, Cloud Tasks, "
        "Step Functions, Temporal or Kubernetes settings",
        description="Print the resolved policy of every job (or of the jobs named): "
        "`json` follows the schema that `jobdef schema export` prints (seconds, the "
        "effective backoff cap, error classes, origins); the other formats are the "
        "settings of that runtime. A field a runtime cannot express is a note, printed on "
        "stderr (one line each) and written into the output where the format allows.",
    )
    parser.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="the jobs to export (default: all jobs); a workflow named here is exported as "
        "one state machine (--format step-functions only)",
    )
    add_sheets(parser)
    parser.add_argument(
        "--format", choices=FORMATS, default="json", help="output format (default: json)"
    )
    add_output(parser, what="the export", default="standard output")
    parser.set_defaults(handler=run)
