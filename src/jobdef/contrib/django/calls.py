"""A call of a task as a job's args, and back: the binding both sides agree on.

A job's args have names, as its sheet declares them. :func:`job_args` binds
``enqueue(*args, **kwargs)`` to the function's parameters: each parameter is the arg
of its name, a ``*args`` parameter one arg holding the list of the extra positional
values, each ``**kwargs`` entry an arg of its own. :func:`passed_by_position` counts
the parameters the call gave by position, which the job keeps beside its args
(``positional_args``), so :func:`call_of` makes the call back as it was made, for
``TaskResult.args`` / ``kwargs`` (and, without that count, a call the function takes
the same way, for the worker).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from jobdef.contrib.django.compat import PACKAGE, normalize_json
from jobdef.errors import ArgsError


def own_parameters(func: Callable[..., Any], takes_context: bool) -> list[inspect.Parameter]:
    params = list(inspect.signature(func).parameters.values())
    return params[1:] if takes_context and params else params


def as_named(param: inspect.Parameter) -> inspect.Parameter:
    """A parameter as the worker fills it, by name (``*args`` from a list, optional)."""
    if param.kind is inspect.Parameter.VAR_POSITIONAL:
        return param.replace(kind=inspect.Parameter.KEYWORD_ONLY, default=())
    if param.kind is inspect.Parameter.POSITIONAL_ONLY:
        return param.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return param


class TaskArgsError(ArgsError, TypeError):
    """Args a task cannot be enqueued with: an :class:`~jobdef.errors.ArgsError`, and
    the ``TypeError`` the framework raises for args that are not JSON (as Python does
    for a call that does not fit the function)."""


def framework_words(*values: Any) -> str:
    """What the framework's own check of ``values`` says of a value of a type JSON does
    not have, as its backends raise it (`` (django_tasks: Unsupported type: <class
    ...>)``), to follow jobdef's words, so code that matches the framework's message
    matches this one; empty when the framework takes them."""
    try:
        for value in values:
            normalize_json(value)
    except (TypeError, ValueError) as exc:
        return f" ({PACKAGE}: {exc})"
    return ""


def refused(problem: ArgsError, args: Any, kwargs: Mapping[str, Any]) -> TaskArgsError:
    """jobdef's refusal of a call's args as a :class:`TaskArgsError`, and the framework's
    words where its own check refuses them too (:func:`framework_words`)."""
    return TaskArgsError(f"{problem}{framework_words(list(args), dict(kwargs))}")


def job_args(task: Any, args: Any, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The call ``task.enqueue(*args, **kwargs)`` as the args of a job: by name, as a
    sheet declares them. The call is bound to the function's parameters: each takes its
    name, ``*args`` is one arg holding the list of the extra positional values, and each
    ``**kwargs`` entry is an arg of its own; :func:`call_of` makes the call back."""
    params = own_parameters(task.func, task.takes_context)
    signature = inspect.Signature(params)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as exc:
        raise TaskArgsError(
            f"{task.module_path}.enqueue(): {exc}; call it as the function is defined. "
            "Nothing was stored"
        ) from None
    named: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            if value:
                named[name] = list(value)
        elif kind is inspect.Parameter.VAR_KEYWORD:
            extra = dict(value)
        else:
            named[name] = value
    clash = sorted(extra.keys() & {p.name for p in params})
    if clash:  # only a **kwargs entry named as the *args parameter can meet one
        raise TaskArgsError(
            f"{task.module_path}.enqueue(): the keyword {clash[0]!r} is the name of its "
            f"*{clash[0]} parameter, so it could not be told apart from it in the job's args; "
            "pass that value under another name. Nothing was stored"
        )
    return named | extra


_BY_POSITION = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def passed_by_position(task: Any, args: Any) -> int | None:
    """How many of the function's parameters a call with the positional ``args`` (one
    :func:`job_args` bound) fills by position, ``*args`` aside; None for none."""
    params = own_parameters(task.func, task.takes_context)
    count = min(len(args), sum(1 for p in params if p.kind in _BY_POSITION))
    return count or None


def call_of(
    task: Any, named: Mapping[str, Any], by_position: int | None = None
) -> tuple[list[Any], dict[str, Any]]:
    """The positional and keyword args of a call of ``task``'s function with the job's
    ``named`` args (:func:`job_args`): the first ``by_position`` parameters
    (:func:`passed_by_position`), positional-only ones and ``*args`` positionally (with
    the parameters before a non-empty ``*args``), the rest by name."""
    params = own_parameters(task.func, task.takes_context)
    star = next((p.name for p in params if p.kind is inspect.Parameter.VAR_POSITIONAL), None)
    extra = list(named.get(star, ())) if star is not None else []
    positional: list[Any] = []
    keywords: dict[str, Any] = {}
    for index, p in enumerate(params):
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            positional += extra
        elif p.kind is inspect.Parameter.VAR_KEYWORD or p.name not in named:
            continue
        elif p.kind is inspect.Parameter.POSITIONAL_ONLY or (
            p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
            and (bool(extra) or index < (by_position or 0))
        ):
            positional.append(named[p.name])
        else:
            keywords[p.name] = named[p.name]
    own = {p.name for p in params}
    keywords.update((name, value) for name, value in named.items() if name not in own)
    return positional, keywords
