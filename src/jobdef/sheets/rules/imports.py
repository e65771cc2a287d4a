"""Importing what a sheet names, for --check-imports: never raises, says what went wrong.

Modules are found on ``sys.path`` as it is: the commands put the configured
``pythonpath`` first (:func:`jobdef.project.use_pythonpath`), the same for the
checks as for the worker.

``jobdef validate --check-imports`` executes the project's code, so it imports in
a child process (:func:`probe`), one for every handler and error class of the
run: a module that calls ``sys.exit``, ``os._exit``, hangs (:data:`IMPORT_TIMEOUT`)
or crashes the interpreter is a finding at the line that names it, and the
validator goes on. The worker's start check imports in its own process
(:func:`jobdef.sheets.handlers.handler_problems`), as it will run the handlers.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jobdef.policy.model import JobPolicy

# Seconds one import may take in the child before it counts as hanging.
IMPORT_TIMEOUT = 30.0

# What the child runs: its sys.path is the caller's, so it imports what the worker would.
_BOOTSTRAP = (
    "import json, sys; request = json.loads(sys.stdin.readline()); "
    "sys.path[:] = request['path']; "
    "from jobdef.sheets.handlers import serve; serve(request['requests'])"
)


@dataclass(frozen=True, slots=True)
class Request:
    """One thing to import: a handler (``module:function``, with the sheet's args schema
    as JSON, to check its parameters) or a dotted exception class (``args`` is None).

    ``call``: how a plain function is called, "worker" (jobdef's worker,
    ``handler(ctx, **args)``) or "rq" (a job that names ``runtime.rq``,
    ``handler(**args)``); a Celery task is checked as Celery calls it either way."""

    path: str
    args: str | None = None
    call: str = "worker"

    @classmethod
    def handler(cls, path: str, args_schema: Mapping[str, Any], call: str = "worker") -> Request:
        # What the parameter check reads of the schema: the args, in order, and the required.
        names = list(args_schema.get("properties", {}))
        required = sorted(args_schema.get("required", ()))
        schema = json.dumps({"properties": dict.fromkeys(names), "required": required})
        return cls(path, schema, call)

    @classmethod
    def of(cls, policy: JobPolicy) -> Request:
        """The request of ``policy``'s handler, called as the runtime the job names calls it."""
        call = "rq" if policy.runtime.rq.named else "worker"
        return cls.handler(policy.handler, policy.args_schema, call)


@dataclass(frozen=True, slots=True)
class Answer:
    """What importing one request found: ``problem`` (does not import, not callable, not
    an exception class), else for a handler ``mismatch`` (its parameters do not fit the
    args), ``kind`` ("sync" or "async"), ``caller`` (who it was checked for: "worker",
    "rq" or "celery", a Celery task) and ``alone`` (it does not fit jobdef's worker's
    call but would fit the args alone, as Celery and RQ call)."""

    problem: str | None = None
    mismatch: str | None = None
    kind: str | None = None
    caller: str | None = None
    alone: bool = False


# Answers already found in this process, by sys.path and request.
_answers: dict[tuple[tuple[str, ...], Request], Answer] = {}


def probe(requests: Iterable[Request]) -> dict[Request, Answer]:
    """Import each request in a child process (one for all, another after one that
    ended it) and say what each found. Never raises for what the imported code does."""
    path = tuple(sys.path)
    wanted = list(dict.fromkeys(requests))
    pending = [r for r in wanted if (path, r) not in _answers]
    while pending:
        found = _child(pending)
        if not found:  # the child could not even start: say so for each, once
            found = {
                r: Answer(problem="the process that imports it did not start") for r in pending
            }
        for request, answer in found.items():
            _answers[(path, request)] = answer
        pending = [r for r in pending if r not in found]
    return {r: _answers[(path, r)] for r in wanted}


def requests_of(jobs: Iterable[JobPolicy]) -> list[Request]:
    """Every handler and dotted error class of ``jobs``: what one child imports for all
    the rules of a run (each rule then finds its answers already there)."""
    found: list[Request] = []
    for policy in jobs:
        found.append(Request.of(policy))
        for error in (*policy.errors.retry, *policy.errors.fatal):
            if "." in error.name:
                found.append(Request(error.name))
    return found


def _child(requests: Sequence[Request]) -> dict[Request, Answer]:
    """Answers from one child, up to the first request it did not survive (which is
    answered with what ended it); the rest are left to a new child."""
    # Imported here: only --check-imports starts a child, and validating without it
    # should not pay for these modules.
    import selectors
    import subprocess

    line = json.dumps({"path": sys.path, "requests": [[r.path, r.args, r.call] for r in requests]})
    try:
        child = subprocess.Popen(
            [sys.executable, "-c", _BOOTSTRAP],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
    except OSError:
        return {}
    assert child.stdin is not None
    assert child.stdout is not None
    try:
        child.stdin.write(line.encode("utf-8") + b"\n")
        child.stdin.close()
    except BrokenPipeError:
        pass
    answers: dict[Request, Answer] = {}
    started: int | None = None
    deadline = time.monotonic() + IMPORT_TIMEOUT
    buffer = b""
    with selectors.DefaultSelector() as selector:
        selector.register(child.stdout, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                child.kill()
                child.wait()
                if started is not None:
                    answers[requests[started]] = Answer(
                        problem=f"importing it did not finish within {IMPORT_TIMEOUT:g} s "
                        "(does the module wait for something at import?)"
                    )
                break
            chunk = os.read(child.stdout.fileno(), 65536)
            if not chunk:
                code = child.wait()
                if started is not None:
                    answers[requests[started]] = Answer(problem=_ended(code))
                break
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for raw in lines:
                message = json.loads(raw)
                index = message["i"]
                if "start" in message:
                    started, deadline = index, time.monotonic() + IMPORT_TIMEOUT
                else:
                    started = None
                    answers[requests[index]] = Answer(
                        message.get("problem"),
                        message.get("mismatch"),
                        message.get("kind"),
                        message.get("caller"),
                        bool(message.get("alone")),
                    )
    child.stdout.close()
    return answers


def _ended(code: int) -> str:
    """What ended the child while it imported a module."""
    if code < 0:
        import signal

        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"importing it crashed the Python process ({name})"
    return f"importing it ended the Python process (exit code {code}, such as os._exit)"


def resolve(module: str, attribute: str) -> tuple[Any, str | None]:
    """Import ``module`` and get ``attribute``: (object, None) or (None, what went wrong)."""
    try:
        loaded = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        return None, f"module {exc.name or module} not found"
    except SystemExit as exc:  # sys.exit() at import: a finding, not the end of the check
        return None, f"importing {module} called sys.exit({exc.code!r})"
    except Exception as exc:  # importing user code may raise anything
        return None, f"importing {module} raised {type(exc).__name__}: {exc}"
    if not hasattr(loaded, attribute):
        return None, f"module {module} has no attribute {attribute}"
    return getattr(loaded, attribute), None


def handler_kind(handler: Any) -> str:
    """The kind of a handler: "async" for a coroutine function (also behind
    functools.partial, or an object whose ``__call__`` is one), which the worker runs
    on its event loop; else "sync"."""
    call = None if inspect.isroutine(handler) else type(handler).__call__
    if inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(call):
        return "async"
    return "sync"


def handler_kinds(jobs: Iterable[JobPolicy]) -> list[tuple[str, str]]:
    """(handler, how it is run) for each job's handler that imports and is callable, in
    the order given, once each (the others are findings already): "sync" or "async" on
    jobdef's worker, "celery" for a Celery task, "rq" for a job that names
    ``runtime.rq``.

    Asked of the same child process as the checks (:func:`probe`), with the same
    requests, whose answers this process keeps: no handler is imported here."""
    requests = list(dict.fromkeys(Request.of(job) for job in jobs))
    found = probe(requests)
    kinds: dict[tuple[str, str], None] = {}
    for request in requests:
        answer = found[request]
        if answer.kind is not None:
            how = answer.caller if answer.caller in ("celery", "rq") else answer.kind
            kinds[(request.path, how)] = None
    return list(kinds)
