"""Idempotency key recipes (JD241-JD245): one key per piece of work, built from its args.

A recipe is read by :func:`jobdef.policy.keys.key_placeholders`, the way the
queue fills it in at enqueue. A Workflow's own key (a start with the same key
merges into the running flow) obeys the same rules, over the flow's args
(:mod:`jobdef.sheets.rules.flow_args`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from jobdef.policy.keys import key_placeholders
from jobdef.redact import sensitive_arg
from jobdef.sheets.diagnostics import Diagnostic, Location
from jobdef.sheets.rules.base import Rule
from jobdef.sheets.rules.context import Context
from jobdef.sheets.words import did_you_mean, listing

UNKNOWN_ARG = Rule(
    "JD241",
    "key-unknown-arg",
    "error",
    "A placeholder that names no arg cannot be filled in when the job is enqueued.",
)
NO_PLACEHOLDER = Rule(
    "JD242",
    "key-without-placeholder",
    "error",
    "A recipe without placeholders gives every enqueue the same key: all collapse into one job.",
)
USES_JOB_ID = Rule(
    "JD243",
    "key-uses-job-id",
    "error",
    "The job id differs on every enqueue, so two enqueues of the same event never match.",
)
UNREADABLE = Rule(
    "JD244",
    "key-unreadable",
    "error",
    "A recipe with a lone brace cannot be filled in: every enqueue of the job fails.",
)
USES_SENSITIVE = Rule(
    "JD245",
    "key-uses-sensitive-arg",
    "error",
    "A key is stored, shown on every page and listing and used as a task id: a sensitive "
    "arg in it would be shown in clear.",
)
RULES = (UNKNOWN_ARG, NO_PLACEHOLDER, USES_JOB_ID, UNREADABLE, USES_SENSITIVE)

_JOB_ID_NAMES = frozenset({"id", "job_id", "jobid", "job.id", "uuid", "attempt"})


def check(context: Context) -> Iterator[Diagnostic]:
    for doc, policy in context.jobs:
        recipe = policy.idempotency.key
        if recipe is None:
            continue
        where = context.where(doc, policy, "idempotency.key")
        yield from recipe_findings(recipe, policy.args_schema, where, "job")


def recipe_findings(
    recipe: str, args_schema: Mapping[str, Any], where: Location, what: str
) -> Iterator[Diagnostic]:
    """The findings of one key recipe, over the args schema of the ``what`` (``job``, or
    ``flow`` for a Workflow's own key: a start with the same key merges into one flow)
    it belongs to, located at ``where``."""
    schemas: Mapping[str, Any] = args_schema.get("properties", {})
    args = list(schemas)
    try:
        placeholders = key_placeholders(recipe)
    except ValueError as exc:
        yield UNREADABLE.at_origin(
            where,
            f"idempotency.key {recipe!r} cannot be filled in ({exc}); write each "
            "placeholder as {arg}, and double a brace meant literally ({{ or }})",
        )
        return
    if not placeholders:
        example = f"{{{args[0]}}}" if args else "{order_id}"
        yield NO_PLACEHOLDER.at_origin(
            where,
            f"idempotency.key {recipe!r} has no {{arg}} placeholder, so every enqueue gets "
            f"the same key and collapses into one {what}; build it from args, such as "
            f'"{example}:{recipe}"',
        )
        return
    for name in placeholders:
        if name in args and sensitive_arg(name, schemas[name]):
            others = [a for a in args if not sensitive_arg(a, schemas[a])]
            instead = f" such as {{{others[0]}}}" if others else ""
            yield USES_SENSITIVE.at_origin(
                where,
                f"idempotency.key uses {{{name}}}, a sensitive arg, and keys are stored "
                "and shown in clear; build the key from args that identify the work "
                f"without a secret{instead} (or write `sensitive: false` in "
                f"args.{name} if it is not a secret)",
            )
            continue
        if name in args:
            continue
        if name.lower() in _JOB_ID_NAMES:
            yield USES_JOB_ID.at_origin(
                where,
                f"idempotency.key uses {{{name}}}, which differs on every enqueue, so two "
                "enqueues of the same event get different keys; build the key from the "
                "args that identify the event",
            )
            continue
        known = listing(args)
        yield UNKNOWN_ARG.at_origin(
            where,
            f"idempotency.key placeholder {{{name}}} names no arg{did_you_mean(name, args)} "
            f"(args: {known}); use an arg name or add the arg",
        )
