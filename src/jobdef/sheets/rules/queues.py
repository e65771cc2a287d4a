"""Queues (JD274): a job's queue that is a near miss of a Queue document's name."""

from __future__ import annotations

from collections.abc import Iterator

from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.rules.base import Rule
from jobdef.sheets.rules.context import Context

QUEUE_NAME_TYPO = Rule(
    "JD274",
    "queue-name-typo",
    "warning",
    "A queue needs no Queue document, so a misspelt queue name is valid; but its jobs then "
    "run without the limits the author meant (warned when it is one or two edits from a Queue's).",
)
RULES = (QUEUE_NAME_TYPO,)


def edits(a: str, b: str) -> int:
    """Single-character insertions, deletions, substitutions and swaps of neighbours
    that turn ``a`` into ``b`` (optimal string alignment distance)."""
    rows = [list(range(len(b) + 1))]
    for i, x in enumerate(a, 1):
        row = [i]
        for j, y in enumerate(b, 1):
            best = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + (x != y))
            if i > 1 and j > 1 and x == b[j - 2] and a[i - 2] == y:
                best = min(best, rows[-2][j - 2] + 1)
            row.append(best)
        rows.append(row)
    return rows[-1][-1]


def near_miss(name: str, names: set[str]) -> str | None:
    """The one defined name ``name`` is a slip of the keyboard away from: one edit for
    short names, two from six letters on (``mial`` -> ``mail``, not ``points`` -> ``exports``)."""
    allowed = 1 if len(name) < 6 else 2
    close = sorted((edits(name, other), other) for other in names)
    return close[0][1] if close and close[0][0] <= allowed else None


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
