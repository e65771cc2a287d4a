"""Code that runs in child processes of the PostgreSQL tests (importable under spawn)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from jobdef.backends.postgres.engine import PostgresBackend
from jobdef.backends.records import ClaimOptions


def migrate(url: str, schema: str) -> int:
    with PostgresBackend(url, schema=schema) as backend:
        backend.migrate()
        return backend.schema_version()


def drain(url: str, schema: str, worker_id: str, batch: int) -> list[int]:
    """Claim and complete until the queue is empty; return the ids this process completed."""
    completed: list[int] = []
    with PostgresBackend(url, schema=schema) as backend:
        while True:
            jobs = backend.claim(ClaimOptions(worker_id, lease_seconds=60, limit=batch))
            if not jobs:
                return completed
            results = backend.complete([job.lease for job in jobs])
            completed.extend(job.id for job, ok in zip(jobs, results, strict=True) if ok)


def claim_limited(url: str, schema: str, worker_id: str, cap: int, rounds: int) -> int:
    """Claim from a concurrency-limited queue, holding every job; return how many it got."""
    held = 0
    with PostgresBackend(url, schema=schema) as backend:
        for _ in range(rounds):
            jobs = backend.claim(
                ClaimOptions(worker_id, lease_seconds=60, limit=5, queue_limits={"exports": cap})
            )
            held += len(jobs)
    return held


def run_worker(
    url: str,
    schema: str,
    sheets: str,
    *,
    concurrency: int = 2,
    burst: bool = False,
    lease_seconds: float = 30.0,
    poll_interval: float = 0.25,
    maintenance_lease: float | None = None,
    log_file: str | None = None,
    queues: list[str] | None = None,
    clock_skew: float = 0.0,
    url_options: str = "",
    claims_file: str | None = None,
    prefetch: int | None = None,
    pipeline_turns: bool = False,
) -> None:
    """A real worker process on the engine at ``url``/``schema`` running ``sheets``;
    ``maintenance_lease``: the seconds its maintenance lease lasts (default the engine's);
    ``log_file``: where it logs (default stderr); ``queues``: the queues it serves (default
    all); ``clock_skew``: seconds this process's wall clock (``time.time``) is ahead, as on
    a host whose clock is wrong; ``url_options``: more of the store URL's query
    (``&wake=poll``); ``claims_file``: where it writes, at every claim, how many claims
    it made (a JSON list: the claim's time on this host's clock, how many jobs it got);
    ``prefetch``: the jobs it takes ahead per handler process (default the worker's);
    ``pipeline_turns``: it sends its turns without waiting for their answers."""
    import logging
    import time

    if claims_file is not None:
        _count_claims(claims_file)

    if clock_skew:
        real_time = time.time
        time.time = lambda: real_time() + clock_skew

    from jobdef.backends import open_backend
    from jobdef.runtime.settings import WorkerSettings
    from jobdef.runtime.worker import Worker
    from jobdef.sheets.pipeline import load_registry

    logging.basicConfig(
        level=logging.WARNING,
        filename=log_file,
        format="%(asctime)s %(levelname)s:%(name)s:%(message)s",
    )
    database_url = f"{url}?schema={schema}{url_options}"
    backend = open_backend(database_url)
    if maintenance_lease is not None:
        backend.listener.lease_seconds = maintenance_lease  # type: ignore[attr-defined]
    try:
        ahead = {} if prefetch is None else {"prefetch": prefetch}
        settings = WorkerSettings(
            queues=queues,
            concurrency=concurrency,
            burst=burst,
            lease_seconds=lease_seconds,
            poll_interval=poll_interval,
            pipeline_turns=pipeline_turns,
            **ahead,
        )
        Worker(backend, load_registry([sheets]), settings).run()
    finally:
        backend.close()


def _count_claims(path: str) -> None:
    """Record every claim of this process's worker into the JSON file ``path``."""
    import json
    import time

    import jobdef.runtime.worker as worker_module

    claims: list[tuple[float, int]] = []
    exchange = worker_module.complete_and_claim
    send = worker_module.send_turn

    def record(count: int) -> None:
        claims.append((time.monotonic(), count))
        Path(path + ".tmp").write_text(json.dumps(claims))
        os.replace(path + ".tmp", path)

    def counted(backend: Any, leases: Any, notes: Any, options: Any, results: Any) -> Any:
        accepted, records = exchange(backend, leases, notes, options, results)
        if options is not None:
            record(len(records))
        return accepted, records

    class CountedTurn:
        """A sent turn (worker_module.send_turn's), whose claim is counted once read."""

        def __init__(self, turn: Any) -> None:
            self.turn = turn
            self.fileno, self.ready, self.leased = turn.fileno, turn.ready, turn.leased

        def result(self) -> Any:
            accepted, records = self.turn.result()
            record(len(records))
            return accepted, records

    def counted_send(backend: Any, leases: Any, notes: Any, options: Any, results: Any) -> Any:
        turn = send(backend, leases, notes, options, results)
        return None if turn is None else CountedTurn(turn)

    worker_module.complete_and_claim = counted  # type: ignore[assignment]
    worker_module.send_turn = counted_send  # type: ignore[assignment]
