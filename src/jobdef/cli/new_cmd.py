"""``jobdef new NAME``: write a new sheet with every field, each with a comment."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from jobdef.cli import EXIT_OK
from jobdef.cli.options import add_lang, add_output, add_sheets, config_from
from jobdef.errors import UsageError
from jobdef.sheets.files import project_root, write_atomic
from jobdef.sheets.schema_check import schema_text

if TYPE_CHECKING:
    from jobdef.review.task_signature import Found


def run(args: argparse.Namespace) -> int:
    from jobdef.review.new_sheet import check_name, render_sheet
    from jobdef.sheets.build import build_registry
    from jobdef.sheets.local_schema import LOCAL_SCHEMA, local_schema, schema_reference
    from jobdef.sheets.pipeline import load_documents, sheet_files

    check_name(args.name)  # before the name becomes a path
    config = config_from(args)
    sheets = Path(config.sheets)
    to_stdout = args.output == "-"
    target = Path(args.output) if args.output and not to_stdout else sheets / f"{args.name}.yaml"
    if not to_stdout and os.path.lexists(target):
        raise _exists(target)  # before reading the sheets: this file may not be a sheet at all
    # A fresh project's folder may hold no sheet yet: nothing to inherit, not an error.
    documents = load_documents([sheets]) if sheets.exists() and sheet_files([sheets]) else []
    registry = build_registry(documents)
    if args.name in registry.jobs:
        raise UsageError(
            f"a job named {args.name!r} is already defined in {registry.jobs[args.name].file}; "
            "choose another name"
        )
    root = project_root()
    found = _the_function(args.name, config.pythonpath, root)
    text = render_sheet(
        args.name,
        folder=target.parent,
        root=root,
        schema=schema_reference(target.parent, root),
        lang=config.lang,
        documents=documents,
        channels=sorted(registry.channels),
        copy_defaults=args.copy_defaults,
        found=found,
    )
    if to_stdout:
        sys.stdout.write(text)
        return EXIT_OK
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, text.encode("utf-8"), replace=False)
    except FileExistsError:  # written meanwhile by someone else
        raise _exists(target) from None
    except OSError as exc:
        raise UsageError(
            f"cannot write {target}: {exc.strerror or exc}; choose -o FILE in a folder "
            "you can write to"
        ) from None
    copy = local_schema(root)
    if not os.path.lexists(copy):  # what the sheet's $schema line points at, for editors
        copy.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(copy, schema_text().encode("utf-8"), replace=False)
        print(f"wrote {LOCAL_SCHEMA} (the schema editors check sheets against)")
    shown = os.path.relpath(target) if target.is_absolute() else str(target)
    if found is not None:
        source = f"{_relative(found.file, root)}:{found.line}"
        shown += f" with the handler and args of {found.handler} ({source})"
    print(f"wrote {shown}; fill in the TODO lines, then run: jobdef explain {args.name}")
    return EXIT_OK


def _the_function(name: str, folders: tuple[str, ...], root: Path) -> Found | None:
    """The one function named ``name`` where handlers are imported from; with several,
    a note naming them (the sheet then names none of them)."""
    from jobdef.review.task_signature import find_functions

    found = find_functions(name, folders)
    if len(found) > 1:
        places = ", ".join(f"{f.handler} ({_relative(f.file, root)}:{f.line})" for f in found)
        print(
            f"note: several functions are named {name}: {places}; write the sheet's handler",
            file=sys.stderr,
        )
    return found[0] if len(found) == 1 else None


def _relative(path: Path, root: Path) -> str:
    try:
        return path.absolute().relative_to(root.absolute()).as_posix()
    except ValueError:
        return str(path)


def _exists(target: Path) -> UsageError:
    return UsageError(
        f"{target} already exists and was left as it is; "
        "choose another NAME or -o FILE, or move the existing file away first"
    )


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "new",
        help="write a new sheet with every field, each with a comment",
        description="Write a new job definition sheet NAME.yaml into the sheets folder: every "
        "field with a comment (English, or Japanese with --lang ja), values inherited from "
        "Defaults shown as comments, and the yaml-language-server schema line for editor "
        "help. An existing file is never overwritten.",
    )
    parser.add_argument("name", metavar="NAME", help="the job's code name, e.g. send_invoice_mail")
    add_sheets(parser, purpose="to write into and read Defaults from")
    add_output(parser, what="the sheet", default="NAME.yaml in the sheets folder")
    add_lang(parser)
    parser.add_argument(
        "--copy-defaults",
        action="store_true",
        help="write the Defaults values as the sheet's own (the job stops inheriting them)",
    )
    parser.set_defaults(handler=run)
