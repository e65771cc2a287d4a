"""Limits (JD112): a job's args are bounded, and a sheet that lifts the bound far warns.

Every enqueue stores the args as JSON and every claim reads them back, into the
worker and over the pipe to the handler's process; past a megabyte that is a
database used as a file store. ``limits.args_bytes`` may raise the default
(:data:`~jobdef.policy.values.DEFAULT_ARGS_BYTES`), and past
:data:`~jobdef.policy.values.ARGS_BYTES_WARN` this rule says to pass an id instead.
"""

from __future__ import annotations

from collections.abc import Iterator

from jobdef.policy.values import ARGS_BYTES_WARN
from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.rules.base import Rule
from jobdef.sheets.rules.context import Context

ARGS_BYTES_LARGE = Rule(
    "JD112",
    "args-bytes-large",
    "warning",
    "Args past a megabyte are stored, read back and piped to the handler on every attempt; "
    "large data belongs in a file or a table, passed by its id.",
)
RULES = (ARGS_BYTES_LARGE,)


def check(context: Context) -> Iterator[Diagnostic]:
    for doc, policy in context.jobs:
        size = policy.limits.args_bytes
        if size > ARGS_BYTES_WARN:
            yield ARGS_BYTES_LARGE.at_origin(
                context.where(doc, policy, "limits.args_bytes"),
                f"limits.args_bytes is {size} bytes, more than {ARGS_BYTES_WARN} (1 MiB): "
                "every attempt reads that much back from the database; store the data "
                "elsewhere (a file, a table) and pass its id, or write a smaller limit",
            )
