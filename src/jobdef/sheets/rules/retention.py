"""Retention (JD291, JD292): keep rows at least as long as something still reads them."""

from __future__ import annotations

from collections.abc import Iterator

from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.rules.base import Rule, human
from jobdef.sheets.rules.context import Context

DONE_BEFORE_DEDUPE = Rule(
    "JD291",
    "retention-shorter-than-dedupe",
    "error",
    "Pruning a done job before its dedupe window ends lets a duplicate enqueue run again.",
)
DEAD_BEFORE_DONE = Rule(
    "JD292",
    "retention-dead-shorter-than-done",
    "error",
    "Dead jobs need a human; they should outlive the successful ones, not vanish first.",
)
RULES = (DONE_BEFORE_DEDUPE, DEAD_BEFORE_DONE)


def check(context: Context) -> Iterator[Diagnostic]:
    for doc, policy in context.jobs:
        done, dead = policy.retention.done, policy.retention.dead
        window = policy.idempotency.dedupe_window
        if done is not None and window is not None and done < window:
            yield DONE_BEFORE_DEDUPE.at_origin(
                context.where(doc, policy, "retention.done"),
                f"retention.done ({human(done)}) is shorter than idempotency.dedupe_window "
                f"({human(window)}): a pruned job no longer blocks a duplicate; keep done jobs "
                f"at least {human(window)}",
            )
        if done is not None and dead is not None and dead < done:
            yield DEAD_BEFORE_DONE.at_origin(
                context.where(doc, policy, "retention.dead"),
                f"retention.dead ({human(dead)}) is shorter than retention.done ({human(done)}): "
                "failed jobs would vanish before successful ones; keep them at least as long, "
                "or use dead: until_resolved",
            )
