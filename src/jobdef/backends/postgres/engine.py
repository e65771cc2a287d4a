"""The PostgreSQL engine: many worker processes on many hosts share one job store.

Claims use ``FOR UPDATE SKIP LOCKED`` through a partial index of queued rows,
so workers never wait on each other and claim cost does not grow with
finished rows. Enqueue notifies a channel (``LISTEN/NOTIFY``) so an idle
worker wakes at once; :meth:`PostgresBackend.wait_for_jobs` falls back to
plain polling when the listening session is gone, and with ``?wake=poll`` in
the URL (behind PgBouncer in transaction mode) nothing listens and no session
state is used (:func:`~jobdef.backends.postgres.session.wake_mode`).

Every verb runs on the engine's own autocommit connection, as one statement
or one transaction, through its :class:`~jobdef.backends.postgres.session.SessionManager`.
When the session is lost (server restart, ``pg_terminate_backend``) it
reconnects and runs the verb again: a fenced verb that did commit before the
loss is then refused, which the protocol already allows. Only enqueue of jobs
without an idempotency key or slot is not retried, since it could store a job
twice. A second, long-lived session, the
:class:`~jobdef.backends.postgres.listener.Listener`, waits for enqueues and
renews the maintenance lease.

Every verb that moves a job, a queue or an outbox message (claim, complete,
retry, bury, release, cancel, requeue, resolve, pause...) tells watchers such
as the dashboard through :class:`~jobdef.backends.postgres.changes.ChangeNotifier`:
one ``NOTIFY`` on the changes channel per quarter second at most, whatever the
number of jobs moved, sent beside the verbs rather than by a trigger per row
(see :mod:`jobdef.backends.postgres.changes` for why).

The dialect-neutral verbs (cancel, get, stats, the outbox...) come from
:class:`~jobdef.backends.verbs.SharedVerbs` and the fenced transitions from
:mod:`jobdef.backends.transitions`, over this engine's primitives; this module
keeps enqueue, claim, prune, migrations and what the listener answers
(wait_for_jobs, wake, try_maintenance_lock).
The statements live in ``queries.sql`` and the schema in numbered files under
``migrations/``; all tables sit in one schema (default ``public``), so several
applications can share a database, each in its own.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from itertools import islice
from typing import Any, NamedTuple, TypeVar

from jobdef.backends.flows import FlowTx
from jobdef.backends.flows import settle as flows_settle
from jobdef.backends.postgres.changes import ChangeNotifier, changes_channel
from jobdef.backends.postgres.clock import ServerClock
from jobdef.backends.postgres.ends import ended_channel
from jobdef.backends.postgres.listener import Listener
from jobdef.backends.postgres.session import (
    DEFAULT_SCHEMA,
    QUICK_CONNECT_TIMEOUT,
    Connection,
    Sent,
    SessionManager,
    describe,
    query_error,
    require_psycopg,
    split_url,
    wake_mode,
)
from jobdef.backends.protocol import (
    ElectsMaintainer,
    EnqueuesAlike,
    WaitsForItsServer,
    WakesWorkers,
)
from jobdef.backends.records import (
    ClaimOptions,
    JobRecord,
    Lease,
    NewJob,
    Notification,
    Receipt,
    ResultRetention,
    RetentionRule,
    Wakeup,
)
from jobdef.backends.rows import (
    args_json_of,
    dump_json,
    in_claim_order,
    job_records_by_position,
    outbox_columns,
    receipt_token,
    receipt_tokens,
    retention_periods,
)
from jobdef.backends.rows import job_record as _record
from jobdef.backends.schema import require_current
from jobdef.backends.sql import Statement, load_queries, migration_files
from jobdef.backends.transitions import Completion
from jobdef.backends.verbs import SharedVerbs
from jobdef.errors import BackendError
from jobdef.policy.queue_controls import Bucket, QueueControl
from jobdef.policy.values import thaw

try:
    import psycopg
    from psycopg.rows import dict_row
    from psycopg.types.json import JsonbLoader, JsonLoader
except ImportError:  # pragma: no cover - exercised only without the extra
    psycopg = None  # type: ignore[assignment]

T = TypeVar("T")

QUERIES = load_queries("jobdef.backends.postgres", "queries.sql")
MIGRATIONS = "jobdef.backends.postgres.migrations"
# Seconds a maintainer's lease lasts without renewal (it renews about every second):
# a frozen maintainer is replaced within about this long.
MAINTENANCE_LEASE = 10.0
# Jobs a statement of a batch alike but for the args stores (insert_alike_jobs):
# small enough that the server writes one chunk while the client checks the args
# of the next, large enough that each statement's own cost is shared by many.
ALIKE_CHUNK = 250
# Statements planned alike however the session plans (queries.sql: fixed_plans, or as
# the session is configured): one small table read whole, one row by its key, the
# running jobs through the one index of them. They run under the session's planning as
# it is: an idle worker's round (its poll, a turn's statement, then these) set the
# planning back and forth twice, two round trips of its four or five a second.
PLANNED_EITHER_WAY = frozenset({"list_workers", "beat_worker", "expired_leases"})
# Writes no page of the dashboard shows: they send no change notification.
QUIET_WRITES = frozenset(
    {
        "heartbeat",
        "outbox_claim",
        "register_worker",
        "beat_worker",
        "unregister_worker",
        "prune_workers",
    }
)


def advisory_key(purpose: str, schema: str) -> int:
    """A stable signed 64-bit advisory lock key for ``purpose`` in ``schema``."""
    digest = hashlib.blake2b(f"jobdef:{purpose}:{schema}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class PostgresBackend(
    SharedVerbs, WakesWorkers, ElectsMaintainer, WaitsForItsServer, EnqueuesAlike
):
    """The :class:`~jobdef.backends.protocol.Backend` protocol on PostgreSQL (psycopg 3),
    with the capabilities of an engine that many hosts share: it wakes idle workers
    (:class:`~jobdef.backends.protocol.WakesWorkers`), elects the one that
    maintains (:class:`~jobdef.backends.protocol.ElectsMaintainer`), and it can stop
    waiting for a lost server (:class:`~jobdef.backends.protocol.WaitsForItsServer`)."""

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        clock: Callable[[], float] | None = None,
        reconnect_timeout: float = 30.0,
        create: bool = True,
        maintenance_lease: float = MAINTENANCE_LEASE,
    ) -> None:
        require_psycopg()
        self.url = url
        self.conninfo, self.schema = split_url(url, schema)
        # The server's clock unless one is given (tests): hosts' clocks disagree.
        self.clock = clock or ServerClock(self._server_time)
        self.create = create
        self.channel = f"jobdef_{self.schema}"
        self.changes_channel = changes_channel(self.schema)
        self.ended_channel = ended_channel(self.schema)
        quoted = '"' + self.schema + '"'
        self._sql = {name: text.replace("{schema}", quoted) for name, text in QUERIES.items()}
        # ?wake=poll: behind a transaction pooler, no session state (session.wake_mode).
        self.wake_mode = wake_mode(url)
        self.sessions = SessionManager(
            self.conninfo,
            self.schema,
            settings=self._q("session_settings"),
            reconnect_timeout=reconnect_timeout,
            pooled=self.wake_mode == "poll",
            plans=(self._q("fixed_plans"), self._q("fresh_plans")),
        )
        self.listener = Listener(
            self.conninfo,
            self.channel,
            lease_seconds=maintenance_lease,
            take_sql=self._q("take_lease"),
            give_back_sql=self._q("give_back_lease"),
            pooled=self.sessions if self.wake_mode == "poll" else None,
        )
        self._limited_queues_known: set[str] = set()
        # The last claim's answer to whether a queue is paused: while one is, claims
        # read queue by queue (see _by_queue).
        self._paused_seen = False
        self.changes = ChangeNotifier(self._notify_change)

    def __repr__(self) -> str:
        return f"PostgresBackend({describe(self.conninfo)}, schema={self.schema!r})"

    # Connections -------------------------------------------------------------------------

    def _run(
        self,
        work: Callable[[Connection], T],
        *,
        retry: bool = True,
        plan_once: bool | None = False,
    ) -> T:
        """Run ``work`` on the verbs' session (see :meth:`SessionManager.run`).
        ``plan_once``: it runs only statements planned once per session (queries.sql:
        fixed_plans): a worker's turn (claim_jobs, complete_jobs, complete_and_claim)
        and the change notification sent between turns; None: only statements planned
        alike either way (:data:`PLANNED_EITHER_WAY`)."""
        return self.sessions.run(work, retry=retry, plan_once=plan_once)

    def _q(self, name: str) -> str:
        """The SQL of the query ``name`` in ``queries.sql``, in this engine's schema."""
        return self._sql[name]

    def _server_time(self) -> float:
        """The server's clock, epoch seconds: what :class:`ServerClock` reads."""
        return float(self._run(lambda conn: conn.execute(self._q("server_time")).fetchone()[0]))

    def close(self) -> None:
        self.changes.close()  # sends what is pending, on the session closed next
        self.listener.close()  # gives the lease back, with ?wake=poll on the verbs' session
        self.sessions.close()

    def _notify_change(self) -> None:
        """One change notification (see :class:`ChangeNotifier`); never retried."""
        self._run(
            lambda conn: conn.execute("SELECT pg_notify(%s, '')", [self.changes_channel]),
            retry=False,
            plan_once=True,  # no table: between two turns, not worth setting plans back
        )

    def _changed(self, changed: object = True) -> None:
        """Notify watchers soon when ``changed`` is true (rows moved)."""
        if changed:
            self.changes.touched()

    def fail_fast(self) -> None:
        """Report a lost server at once, after one quick reconnect, instead of waiting up
        to ``reconnect_timeout`` for it (see :meth:`SessionManager.fail_fast`)."""
        self.sessions.fail_fast()
        self.listener.connect_timeout = QUICK_CONNECT_TIMEOUT

    def __enter__(self) -> PostgresBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Primitives of the shared verbs (jobdef.backends.verbs) ----------------------------------

    def _read(self, name: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        return self._run(
            lambda conn: _fetch_on(conn, self._q(name), params), plan_once=_planning(name)
        )

    def _read_all(self, statements: Sequence[Statement]) -> list[list[dict[str, Any]]]:
        """Read from one snapshot: READ COMMITTED would take one per statement."""

        def work(conn: Connection) -> list[list[dict[str, Any]]]:
            with conn.transaction():
                conn.execute(self._q("one_snapshot"))
                return [_fetch_on(conn, self._q(s.name), s.params) for s in statements]

        return self._run(work)

    def _read_on(
        self, connection: Any, statements: Sequence[Statement]
    ) -> list[list[dict[str, Any]]]:
        """On the caller's psycopg connection, in its transaction."""
        if psycopg is None or not isinstance(connection, psycopg.Connection):
            raise BackendError(
                f"reading on the caller's connection on PostgreSQL needs a psycopg 3 "
                f"connection, got {type(connection).__name__}"
            )
        found = []
        try:
            for s in statements:
                with connection.cursor(row_factory=dict_row) as cur:
                    # Read JSON as this engine's own connections do: the caller's may load
                    # it as text (Django's does).
                    cur.adapters.register_loader("jsonb", JsonbLoader)
                    cur.adapters.register_loader("json", JsonLoader)
                    found.append(cur.execute(self._q(s.name), s.params).fetchall())
        except psycopg.Error as exc:
            raise self.sessions.translate(exc) from None
        return found

    def _write_one(self, name: str, params: Mapping[str, Any]) -> int:
        count = self._rowcount(name, params)
        self._changed(count > 0 and name not in QUIET_WRITES)
        return count

    def _write_all(self, statements: Sequence[Statement]) -> list[list[dict[str, Any]]]:
        def work(conn: Connection) -> list[list[dict[str, Any]]]:
            with conn.transaction():
                return [_fetch_on(conn, self._q(s.name), s.params) for s in statements]

        results = self._run(work)
        loud = any(
            rows and s.name not in QUIET_WRITES for s, rows in zip(statements, results, strict=True)
        )
        self._changed(loud)
        return results

    def _ids_param(self, ids: Sequence[float]) -> list[float]:
        return list(ids)

    def _decode(self, value: Any) -> Any:
        return value

    def _wakes(self) -> dict[str, Any]:
        return {"channel": self.channel}

    def _wake_channel(self) -> str:
        return self.listener.wake_channel()

    def _ends(self) -> dict[str, Any]:
        return {"ended_channel": self.ended_channel}

    # Schema --------------------------------------------------------------------------------

    def migrate(self) -> None:
        """Apply every numbered migration not yet applied, under an advisory lock.

        Two workers that start at once both call this: the second waits for
        the lock, then finds nothing left to do.
        """
        files = migration_files(MIGRATIONS)
        version = self.schema_version()
        if version >= files[-1][0]:
            return
        if version == 0 and not self.create:
            require_current(self, self.url, f"schema {self.schema!r} at {describe(self.conninfo)}")

        def apply(conn: Connection) -> None:
            with conn.transaction():
                conn.execute(self._q("advisory_xact_lock"), {"key": self._migration_key})
                exists = conn.execute(
                    self._q("schema_exists"), {"schema_name": self.schema}
                ).fetchone()
                if not exists[0]:
                    conn.execute(self._q("create_schema"))
                conn.execute(self._q("create_schema_version"))
                current = conn.execute(self._q("schema_version")).fetchone()[0]
                for number, name, text in files:
                    if number <= current:
                        continue
                    conn.execute(text.replace("{schema}", '"' + self.schema + '"'))
                    conn.execute(self._q("record_migration"), {"version": number, "name": name})

        self._run(apply)

    @property
    def _migration_key(self) -> int:
        return advisory_key("migrate", self.schema)

    def schema_version(self) -> int:
        """The newest migration applied (0: none, or no jobdef tables yet)."""

        def read(conn: Connection) -> int:
            try:
                with conn.transaction():
                    return int(conn.execute(self._q("schema_version")).fetchone()[0])
            except (psycopg.errors.UndefinedTable, psycopg.errors.InvalidSchemaName):
                return 0

        return self._run(read)

    def latest_version(self) -> int:
        """The newest migration this version of jobdef ships."""
        return migration_files(MIGRATIONS)[-1][0]

    # Enqueue ------------------------------------------------------------------------------

    def enqueue(self, jobs: Sequence[NewJob], connection: Any = None) -> list[Receipt]:
        if not jobs:
            return []
        now = self.clock()
        if connection is not None:
            return self._on_callers(connection, lambda conn: self._enqueue_batch(conn, jobs, now))
        # A batch is retried after a lost session only when a retry cannot store twice.
        safe = all(j.idempotency_key is not None or j.slot is not None for j in jobs)
        return self._run(lambda conn: self._enqueue_own(conn, jobs, now), retry=safe)

    def enqueue_alike(
        self, job: NewJob, args_json: Iterable[str], connection: Any = None
    ) -> list[Receipt]:
        """Store one job per args text, each ``job`` but for its args, in one
        transaction (:class:`~jobdef.backends.protocol.EnqueuesAlike`).

        On the engine's session the texts are read a chunk at a time and each chunk's
        insert is sent at once, pipelined: the server writes a chunk while the caller
        checks the args of the next, and one round trip ends the batch. When reading
        them raises, the transaction rolls back and nothing is stored. On a caller's
        ``connection`` every text is read before the first row is written.
        """
        now = self.clock()
        if connection is not None:
            texts = list(args_json)
            return (
                self._on_callers(connection, lambda conn: self._insert_alike(conn, job, texts, now))
                if texts
                else []
            )
        return self._run(lambda conn: self._stream_alike(conn, job, args_json, now), retry=False)

    def _enqueue_own(self, conn: Connection, jobs: Sequence[NewJob], now: float) -> list[Receipt]:
        if len(jobs) == 1 and _is_plain(jobs[0]):
            return [self._enqueue_one(conn, jobs[0], now)]
        with conn.transaction():
            return self._enqueue_batch(conn, jobs, now)

    def _on_callers(self, connection: Any, work: Callable[[Connection], T]) -> T:
        """Write on the caller's psycopg connection: the jobs exist iff the caller commits."""
        if psycopg is None or not isinstance(connection, psycopg.Connection):
            raise BackendError(
                f"transactional enqueue on PostgreSQL needs a psycopg 3 connection, "
                f"got {type(connection).__name__}; pass the psycopg.Connection of your transaction"
            )
        try:
            idle = connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
            if connection.autocommit and idle:
                # Not inside a transaction: make the batch atomic on its own.
                with connection.transaction():
                    return work(connection)
            return work(connection)
        except psycopg.Error as exc:
            raise self.sessions.translate(exc) from None

    def _enqueue_one(self, conn: Connection, job: NewJob, now: float) -> Receipt:
        token = receipt_token()
        row = conn.execute(
            self._q("insert_job"),
            {
                "job": job.job,
                "queue": job.queue,
                "priority": job.priority,
                "args": args_json_of(job),
                "max_attempts": job.max_attempts,
                "run_after": now if job.run_after is None else job.run_after,
                "now": now,
                "channel": self.channel,
                "receipt": token,
            },
        ).fetchone()
        return Receipt(row[0], token, True)

    def _enqueue_batch(self, conn: Connection, jobs: Sequence[NewJob], now: float) -> list[Receipt]:
        """Store a batch in a few statements, whatever its size.

        Order: jobs with a dedupe window that match a done job are merged into
        it; cron slots already taken return their job; the rest are inserted,
        and a row whose key is active merges into the active job. A merged job
        returns the receipt of the one it merged into.
        """
        if _alike(jobs):
            return self._insert_alike(conn, jobs[0], [args_json_of(job) for job in jobs], now)
        results = self._insert_batch(conn, jobs, now)
        return self._with_tokens(conn, [results[i] for i in range(len(jobs))])

    def _insert_alike(
        self, conn: Connection, job: NewJob, texts: Sequence[str], now: float
    ) -> list[Receipt]:
        """Store a job like ``job`` for each args text, a chunk of them a statement."""
        return _alike_receipts(self._send_chunks(conn, job, texts, now))

    def _send_chunks(
        self, conn: Connection, job: NewJob, texts: Iterable[str], now: float
    ) -> list[tuple[Any, list[str]]]:
        """:meth:`_send_alike` for each chunk of ``texts``, each sent before the next
        chunk is read."""
        pending = iter(texts)
        sent = []
        while chunk := list(islice(pending, ALIKE_CHUNK)):
            sent.append(self._send_alike(conn, job, chunk, now))
        return sent

    def _stream_alike(
        self, conn: Connection, job: NewJob, args_json: Iterable[str], now: float
    ) -> list[Receipt]:
        """:meth:`_insert_alike` as the texts come, each chunk's statement sent before the
        next chunk is read (pipeline mode; without it, on a libpq older than 14, the
        texts are all read first)."""
        if not psycopg.Pipeline.is_supported():  # pragma: no cover - libpq < 14
            with conn.transaction():
                return self._insert_alike(conn, job, list(args_json), now)
        with conn.pipeline(), conn.transaction():
            sent = self._send_chunks(conn, job, args_json, now)
        return _alike_receipts(sent)  # read once the pipeline's one round trip is over

    def _send_alike(
        self, conn: Connection, job: NewJob, texts: Sequence[str], now: float
    ) -> tuple[Any, list[str]]:
        """Execute insert_alike_jobs for ``texts`` (in pipeline mode: send it); the
        cursor its rows come on, and the receipt tokens of the jobs in order."""
        tokens = receipt_tokens(len(texts))
        params = {
            "job": job.job,
            "queue": job.queue,
            "priority": job.priority,
            "max_attempts": job.max_attempts,
            "run_after": now if job.run_after is None else job.run_after,
            "trace_context": job.trace_context,
            "positional_args": job.positional_args,
            # One JSON array and one spaced string: the server splits them, where
            # an array parameter would cost the client a conversion per value.
            "args": f"[{','.join(texts)}]",
            "receipts": " ".join(tokens),
            "now": now,
            "channel": self.channel,
        }
        cursor = conn.cursor()
        cursor.execute(self._q("insert_alike_jobs"), params)
        return cursor, tokens

    def _insert_batch(
        self, conn: Connection, jobs: Sequence[NewJob], now: float
    ) -> dict[int, Receipt]:
        """The receipt of each job of the batch by its ordinal; a merged one's token is
        ``""`` when the job it merged into has none (see :meth:`_with_tokens`)."""
        results: dict[int, Receipt] = {}
        windowed = [i for i, j in enumerate(jobs) if j.idempotency_key and j.dedupe_window]
        if windowed:
            for ordinal, job_id, token in self._find_existing(conn, jobs, windowed, now):
                results[ordinal] = Receipt(job_id, token or "", False)
        todo = [i for i in range(len(jobs)) if i not in results]
        if not todo:
            return results
        slotted = [i for i in todo if jobs[i].slot is not None]
        ids: dict[int, int] = {}
        if slotted:
            ids = dict(zip(slotted, self._reserve_ids(conn, len(slotted)), strict=True))
            taken = {
                row[0]
                for row in conn.execute(
                    self._q("insert_slot"),
                    {
                        "jobs": [jobs[i].job for i in slotted],
                        "slots": [jobs[i].slot for i in slotted],
                        "ids": [ids[i] for i in slotted],
                    },
                )
            }
            lost = [i for i in slotted if ids[i] not in taken]
            if lost:
                found = conn.execute(
                    self._q("find_slot"),
                    {
                        "ords": lost,
                        "jobs": [jobs[i].job for i in lost],
                        "slots": [jobs[i].slot for i in lost],
                    },
                ).fetchall()
                for ordinal, job_id, token in found:
                    results[ordinal] = Receipt(job_id, token or "", False)
            todo = [i for i in todo if i not in results]
        # A key given twice in the batch (without a slot) is sent once: the later
        # jobs merge into whatever the first becomes, as they would one by one.
        first: dict[tuple[str, str], int] = {}
        repeats: dict[int, int] = {}
        for i in todo:
            key = jobs[i].idempotency_key
            if key is None or jobs[i].slot is not None:
                continue
            repeats_of = first.setdefault((jobs[i].job, key), i)
            if repeats_of != i:
                repeats[i] = repeats_of
        todo = [i for i in todo if i not in repeats]
        if todo:
            tokens = {receipt_token(): i for i in todo}
            rows = [
                {
                    "ord": n,
                    "id": ids.get(i),
                    "job": jobs[i].job,
                    "queue": jobs[i].queue,
                    "priority": jobs[i].priority,
                    "args": thaw(jobs[i].args),
                    "max_attempts": jobs[i].max_attempts,
                    "key": jobs[i].idempotency_key,
                    "run_after": now if jobs[i].run_after is None else jobs[i].run_after,
                    "slot": jobs[i].slot,
                    "receipt": token,
                    "trace_context": jobs[i].trace_context,
                    "positional_args": jobs[i].positional_args,
                }
                for n, (token, i) in enumerate(tokens.items())
            ]
            params = {"rows": dump_json(rows), "now": now, "channel": self.channel}
            for job_id, token in conn.execute(self._q("insert_jobs"), params):
                results[tokens[token]] = Receipt(job_id, token, True)
            merged = [i for i in todo if i not in results]
            if merged:
                for ordinal, job_id, token in self._find_existing(conn, jobs, merged, now):
                    results[ordinal] = Receipt(job_id, token or "", False)
                repoint = [i for i in merged if jobs[i].slot is not None and i in results]
                if repoint:
                    conn.execute(
                        self._q("repoint_slot"),
                        {
                            "reserved_ids": [ids[i] for i in repoint],
                            "merged_ids": [results[i].id for i in repoint],
                        },
                    )
        for i, repeated in repeats.items():
            if repeated in results:
                merged_into = results[repeated]
                results[i] = Receipt(merged_into.job_id, merged_into.token, False)
        missing = [jobs[i].job for i in range(len(jobs)) if i not in results]
        if missing:  # pragma: no cover - a merged-into job vanished mid-transaction
            raise BackendError(f"enqueue of {missing[0]!r} raced with a prune; enqueue it again")
        return results

    def _with_tokens(self, conn: Connection, receipts: list[Receipt]) -> list[Receipt]:
        """``receipts``, each merged job that has no token (enqueued before receipts)
        given one, in one statement for the batch; none when every job has one."""
        bare = sorted({r.job_id for r in receipts if not r.token})
        if not bare:
            return receipts
        params = {"ids": bare, "receipts": [receipt_token() for _ in bare]}
        assigned = dict(conn.execute(self._q("assign_receipt"), params).fetchall())
        return [
            r if r.token else Receipt(r.job_id, assigned.get(r.job_id) or "", r.created)
            for r in receipts
        ]

    def _reserve_ids(self, conn: Connection, n: int) -> list[int]:
        return [row[0] for row in conn.execute(self._q("reserve_job_ids"), {"n": n})]

    def _find_existing(
        self, conn: Connection, jobs: Sequence[NewJob], ordinals: Sequence[int], now: float
    ) -> list[tuple[int, int, str | None]]:
        rows = conn.execute(
            self._q("find_duplicate"),
            {
                "ords": list(ordinals),
                "jobs": [jobs[i].job for i in ordinals],
                "keys": [jobs[i].idempotency_key for i in ordinals],
                "since": [_dedupe_since(jobs[i], now) for i in ordinals],
            },
        ).fetchall()
        return [(row[0], row[1], row[2]) for row in rows]

    # Claim --------------------------------------------------------------------------------

    def claim(self, options: ClaimOptions) -> list[JobRecord]:
        now = self._claim_start(options)
        plain = not self._claim_limits(options)  # claim_jobs, not the limited claim
        records = self._run(lambda conn: self._claim_on(conn, options, now), plan_once=plain)
        self._changed(records)
        return records

    def _claim_start(self, options: ClaimOptions) -> float:
        """The time a claim writes as its jobs' start, and the turn it ends as its
        completions' end: the worker's name for it (``started_at``), or the clock's now."""
        return self.clock() if options.started_at is None else options.started_at

    def _claim_limits(self, options: ClaimOptions) -> dict[str, QueueControl]:
        """The queues this claim reads that have a concurrency cap or a start rate."""
        wanted = None if options.queues is None else set(options.queues)
        names = sorted(set(options.queue_limits) | set(options.queue_rates))
        return {
            queue: QueueControl(options.queue_limits.get(queue), options.queue_rates.get(queue))
            for queue in names
            if wanted is None or queue in wanted
        }

    @staticmethod
    def _claim_params(options: ClaimOptions, now: float) -> dict[str, Any]:
        """Parameters every claim statement takes."""
        return {
            "now": now,
            "worker_id": options.worker_id,
            "lease_until": now + options.lease_seconds,
            "limit": options.limit,
            # Each once: the claim reads each named queue on its own (choose_runnable).
            "queues": None if options.queues is None else list(dict.fromkeys(options.queues)),
        }

    def _claim_on(self, conn: Connection, options: ClaimOptions, now: float) -> list[JobRecord]:
        """Claim on ``conn``, inside the caller's transaction if there is one."""
        limits = self._claim_limits(options)
        if limits:
            return self._claim_limited(conn, options, limits, now)[1]
        params = self._claim_params(options, now)
        by_queue = self._by_queue(options)
        sql = self._q("claim_jobs_by_queue") if by_queue else self._q("claim_jobs")
        claimed = self._claim_with(conn, sql, params)
        if claimed.any_paused and not by_queue:  # the walk took nothing: claim by queue
            claimed = self._claim_with(conn, self._q("claim_jobs_by_queue"), params)
        return claimed.records

    def _claim_with(self, conn: Connection, sql: str, params: Mapping[str, Any]) -> _Claimed:
        """Run the claim statement ``sql`` (a claim or a turn) and keep its answer to
        whether a queue is paused, which picks the next claim's statement."""
        with conn.cursor(binary=True) as cur:  # a claim's rows in binary: see jsonb.py
            cur.execute(sql, params)
            claimed = _claimed(cur)
        self._paused_seen = claimed.any_paused
        return claimed

    def _by_queue(self, options: ClaimOptions) -> bool:
        """Whether a claim reads queue by queue (claim_jobs_by_queue): a worker of named
        queues, or every claim since one said a queue was paused, until one says none
        is. The walk of claim_jobs takes nothing while a queue is paused, and says so:
        the claim that learns it then claims again by queue, once."""
        return options.queues is not None or self._paused_seen

    def _claim_limited(
        self,
        conn: Connection,
        options: ClaimOptions,
        limits: Mapping[str, QueueControl],
        now: float,
        complete: Mapping[str, Any] | None = None,
    ) -> tuple[set[int], list[JobRecord]]:
        """A claim under queue limits, after the turn's completions (``complete``).

        Two statements, because the running counts and token buckets the claim
        reads must come from a snapshot taken after the queue rows are locked
        (READ COMMITTED takes one per statement): first complete and lock, sent
        together in one pipeline, then claim and spend the tokens. With the
        COMMIT that is three round trips, whatever the number of queues.
        """
        with conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
            with conn.pipeline():
                finished = conn.execute(self._q("complete_jobs"), complete) if complete else None
                self._ensure_queue_rows(conn, limits)
                cur.execute(self._q("lock_limited_queues"), {"limited": list(limits), "now": now})
            locked = {row["queue"]: Bucket(row["tokens"], row["tokens_at"]) for row in cur}
            # Read the clock again now that the queues are locked, so the
            # attempt's start follows the completion that freed its place.
            started = self.clock()
            # Per locked queue: (cap on running jobs, starts its token bucket allows now).
            room = {queue: limits[queue].room(bucket, started) for queue, bucket in locked.items()}
            rated = {
                queue: bucket.refilled(rate, started)
                for queue, bucket in locked.items()
                if (rate := limits[queue].rate) is not None
            }
            params = self._claim_params(options, started) | {
                "limited": list(room),
                "caps": [cap for cap, _ in room.values()],
                "allowances": [allowance for _, allowance in room.values()],
                "limited_all": list(limits),
                "rated": list(rated),
                "refilled": list(rated.values()),
            }
            records = _records(cur.execute(self._q("claim_jobs_limited"), params).fetchall())
            done = {row[0] for row in finished} if finished is not None else set()
        return done, records

    def _ensure_queue_rows(self, conn: Connection, limits: Mapping[str, object]) -> None:
        new = [q for q in limits if q not in self._limited_queues_known]
        if new:
            conn.execute(self._q("ensure_queue_rows"), {"queues": new})
            self._limited_queues_known.update(new)

    # Primitives of the fenced transitions (jobdef.backends.transitions) -----------------

    def _fenced_move(
        self,
        name: str,
        params: Mapping[str, Any],
        notifications: Sequence[Notification],
        flows: Collection[int] = (),
    ) -> bool:
        """The move's statement writes the attempt row; the messages, if any, and the
        settling of its flow follow it in its transaction."""
        move = {**params, "now": self.clock()}

        def work(conn: Connection) -> bool:
            if not notifications and not flows:
                return conn.execute(self._q(name), move).fetchone() is not None
            with conn.transaction():
                if conn.execute(self._q(name), move).fetchone() is None:
                    return False
                if notifications:
                    self._insert_outbox(conn, notifications, move["now"])
                if flows:
                    self._on(conn, move["now"], lambda tx: flows_settle(tx, flows))
                return True

        moved = self._run(work)
        self._changed(moved)
        return moved

    def _complete(
        self, done: Completion, claim: ClaimOptions | None
    ) -> tuple[set[int], list[JobRecord]]:
        """One statement (complete_jobs, or complete_and_claim with the claim), so one
        round trip; a claim under queue limits takes three (:meth:`_claim_limited`)."""
        now = self.clock() if claim is None else self._claim_start(claim)
        params = _complete_params(done, now) | self._ends()
        limits = {} if claim is None else self._claim_limits(claim)

        def turn(conn: Connection) -> tuple[set[int], list[JobRecord]]:
            if claim is None:
                return {row[0] for row in conn.execute(self._q("complete_jobs"), params)}, []
            if limits:
                return self._claim_limited(conn, claim, limits, now, params)
            both = {**params, **self._claim_params(claim, now)}
            by_queue = self._by_queue(claim)
            claimed = self._claim_with(conn, self._turn_sql(by_queue), both)
            return self._turn_outcome(claimed, by_queue, both, lambda claim: claim(conn))

        def work(conn: Connection) -> tuple[set[int], list[JobRecord]]:
            if not steps:  # no step of a flow among them: one statement, as before
                return turn(conn)
            # Steps: complete, settle their flows, then claim, so that the children
            # released here may be the worker's next jobs, all in one transaction.
            with conn.transaction():
                rows = conn.execute(self._q("complete_jobs"), params)
                finished = {row[0] for row in rows}
                flows = done.flows(finished)
                if flows:
                    self._on(conn, now, lambda tx: flows_settle(tx, flows))
                return finished, [] if claim is None else self._claim_on(conn, claim, now)

        steps = any(lease.flow_id is not None for lease in done.leases)
        finished, records = self._run(work, plan_once=not steps and not limits)
        self._changed(finished or records)
        return finished, records

    def send_turn(
        self,
        leases: Sequence[Lease],
        notifications: Mapping[int, Sequence[Notification]] | None,
        options: ClaimOptions,
        results: Mapping[int, str] | None = None,
    ) -> SentTurn | None:
        """complete_and_claim (or complete_and_claim_by_queue), sent
        (:class:`~jobdef.backends.protocol.SendsTurns`): the one statement of a turn. A
        turn of more steps (a flow's step among the leases, a claim under queue limits)
        is run and waited for instead."""
        plain = not any(lease.flow_id is not None for lease in leases)
        if not plain or self._claim_limits(options):
            return None
        now = self._claim_start(options)
        done = Completion(leases, results or {}, notifications or {})
        params = _complete_params(done, now) | self._ends() | self._claim_params(options, now)
        by_queue = self._by_queue(options)
        sent = self.sessions.send(self._turn_sql(by_queue), params, _claimed)
        return None if sent is None else SentTurn(self, sent, leases, params, by_queue=by_queue)

    def _turn_sql(self, by_queue: bool) -> str:
        """A turn's statement: its claim walks the claim index, or reads queue by queue."""
        if by_queue:
            return self._q("complete_and_claim_by_queue")
        return self._q("complete_and_claim")

    def _turn_outcome(
        self,
        claimed: _Claimed,
        by_queue: bool,
        params: Mapping[str, Any],
        run: Callable[[Callable[[Connection], list[JobRecord]]], list[JobRecord]],
    ) -> tuple[set[int], list[JobRecord]]:
        """What a turn's answer ``claimed`` (to the turn's ``params``) means: the jobs it
        finished (done_ids, the first column of its first row) and those it leased. A
        walk that found a queue paused took nothing: the claim by queue follows, on the
        session ``run`` gives it."""
        self._paused_seen = claimed.any_paused
        records = claimed.records
        if claimed.any_paused and not by_queue:
            sql = self._q("claim_jobs_by_queue")
            records = run(lambda conn: self._claim_with(conn, sql, params).records)
        return set(claimed.rows[0][0]), records

    def _turn_answered(
        self,
        claimed: _Claimed,
        leases: Sequence[Lease],
        params: Mapping[str, Any],
        by_queue: bool,
    ) -> tuple[list[bool], list[JobRecord]]:
        """What a sent turn's answer means, as :meth:`_complete` reads its own."""
        finished, records = self._turn_outcome(
            claimed, by_queue, params, lambda claim: self._run(claim, plan_once=True)
        )
        self._changed(finished or records)
        return [lease.job_id in finished for lease in leases], records

    # Flows (jobdef.backends.flows) -------------------------------------------------------

    def _flow_tx(
        self,
        work: Callable[[FlowTx], T],
        connection: Any = None,
        *,
        retry: bool = True,
        reads: bool = False,
    ) -> T:
        if connection is not None:  # the caller's transaction: their commit decides
            if psycopg is None or not isinstance(connection, psycopg.Connection):
                raise BackendError(
                    f"starting a flow on the caller's connection on PostgreSQL needs a "
                    f"psycopg 3 connection, got {type(connection).__name__}"
                )
            try:
                return self._on(connection, self.clock(), work)
            except psycopg.Error as exc:
                raise self.sessions.translate(exc) from None
        now = self.clock()

        def run(conn: Connection) -> T:
            with conn.transaction():
                if reads:  # the flow's row and its steps from one snapshot
                    conn.execute(self._q("one_snapshot"))
                return self._on(conn, now, work)

        value = self._run(run, retry=retry)
        self._changed(not reads)
        return value

    def _on(self, conn: Any, now: float, work: Callable[[FlowTx], T]) -> T:
        """``work`` on ``conn``'s open transaction; the messages it adds go to the outbox."""
        base = {**self._wakes(), **self._ends()}

        def run(name: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
            with conn.cursor(row_factory=dict_row) as cur:
                cur.adapters.register_loader("jsonb", JsonbLoader)
                cur.adapters.register_loader("json", JsonLoader)
                cur.execute(self._q(name), {**base, **params})
                return cur.fetchall() if cur.description is not None else []

        tx = FlowTx(run, self._decode, now)
        value = work(tx)
        if tx.notes:
            self._insert_outbox(conn, tx.notes, now)
        return value

    def _insert_outbox(
        self, conn: Connection, notifications: Sequence[Notification], now: float
    ) -> None:
        conn.execute(self._q("insert_outbox"), {"now": now, **_outbox_arrays(notifications)})

    # Waiters (jobdef.backends.waiters) -----------------------------------------------------------

    def watch_jobs(self, ids: Sequence[int]) -> tuple[list[JobRecord], list[int]]:
        """Mark the jobs ``ids`` watched, so that the statement that ends each tells the
        waiters' channel; those that ended already, and the ids of those that are gone."""
        return self._ended_or_gone(self._read("watch_jobs", {"ids": list(ids)}))

    # Maintenance ----------------------------------------------------------------------------

    def prune(
        self, rules: Sequence[RetentionRule], batch_size: int = 1000, *, dry_run: bool = False
    ) -> int:
        """Delete in batches of ``batch_size``, each its own short transaction."""
        now = self.clock()
        total = 0
        for rule in rules:
            for states, keep in retention_periods(rule):
                if dry_run:
                    params = {"job": rule.job, "states": list(states), "before": now - keep}
                    total += self._count("prune_count", params)
                    continue
                for state in states:  # one state at a time: the jobdef_jobs_finished index
                    total += self._prune_batches(rule.job, state, now - keep, batch_size)
        self._changed(total and not dry_run)
        return total

    def _prune_batches(self, job: str, state: str, before: float, batch_size: int) -> int:
        """Delete ``job``'s rows in ``state`` that ended before ``before``, batch after
        batch, each from the end time the one before reached (see prune_batch)."""
        params: dict[str, Any] = {
            "job": job,
            "state": state,
            "before": before,
            "after": -math.inf,
            "batch_size": batch_size,
        }
        sql = self._q("prune_batch")
        deleted = 0
        while True:
            [row] = self._run(lambda conn: _fetch_on(conn, sql, params))
            count = int(row["deleted"])
            deleted += count
            if count < batch_size:
                return deleted
            params["after"] = row["reached"]

    def expire_results(self, rules: Sequence[ResultRetention], batch_size: int = 1000) -> int:
        """Clear in batches of ``batch_size``, each its own short transaction."""
        now = self.clock()
        cleared = 0
        for rule in rules:
            params = {"job": rule.job, "before": now - rule.keep, "batch_size": batch_size}
            while True:
                count = self._rowcount("expire_results", params)
                cleared += count
                if count < batch_size:
                    break
        self._changed(bool(cleared))
        return cleared

    def _count(self, query: str, params: Mapping[str, Any]) -> int:
        """The one number ``query`` selects."""
        return int(self._run(lambda conn: conn.execute(self._q(query), params).fetchone()[0]))

    def _rowcount(self, query: str, params: Mapping[str, Any]) -> int:
        """How many rows ``query`` changed."""
        return int(
            self._run(
                lambda conn: conn.execute(self._q(query), params).rowcount,
                plan_once=_planning(query),
            )
        )

    def try_maintenance_lock(self) -> bool:
        """Whether this engine runs maintenance now: it renewed or took the maintenance
        lease (see :meth:`Listener.try_maintenance_lock`)."""
        return self.listener.try_maintenance_lock()

    # Waking idle workers ------------------------------------------------------------------------

    def wait_for_jobs(self, timeout: float) -> list[Wakeup]:
        """Block until an enqueue notifies this engine (on its own channel or the
        schema's), :meth:`wake` is called, or ``timeout`` passes (see
        :meth:`Listener.wait_for_jobs`)."""
        return self.listener.wait_for_jobs(timeout)

    @property
    def listening(self) -> bool:
        """Whether idle workers hear enqueues now (LISTEN is up; never with ?wake=poll)."""
        return self.listener.listening

    def wake(self) -> None:
        """End a :meth:`wait_for_jobs` at once (safe in a signal handler or another thread)."""
        self.listener.wake()

    # Processed keys --------------------------------------------------------------------------

    def record_processed_key(self, connection: Any, key: str, job_id: int) -> bool:
        """Insert on the handler's psycopg connection, inside its transaction."""
        return _record_key(connection, key, job_id, self.clock(), self.schema)


def record_processed_key_on(
    connection: Any, key: str, job_id: int, now: float, store_url: str
) -> bool:
    """Record ``key`` on the handler's own PostgreSQL ``connection`` (psycopg 3, or
    psycopg2 as Django may use), in its transaction, whatever engine holds the job
    store. The table sits in the store's schema when the store is this database's
    kind, else in ``public``: a handler's database is the application's."""
    scheme = store_url.partition("://")[0]
    schema = split_url(store_url)[1] if scheme in ("postgresql", "postgres") else DEFAULT_SCHEMA
    return _record_key(connection, key, job_id, now, schema)


def _record_key(connection: Any, key: str, job_id: int, now: float, schema: str) -> bool:
    quoted = '"' + schema + '"'

    def _q(name: str) -> str:
        return QUERIES[name].replace("{schema}", quoted)

    params = {"key": key, "job_id": job_id, "now": now}
    try:
        with connection.cursor() as cur:
            # The handler's database need not be the job database: create the table
            # there when it is missing, looked up first so no error aborts the
            # handler's transaction.
            cur.execute(_q("processed_keys_exist"))
            exists = cur.fetchone()
            if exists is None or not exists[0]:
                cur.execute(_q("create_processed_keys"))
            cur.execute(_q("record_processed_key"), params)
            return bool(cur.rowcount == 1)
    except Exception as exc:
        if psycopg is None or not isinstance(exc, psycopg.Error):
            raise
        user = getattr(getattr(connection, "info", None), "user", None)
        raise (query_error(exc, schema, user) or exc) from None


# Row mapping ---------------------------------------------------------------------------------


def _records(rows: Sequence[Mapping[str, Any]]) -> list[JobRecord]:
    """Claimed rows as records, in claim order (RETURNING has no order of its own)."""
    return in_claim_order(_record(row) for row in rows)


class SentTurn:
    """A turn :meth:`PostgresBackend.send_turn` sent (a
    :class:`~jobdef.backends.protocol.PendingTurn`)."""

    def __init__(
        self,
        engine: PostgresBackend,
        sent: Sent[_Claimed],
        leases: Sequence[Lease],
        params: Mapping[str, Any],
        *,
        by_queue: bool,
    ) -> None:
        self._engine = engine
        self._sent = sent
        self._leases = leases
        self._params = params
        self._by_queue = by_queue

    def fileno(self) -> int:
        return self._sent.fileno()

    def ready(self) -> bool:
        return self._sent.ready()

    def leased(self) -> int:
        # Its rows, but for the one row of a turn that claimed nothing (a NULL id).
        result = self._sent.cursor().pgresult
        rows = result.ntuples
        if rows == 1:
            names = [result.fname(at) for at in range(result.nfields)]
            if result.get_value(0, names.index(b"id")) is None:
                return 0
        return int(rows)

    def result(self) -> tuple[list[bool], list[JobRecord]]:
        answer = self._sent.result()
        return self._engine._turn_answered(answer, self._leases, self._params, self._by_queue)


class _Claimed(NamedTuple):
    """What a claim statement gave: its rows, the jobs they lease in claim order, and
    whether a queue is paused (its `any_paused`)."""

    rows: list[Any]
    records: list[JobRecord]
    any_paused: bool


def _claimed(cur: Any) -> _Claimed:
    """The rows a claim's cursor holds, and the jobs they lease in claim order, read by
    position: a claim maps a whole batch, and a dict per row would cost more than the
    rest of the mapping. A row with no job (NULL id: the one row of a claim that
    claimed nothing) leases none."""
    result = cur.pgresult  # its column names: cheaper than cur.description's Column objects
    names = [(result.fname(at) or b"").decode() for at in range(result.nfields)]
    rows: list[Any] = cur.fetchall()
    id_at = names.index("id")
    leased = [row for row in rows if row[id_at] is not None]
    paused = bool(rows and rows[0][names.index("any_paused")])
    return _Claimed(rows, in_claim_order(job_records_by_position(names, leased)), paused)


def _planning(name: str) -> bool | None:
    """How the query ``name`` of queries.sql is to be planned (:meth:`SessionManager.run`'s
    ``plan_once``): None, either way, for :data:`PLANNED_EITHER_WAY`; else as the session
    is configured."""
    return None if name in PLANNED_EITHER_WAY else False


def _fetch_on(conn: Connection, sql: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rows of ``sql``, read by column name."""
    with conn.cursor(row_factory=dict_row) as cur:
        rows: list[dict[str, Any]] = cur.execute(sql, params).fetchall()
        return rows


def _dedupe_since(job: NewJob, now: float) -> float | None:
    """The oldest finish of a done job that ``job`` merges into (None: no dedupe window)."""
    return None if job.dedupe_window is None else now - job.dedupe_window


def _alike_receipts(sent: Sequence[tuple[Any, list[str]]]) -> list[Receipt]:
    """The receipts of the jobs insert_alike_jobs stored, in order: for each statement
    sent, its cursor and the tokens of its jobs."""
    receipts: list[Receipt] = []
    for cursor, tokens in sent:
        ids = {token: job_id for job_id, token in cursor.fetchall()}
        receipts.extend(Receipt(ids[token], token, True) for token in tokens)
    return receipts


def _alike(jobs: Sequence[NewJob]) -> bool:
    """Whether insert_alike_jobs stores ``jobs``: no job has a key or a slot (none can
    merge into another job, or be merged into), and they share every column but the args."""
    shared = _shared_columns(jobs[0])
    return all(
        job.idempotency_key is None and job.slot is None and _shared_columns(job) == shared
        for job in jobs
    )


def _shared_columns(job: NewJob) -> tuple[Any, ...]:
    """What insert_alike_jobs stores once for a whole batch (all but the args)."""
    return (
        job.job,
        job.queue,
        job.priority,
        job.max_attempts,
        job.run_after,
        job.trace_context,
        job.positional_args,
    )


def _is_plain(job: NewJob) -> bool:
    """A job insert_job stores in one statement: no key, slot, window, trace context or
    count of positional args."""
    return (
        job.idempotency_key is None
        and job.slot is None
        and job.dedupe_window is None
        and job.trace_context is None
        and job.positional_args is None
    )


def _complete_params(done: Completion, now: float) -> dict[str, Any]:
    """complete_jobs' parameters: the leases, their results, and the messages of each
    job (``note_job_ids``), stored only for the jobs that finish."""
    notes = [(job_id, n) for job_id, ns in done.notifications.items() for n in ns]
    results = [done.results.get(lease.job_id) for lease in done.leases] if done.results else None
    return {
        "now": now,
        "ids": _int_array([lease.job_id for lease in done.leases]),
        "attempts": _int_array([lease.attempt for lease in done.leases]),
        "workers": _text_array([lease.worker_id for lease in done.leases]),
        # NULL when no handler returned a value: unnest pads the leases with NULL
        # results as it would from an array of NULLs, and a NULL costs nothing to send.
        "results": results,
        "note_job_ids": [job_id for job_id, _ in notes] or None,
        **_outbox_arrays([n for _, n in notes]),
    }


def _int_array(values: Sequence[int]) -> str:
    """The text of a PostgreSQL array of whole numbers: psycopg would dump a list of
    them with a few calls of Python per value (a turn's leases' ids and attempts), this
    is one join in C."""
    return "{" + ",".join(map(str, values)) + "}"


def _text_array(values: Sequence[str]) -> str:
    """The text of a PostgreSQL array of strings, each quoted (so that none reads as
    NULL, nor splits at a comma or a brace): a turn's leases are all one worker's, so
    each distinct value is quoted once."""
    quoted = {value: _array_element(value) for value in set(values)}
    return "{" + ",".join(map(quoted.__getitem__, values)) + "}"


def _array_element(text: str) -> str:
    """``text`` as an element of an array's text: in double quotes, in which only a
    double quote and a backslash are escaped (with a backslash)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


_OUTBOX_COLUMNS = ("message_id", "channel", "event", "job", "payload")


def _outbox_arrays(notifications: Sequence[Notification]) -> dict[str, list[Any] | None]:
    """Outbox messages as the arrays insert_outbox and complete_jobs read, one per column.
    No message: NULLs, which unnest reads as it reads empty arrays (no row), and which
    cost psycopg nothing to send, where an empty array costs it a type's lookup and a
    dump each: a worker's turn sends these five and rarely has a message."""
    if not notifications:
        return dict.fromkeys(f"{column}s" for column in _OUTBOX_COLUMNS)
    rows = [outbox_columns(note) for note in notifications]
    return {f"{column}s": [row[column] for row in rows] for column in _OUTBOX_COLUMNS}
