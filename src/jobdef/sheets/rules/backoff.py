"""Backoff (JD211-JD216): waits that grow, are capped sensibly, and are never all zero."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from jobdef.policy.backoff import base_delay, cut_by_max
from jobdef.sheets.diagnostics import Diagnostic, Location
from jobdef.sheets.rules.base import Rule, human
from jobdef.sheets.rules.context import Context

if TYPE_CHECKING:
    from jobdef.policy.model import JobPolicy

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
ABOVE_MAX = Rule(
    "JD216",
    "backoff-wait-above-max",
    "warning",
    "backoff.max also cuts a listed or fixed wait; written in another document (Defaults), "
    "the cut is invisible in the sheet that lists the wait.",
)
DELAYS_UNUSED = Rule(
    "JD217",
    "backoff-delays-unused",
    "warning",
    "Decorrelated jitter draws each wait from backoff.initial up and never reads "
    "backoff.delays; a jitter inherited from Defaults silently drops the listed waits.",
)
# An uncapped exponential schedule is worth a warning once a wait exceeds this.
_UNCAPPED_LIMIT = 3600.0

NO_WAIT = Rule(
    "JD218",
    "backoff-no-wait",
    "warning",
    "Retries with no wait, left to the default, run back to back against a dependency "
    "that just failed; a wait of 0s is kept when a sheet or Defaults document writes it.",
)

RULES = (
    MAX_BELOW_INITIAL,
    ZERO_INITIAL,
    MULTIPLIER_NOT_GROWING,
    EMPTY_LIST,
    UNCAPPED,
    ABOVE_MAX,
    DELAYS_UNUSED,
    NO_WAIT,
)


def _wait_field(policy: JobPolicy) -> str:
    return "backoff.delays" if policy.backoff.strategy == "list" else "backoff.initial"


def _apart(policy: JobPolicy) -> bool:
    """Whether backoff.max and the waits it cuts are written in different documents."""
    cap, waits = policy.origins.get("backoff.max"), policy.origins.get(_wait_field(policy))
    return (
        cap is not None
        and waits is not None
        and (cap.file, cap.source)
        != (
            waits.file,
            waits.source,
        )
    )


def _above_max(context: Context, policy: JobPolicy) -> Iterator[Diagnostic]:
    """JD216: each listed or fixed wait the job reaches that a max written elsewhere cuts."""
    b, cap = policy.backoff, policy.origins.get("backoff.max")
    waits = policy.origins.get(_wait_field(policy))
    if b.max is None or cap is None or waits is None or not _apart(policy):
        return  # one document says both: JD211 covers a fixed wait above its own max
    where_cap = Location(cap.file, cap.line, cap.column)
    for index in cut_by_max(b, policy.max_attempts - 1):
        if b.strategy == "list":
            place = context.item(waits, ("backoff", "delays"), index)
            wait, field = b.delays[index], f"backoff.delays[{index}]"
        else:
            place = Location(waits.file, waits.line, waits.column)
            wait, field = b.initial, "backoff.initial"
        yield ABOVE_MAX.at_origin(
            place or where_cap,
            f"job {policy.name!r}: {field} is {human(wait)}, but backoff.max "
            f"{human(b.max)} from {cap.file}:{cap.line} cuts it to {human(b.max)}; lower "
            f"the wait, or set backoff.max in this sheet (such as max: {human(wait)})",
            related=(where_cap,),
        )


def check(context: Context) -> Iterator[Diagnostic]:
    for doc, policy in context.jobs:
        b = policy.backoff
        fmt = human
        yield from _above_max(context, policy)
        if b.strategy == "list":
            if b.jitter == "decorrelated" and b.delays:
                jitter = policy.origins.get("backoff.jitter")
                said = f" (set at {jitter.file}:{jitter.line})" if jitter is not None else ""
                yield DELAYS_UNUSED.at_origin(
                    context.where(doc, policy, "backoff.delays"),
                    f"job {policy.name!r}: backoff.jitter is decorrelated{said}, which draws "
                    f"each wait from backoff.initial ({fmt(b.initial)}) up and never reads "
                    "backoff.delays; set jitter: none (or full, equal) in this sheet to use "
                    "the listed waits",
                    related=()
                    if jitter is None
                    else (Location(jitter.file, jitter.line, jitter.column),),
                )
            if not b.delays:
                yield EMPTY_LIST.at_origin(
                    context.where(doc, policy, "backoff.delays", "backoff.strategy"),
                    "backoff.strategy is list but backoff.delays has no entries; "
                    "list the waits, such as delays: [1m, 5m, 15m]",
                )
            continue
        if b.strategy == "fixed" and cut_by_max(b) and _apart(policy):
            pass  # JD216 said it, as a warning at the wait
        elif b.max is not None and b.max < b.initial:
            yield MAX_BELOW_INITIAL.at_origin(
                context.where(doc, policy, "backoff.max"),
                f"backoff.max ({fmt(b.max)}) is below backoff.initial ({fmt(b.initial)}), so "
                f"every wait is cut to {fmt(b.max)}; raise max to at least {fmt(b.initial)} "
                "or lower initial",
            )
        if (
            b.strategy == "fixed"
            and b.initial == 0
            and policy.max_attempts > 1
            and "backoff.initial" not in policy.origins
        ):
            yield NO_WAIT.at_origin(
                context.where(doc, policy, "backoff", "max_attempts"),
                f"job {policy.name!r}: max_attempts is {policy.max_attempts} and no backoff "
                "is written, so each retry runs at once after the failure; set a wait, "
                "such as backoff: {strategy: exponential, initial: 10s, max: 10m}, or "
                "write backoff: {initial: 0s} to retry at once on purpose",
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
