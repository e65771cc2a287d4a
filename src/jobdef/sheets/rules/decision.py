"""Decision (JD311): the sheet's `mode` agrees with its own answers to the decision flow."""

from __future__ import annotations

from collections.abc import Iterator

from jobdef.policy.decision import recommend
from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.rules.base import Rule
from jobdef.sheets.rules.context import Context

MODE_DISAGREES = Rule(
    "JD311",
    "mode-disagrees-with-decision",
    "warning",
    "The decision answers are the reason a job is async, batch or not a job at all; "
    "the mode should follow them.",
)
RULES = (MODE_DISAGREES,)

_ADVICE = {
    "batch": 'set mode: batch with a schedule, such as schedule: "0 3 * * *"',
    "async": "set mode: async",
    "sync": "do the work in the request instead of a job",
}


def check(context: Context) -> Iterator[Diagnostic]:
    for doc, policy in context.jobs:
        if policy.decision is None:
            continue
        mode, deciding = recommend(policy.decision)
        if deciding is None or mode == policy.mode:
            continue
        answer = str(getattr(policy.decision, deciding)).lower()
        yield MODE_DISAGREES.at_origin(
            context.where(doc, policy, f"decision.{deciding}", "decision", "mode"),
            f"mode is {policy.mode} but the decision answers recommend {mode} "
            f"(deciding answer: {deciding}: {answer}); {_ADVICE[mode]}, or correct the answer",
        )
