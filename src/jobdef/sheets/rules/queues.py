"""Queues (JD274): a job's queue that is a near miss of a Queue document's name."""

from __future__ import annotations

from collections.abc import Iterator

from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.rules.base import Rule
from jobdef.sheets.rules.context import Context
from jobdef.sheets.words import near_miss

QUEUE_NAME_TYPO = Rule(
    "JD274",
    "queue-name-typo",
    "warning",
    "A queue needs no Queue document, so a misspelt queue name is valid; but its jobs then "
    "run without the limits the author meant (warned when it is one or two edits from a Queue's).",
)
RULES = (QUEUE_NAME_TYPO,)


def check(context: Context) -> Iterator[Diagnostic]:
    queues = {str(doc.data["name"]) for doc in context.of_kind("Queue")}
    for doc, policy in context.jobs:
        if policy.queue in queues:
            continue
        meant = near_miss(policy.queue, queues)
        if meant is None:
            continue
        yield QUEUE_NAME_TYPO.at_origin(
            context.where(doc, policy, "queue"),
            f"queue {policy.queue!r} has no Queue document, so no concurrency or rate limit "
            f"applies to its jobs; did you mean {meant!r}? Fix the name, or add a Queue "
            f"document named {policy.queue!r} if it is a queue of its own",
        )
