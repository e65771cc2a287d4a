"""``jobdef schema``: print the JSON Schema of the sheet format (or of ``jobdef export``),
or write it to a file with ``-o``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from jobdef.cli.options import add_output
from jobdef.errors import UsageError


def run(args: argparse.Namespace) -> int:
    if args.which == "export":
        from jobdef.render.export import schema_text as export_schema

        text = export_schema()
    else:
        from jobdef.sheets.schema_check import schema_text

        text = schema_text()
    if args.output in (None, "-"):
        sys.stdout.write(text)
        return 0
    from jobdef.sheets.files import write_atomic

    try:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(args.output, text.encode("utf-8"))
    except OSError as exc:
        raise UsageError(
            f"cannot write {args.output}: {exc.strerror or exc}; choose -o FILE in a folder "
            "you can write to"
        ) from None
    print(f"wrote {args.output}")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "schema",
        help="print or save the JSON Schema of the sheet format (for editors and CI)",
        description="Print the draft-07 JSON Schema that sheets are validated against, or "
        "write it with -o. A project keeps a copy at .jobdef/jobdef-v1.schema.json (jobdef "
        "init writes it; refresh it with jobdef schema -o .jobdef/jobdef-v1.schema.json) and "
        "its sheets point at it with a `# yaml-language-server: $schema=...` line. "
        "`jobdef schema export` is the schema of `jobdef export --format json` instead.",
    )
    parser.add_argument(
        "which",
        nargs="?",
        choices=("sheet", "export"),
        default="sheet",
        help="sheet: the sheet format; export: the output of jobdef export --format json "
        "(default: sheet)",
    )
    add_output(parser, what="the schema", default="standard output")
    parser.set_defaults(handler=run)
