"""A flow's end message (JD373): the key args it shows are args of the flow.

A Workflow's ``notify.key_args`` names the flow args its end message shows
(``key args: order_id=7``), so whoever reads it knows which flow ended. The message
takes each name from the flow's args as the start passed them, and leaves out a
name the flow does not have: a misspelt name shows nothing in every message, and
nothing else would say so.
"""

from __future__ import annotations

from collections.abc import Iterator

from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.rules.base import Rule
from jobdef.sheets.rules.context import Context
from jobdef.sheets.rules.workflows import at
from jobdef.sheets.words import did_you_mean

NOTIFY_UNKNOWN_ARG = Rule(
    "JD373",
    "workflow-notify-unknown-arg",
    "error",
    "A flow's end message shows the args notify.key_args names; a name that is no arg of "
    "the flow is left out of every message, so the reader cannot tell which flow ended.",
)
RULES = (NOTIFY_UNKNOWN_ARG,)


def check(context: Context) -> Iterator[Diagnostic]:
    for doc, flow in context.workflows:
        if flow.notify is None:
            continue
        names = list(flow.args.get("properties", {}))
        for index, name in enumerate(flow.notify.key_args):
            if name in names:
                continue
            yield NOTIFY_UNKNOWN_ARG.at_origin(
                at(doc, ("notify", "key_args", index)),
                f"notify.key_args names {name!r}, which is no arg of workflow {flow.name!r}"
                f"{did_you_mean(name, names)} (args: {', '.join(names) or 'none'}); name one "
                "of the flow's args, or remove it",
            )
