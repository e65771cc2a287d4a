"""Error lists (JD231-JD235): every listed class is an exception, in one list, and reachable."""

from __future__ import annotations

import builtins
from collections.abc import Iterator

from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.rules.base import Rule
from jobdef.sheets.rules.context import Context
from jobdef.sheets.words import did_you_mean

IN_BOTH_LISTS = Rule(
    "JD231",
    "error-in-retry-and-fatal",
    "error",
    "A class in both lists has no defined outcome; decide whether it is transient.",
)
NOT_AN_EXCEPTION = Rule(
    "JD232",
    "not-an-exception",
    "error",
    "A name that is not an exception never matches a raised error; it is usually a typo.",
)
DEFAULT_MISSING = Rule(
    "JD233",
    "errors-default-missing",
    "error",
    "What an unlisted error does has no safe silent default; a sheet or Defaults must say it.",
)
RETRY_UNREACHABLE = Rule(
    "JD234",
    "retry-unreachable",
    "warning",
    "With max_attempts: 1 no retry ever happens, so errors.retry promises what never occurs.",
)
CLASS_IMPORT = Rule(
    "JD235",
    "error-class-import",
    "error",
    "A dotted class that does not import, or is no exception, never matches (--check-imports).",
)
RULES = (IN_BOTH_LISTS, NOT_AN_EXCEPTION, DEFAULT_MISSING, RETRY_UNREACHABLE, CLASS_IMPORT)

_BUILTIN_EXCEPTIONS = sorted(
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
)


def builtin_problem(name: str) -> str | None:
    """Why a dot-free class name is not a builtin exception, or None when it is one."""
    value = getattr(builtins, name, None)
    if isinstance(value, type) and issubclass(value, BaseException):
        return None
    if value is not None:
        return f"{name} is a builtin but not an exception class"
    hint = did_you_mean(name, _BUILTIN_EXCEPTIONS)
    return (
        f"{name} is not a builtin exception{hint} (write your own classes as dotted paths, "
        "such as myapp.errors.PaymentDeclined)"
    )


def _import_problems(context: Context) -> dict[str, str | None]:
    """--check-imports: what importing each dotted class of the run found, by name. Every
    class and handler of the run is imported in one child process."""
    from jobdef.sheets.rules.imports import probe, requests_of  # not without --check-imports

    answers = probe(requests_of(p for _, p in context.jobs))
    # A class is asked without args (Request.args), a handler with its args.
    return {request.path: a.problem for request, a in answers.items() if request.args is None}


def check(context: Context) -> Iterator[Diagnostic]:
    problems = _import_problems(context) if context.check_imports else {}
    for doc, policy in context.jobs:
        retry = [c.name for c in policy.errors.retry]
        fatal = [c.name for c in policy.errors.fatal]
        for list_name, names in (("retry", retry), ("fatal", fatal)):
            origin = policy.origin(f"errors.{list_name}")
            for index, name in enumerate(names):
                where = context.item(origin, ("errors", list_name), index, (doc, policy))
                if where is None:
                    continue
                if "." not in name:
                    problem = builtin_problem(name)
                    if problem is not None:
                        yield NOT_AN_EXCEPTION.at_origin(where, f"errors.{list_name}: {problem}")
                elif context.check_imports:
                    problem = problems[name]
                    if problem is not None:
                        yield CLASS_IMPORT.at_origin(
                            where, f"errors.{list_name}: {problem}; fix the dotted path"
                        )
                if list_name == "fatal" and name in retry:
                    yield IN_BOTH_LISTS.at_origin(
                        where,
                        f"{name} is listed in both errors.retry and errors.fatal; keep it in "
                        "one list (retry if the error is transient, fatal if it is not)",
                    )
        if "errors.default" not in policy.origins:
            yield DEFAULT_MISSING.at_origin(
                context.where(doc, policy, "errors", "name"),
                "errors.default is set neither in this sheet nor in any Defaults; say what an "
                "unlisted error does: errors: {default: retry} or errors: {default: fatal}",
            )
        if policy.max_attempts == 1 and retry:
            yield RETRY_UNREACHABLE.at_origin(
                context.where(doc, policy, "max_attempts", "errors.retry"),
                f"max_attempts is 1, so the errors.retry list ({', '.join(retry)}) never "
                "leads to a retry; raise max_attempts or empty the retry list",
            )
