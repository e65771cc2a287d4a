"""Backoff (JD211-JD215): waits that grow, are capped sensibly, and are never all zero."""

from __future__ import annotations

from collections.abc import Iterator

from jobdef.policy.backoff import base_delay
from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.rules.base import Rule, human
from jobdef.sheets.rules.context import Context

MAX_BELOW_INITIAL = Rule(
    "JD211",
    "backoff-max-below-initial",
    "error",
    "A cap below the first wait flattens every wait to the cap; one of the two is a typo.",
)
ZERO_INITIAL = Rule(
    "JD212",
    "backoff-zero-initial",
    "error",
    "Linear or exponential growth of zero is zero: every retry would run at once.",
)
MULTIPLIER_NOT_GROWING = Rule(
    "JD213",
    "backoff-multiplier-not-growing",
    "error",
    "An exponential multiplier of 1 or less never backs off from a struggling dependency.",
)
EMPTY_LIST = Rule(
    "JD214",
    "backoff-empty-list",
    "error",
    "The list strategy takes its waits from `delays`; without entries there is no schedule.",
)
UNCAPPED = Rule(
    "JD215",
    "backoff-uncapped",
    "warning",
    "Uncapped exponential waits soon reach hours or days; a cap keeps retries useful "
    "(warned once a wait exceeds 1h).",
)
# An uncapped exponential schedule is worth a warning once a wait exceeds this.
_UNCAPPED_LIMIT = 3600.0

RULES = (MAX_BELOW_INITIAL, ZERO_INITIAL, MULTIPLIER_NOT_GROWING, EMPTY_LIST, UNCAPPED)


def check(context: Context) -> Iterator[Diagnostic]:
    for doc, policy in context.jobs:
        b = policy.backoff
        fmt = human
        if b.strategy == "list":
            if not b.delays:
                yield EMPTY_LIST.at_origin(
                    context.where(doc, policy, "backoff.delays", "backoff.strategy"),
                    "backoff.strategy is list but backoff.delays has no entries; "
                    "list the waits, such as delays: [1m, 5m, 15m]",
                )
            continue
        if b.max is not None and b.max < b.initial:
            yield MAX_BELOW_INITIAL.at_origin(
                context.where(doc, policy, "backoff.max"),
                f"backoff.max ({fmt(b.max)}) is below backoff.initial ({fmt(b.initial)}), so "
                f"every wait is cut to {fmt(b.max)}; raise max to at least {fmt(b.initial)} "
                "or lower initial",
            )
        if b.strategy in ("linear", "exponential") and b.initial == 0:
            written = "backoff.initial" in policy.origins
            yield ZERO_INITIAL.at_origin(
                context.where(doc, policy, "backoff.initial", "backoff.strategy"),
                f"backoff.initial is {'0' if written else 'not set (0s)'}, so every "
                f"{b.strategy} wait is 0s and retries run at once; set it, such as initial: 10s",
            )
        if b.strategy == "exponential" and b.multiplier <= 1:
            yield MULTIPLIER_NOT_GROWING.at_origin(
                context.where(doc, policy, "backoff.multiplier", "backoff.strategy"),
                f"backoff.multiplier is {b.multiplier:g}, so exponential waits never grow; "
                "use a multiplier above 1, such as 2 (or strategy: fixed for equal waits)",
            )
        last = (
            base_delay(b, policy.max_attempts - 1)
            if b.strategy == "exponential" and b.max is None and policy.max_attempts > 1
            else 0.0
        )
        if last > _UNCAPPED_LIMIT:
            yield UNCAPPED.at_origin(
                context.where(doc, policy, "backoff.strategy", "backoff"),
                f"exponential backoff has no max: the wait after attempt "
                f"{policy.max_attempts - 1} is {fmt(last)}; set backoff.max, such as max: 10m",
            )
