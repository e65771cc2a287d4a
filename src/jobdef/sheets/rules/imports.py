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
    as JSON, to check its parameters) or a dotted exception class (``args`` is None)."""

    path: str
    args: str | None = None

    @classmethod
    def handler(cls, path: str, args_schema: Mapping[str, Any]) -> Request:
        # What the parameter check reads of the schema: the args, in order, and the required.
        names = list(args_schema.get("properties", {}))
        required = sorted(args_schema.get("required", ()))
        return cls(path, json.dumps({"properties": dict.fromkeys(names), "required": required}))


@dataclass(frozen=True, slots=True)
class Answer:
    """What importing one request found: ``problem`` (does not import, not callable, not
    an exception class), else for a handler ``mismatch`` (its parameters do not fit the
    args) and ``kind`` ("sync" or "async")."""

    problem: str | None = None
    mismatch: str | None = None
    kind: str | None = None


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
        found.append(Request.handler(policy.handler, policy.args_schema))
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

    line = json.dumps({"path": sys.path, "requests": [[r.path, r.args] for r in requests]})
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
                        message.get("problem"), message.get("mismatch"), message.get("kind")
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


def handler_kinds(handlers: Iterable[str]) -> list[tuple[str, str]]:
    """(handler, "sync" or "async") for each ``module:function`` that imports and is
    callable, in the order given, once each (the others are findings already).

    Asked of the same child process as the checks (:func:`probe`), whose answers
    this process keeps: no handler is imported here."""
    paths = list(dict.fromkeys(handlers))
    requests = {path: _known(path) for path in paths}
    found = probe(requests.values())
    return [(path, kind) for path in paths if (kind := found[requests[path]].kind) is not None]


def _known(path: str) -> Request:
    """The request of ``path`` this process already asked about (any args schema: the
    kind does not depend on it), else a new one."""
    current = tuple(sys.path)
    for seen_path, request in _answers:
        if seen_path == current and request.path == path and request.args is not None:
            return request
    return Request.handler(path, {})
