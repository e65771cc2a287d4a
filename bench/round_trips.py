"""Statements and round trips per job on PostgreSQL, counted at the client.

Enqueues ``--jobs`` no-op jobs with ``Queue.enqueue_many``, then drains them with
one worker run in this process (``burst``), counting every statement the
process sends through psycopg: each ``Cursor.execute`` (``Connection.execute``
goes through it), each turn a worker sends without waiting (``SessionManager.send``)
and each command a transaction block sends (``BEGIN``,
``COMMIT``, ``SAVEPOINT``...). A statement sent inside a pipeline shares the
pipeline's one round trip; every other statement is one round trip. The handler
processes never talk to the database, so the worker process is the whole of it.

    python bench/round_trips.py                     # 5,000 jobs, concurrency 2
    python bench/round_trips.py --prefetch 100 --concurrency 1

It prints the totals per job and the statements by query name (the names of
``src/jobdef/backends/postgres/queries.sql``), for the enqueue and for the drain.
A schema ``bench_round_trips`` is created in ``--url`` and dropped after.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import psycopg

from pg_store import drop_schema, noop_sheet

SCHEMA = "bench_round_trips"
SHEET = noop_sheet("bench_round_trips_noop:noop")
HANDLER = "def noop(ctx, n=0):\n    pass\n"


class Counter:
    """Statements and round trips sent through psycopg in this process, by name."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.statements: collections.Counter[str] = collections.Counter()
        self.round_trips = 0
        self.pipelines = 0
        self._lock = threading.Lock()

    def name_of(self, query: Any) -> str:
        text = query if isinstance(query, str) else str(query)
        found = self.names.get(text.strip())
        return found or " ".join(text.split()[:2])[:40]

    def statement(self, conn: Any, query: Any) -> None:
        with self._lock:
            self.statements[self.name_of(query)] += 1
            if getattr(conn, "_pipeline", None) is None:
                self.round_trips += 1

    def pipeline_sent(self) -> None:
        with self._lock:
            self.pipelines += 1
            self.round_trips += 1

    def reset(self) -> None:
        with self._lock:
            self.statements.clear()
            self.round_trips = self.pipelines = 0

    @contextlib.contextmanager
    def installed(self) -> Iterator[Counter]:
        """Count through psycopg's classes while the block runs."""
        from jobdef.backends.postgres.session import SessionManager

        cursor_execute = psycopg.Cursor.execute
        exec_command = psycopg.Connection._exec_command
        pipeline = psycopg.Connection.pipeline
        send = SessionManager.send
        counter = self

        def sent(manager: Any, sql: str, *args: Any, **kwargs: Any) -> Any:
            # A worker's turn sent without waiting for its answer: one round trip too.
            counter.statement(manager.connection(), sql)
            return send(manager, sql, *args, **kwargs)

        def execute(cur: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            counter.statement(cur.connection, query)
            return cursor_execute(cur, query, *args, **kwargs)

        def command(conn: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            counter.statement(conn, bytes(query).decode() if isinstance(query, bytes) else query)
            return exec_command(conn, query, *args, **kwargs)

        @contextlib.contextmanager
        def counted_pipeline(conn: Any) -> Iterator[Any]:
            outer = conn._pipeline is None
            with pipeline(conn) as p:
                yield p
            if outer:
                counter.pipeline_sent()

        patches = {
            (psycopg.Cursor, "execute"): (execute, cursor_execute),
            (psycopg.Connection, "_exec_command"): (command, exec_command),
            (psycopg.Connection, "pipeline"): (counted_pipeline, pipeline),
            (SessionManager, "send"): (sent, send),
        }
        for (cls, name), (counting, _) in patches.items():
            setattr(cls, name, counting)
        try:
            yield self
        finally:
            for (cls, name), (_, original) in patches.items():
                setattr(cls, name, original)

    def report(self, what: str, jobs: int) -> str:
        total = sum(self.statements.values())
        lines = [
            f"{what}: {total / jobs:.3f} statements/job, {self.round_trips / jobs:.3f} round "
            f"trips/job ({total} statements, {self.round_trips} round trips, "
            f"{self.pipelines} pipelines, {jobs} jobs)"
        ]
        for name, count in self.statements.most_common():
            lines.append(f"  {count:7d}  {count / jobs:7.3f}/job  {name}")
        return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=1000, help="jobs per enqueue_many")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--prefetch", type=int, default=32)
    args = parser.parse_args(argv)

    from jobdef.backends import open_backend
    from jobdef.runtime import Queue, Worker, WorkerSettings
    from jobdef.sheets.pipeline import load_registry

    folder = Path(tempfile.mkdtemp(prefix="jobdef-round-trips-"))
    (folder / "noop.yaml").write_text(SHEET)
    (folder / "bench_round_trips_noop.py").write_text(HANDLER)
    sys.path.insert(0, str(folder))
    url = f"{args.url}?schema={SCHEMA}"
    drop_schema(args.url, SCHEMA)
    counter = Counter()
    try:
        registry = load_registry([str(folder)])
        backend = open_backend(url)
        counter.names = {text.strip(): name for name, text in backend._sql.items()}  # type: ignore[attr-defined]
        try:
            with counter.installed():
                queue = Queue(backend, registry)
                for first in range(0, args.jobs, args.batch):
                    last = min(args.jobs, first + args.batch)
                    queue.enqueue_many("noop", ({"n": n} for n in range(first, last)))
                print(counter.report(f"enqueue, batches of {args.batch}", args.jobs))
                counter.reset()
                settings = WorkerSettings(
                    burst=True, concurrency=args.concurrency, prefetch=args.prefetch
                )
                Worker(backend, registry, settings).run()
                print(
                    counter.report(
                        f"drain, concurrency {args.concurrency}, prefetch {args.prefetch}",
                        args.jobs,
                    )
                )
        finally:
            backend.close()
    finally:
        drop_schema(args.url, SCHEMA)
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
