"""A flow's end message (JD373): the key args it shows are args of the flow.

A Workflow's ``notify.key_args`` names the flow args its end message shows
(``key args: order_id=7``), so whoever reads it knows which flow ended. The message
takes each name from the flow's args as the start passed them, and leaves out a
name the flow does not have: a misspelt name shows nothing in every message, and
nothing else would say so. A job's own ``notify.key_args`` is checked alike (JD255,
:mod:`jobdef.sheets.rules.notify`).
"""

from __future__ import annotations

from collections.abc import Iterator

from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.rules.base import Rule
from jobdef.sheets.rules.context import Context
from jobdef.sheets.rules.notify import unknown_key_arg
from jobdef.sheets.rules.workflows import at

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
                unknown_key_arg(
                    name,
                    names,
                    f"workflow {flow.name!r}",
                    "name one of the flow's args, or remove it",
                ),
            )
