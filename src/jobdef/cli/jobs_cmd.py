"""``jobdef jobs``: list jobs; ``jobdef jobs show ID``: one job with every attempt.

Args are shown as :func:`jobdef.redact.shown_args` shows them, in the table and in
``--format json`` alike: the sensitive ones of the sheets (when the sheets folder
loads; else those whose names say secret) as ``***``. The handler reads the stored
row, never this output, so nothing needs the values here.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jobdef.cli import runtime_options
from jobdef.cli.options import JobIds, add_format, whole_number
from jobdef.cli.runtime_options import JOB_STATES, table, when
from jobdef.errors import UsageError
from jobdef.render.escape import clip, visible

if TYPE_CHECKING:
    from jobdef.backends.records import JobRecord
    from jobdef.policy.registry import Registry


def _sheets(args: argparse.Namespace) -> Registry | None:
    """The sheets that say which args are sensitive; None (names alone decide) when there
    is no sheets folder, or it does not load (then a note says so)."""
    from jobdef.errors import SheetError
    from jobdef.sheets.pipeline import load_registry

    folder = Path(runtime_options.config(args).sheets)
    if not folder.is_dir():
        return None
    try:
        return load_registry([folder])
    except SheetError:
        print(
            f"note: the sheets in {folder} do not load (jobdef validate {folder} says why); "
            "args are hidden by their names alone",
            file=sys.stderr,
        )
        return None


def _shown(record: JobRecord, sheets: Registry | None) -> dict[str, Any]:
    from jobdef.redact import shown_args

    return shown_args(sheets.jobs.get(record.job) if sheets else None, record.args)


def _args(record: JobRecord, sheets: Registry | None) -> str:
    return json.dumps(_shown(record, sheets), ensure_ascii=False, separators=(",", ":"))


def _as_json(record: JobRecord, sheets: Registry | None) -> dict[str, Any]:
    return {**asdict(record), "args": _shown(record, sheets)}


# Columns of a job's result shown by `jobs show` (a result may be 64 KiB; the whole of it
# is in `--format json`).
RESULT_WIDTH = 500


def _result(record: JobRecord) -> str:
    """The stored result as compact JSON, cut to :data:`RESULT_WIDTH` columns."""
    text = json.dumps(record.result, ensure_ascii=False, separators=(",", ":"))
    shown = clip(visible(text), RESULT_WIDTH)
    if shown != visible(text):
        shown += f" (cut; --format json shows all {len(text)} characters)"
    return shown


def _list(args: argparse.Namespace) -> int:
    if args.job:
        runtime_options.note_unknown_job(args, args.job)
    backend = runtime_options.backend(args)
    try:
        records = backend.list_jobs(state=args.state, job=args.job, limit=args.limit)
    finally:
        backend.close()
    sheets = _sheets(args) if records else None
    if args.format == "json":
        listed = [_as_json(r, sheets) for r in records]
        print(json.dumps(listed, ensure_ascii=False, default=_plain))
        return 0
    if not records:
        print("no jobs")
        return 0
    rows = [["ID", "JOB", "STATE", "ATTEMPT", "ARGS", "LAST ERROR"]]
    for r in records:
        error = f"{r.last_error.type}: {r.last_error.message}" if r.last_error else ""
        if error and r.state == "done":
            error = f"(earlier attempt) {error}"
        rows.append(
            [
                str(r.id),
                r.job,
                r.state,
                f"{r.attempt}/{r.max_attempts}",
                _args(r, sheets),
                error[:70],
            ]
        )
    print(table(rows))
    return 0


def _plain(value: Any) -> Any:
    return dict(value) if hasattr(value, "keys") else str(value)


def _show(args: argparse.Namespace) -> int:
    if args.id is None:
        raise UsageError("jobs show needs a job id: jobdef jobs show 42")
    backend = runtime_options.backend(args)
    try:
        record = backend.get(args.id)
        attempts = backend.attempts(args.id) if record else []
    finally:
        backend.close()
    if record is None:
        raise UsageError(f"no job with id {args.id}; list them with `jobdef jobs`")
    sheets = _sheets(args)
    if args.format == "json":
        payload = {"job": _as_json(record, sheets), "attempts": [asdict(a) for a in attempts]}
        print(json.dumps(payload, ensure_ascii=False, default=_plain))
        return 0
    lines = _show_lines(record, sheets)
    rows = [["#", "WORKER", "STARTED", "FINISHED", "OUTCOME", "ERROR"]]
    for a in attempts:
        error = f"{a.error.type}: {a.error.message}" if a.error else ""
        rows.append(
            [
                str(a.attempt),
                a.worker_id,
                when(a.started_at),
                when(a.finished_at),
                a.outcome or "running",
                error,
            ]
        )
    lines.append(table(rows))
    print("\n".join(lines))
    return 0


def _show_lines(record: JobRecord, sheets: Registry | None) -> list[str]:
    """The job's fields, whole (no column to fit) but with control characters escaped."""
    lines = [
        f"job {record.id}: {record.job}",
        f"  state        {record.state}",
        f"  queue        {record.queue} (priority {record.priority})",
        f"  args         {_args(record, sheets)}",
        f"  key          {record.idempotency_key or '-'}",
        f"  attempts     {record.attempt} of {record.max_attempts}",
        f"  created      {when(record.created_at)}",
        f"  run after    {when(record.run_after)}",
        f"  finished     {when(record.finished_at)}",
    ]
    if record.state == "running":
        lines.append(f"  worker       {record.worker_id} (lease until {when(record.lease_until)})")
    if record.progress is not None:
        lines.append(f"  progress     {json.dumps(record.progress)}")
    if record.state == "done" and record.result is not None:
        lines.append(f"  result       {_result(record)}")
    if record.last_error:
        label = (
            "last error (history; the job later succeeded)"
            if record.state == "done"
            else "last error"
        )
        lines.append(f"  {label}: {record.last_error.type}: {record.last_error.message}")
    if record.note:
        lines.append(f"  note         {record.note}")
    lines = [visible(line) for line in lines]
    lines.append("")
    return lines


def run(args: argparse.Namespace) -> int:
    return _show(args) if args.action == "show" else _list(args)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "jobs",
        help="list jobs, or show one with every attempt",
        description="List jobs newest first, or `jobdef jobs show ID` for one job's attempts.",
    )
    parser.add_argument(
        "action", nargs="?", choices=["show"], help="show one job (default: list jobs)"
    )
    parser.add_argument(
        "id", nargs="?", action=JobIds, help="the job id, with show (default: none)"
    )
    parser.add_argument(
        "--state", choices=JOB_STATES, help="only jobs in this state (default: every state)"
    )
    parser.add_argument("--job", metavar="NAME", help="only jobs of this name (default: every job)")
    parser.add_argument(
        "--limit",
        type=whole_number(1, 1_000_000),
        default=50,
        help="list at most this many jobs, 1 to 1,000,000 (default: 50)",
    )
    add_format(parser)
    runtime_options.add_db(parser)
    runtime_options.add_sheets(parser, purpose="that --job is checked against")
    parser.set_defaults(handler=run)
