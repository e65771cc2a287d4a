"""Schedules (JD281-JD285): batch jobs have a valid cron line and need no args; async
jobs have no schedule."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from typing import TYPE_CHECKING

from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.document import Document
from jobdef.sheets.rules.base import Rule
from jobdef.sheets.rules.context import Context
from jobdef.sheets.words import did_you_mean

if TYPE_CHECKING:
    from jobdef.policy.model import JobPolicy

BATCH_WITHOUT_SCHEDULE = Rule(
    "JD281",
    "batch-without-schedule",
    "error",
    "The scheduler enqueues batch jobs from `schedule`; without it the job never runs.",
)
INVALID_CRON = Rule(
    "JD282",
    "invalid-cron",
    "error",
    "A cron line that does not parse would stop the scheduler or never fire.",
)
SCHEDULE_ON_ASYNC = Rule(
    "JD283",
    "schedule-on-async",
    "error",
    "Async jobs are enqueued by the application; a schedule there is ignored and misleads.",
)
UNKNOWN_TIMEZONE = Rule(
    "JD284",
    "unknown-timezone",
    "error",
    "A schedule in an unknown time zone cannot be placed in time.",
)
BATCH_WITH_ARGS = Rule(
    "JD285",
    "batch-with-args",
    "error",
    "The scheduler enqueues batch jobs with no args, keyed by their slot; a required arg "
    "or a key built from args could never be filled in.",
)
RULES = (
    BATCH_WITHOUT_SCHEDULE,
    INVALID_CRON,
    SCHEDULE_ON_ASYNC,
    UNKNOWN_TIMEZONE,
    BATCH_WITH_ARGS,
)

# (name, lowest, highest, names usable instead of numbers)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, {name: i + 1 for i, name in enumerate(_MONTHS)}),
    ("day of week", 0, 7, {name: i for i, name in enumerate(_DAYS)}),
)
# Compiled on first use (re keeps it): only a batch job's schedule needs it.
_ITEM = r"^(\*|[0-9a-z]+(?:-[0-9a-z]+)?)(?:/([0-9]+))?$"


def cron_problem(line: str) -> str | None:
    """What is wrong with a 5-field cron line, or None (minute hour day month weekday)."""
    fields = line.split()
    if len(fields) != 5:
        return (
            f"has {len(fields)} fields, a cron line has 5 (minute hour day-of-month month "
            'day-of-week), such as "0 3 * * *"'
        )
    for text, (name, low, high, names) in zip(fields, _FIELDS, strict=True):
        for item in text.lower().split(","):
            match = re.match(_ITEM, item)
            if not match:
                return f"{name} field {text!r} is not valid cron; use *, n, n-m, */k or lists"
            body, step = match.groups()
            if step is not None and int(step) == 0:
                return f"{name} field {text!r} has a step of 0"
            if body == "*":
                continue
            for bound in body.split("-"):
                value = names.get(bound, int(bound) if bound.isdigit() else None)
                if value is None or not low <= value <= high:
                    return f"{name} field {text!r}: {bound!r} is not a value in {low}-{high}"
            parts = body.split("-")
            if len(parts) == 2:
                first = names.get(parts[0], int(parts[0]) if parts[0].isdigit() else 0)
                last = names.get(parts[1], int(parts[1]) if parts[1].isdigit() else 0)
                if first > last:
                    return f"{name} field {text!r}: range {body} runs backwards"
    return None


def _scheduler_refuses(line: str) -> str | None:
    """What the scheduler's cron parser refuses that the field check above lets pass,
    such as a day that no month of the line has ("0 3 30 2 *" never fires)."""
    from jobdef.schedule.cron import cron_refusal

    refusal = cron_refusal(line)
    if refusal is None:
        return None
    why = ": no month of the line has that day" if "day-of-month" in refusal else ""
    return f"is refused by the scheduler ({refusal}){why}"


def _batch_args(context: Context, doc: Document, policy: JobPolicy) -> Iterator[Diagnostic]:
    required = list(policy.args_schema.get("required", ()))
    if required:
        yield BATCH_WITH_ARGS.at_origin(
            context.where(doc, policy, "args"),
            f"mode is batch, so the scheduler enqueues the job with no args, but "
            f"{', '.join(required)} {'is' if len(required) == 1 else 'are'} required; "
            f"give {'it' if len(required) == 1 else 'them'} required: false, or make the "
            "job async",
        )
    recipe = policy.idempotency.key
    if recipe is not None and "{" in recipe:
        yield BATCH_WITH_ARGS.at_origin(
            context.where(doc, policy, "idempotency.key"),
            f"mode is batch, so each run is keyed by its slot time, but idempotency.key "
            f"{recipe!r} is built from args the scheduler does not pass; remove idempotency.key",
        )


@cache
def _zones() -> frozenset[str]:
    import zoneinfo

    return frozenset(zoneinfo.available_timezones())


def check(context: Context) -> Iterator[Diagnostic]:
    for doc, policy in context.jobs:
        if policy.mode == "batch" and policy.schedule is None:
            yield BATCH_WITHOUT_SCHEDULE.at_origin(
                context.where(doc, policy, "mode"),
                "mode is batch but there is no schedule, so the job never runs; add a cron "
                'line, such as schedule: "0 3 * * *"',
            )
        if policy.schedule is not None:
            if policy.mode != "batch":
                yield SCHEDULE_ON_ASYNC.at_origin(
                    context.where(doc, policy, "schedule"),
                    f"schedule is set but mode is {policy.mode}, so the schedule is ignored; "
                    "set mode: batch, or remove schedule",
                )
            problem = cron_problem(policy.schedule) or _scheduler_refuses(policy.schedule)
            if problem is not None:
                yield INVALID_CRON.at_origin(
                    context.where(doc, policy, "schedule"),
                    f"schedule {policy.schedule!r} {problem}",
                )
        if policy.mode == "batch":
            yield from _batch_args(context, doc, policy)
        if "timezone" in policy.origins and _zones() and policy.timezone not in _zones():
            yield UNKNOWN_TIMEZONE.at_origin(
                context.where(doc, policy, "timezone"),
                f"timezone {policy.timezone!r} is not a known IANA time zone"
                + (
                    did_you_mean(policy.timezone, _zones())
                    or "; write one such as Asia/Tokyo or UTC"
                ),
            )
