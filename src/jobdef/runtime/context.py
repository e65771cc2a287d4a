"""What a handler receives besides its args: the job's identity and a line back to the worker.

Handlers are called as ``handler(ctx, **args)`` in a child process of the worker.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from datetime import datetime
from functools import cached_property
from typing import Any

from jobdef.redact import redact
from jobdef.telemetry.logs import JobLogger


@dataclass
class Context:
    """The running attempt: ids, the idempotency key, heartbeat/progress and a logger.

    ``database_url`` is the job database, for the idempotency helper.
    ``slot`` is the cron slot a scheduled batch job runs for, an aware datetime in
    its sheet's time zone (``None`` for a job enqueued by hand): a nightly report
    reads the day to report on from it, not from the clock, so a late or
    caught-up run still reports on its own day.
    """

    job_id: int
    job: str
    attempt: int
    max_attempts: int
    idempotency_key: str | None
    database_url: str = field(default="", repr=False)  # shown redacted by __repr__
    slot: datetime | None = None
    queue: str = ""
    _send: Callable[[Any], None] | None = field(default=None, repr=False)

    @cached_property
    def logger(self) -> logging.LoggerAdapter[logging.Logger]:
        """The handler's logger; the job's identity rides on every record, beside the
        handler's own ``extra``. Made at first use: most handlers never log, and a
        context is made for every attempt."""
        base = logging.getLogger(f"jobdef.jobs.{self.job}")
        identity = {"job": self.job, "job_id": self.job_id, "attempt": self.attempt}
        return JobLogger(base, identity | ({"queue": self.queue} if self.queue else {}))

    def __repr__(self) -> str:
        # A handler may log its ctx: the database URL appears without its password.
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.repr)
        return f"Context({shown}, database_url={redact(self.database_url)!r})"

    @property
    def is_last_attempt(self) -> bool:
        return self.attempt >= self.max_attempts

    def heartbeat(self, progress: Any = None) -> None:
        """Tell the worker this attempt is alive, which extends the job's lease (the worker
        also does so on its own while the child lives), with optional JSON-able progress
        that ``jobdef jobs show`` prints."""
        if self._send is not None:
            self._send(progress)
