"""What an adapter keeps about one run of a job between its attempts, in Redis.

A run is one enqueued job, from ``.delay()`` to done or dead, under one task id.
Its hash (``jobdef:run:<task id>``) holds when it was enqueued, its deadline as
an absolute time, how many attempts started and how many ended, and the wait
drawn after the last failure (decorrelated jitter needs it); a list beside it
holds each ended attempt. The hash existing is what makes the run *active*:
an enqueue with the same task id (the same idempotency key) finds it and adds
nothing. Done with a ``dedupe_window``, a marker with that lifetime keeps
refusing duplicates.

Why Redis and not the runtime's result backend or jobdef's database: the
check must be atomic across every producer (``HSETNX``), cheap on each
``.delay()`` and each attempt start, and reachable from the producers, which
need no database connection; both runtimes' users run Redis already (RQ's
broker, Celery's usual broker or result backend).

"Started > ended" at the start of an attempt means the previous attempt's
process was lost mid-attempt (a kill -9, an OOM kill, a hard time limit): that
attempt is counted, as jobdef's own reclaimer counts it, and never run forever.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol


class RedisLike(Protocol):
    """The few Redis commands the store uses (``redis.Redis`` has them)."""

    def hsetnx(self, name: str, key: str, value: str) -> Any: ...
    def hset(
        self, name: str, key: str | None = None, value: Any = None, mapping: Any = None
    ) -> Any: ...
    def hgetall(self, name: str) -> Any: ...
    def hincrby(self, name: str, key: str, amount: int = 1) -> Any: ...
    def expire(self, name: str, time: int) -> Any: ...
    def exists(self, *names: str) -> Any: ...
    def delete(self, *names: str) -> Any: ...
    def set(self, name: str, value: str, ex: int | None = None) -> Any: ...
    def rpush(self, name: str, *values: str) -> Any: ...
    def lrange(self, name: str, start: int, end: int) -> Any: ...


@dataclass(frozen=True, slots=True)
class RunState:
    """One run as the store holds it. ``history``: each ended attempt, oldest first."""

    task_id: str
    job: str
    created_at: float
    deadline_at: float | None
    started: int
    ended: int
    last_delay: float | None
    started_at: float | None = None  # when the newest attempt started
    history: tuple[Mapping[str, Any], ...] = field(default=())

    @property
    def lost(self) -> bool:
        """The newest attempt started and never ended: its process was lost."""
        return self.started > self.ended


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RunStore:
    """Runs in Redis under ``prefix``; keys expire ``ttl`` seconds after the last write."""

    def __init__(self, redis: RedisLike, prefix: str = "jobdef") -> None:
        self.redis = redis
        self.prefix = prefix

    def _run(self, task_id: str) -> str:
        return f"{self.prefix}:run:{task_id}"

    def _attempts(self, task_id: str) -> str:
        return f"{self.prefix}:run:{task_id}:attempts"

    def _done(self, task_id: str) -> str:
        return f"{self.prefix}:done:{task_id}"

    def _buried(self, task_id: str) -> str:
        return f"{self.prefix}:buried:{task_id}"

    def buried(self, task_id: str) -> bool:
        """The run under ``task_id`` was buried within the last hour (a redelivery of its
        last message, after a crash between the burial and the ack, must not run it)."""
        return bool(self.redis.exists(self._buried(task_id)))

    def open(
        self,
        task_id: str,
        job: str,
        created_at: float,
        deadline_at: float | None,
        ttl: int,
    ) -> bool:
        """Start a run; False when one with this task id is active (or done within its
        ``dedupe_window``): the caller sends nothing."""
        key = self._run(task_id)
        if self.redis.exists(self._done(task_id)):
            return False
        if not self.redis.hsetnx(key, "created_at", repr(created_at)):
            return False
        self.redis.delete(self._buried(task_id))
        fields = {"job": job, "started": 0, "ended": 0}
        if deadline_at is not None:
            fields["deadline_at"] = repr(deadline_at)
        self.redis.hset(key, mapping=fields)
        self.redis.expire(key, ttl)
        return True

    def load(self, task_id: str) -> RunState | None:
        raw = self.redis.hgetall(self._run(task_id))
        if not raw or (b"created_at" not in raw and "created_at" not in raw):
            return None
        data = {_text(k): _text(v) for k, v in raw.items()}
        history = tuple(
            json.loads(_text(item)) for item in self.redis.lrange(self._attempts(task_id), 0, -1)
        )
        return RunState(
            task_id=task_id,
            job=data.get("job", ""),
            created_at=float(data["created_at"]),
            deadline_at=float(data["deadline_at"]) if "deadline_at" in data else None,
            started=int(data.get("started", 0)),
            ended=int(data.get("ended", 0)),
            last_delay=float(data["last_delay"]) if "last_delay" in data else None,
            started_at=float(data["started_at"]) if "started_at" in data else None,
            history=history,
        )

    def start(self, task_id: str, at: float, ttl: int) -> int:
        """Count one more attempt started (at ``at``); its number."""
        number = int(self.redis.hincrby(self._run(task_id), "started", 1))
        self.redis.hset(self._run(task_id), "started_at", repr(at))
        self.redis.expire(self._run(task_id), ttl)
        return number

    def end(
        self, task_id: str, entry: Mapping[str, Any], last_delay: float | None, ttl: int
    ) -> None:
        """Record how attempt ``entry['attempt']`` ended (and the wait drawn after it)."""
        fields: dict[str, Any] = {"ended": int(entry["attempt"])}
        if last_delay is not None:
            fields["last_delay"] = repr(last_delay)
        self.redis.rpush(self._attempts(task_id), json.dumps(dict(entry), default=str))
        self.redis.hset(self._run(task_id), mapping=fields)
        for key in (self._run(task_id), self._attempts(task_id)):
            self.redis.expire(key, ttl)

    def close(
        self, task_id: str, dedupe_window: float | None = None, *, buried: bool = False
    ) -> None:
        """The run is over (done or dead): a new enqueue with its task id is a new run,
        except within ``dedupe_window`` seconds of a success."""
        if dedupe_window:
            self.redis.set(self._done(task_id), "1", ex=max(1, round(dedupe_window)))
        if buried:
            self.redis.set(self._buried(task_id), "1", ex=3600)
        self.redis.delete(self._run(task_id), self._attempts(task_id))
