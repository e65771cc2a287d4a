"""How a worker runs, in one object checked once: :class:`WorkerSettings`.

``jobdef worker`` builds it from its flags, the embedded worker and a program's
own ``Worker(backend, registry, settings)`` take it as it is; the store and the
sheets are the worker's other two arguments. A value out of bounds raises
:class:`WorkerOptionError` when the settings are built, before anything starts:
one line naming the option and what to write (``jobdef worker`` names its flag).
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from jobdef.errors import UsageError
from jobdef.policy.leases import DEFAULT_LEASE, MIN_LEASE

# Handler processes per worker: past this, start more worker processes instead.
MAX_CONCURRENCY = 256
# Jobs handed ahead to each handler process, at most.
MAX_PREFETCH = 10_000
# The most a worker's claim window grows to per handler process, on a deep backlog of
# quick jobs (runtime.claim_window): there a transaction's fixed cost (its commit, its
# statements, a turn of the worker's loop) is spread over this many jobs, and the
# handler processes still hold jobs to run while the worker's next turn is with the
# store. 256 drained 20-30% faster than 128 on 2 cores, on both engines (CHANGELOG).
DEFAULT_PREFETCH = 256
# The most MiB of args a worker holds in the jobs it claimed and has not finished, by
# default: its claim window stops growing there (runtime.claim_window), so a deep backlog
# of jobs with large args does not fill the worker's memory (256 jobs of 256 KiB each per
# handler process, a copy in the worker and one in the process).
DEFAULT_PREFETCH_MIB = 64
MAX_PREFETCH_MIB = 1_000_000
# Coroutine handlers one handler process runs at once, at most.
MAX_ASYNC_PER_PROCESS = 10_000


def worker_id() -> str:
    """host:pid:random, unique across machines and restarts."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class WorkerOptionError(UsageError, ValueError):
    """A worker option is out of its bounds; ``option`` names it."""

    def __init__(self, option: str, problem: str) -> None:
        super().__init__(f"{option} {problem}")
        self.option = option
        self.problem = problem

    def spelled(self, name: str) -> WorkerOptionError:
        """The same error, naming the option as ``name`` (a command's flag)."""
        return WorkerOptionError(name, self.problem)


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    """How a worker runs; every field has the default of ``jobdef worker``.

    ``queues``: the queues it serves (None: every one). ``concurrency``: handler
    processes, 1 to 256. ``burst``: stop once nothing is runnable. ``lease_seconds``:
    how long a claim holds without a heartbeat (at least 1s; the worker beats every
    third of it). ``poll_interval``: seconds between claims while idle (while LISTEN
    wakes it, an idle worker polls only about every second). ``grace``: seconds a drain
    lets running jobs finish. ``prefetch``: jobs handed ahead to each handler process, 1
    to 10,000: the most its claim window grows to on a deep backlog. ``prefetch_mib``:
    the most MiB of args the jobs it holds carry, about (1 to 1,000,000; the window
    stops growing there, but never below where it starts: two jobs per process, or with
    ``async_per_process`` above 1 that many, which it then never passes). ``child_setup``:
    ``module:function`` each handler process calls before it imports a handler (Django's
    setup). ``async_per_process``: how many ``async def`` handlers each handler process
    runs at once on its event loop, 1 to 10,000 (1: one job at a time per process,
    whatever the handler; above 1, each process holds that many jobs and ``prefetch``
    does not apply, see :mod:`jobdef.runtime.loop_pool`). ``id``: the worker's
    name in leases, logs and ``jobdef workers`` (default: ``host:pid:random``, new for
    each worker). ``pipeline_turns``: on PostgreSQL, send each turn (complete and claim)
    without waiting for its answer while the handler processes have work, and send the
    next one as soon as the answer says how many jobs it brings (about 40% more no-op
    jobs a second for one worker process on 2 cores); on by default. Should the worker
    die with claims unread, its handler processes give them back (runtime.orphan).
    """

    queues: Sequence[str] | None = None
    concurrency: int = 1
    burst: bool = False
    lease_seconds: float = DEFAULT_LEASE
    poll_interval: float = 0.25
    grace: float = 10.0
    prefetch: int = DEFAULT_PREFETCH
    child_setup: str | None = None
    id: str | None = None
    async_per_process: int = 1
    prefetch_mib: int = DEFAULT_PREFETCH_MIB
    pipeline_turns: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "queues", _queues(self.queues))
        _whole(
            "concurrency",
            self.concurrency,
            MAX_CONCURRENCY,
            ", and start more worker processes for more",
        )
        _whole("prefetch", self.prefetch, MAX_PREFETCH, f" ({DEFAULT_PREFETCH} by default)")
        _whole(
            "prefetch_mib",
            self.prefetch_mib,
            MAX_PREFETCH_MIB,
            f" ({DEFAULT_PREFETCH_MIB} by default)",
        )
        _whole(
            "async_per_process",
            self.async_per_process,
            MAX_ASYNC_PER_PROCESS,
            " (1 by default: one job at a time per process)",
        )
        if self.lease_seconds < MIN_LEASE:
            raise WorkerOptionError(
                "lease_seconds",
                f"{self.lease_seconds:g}s is too short: the worker heartbeats every "
                "lease/3, so a shorter lease would expire under its own live jobs; write "
                f"{MIN_LEASE:g}s or more ({DEFAULT_LEASE:g}s by default)",
            )
        if not self.poll_interval > 0:
            raise WorkerOptionError(
                "poll_interval",
                f"{self.poll_interval:g}s is too short: an idle worker would ask the store "
                "for jobs without a pause; write more than 0s (0.25s by default)",
            )
        if not self.grace >= 0:
            raise WorkerOptionError(
                "grace", f"{self.grace:g}s is negative: write 0s or more (10s by default)"
            )


def _queues(queues: Sequence[str] | None) -> tuple[str, ...] | None:
    """``queues`` as a tuple (None, or empty: every queue)."""
    if queues is None:
        return None
    if isinstance(queues, str):
        raise WorkerOptionError(
            "queues", f"{queues!r} is one string: write a list of queue names, ['{queues}']"
        )
    names = tuple(queues)
    if not all(isinstance(name, str) and name.strip() == name != "" for name in names):
        raise WorkerOptionError(
            "queues",
            f"{list(names)!r} holds a name that is empty, not a string, or padded with "
            "spaces: write the queues' names as the sheets spell them",
        )
    return names or None


def _whole(option: str, value: int, most: int, advice: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise WorkerOptionError(
            option, f"{value} is out of bounds: write a whole number from 1 to {most:,}{advice}"
        )
