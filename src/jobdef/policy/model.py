"""The effective policy of each job: one frozen object per job, resolved once.

The sheet loader merges ``Defaults`` into each ``Job``, parses durations and
records where every value came from. Docs, review tools and the runtime read
only these objects; nothing downstream re-reads YAML.

All durations are ``float`` seconds. The plain values the model uses (the byte bounds
of args and results, :func:`~jobdef.policy.values.freeze`) are in
:mod:`jobdef.policy.values`, which checks of sheets read without loading these classes.
Each class is declared :func:`~jobdef.records.record`: a frozen dataclass, which
compiles only its ``__init__`` at import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Any, Literal

from jobdef.policy.values import DEFAULT_ARGS_BYTES, DEFAULT_RESULT_BYTES, EMPTY, freeze
from jobdef.records import Record, record

Strategy = Literal["fixed", "linear", "exponential", "list"]
Jitter = Literal["none", "full", "equal", "decorrelated"]
ErrorAction = Literal["retry", "fatal"]
Mode = Literal["async", "batch"]
ReclaimAction = Literal["retry", "fail"]
NotifyEvent = Literal["dead", "retry", "timeout", "reclaimed", "done"]
CatchUp = Literal["none", "latest", "all"]

Source = Literal["sheet", "defaults", "builtin"]


@record
class Origin(Record):
    """Where a value was written: a sheet or a ``Defaults`` document, at file:line:column."""

    file: str
    line: int
    column: int
    source: Source = "sheet"

    def __str__(self) -> str:
        if self.source == "builtin":
            return "built-in default"
        return f"{self.file}:{self.line}"


@record
class BackoffPolicy(Record):
    """How long to wait after failed attempt n before the next one."""

    strategy: Strategy
    initial: float
    multiplier: float = 2.0
    max: float | None = None
    jitter: Jitter = "none"
    delays: tuple[float, ...] = ()


@record
class ErrorClass(Record):
    """An exception class named in ``errors.retry`` or ``errors.fatal``."""

    name: str
    description: str | None = None


@record
class ErrorPolicy(Record):
    """Which raised exceptions retry and which bury the job at once."""

    retry: tuple[ErrorClass, ...] = ()
    fatal: tuple[ErrorClass, ...] = ()
    default: ErrorAction = "retry"


@record
class IdempotencyPolicy(Record):
    """The idempotency key recipe over args, e.g. ``"{reservation_id}:confirm-mail"``.

    ``dedupe_window``: how long after a job finished a new enqueue with the same
    key still returns the finished job instead of adding one (``None``: only
    while the job is active, i.e. queued or running).
    """

    key: str | None = None
    dedupe_window: float | None = None


@record
class NotifyPolicy(Record):
    """Which channel hears about which events of the job."""

    channel: str | None = None
    events: tuple[NotifyEvent, ...] = ()
    key_args: tuple[str, ...] = ()


@record
class RetentionPolicy(Record):
    """How long finished rows are kept. ``dead=None`` means until an operator resolves it."""

    done: float | None = None
    dead: float | None = None


@record
class LimitsPolicy(Record):
    """Bounds on what one job may carry: ``args_bytes``, its args as UTF-8 JSON."""

    args_bytes: int = DEFAULT_ARGS_BYTES


@record
class ResultPolicy(Record):
    """What becomes of the value a handler returns (the sheet's ``result:``).

    ``store``: whether the value is kept with the done job; with ``False`` it is
    neither sent back from the handler's process nor stored, and nothing below
    applies (a rule refuses ``schema``, ``public`` or ``notify`` then).
    ``max_bytes``: the largest value kept, in bytes of UTF-8 JSON; a larger one
    fails the attempt. At most :data:`RESULT_BYTES_MAX`.
    ``retention``: seconds a stored value is kept after its job ended done; the
    job's ``retention.done`` when the sheet does not say (``None``: as long as
    the job's row, i.e. forever when that is kept forever). Never longer than
    ``retention.done``: the value lives no longer than its job's row.
    ``schema``: the draft-07 JSON Schema the value must satisfy (frozen, as
    written), checked as args are; ``None`` checks only that it is plain JSON.
    ``public``: what a receipt (the status endpoint an application shows its
    user) may show of the value: ``False`` nothing, ``True`` all of it, or the
    names of top-level fields of an object value.
    ``notify``: the top-level fields of the value carried in the job's ``done``
    notification (none by default).
    """

    store: bool = True
    max_bytes: int = DEFAULT_RESULT_BYTES
    retention: float | None = None
    schema: Mapping[str, Any] | None = None
    public: bool | tuple[str, ...] = False
    notify: tuple[str, ...] = ()


@record
class RuntimeFit(Record):
    """What a sheet accepts that one runtime does not honour exactly (``jobdef check``).

    ``named``: the sheet (or its Defaults) names the runtime (``runtime: {rq: ...}``),
    saying that it runs the job; ``jobdef validate --check-imports`` then checks the
    handler as that runtime calls it (RQ: ``handler(**args)``, without ctx).
    """

    accept: tuple[str, ...] = ()
    named: bool = False


@record
class RuntimesPolicy(Record):
    """Per runtime the adapters serve (``runtime.celery``, ``runtime.rq``), what is accepted."""

    celery: RuntimeFit = field(default_factory=RuntimeFit)
    rq: RuntimeFit = field(default_factory=RuntimeFit)


@record
class DecisionAnswers(Record):
    """Answers to the classic sync / async / batch decision flow (all optional)."""

    time_triggered: bool | None = None
    result_needed_at_once: bool | None = None
    done_within_seconds: bool | None = None
    calls_external_systems: bool | None = None
    must_accept_when_external_down: bool | None = None


# The priorities a job may have: the sheet schema's bounds for `priority`, which an
# enqueue's override keeps to as well (a test holds the two together).
PRIORITIES = range(-1000, 1001)


@record
class JobPolicy(Record):
    """The fully resolved policy of one job: defaults merged, durations parsed."""

    name: str
    handler: str
    title: str = ""
    description: str = ""
    owner: str = ""
    trigger: str = ""
    mode: Mode = "async"
    schedule: str | None = None
    timezone: str = "UTC"
    catch_up: CatchUp = "latest"
    queue: str = "default"
    priority: int = 0  # within PRIORITIES, as the sheet schema bounds it
    args_schema: Mapping[str, Any] = field(default_factory=lambda: freeze({"type": "object"}))
    max_attempts: int = 1
    backoff: BackoffPolicy = field(
        default_factory=lambda: BackoffPolicy(strategy="fixed", initial=10.0)
    )
    timeout: float = 60.0
    deadline: float | None = None
    idempotency: IdempotencyPolicy = field(default_factory=IdempotencyPolicy)
    errors: ErrorPolicy = field(default_factory=ErrorPolicy)
    on_reclaim: ReclaimAction = "retry"
    dead_letter: str = "table"
    notify: NotifyPolicy = field(default_factory=NotifyPolicy)
    rerun: str = ""
    retention: RetentionPolicy = field(default_factory=RetentionPolicy)
    limits: LimitsPolicy = field(default_factory=LimitsPolicy)
    result: ResultPolicy = field(default_factory=ResultPolicy)
    runtime: RuntimesPolicy = field(default_factory=RuntimesPolicy)
    decision: DecisionAnswers | None = None
    # Dotted field path ("backoff.initial") -> where the effective value was written.
    origins: Mapping[str, Origin] = field(default_factory=lambda: EMPTY)
    file: str = ""

    def origin(self, path: str) -> Origin | None:
        """Where the value at ``path`` came from, looking at parents when the leaf was implied."""
        while path:
            if path in self.origins:
                return self.origins[path]
            path = path.rpartition(".")[0]
        return None


@record
class ChannelPolicy(Record):
    """A named notification channel; ``settings`` holds the type-specific fields."""

    name: str
    type: str  # a key of jobdef.policy.channels.CHANNEL_TYPES, as the schema's enum holds
    settings: Mapping[str, Any] = field(default_factory=lambda: EMPTY)
    origins: Mapping[str, Origin] = field(default_factory=lambda: EMPTY)
    file: str = ""


@record
class QueuePolicy(Record):
    """Limits of one named queue: concurrency and a start rate (``rate`` is starts per second)."""

    name: str
    concurrency: int | None = None
    rate: float | None = None
    description: str = ""
    file: str = ""
