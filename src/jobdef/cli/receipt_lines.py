"""What ``jobdef result`` and ``jobdef wait`` share: the ``ID|TOKEN`` argument, the queue
they read through, and a job as its receipt shows it, in one line or as JSON.

The line never holds the token (a terminal's scrollback, a CI log): the id names
the job to an operator, and ``--format json`` carries both for scripts.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jobdef.cli import runtime_options
from jobdef.cli.options import MAX_JOB_ID, job_id
from jobdef.cli.runtime_options import when
from jobdef.errors import UsageError
from jobdef.render.escape import clip, visible

if TYPE_CHECKING:
    from jobdef.backends.flows import FlowRecord
    from jobdef.policy.registry import Registry
    from jobdef.runtime.queue import Queue
    from jobdef.runtime.receipts import ReceiptStatus

# Columns of a stored result a line shows (a result may be 64 KiB; the whole of it is in
# `--format json`).
RESULT_WIDTH = 500


def add_target(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        metavar="ID|TOKEN",
        help="the job's id (see jobdef jobs) or its receipt token (jobdef enqueue prints "
        "it), or a flow's receipt token (jobdef start prints it)",
    )


def target(text: str) -> int | str:
    """``text`` as a job id (digits) or a receipt token; anything else is one line."""
    from jobdef.backends.rows import looks_like_token

    if text.isascii() and text.isdigit():
        found = job_id(text)
        if found is None:
            raise UsageError(
                f"{clip(text, 40)!r} is not a job id; write one from 1 to {MAX_JOB_ID}"
            )
        return found
    if not looks_like_token(text):
        raise UsageError(
            f"{clip(visible(text), 40)!r} is neither a job id nor a receipt token; write the "
            "job's id (see jobdef jobs) or the token jobdef enqueue printed"
        )
    return text


def open_queue(args: argparse.Namespace) -> Queue:
    """A queue on --db whose sheets (--sheets, if they load) give the jobs' titles."""
    from jobdef.runtime.queue import Queue

    return Queue(runtime_options.backend(args), _sheets(args))


def _sheets(args: argparse.Namespace) -> Registry:
    """The sheets for titles; none when there is no sheets folder, or it does not load
    (then a note says so): the job store alone answers the rest."""
    from jobdef.errors import SheetError
    from jobdef.policy.registry import Registry
    from jobdef.sheets.pipeline import load_registry

    folder = Path(runtime_options.config(args).sheets)
    if folder.exists():
        try:
            return load_registry([folder])
        except SheetError:
            print(
                f"note: the sheets in {folder} do not load (jobdef validate {folder} says "
                "why); the job is shown without its title",
                file=sys.stderr,
            )
    return Registry(jobs={}, channels={})


def unknown(found: int | str) -> UsageError:
    """The line for an id or a token no job has (the token is not repeated)."""
    if isinstance(found, int):
        return UsageError(f"no job with id {found}; list them with `jobdef jobs`")
    return UsageError(
        "no job or flow has this receipt token (never stored, or pruned since); check it "
        "against what jobdef enqueue or jobdef start printed"
    )


def line(status: ReceiptStatus) -> str:
    """The job in one line: its state in words, and what the state brings with it."""
    head = f"job {status.job_id} ({status.job}): "
    tries = f"{status.attempts} of {status.max_attempts}"
    if status.state == "accepted":
        delayed = status.next_start is not None and status.next_start > status.created_at
        text = head + "accepted, not started yet" + (_next(status) if delayed else "")
    elif status.state == "running":
        text = head + f"running, attempt {tries}"
        if status.progress is not None:
            text += f", progress {_json(status.progress)}"
    elif status.state == "retry_waiting":
        text = head + f"retry_waiting, {tries} attempts used" + _next(status)
    elif status.state == "done":
        text = head + f"done after {tries} attempts"
        if status.result is not None:
            text += f", result {_result(status.result)}"
    elif status.state == "dead":
        text = head + f"dead after {tries} attempts (jobdef jobs show {status.job_id} says why)"
    elif status.state == "failed":
        text = head + f"failed: dead after {tries} attempts, resolved by an operator"
    else:
        text = head + "cancelled"
    return visible(text)


def as_json(status: ReceiptStatus, **extra: Any) -> str:
    """Every field of the status, ``ended`` and ``extra``, as one line of JSON."""
    fields = {**asdict(status), "ended": status.ended, **extra}
    return json.dumps(fields, ensure_ascii=False, default=_plain)


def _next(status: ReceiptStatus) -> str:
    return f", next start {when(status.next_start)} UTC" if status.next_start is not None else ""


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_plain)


def _result(value: Any) -> str:
    text = _json(value)
    shown = clip(text, RESULT_WIDTH)
    if shown != text:
        shown += f" (cut; --format json shows all {len(text)} characters)"
    return shown


def _plain(value: Any) -> Any:
    return dict(value) if hasattr(value, "keys") else str(value)


def flow_line(flow: FlowRecord) -> str:
    """A flow in one line: its state, and how many of its steps are in each state."""
    counts: dict[str, int] = {}
    for state in flow.steps.values():
        counts[state] = counts.get(state, 0) + 1
    steps = ", ".join(f"{count} {state}" for state, count in sorted(counts.items()))
    text = f"flow {flow.id} ({flow.name}): {flow.state}; steps: {steps}"
    if flow.note is not None:
        text += f"; cancelled: {flow.note}"
    return visible(text)


def flow_json(flow: FlowRecord, **extra: Any) -> str:
    """The flow as one line of JSON: its state, ``ended``, each step's state."""
    fields = {
        "flow_id": flow.id,
        "flow": flow.name,
        "state": flow.state,
        "ended": flow.ended,
        "steps": dict(flow.steps),
        "created_at": flow.created_at,
        "finished_at": flow.finished_at,
        "note": flow.note,
        **extra,
    }
    return json.dumps(fields, ensure_ascii=False)
