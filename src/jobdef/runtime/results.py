"""A handler's return value held to its sheet's ``result:``, wherever the handler ran.

The worker's child process, the embedded worker, the Django backend and the
testing kit all call :func:`kept_result` on what a handler returned: with
``result.store: false`` nothing is kept (the value never leaves the handler's
process); else the value must be plain JSON (nested at most
:data:`~jobdef.runtime.payloads.MAX_RESULT_DEPTH` deep), at most
``result.max_bytes`` of UTF-8 JSON, and valid against ``result.schema`` when
the sheet has one (draft-07, checked as args are). A value that breaks any of
these raises :class:`~jobdef.runtime.errors.ResultRefused`, whose one line names
the job, the attempt, why, and what to return instead: the attempt fails with
it and the sheet's ``errors`` decide, as for any error.

A worker's children get each job's :class:`ResultRule` once, when they start
(:func:`result_rules`, plain data that pickles), so checking costs no message
on the pipe.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from jobdef.policy.model import JobPolicy
from jobdef.policy.sizes import format_size
from jobdef.policy.values import DEFAULT_RESULT_BYTES, thaw
from jobdef.runtime.classify import class_name
from jobdef.runtime.errors import ResultRefused
from jobdef.runtime.payloads import MAX_RESULT_DEPTH, RefusedPayload, TooBig, json_text

if TYPE_CHECKING:
    from jobdef.policy.registry import Registry


class ResultRule(NamedTuple):
    """What one job's sheet says of its return value, as plain data: ``store``,
    ``max_bytes``, ``schema`` (plain dicts and lists, or None) and ``sheet`` (the file
    that says it, for messages)."""

    store: bool = True
    max_bytes: int = DEFAULT_RESULT_BYTES
    schema: Mapping[str, Any] | None = None
    sheet: str = ""


def result_rule(policy: JobPolicy | None) -> ResultRule:
    """The rule of ``policy``'s job (without a sheet: the defaults), built once per policy
    object, so its schema's check is built once too."""
    if policy is None:
        return _DEFAULT
    cached = _rules.get(policy.name)
    if cached is None or cached[0] is not policy:
        result = policy.result
        schema = thaw(result.schema) if result.schema is not None else None
        cached = _rules[policy.name] = (
            policy,
            ResultRule(result.store, result.max_bytes, schema, policy.file),
        )
    return cached[1]


def result_rules(registry: Registry) -> dict[str, ResultRule]:
    """Every job's rule, by job name."""
    return {policy.name: result_rule(policy) for policy in registry}


def kept_result(
    rule: ResultRule, value: Any, job_id: int | str, job: str, attempt: int
) -> str | None:
    """What to store of ``value``, returned by attempt ``attempt`` of job ``job_id``
    (``job``; a Celery or RQ run names its job ``celery/<task id>``): its JSON text, or
    None when there is nothing to store (the handler returned None, or the sheet keeps
    no value). Raises :class:`ResultRefused`."""
    if value is None or not rule.store:
        return None
    where = f"job {job_id} ({job}) attempt {attempt}: return value refused"
    sheet = f" of {rule.sheet}" if rule.sheet else ""
    try:
        text = json_text(value, max_bytes=rule.max_bytes, max_depth=MAX_RESULT_DEPTH)
    except TooBig as exc:
        raise ResultRefused(
            f"{where}, {exc} by result.max_bytes{sheet} ({format_size(rule.max_bytes)}); "
            "store the bulk elsewhere and return its id, or raise result.max_bytes"
        ) from None
    except RefusedPayload as exc:
        raise ResultRefused(
            f"{where}, {exc}; return plain JSON (dict, list, str, number, bool, None), "
            f"nested at most {MAX_RESULT_DEPTH} deep"
        ) from None
    except Exception as exc:  # a broken __eq__/__iter__ of user data must not end the child
        raise ResultRefused(
            f"{where}, it cannot be read as JSON ({class_name(type(exc))}); return plain "
            "JSON (dict, list, str, number, bool, None)"
        ) from None
    if rule.schema is not None:
        _check_schema(rule, text, where, sheet)
    return text


def _check_schema(rule: ResultRule, text: str, where: str, sheet: str) -> None:
    from jobdef.sheets.args_check import ResultCheck

    check = _schema_checks.get(id(rule.schema))
    if check is None or check[0] is not rule.schema:
        check = _schema_checks[id(rule.schema)] = (rule.schema, ResultCheck(rule.schema or {}))
    # The stored text, read back: the schema sees what a reader of the result will see
    # (a tuple as a list, an int subclass as an int).
    errors = check[1].errors(json.loads(text))
    if errors:
        shown = "; ".join(f"{_place(e.path)}: {e.message}" for e in errors[:3])
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        raise ResultRefused(
            f"{where}, it breaks result.schema{sheet}: {shown}{more}; return a value that "
            "matches result.schema, or change the schema"
        )


def _place(path: tuple[str | int, ...]) -> str:
    """``result.items[2].id``: a place in the value, as messages name it."""
    return "result" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


_DEFAULT = ResultRule()
# Each job's rule, by name: (the policy it was built from, the rule).
_rules: dict[str, tuple[JobPolicy, ResultRule]] = {}
# Each schema's check, built once per process: (the schema it was built from, the check).
_schema_checks: dict[int, tuple[Mapping[str, Any] | None, Any]] = {}
