"""``jobdef docs``: write one Markdown page per job and an index; ``--check`` for CI."""

from __future__ import annotations

import argparse
import gc
import os
import sys
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from jobdef.cli.options import (
    add_lang,
    add_output,
    add_sheets,
    add_templates,
    config_from,
    registry_from,
)
from jobdef.errors import UnreadableInputError, UsageError
from jobdef.sheets.files import RefusedFile, check_not_symlink, read_text

if TYPE_CHECKING:
    from jobdef.policy.registry import Registry
    from jobdef.project import Config


def _shown(path: Path) -> Path:
    """``path`` relative to the working directory when it lies below it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def _shown_pages(paths: list[Path]) -> list[Path]:
    """:func:`_shown` of each page of the docs folder, the folder resolved once.

    A page is never a symlink (reading it refused one), and its name is a plain file
    name, so it resolves to the resolved folder and its name."""
    cwd = Path.cwd().resolve()
    folders: dict[Path, Path] = {}
    shown = []
    for path in paths:
        folder = folders.get(path.parent)
        if folder is None:
            folder = folders[path.parent] = path.parent.resolve()
        try:
            shown.append((folder / path.name).relative_to(cwd))
        except ValueError:
            shown.append(path)
    return shown


def _unreadable(exc: OSError, flag: str) -> UnreadableInputError:
    """One line for a page, a folder or an --inject file that cannot be read."""
    where = exc.filename or "?"
    if isinstance(exc, RefusedFile):
        return UnreadableInputError(f"{where}: {exc.strerror}")
    return UnreadableInputError(
        f"cannot read {where}: {exc.strerror or exc}; check {flag} and the permissions"
    )


def _day(text: str) -> date:
    """``--as-of``: a date (YYYY-MM-DD) or ``today`` (UTC)."""
    from jobdef.render.docs import utc_today

    if text == "today":
        return utc_today()
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise UsageError(
            f"--as-of {text!r} is not a date; write it as YYYY-MM-DD (e.g. 2026-04-01) or today"
        ) from None


def _folder_lang(config: Config) -> str:
    """The language plain `jobdef docs` writes in: the project's (``JOBDEF_LANG``,
    ``[tool.jobdef] lang``), else the one the pages already there record (the index
    says it), else English. So `jobdef docs --lang ja` once, then `jobdef docs` and
    `jobdef docs --check`, keep Japanese pages."""
    from jobdef.project import declared_lang
    from jobdef.render.docs import recorded_lang

    declared = declared_lang()
    if declared is not None:
        return declared
    try:
        recorded = recorded_lang(Path(config.docs))
    except OSError:
        recorded = None  # writing or checking reports the unreadable page
    return recorded if recorded in ("en", "ja") else config.lang


def _regenerate_hint(lang: str, default: str) -> str:
    """The command that writes the pages ``--check`` checked, their language named when
    plain `jobdef docs` would write another."""
    if lang == default:
        return "`jobdef docs`"
    return f'`jobdef docs --lang {lang}` (or set [tool.jobdef] lang = "{lang}")'


def run(args: argparse.Namespace) -> int:
    config = config_from(args, docs=args.output)
    default = _folder_lang(config)
    if args.lang is None:
        config = replace(config, lang=default)
    registry = registry_from(config)
    # The registry lives until the end: the garbage collector need not walk it again
    # and again while the pages are rendered (the objects are handed back after).
    frozen = gc.get_freeze_count() == 0
    if frozen:
        gc.freeze()
    try:
        return _write(args, config, registry, default)
    finally:
        if frozen:
            gc.unfreeze()


def _write(args: argparse.Namespace, config: Config, registry: Registry, default_lang: str) -> int:
    # Imported here: building the parser for another command must not load Jinja2.
    from jobdef.render.docs import (
        Change,
        RunsAfter,
        apply,
        inject,
        plan,
        render_docs,
        render_index_table,
        utc_today,
    )

    out = Path(config.docs)
    try:
        check_not_symlink(out)
        if args.as_of is not None:
            runs = RunsAfter(_day(args.as_of))
        else:
            runs = RunsAfter.of_folder(out, registry, utc_today(), keep=args.check)
        pages = render_docs(
            registry, config.lang, config.templates, base=config.root, runs_after=runs
        )
        found = plan(pages, out)
    except OSError as exc:
        raise _unreadable(exc, "--output") from None
    changes = [
        Change(shown, c.old, c.new)
        for c, shown in zip(found, _shown_pages([c.path for c in found]), strict=True)
    ]
    for raw in args.inject or ():
        file = Path(raw)
        if file.is_dir() and not file.is_symlink():
            raise UsageError(
                f"--inject {raw} is a folder; give the Markdown file that holds the "
                "<!-- jobdef:begin --> / <!-- jobdef:end --> pair, such as README.md"
            )
        try:
            old = read_text(file)
        except OSError as exc:
            raise _unreadable(exc, "--inject") from None
        if old is None:
            raise UsageError(
                f"{raw}: no such file to inject the job table into; create it with a "
                "<!-- jobdef:begin --> / <!-- jobdef:end --> pair"
            ) from None
        prefix = Path(os.path.relpath(out.resolve(), file.resolve().parent)).as_posix() + "/"
        table = render_index_table(registry, config.lang, config.templates, link_prefix=prefix)
        new = inject(old, table, raw)
        if new != old:
            changes.append(Change(_shown(file), old, new))
    if args.check:
        for change in changes:
            sys.stdout.write(change.diff())
        if changes:
            print(
                f"jobdef docs: {len(changes)} generated file(s) missing or stale; "
                f"run {_regenerate_hint(config.lang, default_lang)} and commit the result",
                file=sys.stderr,
            )
            return 1
        print(f"jobdef docs: {len(pages)} page(s) up to date", file=sys.stderr)
        return 0
    try:
        apply(changes)
    except OSError as exc:
        where = exc.filename or config.docs
        raise UsageError(
            f"cannot write {where}: {exc.strerror or exc}; pass --output (or --inject) a file "
            "or folder you can write to"
        ) from None
    for change in changes:
        print(f"{change.verb:6} {change.path.as_posix()}")
    print(f"jobdef docs: {len(changes)} file(s) changed, {len(pages)} page(s)", file=sys.stderr)
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "docs",
        help="generate Markdown docs (one page per job, an index) from the sheets",
        description="Write one Markdown page per job (definition table, retry timeline, "
        "state diagram, where each value came from) and an index grouped by queue. "
        "The output is byte-identical from run to run.",
    )
    add_sheets(parser)
    add_output(
        parser,
        what="the pages",
        default="[tool.jobdef] docs, else docs/jobs",
        metavar="DIR",
        aliases=("--out",),
    )
    add_lang(parser)
    add_templates(parser)
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; print a unified diff and exit 1 if any generated file is "
        "missing or stale (for CI)",
    )
    parser.add_argument(
        "--as-of",
        metavar="DAY",
        help="list batch jobs' next five runs after this day (YYYY-MM-DD or today) on every "
        "page (default: a page keeps the day it states unless it changes for another "
        "reason, and new pages use today, UTC)",
    )
    parser.add_argument(
        "--inject",
        metavar="FILE",
        action="append",
        help="also replace the text between <!-- jobdef:begin --> and <!-- jobdef:end --> "
        "in this Markdown file with the job table; repeatable (default: no file)",
    )
    parser.set_defaults(handler=run)
