"""``jobdef schema``: print the JSON Schema of the sheet format."""

from __future__ import annotations

import argparse


def run(args: argparse.Namespace) -> int:
    from jobdef.sheets.schema_check import schema_text

    print(schema_text(), end="")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "schema",
        help="print the JSON Schema of the sheet format (for editors and CI)",
        description="Print the draft-07 JSON Schema that sheets are validated against. "
        "Save it and point a `# yaml-language-server: $schema=...` line at it.",
    )
    parser.set_defaults(handler=run)
