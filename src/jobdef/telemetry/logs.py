"""The worker's log lines, as text for a terminal or as one JSON object per line.

The worker and its handler processes format their records alike
(:func:`configure` runs in both; the worker passes its choice to its children),
so a handler's ``ctx.logger.info("sent", extra={"to": ...})`` comes out of the
child with the job's identity and the handler's ``extra`` in every line, not
cut to a fixed format. A JSON line always carries the fields of
:data:`FIELDS` (``null`` when they do not apply) and then the record's other
extras; a text line appends the ones that are set as ``key=value``.

No line holds a secret: the message, every extra that is text and any
traceback go through :func:`jobdef.redact.redact`, with the values of the
environment variables whose names say they are secret, and the database
URL's password, as known secrets. Job args are never logged unless the worker
runs with ``--log-args``, and then cut to :data:`MAX_ARGS_CHARS`.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import sys
import time
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from jobdef.redact import redact, url_secrets

LOG_FORMATS = ("text", "json")
LOG_LEVELS = ("debug", "info", "warning", "error")
DEFAULT_LOG_LEVEL = "info"
# The fields of every JSON line, in this order, null when they do not apply.
FIELDS = (
    "time",
    "level",
    "logger",
    "message",
    "worker",
    "job",
    "job_id",
    "attempt",
    "queue",
    "outcome",
    "duration_ms",
    "error_type",
)
# The context fields a record may carry as extras (the others are the record's own).
CONTEXT_FIELDS = FIELDS[4:]
# Context fields that hold names from the sheets (a handler's logger sets them, over
# any extra of the same name) and numbers: no secret can be in them, so they are not
# searched for one, which is most of the per-attempt line's cost.
_TRUSTED = frozenset({"job", "job_id", "attempt", "queue", "duration_ms"})
# Job args in a line (--log-args) are cut to this many characters of their JSON.
MAX_ARGS_CHARS = 200
# An extra value longer than this is cut: a handler chooses what it logs.
MAX_EXTRA_CHARS = 2000
# Environment variables whose values are never printed, wherever they appear; of any
# other value that is a URL, its password and secret parameters are not either.
_SECRET_NAME = re.compile(r"PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|PRIVATE|CREDENTIAL|WEBHOOK|DSN")
# Line breaks other than the ones json.dumps escapes (NEL, line and paragraph separator).
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})
# The name of the root handler configure() installs (and replaces on a second call).
_HANDLER_NAME = "jobdef"
# Attributes every LogRecord has: anything else on a record is an extra.
_RECORD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {
    "message",
    "asctime",
    "taskName",
}


@dataclass(frozen=True, slots=True)
class LogSettings:
    """How a worker and its handler processes log: picklable, so a child gets the same."""

    level: int = logging.INFO
    format: str = "text"
    worker: str | None = None
    # Extra strings to hide (the database URL's secret parts).
    secrets: tuple[str, ...] = ()


def environment_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of the environment variables whose names say they hold a secret, and the
    secret parts of any URL among them."""
    env = os.environ if environ is None else environ
    found: list[str] = []
    for name, value in env.items():
        if value and _SECRET_NAME.search(name.upper()):
            found.append(value)
        if "://" in value:
            found.extend(url_secrets(value))
    # Short values would hide ordinary words ("1", "on"); they are not secrets worth it.
    return [value for value in found if len(value) >= 6]


class _Redacting(logging.Formatter):
    def __init__(self, settings: LogSettings, secrets: Iterable[str]) -> None:
        super().__init__()
        self.settings = settings
        self.secrets = tuple(sorted(set(secrets), key=len, reverse=True))

    def clean(self, text: str) -> str:
        return redact(text, self.secrets)

    def message(self, record: logging.LogRecord) -> str:
        """The record's message, cleaned; a worker's attempt line is made of names from
        the sheets, ids and an exception's class, so it has nothing to clean."""
        text = record.getMessage()
        return text if getattr(record, "_attempt_line", False) else self.clean(text)

    def fields(self, record: logging.LogRecord) -> dict[str, Any]:
        """The context fields and extras of ``record``, cleaned, in a stable order."""
        found: dict[str, Any] = {name: getattr(record, name, None) for name in CONTEXT_FIELDS}
        if found["worker"] is None:
            found["worker"] = self.settings.worker
        for name, value in vars(record).items():  # in the order they were set
            if name not in _RECORD_ATTRIBUTES and name not in found and name[0] != "_":
                found[name] = value
        return {
            name: value if name in _TRUSTED or value == self.settings.worker else self._value(value)
            for name, value in found.items()
        }

    def _value(self, value: Any) -> Any:
        if value is None or isinstance(value, bool | int | float):
            return value
        if not isinstance(value, str):
            try:
                value = json.dumps(value, ensure_ascii=False)
            except (TypeError, ValueError, RecursionError):
                value = repr(value)
        return self.clean(value[:MAX_EXTRA_CHARS])

    def error_text(self, record: logging.LogRecord) -> str | None:
        if record.exc_info:
            return self.clean(self.formatException(record.exc_info))
        return None


class JsonFormatter(_Redacting):
    """One JSON object per line: :data:`FIELDS`, then the record's other extras."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": _iso(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": self.message(record),
        }
        line.update(self.fields(record))
        error = self.error_text(record)
        if error is not None:
            line["exception"] = error
        text = json.dumps(line, ensure_ascii=False, default=str)
        # JSON leaves these unescaped, and a reader splitting on every line break
        # (Python's splitlines) would cut the object: a line is one line everywhere.
        return text.translate(_LINE_BREAKS)


class TextFormatter(_Redacting):
    """``time logger LEVEL message key=value ...`` (only the fields that are set)."""

    def format(self, record: logging.LogRecord) -> str:
        head = f"{_iso(record.created)} {record.name} {record.levelname} "
        text = head + self.message(record)
        shown = {
            name: value
            for name, value in self.fields(record).items()
            if value is not None and name != "worker" and not _in_message(name, record)
        }
        if shown:
            text += " " + " ".join(f"{name}={value}" for name, value in shown.items())
        error = self.error_text(record)
        return text if error is None else f"{text}\n{error}"


def _in_message(name: str, record: logging.LogRecord) -> bool:
    """The worker's attempt lines say the job, id and attempt already; a record may name
    the extras its words say in ``_in_text`` (a JSON line keeps them as fields)."""
    if name in getattr(record, "_in_text", ()):
        return True
    return name in ("job", "job_id", "attempt", "outcome", "duration_ms", "error_type") and bool(
        getattr(record, "_attempt_line", False)
    )


def _iso(created: float) -> str:
    return f"{_second(int(created))}.{int(created % 1 * 1000):03d}Z"


@functools.lru_cache(maxsize=4)
def _second(seconds: int) -> str:
    """UTC to the second; lines come many a second, so it is formatted once per second."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))


def formatter(settings: LogSettings, environ: Mapping[str, str] | None = None) -> logging.Formatter:
    """The formatter ``settings`` name, hiding the environment's secrets."""
    secrets = [*settings.secrets, *environment_secrets(environ)]
    cls = JsonFormatter if settings.format == "json" else TextFormatter
    return cls(settings, secrets)


def configure(settings: LogSettings, filename: str | None = None) -> None:
    """Have the root logger write ``settings``' format to ``filename`` or stderr.

    Replaces the handler an earlier call installed, so calling it again (a worker run
    twice in one process) does not print each line twice. When someone else has
    configured the root logger already (an application running the worker, a test
    runner's capture), it is left as it is, as :func:`logging.basicConfig` does."""
    root = logging.getLogger()
    ours = [old for old in root.handlers if old.get_name() == _HANDLER_NAME]
    if len(ours) < len(root.handlers):
        return
    handler: logging.Handler
    if filename is None:
        handler = logging.StreamHandler(sys.stderr)
    else:
        handler = logging.FileHandler(filename)
    handler.setFormatter(formatter(settings))
    handler.set_name(_HANDLER_NAME)
    for old in ours:
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(settings.level)
    if settings.format == "json":
        # Python's warnings (a library's, imported by a handler) print text of their
        # own to stderr: as log records, they are JSON lines like the rest.
        logging.captureWarnings(True)


def command_line(
    settings: LogSettings, message: str, *, level: int = logging.INFO, **fields: Any
) -> str:
    """A line a command prints itself, not through logging (the worker's summary at exit,
    its last error), in the log format of ``settings``: with ``json`` one object like
    every log line, ``fields`` among its extras, so that a reader of JSON lines meets
    nothing else; with ``text`` the message as it is."""
    if settings.format != "json":
        return message
    record = logging.LogRecord("jobdef.worker", level, __file__, 0, message, (), None)
    for name, value in fields.items():
        setattr(record, name, value)
    return formatter(settings).format(record)


def level_number(name: str) -> int:
    """The logging level of a --log-level choice."""
    return int(getattr(logging, name.upper()))


class JobLogger(logging.LoggerAdapter[logging.Logger]):
    """A handler's ``ctx.logger``: each record carries the job's identity, and the
    handler's own ``extra`` is kept beside it (a plain LoggerAdapter replaces it)."""

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, Any]:
        given = kwargs.get("extra") or {}
        kwargs["extra"] = {**given, **(self.extra or {})}
        return msg, kwargs


def args_text(args: Mapping[str, Any]) -> str:
    """Job args for a line of ``--log-args``: compact JSON cut to MAX_ARGS_CHARS."""
    try:
        text = json.dumps(args, ensure_ascii=False, separators=(",", ":"), default=repr)
    except (TypeError, ValueError, RecursionError):
        text = repr(args)
    if len(text) > MAX_ARGS_CHARS:
        return text[:MAX_ARGS_CHARS] + f"…(+{len(text) - MAX_ARGS_CHARS} chars)"
    return text
