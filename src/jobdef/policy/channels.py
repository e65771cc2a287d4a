"""What a channel needs to deliver, checked without sending anything.

:func:`read_channel` reads one Channel document's settings, and the environment
variables it names, into the settings its sender is built from
(:class:`WebhookSettings`, :class:`MailSettings`, ...), and collects every
problem on the way instead of stopping at the first: a variable the
environment lacks, a setting the type needs, a template that does not compile.
:func:`check_channel_env` lists the problems of every channel the jobs use, for
``jobdef validate --check-env`` and for worker start (:mod:`jobdef.notify.checks`
builds the senders of ready channels). Secrets are only ever read from the
environment and never appear in a problem, an error text or a settings repr.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from jobdef.policy.durations import parse_duration_or_none
from jobdef.policy.model import ChannelPolicy
from jobdef.policy.registry import Registry

DEFAULT_TIMEOUT = 10.0
# SMTP port of each ``security`` mode of an ``email`` channel.
DEFAULT_PORTS = {"starttls": 587, "tls": 465, "none": 25}


@dataclass(frozen=True, slots=True)
class ChannelProblem:
    """Why a channel cannot deliver: a missing variable or an unusable setting."""

    channel: str
    field: str
    message: str
    file: str = ""
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}: " if self.file else ""
        return f"{where}channel {self.channel!r} {self.field}: {self.message}"


class ChannelConfig:
    """The settings of one channel, read with every problem recorded in ``problems``."""

    def __init__(self, channel: ChannelPolicy, environ: Mapping[str, str]) -> None:
        self.channel = channel
        self.environ = environ
        self.problems: list[ChannelProblem] = []

    @property
    def name(self) -> str:
        return self.channel.name

    def problem(self, field: str, message: str) -> None:
        origins = self.channel.origins
        origin = origins.get(field) or origins.get("type") or origins.get("name")
        file, line, column = (
            (origin.file, origin.line, origin.column) if origin else (self.channel.file, 0, 0)
        )
        self.problems.append(ChannelProblem(self.name, field, message, file, line, column))

    def get(self, field: str, default: Any = None) -> Any:
        return self.channel.settings.get(field, default)

    def require(self, field: str, what: str) -> Any:
        """A setting the channel type needs; records a problem when it is absent."""
        value = self.channel.settings.get(field)
        if value in (None, "", ()):
            kind = self.channel.type
            article = "an" if kind[0] in "aeiou" else "a"
            self.problem(field, f"{article} {kind} channel needs `{field}`: {what}")
        return value

    def env(self, field: str, variable: str | None = None) -> str | None:
        """The value of the environment variable that setting ``field`` names."""
        variable = variable or self.get(field)
        if not variable:
            return None
        # A mounted secret file usually ends with a newline, which no secret means.
        value = _strip_newline(self.environ.get(str(variable), ""))
        if not value:
            self.problem(
                field,
                f"environment variable {variable} is not set; export it in the worker's "
                "environment (secrets never go in sheets)",
            )
            return None
        return value

    def timeout(self) -> float:
        raw = self.get("timeout")
        if raw is None:
            return DEFAULT_TIMEOUT
        seconds = parse_duration_or_none(str(raw))
        if not seconds:
            self.problem("timeout", f'{raw!r} is not a positive duration; write e.g. "5s"')
            return DEFAULT_TIMEOUT
        return seconds


def _strip_newline(value: str) -> str:
    return value[:-2] if value.endswith("\r\n") else value.removesuffix("\n")


# What http.client refuses in a header value: a line break not followed by a blank
# (no folding), and NUL. Other control characters are refused too: no receiver means them.
_BAD_HEADER_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def used_channels(registry: Registry) -> list[str]:
    """Channel names that some job's ``notify.channel`` refers to, sorted."""
    return sorted({job.notify.channel for job in registry if job.notify.channel})


def unknown_channel_problems(registry: Registry, names: Collection[str]) -> list[ChannelProblem]:
    problems = []
    known = ", ".join(sorted(registry.channels)) or "none"
    for name in names:
        if name in registry.channels:
            continue
        for job in registry:
            if job.notify.channel != name:
                continue
            origin = job.origin("notify.channel")
            problems.append(
                ChannelProblem(
                    channel=name,
                    field="notify.channel",
                    message=f"job {job.name} names a channel no Channel document defines "
                    f"(channels: {known}); add the Channel or fix the name",
                    file=origin.file if origin else job.file,
                    line=origin.line if origin else 0,
                    column=origin.column if origin else 0,
                )
            )
    return problems


@dataclass(frozen=True, slots=True)
class LogSettings:
    channel: str


@dataclass(frozen=True, slots=True)
class WebhookSettings:
    url: str = field(repr=False)
    format: str = "json"
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    timeout: float = DEFAULT_TIMEOUT


@dataclass(frozen=True, slots=True)
class SlackSettings:
    url: str = field(repr=False)
    timeout: float = DEFAULT_TIMEOUT


@dataclass(frozen=True, slots=True)
class MailSettings:
    host: str
    port: int
    sender: str
    recipients: tuple[str, ...]
    security: str = "starttls"
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    timeout: float = DEFAULT_TIMEOUT


@dataclass(frozen=True, slots=True)
class CommandSettings:
    argv: tuple[str, ...]
    timeout: float = DEFAULT_TIMEOUT


ChannelSettings = LogSettings | WebhookSettings | SlackSettings | MailSettings | CommandSettings


def _log(config: ChannelConfig) -> LogSettings:
    return LogSettings(config.name)


def _url(config: ChannelConfig) -> str:
    """The URL that the variable ``url_env`` names; empty, with a problem, when unusable."""
    config.require("url_env", "the environment variable that holds the URL")
    url = config.env("url_env") or ""
    problem = _url_problem(url) if url else None
    if problem:
        config.problem("url_env", f"environment variable {config.get('url_env')} {problem}")
        return ""
    return url


def _webhook(config: ChannelConfig) -> WebhookSettings:
    url = _url(config)
    headers: dict[str, str] = {}
    for header, variable in (config.get("headers_env") or {}).items():
        value = config.env("headers_env", variable)
        if value is None:
            continue
        if _BAD_HEADER_VALUE.search(value):
            # The value is a secret: name the variable only.
            config.problem(
                "headers_env",
                f"environment variable {variable} (header {header}) holds a line break or "
                "another control character, which no HTTP header may carry; store the value "
                "on one line",
            )
            continue
        headers[str(header)] = value
    return WebhookSettings(
        url,
        format=str(config.get("format", "json")),
        headers=headers,
        timeout=config.timeout(),
    )


def _url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a webhook URL, without quoting it (it is a secret)."""
    if _BAD_HEADER_VALUE.search(url) or " " in url:
        return "holds a blank or a control character; store the URL on one line"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        return "does not hold a valid URL (its port is not a number, or a bracket is unclosed)"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "must hold an http:// or https:// URL"
    if "@" in parts.netloc:
        return (
            "holds user:password@ in the URL, which the webhook channel does not send; "
            "put the credentials in a header (headers_env: {Authorization: VARIABLE})"
        )
    return None


def _slack(config: ChannelConfig) -> SlackSettings:
    return SlackSettings(_url(config), timeout=config.timeout())


def _mail(config: ChannelConfig) -> MailSettings:
    host = config.require("host", "the SMTP server's host name")
    sender = config.require("from", "the sender address")
    recipients = config.require("to", "a list of recipient addresses")
    security = str(config.get("security", "starttls"))
    user = config.env("user_env")
    password = config.env("password_env")
    if config.get("password_env") and not config.get("user_env"):
        config.problem("user_env", "a password without a user: name the user's variable too")
    return MailSettings(
        host=str(host or ""),
        port=int(config.get("port") or DEFAULT_PORTS.get(security, 25)),
        sender=str(sender or ""),
        recipients=tuple(str(r) for r in recipients or ()),
        security=security,
        user=user,
        password=password,
        timeout=config.timeout(),
    )


def _command(config: ChannelConfig) -> CommandSettings:
    argv = config.require("command", "the program and its arguments, as a list")
    return CommandSettings(tuple(str(a) for a in argv or ()), timeout=config.timeout())


@dataclass(frozen=True, slots=True)
class ChannelType:
    """One type of channel: its name, what it delivers through, and the reader of its settings.

    Its sender is the module of the same name under :mod:`jobdef.notify.channels`,
    whose ``build(settings)`` takes what ``read`` returns.
    """

    name: str
    delivers: str  # in the words of the schema's description of `type`
    read: Callable[[ChannelConfig], ChannelSettings]


# The channel types: the one list of them. The schema's `type` enum and its description
# are held to it (tests/policy/test_channel_types.py); the senders are found by its names.
CHANNEL_TYPES: Mapping[str, ChannelType] = {
    kind.name: kind
    for kind in (
        ChannelType("log", "a structured log line", _log),
        ChannelType("webhook", "HTTP POST", _webhook),
        ChannelType("slack", "a Slack message to an incoming webhook", _slack),
        ChannelType("email", "SMTP", _mail),
        ChannelType("command", "a program reading the event on stdin", _command),
    )
}


def type_description() -> str:
    """The schema's description of a Channel's ``type``, as the declaration says it."""
    return ", ".join(f"`{kind.name}` ({kind.delivers})" for kind in CHANNEL_TYPES.values()) + "."


# A channel template is written by whoever writes sheets, and rendered inside the
# worker: it must not be able to build a huge number or string in one C call, which
# no time limit could interrupt. Any integer a template passes to a call or a filter,
# or multiplies a text by, stays at most this; a power stays below this many bits.
MAX_TEMPLATE_NUMBER = 100_000
MAX_POWER_BITS = 4096
# A printf or format() width of six digits or more, or one taken from an argument.
_WIDE_FORMAT = re.compile(r"%[^a-zA-Z%]*(?:\d{6,}|\*)|\{[^{}]*:[^{}]*\d{6,}")


def _bounded(value: Any) -> None:
    from jinja2.exceptions import SecurityError

    if isinstance(value, int) and abs(value) > MAX_TEMPLATE_NUMBER:
        raise SecurityError(f"a number above {MAX_TEMPLATE_NUMBER} in a channel template")


def _check_binop(operator: str, left: Any, right: Any) -> None:
    from jinja2.exceptions import SecurityError

    ints = isinstance(left, int) and isinstance(right, int)
    if operator == "**" and ints and right > 0:
        if abs(left) > 1 and abs(left).bit_length() * right > MAX_POWER_BITS:
            raise SecurityError(f"a power above {MAX_POWER_BITS} bits in a channel template")
    elif operator == "*" and ints:
        if left.bit_length() + right.bit_length() > MAX_POWER_BITS:
            raise SecurityError(f"a product above {MAX_POWER_BITS} bits in a channel template")
    elif operator == "*":
        for side, other in ((left, right), (right, left)):
            repeated = isinstance(side, int) and hasattr(other, "__len__")
            if repeated and abs(side) * max(1, len(other)) > MAX_TEMPLATE_NUMBER:
                raise SecurityError(
                    f"a repeated text or list longer than {MAX_TEMPLATE_NUMBER} "
                    "in a channel template"
                )
    elif operator == "%" and isinstance(left, str) and _WIDE_FORMAT.search(left):
        raise SecurityError("a format width of six digits or more in a channel template")


@functools.cache
def _template_environment() -> Any:
    # Imported here: loading sheets must not pay for Jinja2.
    from jinja2 import Undefined
    from jinja2.exceptions import SecurityError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class BoundedSandbox(ImmutableSandboxedEnvironment):
        """Jinja2's immutable sandbox with no unbounded ``**``, ``*``, ``%`` or widths."""

        intercepted_binops = frozenset({"**", "*", "%"})

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            _check_binop(operator, left, right)
            return super().call_binop(context, operator, left, right)

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
            for value in (*args, *kwargs.values()):
                _bounded(value)
            return super().call(__context, __obj, *args, **kwargs)

        def wrap_str_format(self, value: Any) -> Any:
            owner = getattr(value, "__self__", None)
            wrapped = super().wrap_str_format(value)
            if wrapped is not None and isinstance(owner, str) and _WIDE_FORMAT.search(owner):
                raise SecurityError("a format width of six digits or more in a channel template")
            return wrapped

    environment = BoundedSandbox(autoescape=False, undefined=Undefined)
    environment.filters = {
        name: _bounded_filter(function, text_is_format=name == "format")
        for name, function in environment.filters.items()
    }
    return environment


def _bounded_filter(function: Callable[..., Any], text_is_format: bool) -> Callable[..., Any]:
    """``function`` refusing a number above :data:`MAX_TEMPLATE_NUMBER` (``center(10**9)``),
    and for the ``format`` filter a width of six digits or more."""

    @functools.wraps(function)  # keeps the pass_context/pass_environment marks
    def bounded(*args: Any, **kwargs: Any) -> Any:
        for value in (*args, *kwargs.values()):
            _bounded(value)
            if text_is_format and isinstance(value, str):
                _check_binop("%", value, ())
        return function(*args, **kwargs)

    return bounded


def compile_template(source: str) -> Any:
    """Compile a channel template in a bounded form of Jinja2's immutable sandbox: a sheet
    author can shape text, not call into Python nor build a number or a text too large
    to print. Raises :class:`jinja2.TemplateSyntaxError` when it is broken."""
    return _template_environment().from_string(source)


def _check_template(config: ChannelConfig) -> None:
    source = config.get("template")
    if not source:
        return
    from jinja2 import TemplateSyntaxError

    try:
        compile_template(source)
    except TemplateSyntaxError as exc:
        config.problem("template", f"the Jinja2 template does not compile: {exc.message}")


def read_channel(
    channel: ChannelPolicy, environ: Mapping[str, str]
) -> tuple[ChannelSettings, ChannelConfig]:
    """The settings of ``channel``'s sender; the config's ``problems`` say what is missing."""
    config = ChannelConfig(channel, environ)
    settings = CHANNEL_TYPES[channel.type].read(config)
    _check_template(config)
    return settings, config


def check_channel_env(
    registry: Registry, environ: Mapping[str, str], names: Collection[str] | None = None
) -> list[ChannelProblem]:
    """Every reason the channels in use (or ``names``) could not deliver; empty when ready."""
    wanted = used_channels(registry) if names is None else sorted(names)
    problems = unknown_channel_problems(registry, wanted)
    for name in wanted:
        channel = registry.channels.get(name)
        if channel is not None:
            problems.extend(read_channel(channel, environ)[1].problems)
    return problems
