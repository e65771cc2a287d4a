"""``jobdef schema``: print the JSON Schema of the sheet format (or of ``jobdef export``)."""

from __future__ import annotations

import argparse


def run(args: argparse.Namespace) -> int:
    if args.which == "export":
        from jobdef.render.export import schema_text as export_schema

        print(export_schema(), end="")
        return 0
    from jobdef.sheets.schema_check import schema_text

    print(schema_text(), end="")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "schema",
        help="print the JSON Schema of the sheet format (for editors and CI)",
        description="Print the draft-07 JSON Schema that sheets are validated against. "
        "Save it and point a `# yaml-language-server: $schema=...` line at it. "
        "`jobdef schema export` prints the schema of `jobdef export --format json` instead.",
    )
    parser.add_argument(
        "which",
        nargs="?",
        choices=("sheet", "export"),
        default="sheet",
        help="sheet: the sheet format; export: the output of jobdef export --format json "
        "(default: sheet)",
    )
    parser.set_defaults(handler=run)
