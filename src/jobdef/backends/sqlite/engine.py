"""The SQLite engine: one database file in WAL mode, the embedded default.

Every verb is one ``BEGIN IMMEDIATE`` transaction on the backend's own
connection, so writers queue on SQLite's lock (``busy_timeout``) instead of
failing. The dialect-neutral verbs (cancel, get, stats, the outbox...) come
from :class:`~jobdef.backends.verbs.SharedVerbs` and the fenced transitions
from :mod:`jobdef.backends.transitions`, over this engine's primitives; this
module keeps enqueue, claim, prune and migrations. The SQL lives in
``queries.sql`` beside this module; migrations in ``migrations/NNNN_*.sql``,
each applied with its version bump in one transaction. Every table is prefixed
``jobdef_``, so the store can share the application's own database. The
numbering starts at 0004 (``0004_initial.sql``, the whole schema at that
version) and follows PostgreSQL's from there.

URL: ``sqlite:///relative/path.db`` or ``sqlite:////absolute/path.db``. The
default ``synchronous=full`` flushes every commit to disk, so an enqueued job
survives a power cut; ``?synchronous=normal`` trades that for speed (in WAL mode
it survives a crash of the process, not of the machine).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

from jobdef.backends.flows import FlowTx
from jobdef.backends.flows import settle as flows_settle
from jobdef.backends.records import (
    ClaimOptions,
    JobRecord,
    NewJob,
    Notification,
    Receipt,
    ResultRetention,
    RetentionRule,
)
from jobdef.backends.rows import (
    args_json_of,
    in_claim_order,
    job_records,
    json_text,
    outbox_columns,
    receipt_token,
    retention_periods,
)
from jobdef.backends.schema import require_current
from jobdef.backends.sql import Statement, load_queries, migration_files
from jobdef.backends.transitions import Completion
from jobdef.backends.verbs import SharedVerbs
from jobdef.errors import BackendError
from jobdef.policy.queue_controls import Bucket

T = TypeVar("T")

QUERIES = load_queries("jobdef.backends.sqlite", "queries.sql")
MIGRATIONS = "jobdef.backends.sqlite.migrations"
BUSY_TIMEOUT_MS = 30_000
# The pages the engine's connection keeps in memory (SQLite's default is 2 MiB): a
# claim and a completion walk the same index and table pages turn after turn, and a
# page not cached is read again from the file (a system call and a WAL lookup each).
# Memory is taken only as pages are read, up to this.
CACHE_KIB = 16 * 1024
# Below this much free space on its disk, an error about the database says the disk is full.
LOW_DISK_BYTES = 1 << 20
_SYNCHRONOUS = ("off", "normal", "full", "extra")


def sqlite_path(url: str) -> tuple[Path, dict[str, str]]:
    """The file path and options of a ``sqlite:///path.db`` URL."""
    parts = urlsplit(url)
    if parts.scheme != "sqlite" or parts.netloc or not parts.path.startswith("/"):
        raise BackendError(
            f"{url!r} is not a SQLite URL; write sqlite:///relative/path.db "
            "or sqlite:////absolute/path.db"
        )
    path = parts.path[1:]
    if not path:
        raise BackendError(f"{url!r} names no file; write sqlite:///jobdef.db")
    options = {key: values[-1] for key, values in parse_qs(parts.query).items()}
    return Path(path), options


def _q(name: str) -> str:
    """The SQL of the query ``name`` in ``queries.sql``."""
    return QUERIES[name]


class SQLiteBackend(SharedVerbs):
    """The :class:`~jobdef.backends.protocol.Backend` protocol on one SQLite file."""

    def __init__(
        self,
        url: str,
        *,
        clock: Callable[[], float] | None = None,
        create: bool = True,
    ) -> None:
        self.url = url
        self.path, options = sqlite_path(url)
        self.clock = clock or time.time
        synchronous = options.get("synchronous", "full").lower()
        if synchronous not in _SYNCHRONOUS:
            raise BackendError(
                f"{url!r}: synchronous={synchronous!r} is not one of {', '.join(_SYNCHRONOUS)}"
            )
        if not self.path.parent.is_dir():
            raise BackendError(
                f"cannot open the job database {self.path}: folder {self.path.parent} does not "
                "exist; create it or pass --db sqlite:///path/to/jobdef.db"
            )
        if not create and not self.path.is_file():
            raise BackendError(
                f"no job database at {self.path}; pass --db (or set JOBDEF_DATABASE_URL) to "
                "the database your workers use, or create it with `jobdef db upgrade`"
            )
        try:
            # Without create, the file is opened read-write but never made, and its
            # journal mode is left as it is: a store was put in WAL mode by whoever
            # created its tables, and a database without them is not ours to change.
            target = str(self.path) if create else self.path.resolve().as_uri() + "?mode=rw"
            self._conn = sqlite3.connect(
                target, isolation_level=None, check_same_thread=False, timeout=30, uri=not create
            )
            self._conn.row_factory = sqlite3.Row
            self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if create:
                self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute(f"PRAGMA synchronous = {synchronous}")
            self._conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        except sqlite3.DatabaseError as exc:
            # Not a database at all, or one whose first page is garbage: either may be.
            recover = f"; if it was one, it is corrupted: {_RECOVER}" if _is_corrupt(exc) else ""
            raise BackendError(
                f"cannot open the job database {self.path}: {exc}{_disk_note(self.path)}; "
                "check that it is a jobdef SQLite file and that you may write to it"
                + recover.format(path=self.path)
            ) from None
        self._lock = threading.RLock()

    # -- plumbing ---------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; the lock is taken at BEGIN so it never fails half-way."""
        with self._lock, self._errors():
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                # Also after a failed COMMIT (disk full, I/O error): SQLite may leave the
                # transaction open, and the next BEGIN on this connection would fail.
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def _errors(self) -> AbstractContextManager[None]:
        return database_errors(self.path, lambda: require_current(self, self.url, str(self.path)))

    # -- the primitives of the shared verbs (jobdef.backends.verbs) -------------

    def _read(self, name: str, params: Mapping[str, Any]) -> list[sqlite3.Row]:
        with self._lock, self._errors():
            return self._conn.execute(_q(name), params).fetchall()

    def _read_all(self, statements: Sequence[Statement]) -> list[list[sqlite3.Row]]:
        with self._lock, self._errors():
            conn = self._conn
            conn.execute("BEGIN")
            try:
                return [conn.execute(_q(s.name), s.params).fetchall() for s in statements]
            finally:
                conn.execute("COMMIT")

    def _read_on(
        self, connection: sqlite3.Connection, statements: Sequence[Statement]
    ) -> list[list[sqlite3.Row]]:
        with self._errors():
            found = []
            for s in statements:
                cursor = connection.cursor()
                cursor.row_factory = sqlite3.Row  # the caller's connection reads tuples
                found.append(cursor.execute(_q(s.name), s.params).fetchall())
            return found

    def _write_one(self, name: str, params: Mapping[str, Any]) -> int:
        with self._write() as conn:
            return int(conn.execute(_q(name), params).rowcount)

    def _write_all(self, statements: Sequence[Statement]) -> list[list[sqlite3.Row]]:
        with self._write() as conn:
            return [conn.execute(_q(s.name), s.params).fetchall() for s in statements]

    def _ids_param(self, ids: Sequence[float]) -> str:
        return json.dumps(list(ids))

    def _decode(self, value: Any) -> Any:
        return json_text(value)

    def migrate(self) -> None:
        """Bring the schema to the newest version, one migration per transaction.

        Each numbered file and its version bump commit together, so a failing
        migration leaves the database at the version before it. The version is
        re-read inside each write lock: another process may have migrated meanwhile.
        """
        files = migration_files(MIGRATIONS)
        if self.schema_version() >= files[-1][0]:
            return
        while True:
            with self._write() as conn:
                current = _version_on(conn)
                pending = [file for file in files if file[0] > current]
                if not pending:
                    return
                version, name, sql = pending[0]
                try:
                    for statement in _statements(sql):
                        conn.execute(statement)
                except sqlite3.DatabaseError as exc:
                    raise BackendError(
                        f"migration {name} failed on {self.path}: {exc}"
                        f"{_disk_note(self.path)}; nothing of it was applied, the database "
                        f"stays at version {current}"
                    ) from exc
                params = {"version": version, "name": name, "now": self.clock()}
                conn.execute(_q("record_migration"), params)

    def schema_version(self) -> int:
        """The newest migration applied to this database (0: it has no jobdef tables).

        Reads only: a database without jobdef tables is left as it was.
        """
        with self._lock, self._errors():
            return _version_on(self._conn)

    def latest_version(self) -> int:
        """The newest migration this version of jobdef ships."""
        return migration_files(MIGRATIONS)[-1][0]

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # -- enqueue ----------------------------------------------------------------

    def enqueue(self, jobs: Sequence[NewJob], connection: Any = None) -> list[Receipt]:
        if connection is not None:
            # The caller's transaction: their commit (or rollback) decides.
            return self._enqueue_on(connection, jobs)
        with self._write() as conn:
            return self._enqueue_on(conn, jobs)

    def _enqueue_on(self, conn: sqlite3.Connection, jobs: Sequence[NewJob]) -> list[Receipt]:
        now = self.clock()
        results = []
        for new in jobs:
            found = self._existing(conn, new, now)
            if found is not None:
                results.append(found)
                continue
            token = receipt_token()
            cursor = conn.execute(
                _q("insert_job"),
                {
                    "job": new.job,
                    "queue": new.queue,
                    "priority": new.priority,
                    "args": args_json_of(new),
                    "max_attempts": new.max_attempts,
                    "key": new.idempotency_key,
                    "run_after": now if new.run_after is None else new.run_after,
                    "now": now,
                    "slot": new.slot,
                    "receipt": token,
                },
            )
            job_id = int(cursor.lastrowid or 0)
            if new.slot is not None:
                slot = {"job": new.job, "slot": new.slot, "job_id": job_id}
                conn.execute(_q("insert_slot"), slot)
            if new.trace_context is not None:
                params = {"job_id": job_id, "trace_context": new.trace_context}
                conn.execute(_q("set_trace_context"), params)
            if new.positional_args is not None:
                params = {"job_id": job_id, "positional_args": new.positional_args}
                conn.execute(_q("set_positional_args"), params)
            results.append(Receipt(job_id, token, created=True))
        return results

    @staticmethod
    def _existing(conn: sqlite3.Connection, new: NewJob, now: float) -> Receipt | None:
        """The receipt of the job ``new`` merges into (the holder of its cron slot, or an
        active or recently done job with its key), or None: it is stored."""
        row = None
        if new.slot is not None:
            row = conn.execute(_q("find_slot"), {"job": new.job, "slot": new.slot}).fetchone()
        if row is None and new.idempotency_key is not None:
            params = {
                "job": new.job,
                "key": new.idempotency_key,
                "window": new.dedupe_window,
                "now": now,
            }
            row = conn.execute(_q("find_duplicate"), params).fetchone()
        if row is None:
            return None
        job_id, token = row[0], row[1]
        if token is None:  # enqueued before receipts (or a slot's job pruned since)
            params = {"job_id": job_id, "receipt": receipt_token()}
            assigned = conn.execute(_q("assign_receipt"), params).fetchone()
            token = assigned[1] if assigned is not None else ""
        return Receipt(job_id, token, created=False)

    # -- claim ------------------------------------------------------------------

    def claim(self, options: ClaimOptions) -> list[JobRecord]:
        with self._write() as conn:
            return self._claim_on(conn, options, self.clock())

    def _claim_on(
        self, conn: sqlite3.Connection, options: ClaimOptions, now: float
    ) -> list[JobRecord]:
        if options.started_at is not None:  # the later: attempt times follow commit order
            now = max(now, options.started_at)
        params: dict[str, Any] = {
            "now": now,
            "worker_id": options.worker_id,
            "lease_until": now + options.lease_seconds,
        }
        paused = {row[0] for row in conn.execute(_q("paused_queues"))}
        if options.queue_limits or options.queue_rates or options.queues is not None or paused:
            rows = self._claim_by_queue(conn, options, params, now, paused)
        else:
            params["limit"] = options.limit
            rows = conn.execute(_q("claim_jobs"), params).fetchall()
        return in_claim_order(job_records(rows, self._decode))

    def _claim_by_queue(
        self,
        conn: sqlite3.Connection,
        options: ClaimOptions,
        params: dict[str, Any],
        now: float,
        paused: Collection[str],
    ) -> list[sqlite3.Row]:
        """Claim queue by queue: a claim of some queues (a worker's --queues), a claim
        while a queue is paused, and one that honours each queue's cap on running jobs
        and its start rate across every worker of the store (this runs under the write
        lock).

        Each queue that has queued jobs is read on its own (``jobs_claim_queue``), at
        most as many jobs as it may start, so a claim costs a few index probes per
        queue however deep a capped, paused or unserved queue's backlog is; the walk
        of claim_jobs would read every job of such a queue that comes first in claim
        order, at each claim.
        """
        buckets = self._buckets(conn, options.queue_rates)
        room = self._queue_room(conn, options, buckets, now)
        wanted = None if options.queues is None else set(options.queues)
        picks: list[sqlite3.Row] = []
        for (queue,) in conn.execute(_q("queues_with_queued")).fetchall():
            take = min(options.limit, room.get(queue, options.limit))
            if queue in paused or (wanted is not None and queue not in wanted) or take <= 0:
                continue
            step = {"queue": queue, "now": now, "limit": take}
            picks.extend(conn.execute(_q("queue_candidates"), step).fetchall())
        picks.sort(key=lambda row: (-row["priority"], row["run_after"], row["id"]))
        chosen = picks[: options.limit]
        if not chosen:
            return []
        taken = Counter(row["queue"] for row in chosen)
        conn.executemany(
            _q("spend_tokens"),
            [
                {"queue": queue, "now": now}
                | {"tokens": buckets[queue].spend(rate, now, taken[queue]).tokens}
                for queue, rate in options.queue_rates.items()
                if taken[queue]
            ],
        )
        ids = json.dumps([row["id"] for row in chosen])
        return conn.execute(_q("claim_ids"), params | {"ids": ids}).fetchall()

    @staticmethod
    def _buckets(conn: sqlite3.Connection, rates: Mapping[str, float]) -> dict[str, Bucket]:
        """The stored token bucket of each rate-limited queue (full when never used)."""
        if not rates:
            return {}
        rows = conn.execute(_q("queue_buckets"), {"queues": json.dumps(list(rates))}).fetchall()
        stored = {row[0]: Bucket(row[1], row[2]) for row in rows}
        return {queue: stored.get(queue, Bucket()) for queue in rates}

    @staticmethod
    def _queue_room(
        conn: sqlite3.Connection,
        options: ClaimOptions,
        buckets: Mapping[str, Bucket],
        now: float,
    ) -> dict[str, int]:
        """How many jobs each limited queue may start now: free places under its cap,
        and no more than its bucket's tokens."""
        limits = dict(options.queue_limits)
        running: dict[str, int] = {}
        if limits:  # a claim under rates only has no running count to read
            queues = {"queues": json.dumps(list(limits))}
            running = dict(conn.execute(_q("running_per_queue"), queues).fetchall())
        room = {queue: cap - running.get(queue, 0) for queue, cap in limits.items()}
        for queue, rate in options.queue_rates.items():
            allowed = buckets[queue].allowance(rate, now)
            room[queue] = min(room.get(queue, allowed), allowed)
        return room

    # -- the primitives of the fenced transitions (jobdef.backends.transitions) --

    def _fenced_move(
        self,
        name: str,
        params: Mapping[str, Any],
        notifications: Sequence[Notification],
        flows: Collection[int] = (),
    ) -> bool:
        """The move returns the attempt's started_at, and record_attempt writes its row."""
        with self._write() as conn:
            now = self.clock()  # inside the lock: attempt times follow commit order
            moved = conn.execute(_q(name), {**params, "now": now}).fetchone()
            if moved is None:
                return False
            attempt = {**params, "now": now, "started_at": moved["started_at"]}
            conn.execute(_q("record_attempt"), attempt)
            self._insert_outbox(conn, notifications, now)
            if flows:
                self._on(conn, now, lambda tx: flows_settle(tx, flows))
            return True

    def _complete(
        self, done: Completion, claim: ClaimOptions | None
    ) -> tuple[set[int], list[JobRecord]]:
        with self._write() as conn:
            now = self.clock()  # inside the lock: attempt times follow commit order
            finished = self._finish_done(conn, done, now) if done.leases else set()
            flows = done.flows(finished)
            if flows:
                self._on(conn, now, lambda tx: flows_settle(tx, flows))
            return finished, [] if claim is None else self._claim_on(conn, claim, now)

    # -- flows (jobdef.backends.flows) --------------------------------------------

    def _flow_tx(
        self,
        work: Callable[[FlowTx], T],
        connection: Any = None,
        *,
        retry: bool = True,
        reads: bool = False,
    ) -> T:
        if connection is not None:  # the caller's transaction: their commit decides
            with self._errors():
                return self._on(connection, self.clock(), work)
        if reads:  # one snapshot, no write lock
            with self._lock, self._errors():
                self._conn.execute("BEGIN")
                try:
                    return self._on(self._conn, self.clock(), work)
                finally:
                    self._conn.execute("COMMIT")
        with self._write() as conn:
            return self._on(conn, self.clock(), work)

    def _on(self, conn: sqlite3.Connection, now: float, work: Callable[[FlowTx], T]) -> T:
        """``work`` on ``conn``'s open transaction; the messages it adds go to the outbox."""

        def run(name: str, params: Mapping[str, Any]) -> list[sqlite3.Row]:
            cursor = conn.cursor()
            cursor.row_factory = sqlite3.Row  # a caller's connection reads tuples
            return cursor.execute(_q(name), params).fetchall()

        tx = FlowTx(run, self._decode, now)
        value = work(tx)
        self._insert_outbox(conn, tx.notes, now)
        return value

    def _finish_done(self, conn: sqlite3.Connection, done: Completion, now: float) -> set[int]:
        """complete_jobs moves the jobs, record_done_attempts writes their attempts, then
        the messages of the jobs that finished are stored."""
        finished: list[int] = []
        for worker_id, fences in _fence_statements(done):
            params = {"fences": json.dumps(fences), "worker_id": worker_id, "now": now}
            finished += [row[0] for row in conn.execute(_q("complete_jobs"), params).fetchall()]
        if finished:
            conn.execute(_q("record_done_attempts"), {"ids": json.dumps(finished), "now": now})
        ids = set(finished)
        notes = done.notifications
        accepted = [x.job_id for x in done.leases if x.job_id in ids]
        self._insert_outbox(conn, [n for i in accepted for n in notes.get(i, ())], now)
        return ids

    def _insert_outbox(
        self, conn: sqlite3.Connection, notifications: Sequence[Notification], now: float
    ) -> None:
        if notifications:
            rows = [outbox_columns(note) | {"now": now} for note in notifications]
            conn.executemany(_q("insert_outbox"), rows)

    # -- prune ----------------------------------------------------------------

    def prune(
        self, rules: Sequence[RetentionRule], batch_size: int = 1000, *, dry_run: bool = False
    ) -> int:
        now = self.clock()
        total = 0
        for rule in rules:
            for states, keep in retention_periods(rule):
                for state in states:  # one state at a time: the jobdef_jobs_finished index
                    params = {"job": rule.job, "state": state, "before": now - keep}
                    if dry_run:
                        total += self._read("prune_count", params)[0][0]
                        continue
                    total += self._prune_batches(params, batch_size)
        return total

    def _prune_batches(self, params: dict[str, Any], batch_size: int) -> int:
        """Delete in short transactions so workers are not held up behind one long delete."""
        deleted = 0
        while True:
            with self._write() as conn:
                rows = conn.execute(_q("prune_batch"), params | {"limit": batch_size}).fetchall()
                ids = json.dumps([row[0] for row in rows])
                conn.execute(_q("delete_attempts"), {"ids": ids})
                conn.execute(_q("delete_jobs"), {"ids": ids})
            deleted += len(rows)
            if len(rows) < batch_size:
                return deleted

    def expire_results(self, rules: Sequence[ResultRetention], batch_size: int = 1000) -> int:
        now = self.clock()
        cleared = 0
        for rule in rules:
            params = {"job": rule.job, "before": now - rule.keep, "batch_size": batch_size}
            while True:
                with self._write() as conn:
                    count = conn.execute(_q("expire_results"), params).rowcount
                cleared += count
                if count < batch_size:
                    break
        return cleared

    # -- processed keys -------------------------------------------------------

    def record_processed_key(self, connection: Any, key: str, job_id: int) -> bool:
        return record_processed_key_on(connection, key, job_id, self.clock(), self.url)


def _fence_statements(done: Completion) -> list[tuple[str, dict[int, Any]]]:
    """complete_jobs's ``(:worker_id, :fences)`` for ``done``: job id to attempt, or to
    ``[attempt, result]``. One statement per worker (a worker's turn holds its own leases
    only), and one more for each further lease of a job already in it, which an object
    cannot hold twice (an attempt that lost its lease beside the job's next one): each is
    fenced on its own, as every lease is."""
    objects: dict[str, list[dict[int, Any]]] = {}
    results = done.results
    for lease in done.leases:
        result = results.get(lease.job_id)
        fence = lease.attempt if result is None else [lease.attempt, result]
        fences = objects.get(lease.worker_id)
        if fences is None:
            fences = objects[lease.worker_id] = [{}]
        for each in fences:  # the first, but for a job's second lease
            if lease.job_id not in each:
                break
        else:
            fences.append(each := {})
        each[lease.job_id] = fence
    return [(worker_id, each) for worker_id, fences in objects.items() for each in fences]


def record_processed_key_on(
    connection: sqlite3.Connection, key: str, job_id: int, now: float, store_url: str
) -> bool:
    """Record ``key`` on the handler's own sqlite3 ``connection``, in its transaction,
    whatever engine holds the job store (``store_url`` names no table here)."""
    if not connection.execute(_q("processed_keys_exist")).fetchone()[0]:
        # The handler's database need not be the job database: the table is made
        # there on first use.
        connection.execute(_q("create_processed_keys"))
    params = {"key": key, "job_id": job_id, "now": now}
    return bool(connection.execute(_q("record_processed_key"), params).rowcount == 1)


def _version_on(conn: sqlite3.Connection) -> int:
    """The schema version of the database ``conn`` is on, reading only."""
    if not conn.execute(_q("schema_tables")).fetchone()[0]:
        return 0
    return int(conn.execute(_q("schema_version")).fetchone()[0])


# SQLITE_CORRUPT and SQLITE_NOTADB: a page or the header holds garbage.
_CORRUPT_CODES = (11, 26)


@contextmanager
def database_errors(path: Path, missing_tables: Callable[[], None] | None = None) -> Iterator[None]:
    """A database that cannot be used (locked too long, disk full, read-only, corrupted) is
    one clear :class:`BackendError`, not a driver traceback. ``missing_tables`` is called
    when a jobdef table is missing (it raises what to do about it)."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        if _is_corrupt(exc):
            raise _corrupt(path, exc) from None
        if not isinstance(exc, sqlite3.OperationalError):
            raise
        if missing_tables is not None and str(exc).startswith("no such table: jobdef_"):
            # Opened without migrating (a worker with --no-migrate) on a database
            # without jobdef tables, or older ones: say to run `jobdef db upgrade`.
            missing_tables()
        raise BackendError(
            f"the job database {path} cannot be used: {exc}{_disk_note(path)}; "
            "check the disk, the file's permissions, and that no other program holds a "
            "long transaction on it"
        ) from exc


def _is_corrupt(exc: sqlite3.DatabaseError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _CORRUPT_CODES
    return str(exc) in ("database disk image is malformed", "file is not a database")


_RECOVER = (
    'stop the workers and recover what it holds with: sqlite3 {path} ".recover" | '
    "sqlite3 recovered.db (or restore a backup), then point --db at the recovered file"
)


def _corrupt(path: Path, exc: sqlite3.DatabaseError) -> BackendError:
    return BackendError(
        f"the job database {path} is corrupted ({exc}); " + _RECOVER.format(path=path)
    )


def _disk_note(path: Path | str) -> str:
    """`` (the disk holding it has 12 KB free)`` when that disk is nearly full, else ``""``:
    SQLite reports a full disk as "disk I/O error" when it cannot create the WAL file."""
    try:
        free = shutil.disk_usage(Path(path).resolve().parent).free
    except OSError:
        return ""
    if free >= LOW_DISK_BYTES:
        return ""
    return f" (the disk holding it has {free // 1024} KB free: free some space)"


def _statements(script: str) -> list[str]:
    """Split a migration into statements (``sqlite3.complete_statement`` knows triggers)."""
    statements: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip() and not all(
        part.strip().startswith("--") or not part.strip() for part in buffer.splitlines()
    ):
        raise ValueError(f"migration ends inside a statement: {buffer.strip()[:60]!r}")
    return statements
