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

A run the sheet declared dead keeps its hash until its dead record is in
jobdef's database: the hash's ``burial`` field holds what the record needs, so
a redelivery of its message buries it (once jobdef's database answers) instead
of running it again. An ended run leaves an *ended* marker (``done`` or
``dead``) for as long as the runtime may still deliver its last message.

A run opened before its message is sent (Celery's ``.delay()``) is *unsent*
until the producer says the send went through (:meth:`RunStore.sent`) or an
attempt starts: a send that failed while the store could not be told (the
broker and the run store gone at once, the producer killed mid-send) must not
hold the key for the run's whole lifetime. Another producer that finds the run
unsent waits for it to be confirmed; after ``send_grace`` seconds of Redis's
clock it is taken as never sent, freed and opened anew (:class:`Opening`).

Each write is one transaction (``MULTI``/``EXEC``, or a script for the opening
check), so a connection lost halfway never leaves a run without its expiry.
A store that cannot be reached is :class:`RunStoreUnavailable`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ReadOnlyError
from redis.exceptions import TimeoutError as RedisTimeoutError

from jobdef.errors import JobdefError

Ended = Literal["done", "dead"]

# KEYS: the run's hash, its ended marker, its done (dedupe window) marker, its attempts.
# ARGV: created_at, job, deadline_at ('' for none), ttl, send grace in ms (0: none),
# attempts already started.
# 1 when the run was opened; 0 when one holds the task id (or it is done within its
# dedupe window); -1 - ms when the run holding it is unsent, taken as never sent in ms.
_OPEN = """
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local unsent = redis.call('HGET', KEYS[1], 'unsent_until')
if unsent then
  if now < tonumber(unsent) then return -1 - (tonumber(unsent) - now) end
  redis.call('DEL', KEYS[1], KEYS[4])
end
if redis.call('HSETNX', KEYS[1], 'created_at', ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'job', ARGV[2], 'started', ARGV[6], 'ended', 0)
if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'deadline_at', ARGV[3]) end
if tonumber(ARGV[5]) > 0 then redis.call('HSET', KEYS[1], 'unsent_until', now + ARGV[5]) end
redis.call('EXPIRE', KEYS[1], ARGV[4])
redis.call('DEL', KEYS[2])
return 1
"""

# KEYS: the run's hash. ARGV: the created_at of the run whose message was sent.
_SENT = """
if redis.call('HGET', KEYS[1], 'created_at') == ARGV[1] then
  redis.call('HDEL', KEYS[1], 'unsent_until')
end
return 0
"""


# KEYS: the run's hash, its attempts. ARGV: the created_at the caller read.
# 1 when that run was deleted; 0 when the hash holds another run (or none) by now.
_FORGET = """
if redis.call('HGET', KEYS[1], 'created_at') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
return 1
"""


class BookkeepingUnavailable(JobdefError):
    """jobdef's own bookkeeping (the run store in Redis, or jobdef's database) cannot be
    reached: the adapter keeps the message for a later delivery and never drops it."""


class RunStoreUnavailable(BookkeepingUnavailable):
    """The run store (Redis) cannot be reached; nothing of the run was changed by the
    call that failed (each write is one transaction)."""


@contextmanager
def _reaching(what: str) -> Iterator[None]:
    """Redis gone (refused, reset, timed out, a read-only replica after a failover)
    is one :class:`RunStoreUnavailable` naming what could not be done."""
    try:
        yield
    except (RedisConnectionError, RedisTimeoutError, ReadOnlyError, OSError) as exc:
        raise RunStoreUnavailable(
            f"the run store cannot be reached to {what}: {type(exc).__name__}"
        ) from None


@dataclass(frozen=True, slots=True)
class Opening:
    """What :meth:`RunStore.open` did: ``opened`` the run (true as a bool), or found one
    holding the task id; ``unsent_for``: that run's message is not known to be sent
    yet, and it is taken as never sent in this many seconds (None: it was sent)."""

    opened: bool
    unsent_for: float | None = None

    def __bool__(self) -> bool:
        return self.opened


class RedisLike(Protocol):
    """The few Redis commands the store uses (``redis.Redis`` has them)."""

    def hgetall(self, name: str) -> Any: ...
    def exists(self, *names: str) -> Any: ...
    def lrange(self, name: str, start: int, end: int) -> Any: ...
    def eval(self, script: str, numkeys: int, *keys_and_args: Any) -> Any: ...
    def pipeline(self, transaction: bool = True) -> Any: ...


@dataclass(frozen=True, slots=True)
class RunState:
    """One run as the store holds it. ``history``: each ended attempt, oldest first.
    ``burial``: set once the run is dead and its dead record is not yet stored."""

    task_id: str
    job: str
    created_at: float
    deadline_at: float | None
    started: int
    ended: int
    last_delay: float | None
    started_at: float | None = None  # when the newest attempt started
    history: tuple[Mapping[str, Any], ...] = field(default=())
    burial: Mapping[str, Any] | None = None

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

    def _ended(self, task_id: str) -> str:
        return f"{self.prefix}:ended:{task_id}"

    def ended(self, task_id: str) -> Ended | None:
        """How the last run under ``task_id`` ended, while the runtime may still deliver
        its last message again (a worker lost between the end and the ack): that
        redelivery must not run it."""
        with _reaching(f"read how task {task_id} ended"):
            pipe = self.redis.pipeline(transaction=False)
            pipe.get(self._ended(task_id))
            pipe.exists(self._done(task_id))
            value, done = pipe.execute()
        text = None if value is None else _text(value)
        if text in ("dead", "done"):
            return "dead" if text == "dead" else "done"
        return "done" if done else None  # done within its dedupe window

    def open(
        self,
        task_id: str,
        job: str,
        created_at: float,
        deadline_at: float | None,
        ttl: int,
        *,
        send_grace: float = 0.0,
        started: int = 0,
    ) -> Opening:
        """Start a run; not opened when one with this task id is active (or done within
        its ``dedupe_window``): the caller sends nothing. With ``send_grace``, the run is
        unsent until :meth:`sent` (or its first attempt), and taken as never sent after
        that many seconds of Redis's clock: the next open then frees it. ``started``:
        attempts counted as started already (a run opened again for a message whose
        state expired)."""
        deadline = "" if deadline_at is None else repr(deadline_at)
        keys = (
            self._run(task_id),
            self._ended(task_id),
            self._done(task_id),
            self._attempts(task_id),
        )
        grace = max(0, round(send_grace * 1000))
        argv = (repr(created_at), job, deadline, ttl, grace, started)
        with _reaching(f"open the run of task {task_id}"):
            code = int(self.redis.eval(_OPEN, 4, *keys, *argv))
        if code < 0:
            return Opening(False, (-1 - code) / 1000)
        return Opening(code == 1)

    def sent(self, task_id: str, created_at: float) -> None:
        """The message of the run of ``task_id`` opened at ``created_at`` was sent: it is
        active for its whole lifetime now (a later run under the key is left alone)."""
        with _reaching(f"mark the run of task {task_id} sent"):
            self.redis.eval(_SENT, 1, self._run(task_id), repr(created_at))

    def load(self, task_id: str) -> RunState | None:
        with _reaching(f"read the run of task {task_id}"):
            raw = self.redis.hgetall(self._run(task_id))
            if not raw or (b"created_at" not in raw and "created_at" not in raw):
                return None
            items = self.redis.lrange(self._attempts(task_id), 0, -1)
        data = {_text(k): _text(v) for k, v in raw.items()}
        return RunState(
            task_id=task_id,
            job=data.get("job", ""),
            created_at=float(data["created_at"]),
            deadline_at=float(data["deadline_at"]) if "deadline_at" in data else None,
            started=int(data.get("started", 0)),
            ended=int(data.get("ended", 0)),
            last_delay=float(data["last_delay"]) if "last_delay" in data else None,
            started_at=float(data["started_at"]) if "started_at" in data else None,
            history=tuple(json.loads(_text(item)) for item in items),
            burial=json.loads(data["burial"]) if "burial" in data else None,
        )

    def start(self, task_id: str, at: float, ttl: int) -> int:
        """Count one more attempt started (at ``at``); its number."""
        with _reaching(f"count an attempt of task {task_id}"):
            pipe = self.redis.pipeline(transaction=True)
            pipe.hincrby(self._run(task_id), "started", 1)
            pipe.hset(self._run(task_id), "started_at", repr(at))
            pipe.hdel(self._run(task_id), "unsent_until")  # delivered, so it was sent
            pipe.expire(self._run(task_id), ttl)
            number = pipe.execute()[0]
        return int(number)

    def end(
        self, task_id: str, entry: Mapping[str, Any], last_delay: float | None, ttl: int
    ) -> None:
        """Record how attempt ``entry['attempt']`` ended (and the wait drawn after it)."""
        fields: dict[str, Any] = {"ended": int(entry["attempt"])}
        if last_delay is not None:
            fields["last_delay"] = repr(last_delay)
        with _reaching(f"record how an attempt of task {task_id} ended"):
            pipe = self.redis.pipeline(transaction=True)
            pipe.rpush(self._attempts(task_id), json.dumps(dict(entry), default=str))
            pipe.hset(self._run(task_id), mapping=fields)
            for key in (self._run(task_id), self._attempts(task_id)):
                pipe.expire(key, ttl)
            pipe.execute()

    def pend_burial(self, task_id: str, burial: Mapping[str, Any], ttl: int) -> None:
        """The run is dead; its dead record is not stored yet. Until :meth:`close`, each
        delivery of its message buries it instead of running it."""
        with _reaching(f"mark task {task_id} dead"):
            pipe = self.redis.pipeline(transaction=True)
            pipe.hset(self._run(task_id), "burial", json.dumps(dict(burial), default=str))
            for key in (self._run(task_id), self._attempts(task_id)):
                pipe.expire(key, ttl)
            pipe.execute()

    def forget(self, task_id: str, created_at: float) -> bool:
        """Delete the run of ``task_id`` opened at ``created_at`` (one that can no longer
        go on), and only that one: False when another producer has freed it and opened a
        new run meanwhile, which is then left as it is."""
        keys = (self._run(task_id), self._attempts(task_id))
        with _reaching(f"free the run of task {task_id}"):
            return bool(self.redis.eval(_FORGET, 2, *keys, repr(created_at)))

    def close(
        self,
        task_id: str,
        dedupe_window: float | None = None,
        *,
        ended: Ended | None = None,
        ttl: int = 0,
    ) -> None:
        """The run is over: a new enqueue with its task id is a new run, except within
        ``dedupe_window`` seconds of a success. With ``ended``, a redelivery of its last
        message within ``ttl`` seconds finds it ended and runs nothing. Without, the run
        never went out (its message was not sent): nothing is left of it."""
        with _reaching(f"close the run of task {task_id}"):
            pipe = self.redis.pipeline(transaction=True)
            if dedupe_window:
                pipe.set(self._done(task_id), "1", ex=max(1, round(dedupe_window)))
            if ended is not None and ttl > 0:
                pipe.set(self._ended(task_id), ended, ex=ttl)
            pipe.delete(self._run(task_id), self._attempts(task_id))
            pipe.execute()
