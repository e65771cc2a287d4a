"""An enqueue wakes only the idle workers whose turn its jobs are, each on its own channel.

The enqueue's statement applies :mod:`jobdef.runtime.wake_share`'s rule to the
workers table; these tests put rows in the table, listen on every channel the
rows name, and check that what each channel hears is the turn the rule (the
Python one, from the same rows) gives that worker, for each way of enqueueing.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence

import psycopg
import pytest
from psycopg import sql

from jobdef.backends.postgres.engine import PostgresBackend
from jobdef.backends.records import NewJob, Wakeup
from jobdef.backends.workers import WorkerInfo
from jobdef.runtime.wake_share import Turn, WakeShare

LEASE = 60.0
QUIET = 0.2  # no notification for this long: the enqueue's have all come


class Fleet:
    """Rows of the workers table, and one session listening on every channel."""

    def __init__(self, backend: PostgresBackend) -> None:
        self.backend = backend
        self.conn = psycopg.connect(backend.conninfo, autocommit=True)
        self.channels: dict[str, str] = {}  # worker id -> its channel
        self._listen(backend.channel)

    def _listen(self, channel: str) -> None:
        self.conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))

    def add(
        self,
        worker_id: str,
        queues: Sequence[str] | None = None,
        *,
        channel: str | None = "own",
        beat_ago: float = 0.0,
    ) -> None:
        """A worker's row; ``channel`` "own": a channel of its own; None: an earlier
        jobdef's worker (no channel); "": a worker that does not listen."""
        # Channels are the database's: the schema's name keeps other tests' apart.
        told = f"{self.backend.schema}_{worker_id}" if channel == "own" else channel
        if told:
            self.channels[worker_id] = told
            self._listen(told)
        self.backend.register_worker(
            WorkerInfo(
                worker_id,
                "host",
                1,
                None if queues is None else tuple(queues),
                1,
                LEASE,
                "0",
                0.0,
                0.0,
            )
        )
        table = sql.Identifier(self.backend.schema, "jobdef_workers")
        self.conn.execute(
            sql.SQL("UPDATE {} SET wake_channel = %s, last_beat = %s WHERE id = %s").format(table),
            [told, self.backend.clock() - beat_ago, worker_id],
        )

    def heard(self) -> dict[str, list[Wakeup]]:
        """What each channel heard since the last call, by channel."""
        heard: dict[str, list[Wakeup]] = {}
        while notes := list(self.conn.notifies(timeout=QUIET)):
            for note in notes:
                heard.setdefault(note.channel, []).append(Wakeup.parse(note.payload))
        return heard

    def rule(self, wakeup: Wakeup) -> dict[str, Turn]:
        """The turn each live worker with a channel takes at ``wakeup`` by the Python
        rule, from the rows of the table as a worker reads them (a dead one takes none)."""
        rows, now = self.backend.worker_rows(), self.backend.clock()
        turns = {}
        for row in rows:
            if row.stale(now):
                continue
            share = WakeShare(row.id, row.queues)
            share.seen(rows, now)
            turn = share.turn([wakeup])
            if turn is not None and row.id in self.channels:
                turns[self.channels[row.id]] = turn
        return turns

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def fleet(pg_backend: PostgresBackend) -> Iterator[Fleet]:
    with contextlib.closing(Fleet(pg_backend)) as fleet:
        yield fleet


def _told(heard: dict[str, list[Wakeup]]) -> dict[str, Turn]:
    """The turn each channel was told (one notification each)."""
    assert all(len(wakeups) == 1 for wakeups in heard.values()), heard
    return {channel: Turn(wakeups[0].turn) for channel, wakeups in heard.items()}


def test_one_job_tells_its_first_worker_and_one_backup_and_nobody_else(
    pg_backend: PostgresBackend, fleet: Fleet
) -> None:
    for n in range(5):
        fleet.add(f"w{n}")
    firsts = set()
    for _ in range(7):  # turns go round the fleet
        (receipt,) = pg_backend.enqueue([NewJob("a", {}, "default")])
        told = _told(fleet.heard())
        assert sorted(t.value for t in told.values()) == ["backup", "first"]
        assert told == fleet.rule(Wakeup("default", 1, receipt.job_id))
        firsts |= {channel for channel, turn in told.items() if turn is Turn.FIRST}
    assert len(firsts) == 5


def test_a_batch_tells_as_many_workers_as_jobs_per_queue_and_a_big_one_all(
    pg_backend: PostgresBackend, fleet: Fleet
) -> None:
    fleet.add("w0")
    fleet.add("w1", ["mail"])
    fleet.add("w2")
    fleet.add("w3", ["default"])
    fleet.add("w4")
    jobs = [NewJob("a", {"n": n}, "default") for n in range(2)] + [NewJob("a", {}, "mail")]
    receipts = pg_backend.enqueue(jobs)
    heard = fleet.heard()
    by_queue: dict[str, dict[str, Turn]] = {}
    for channel, wakeups in heard.items():
        for wakeup in wakeups:
            assert wakeup.turn is not None
            by_queue.setdefault(wakeup.queue or "", {})[channel] = Turn(wakeup.turn)
    assert by_queue["default"] == fleet.rule(Wakeup("default", 2, receipts[0].job_id))
    assert len(by_queue["default"]) == 4  # 4 workers serve it: 2 first, 2 backups
    assert by_queue["mail"] == fleet.rule(Wakeup("mail", 1, receipts[2].job_id))
    assert set(by_queue["mail"]) <= {fleet.channels[w] for w in ("w0", "w1", "w2", "w4")}

    texts = (f'{{"n": {n}}}' for n in range(6))  # more jobs than workers: all of them
    pg_backend.enqueue_alike(NewJob("a", {}, "mail"), texts)
    told = _told(fleet.heard())
    assert told == dict.fromkeys([fleet.channels[w] for w in ("w0", "w1", "w2", "w4")], Turn.FIRST)


def test_stale_and_non_listening_workers_take_no_turn(
    pg_backend: PostgresBackend, fleet: Fleet
) -> None:
    fleet.add("w0")
    fleet.add("w1", beat_ago=LEASE + 5)  # died: its lease ran out
    fleet.add("w2", channel="")  # ?wake=poll: polls, listens to nothing
    for _ in range(4):
        (receipt,) = pg_backend.enqueue([NewJob("a", {}, "default")])
        told = _told(fleet.heard())
        # The one live listening worker is the whole queue: its first turn every time.
        assert told == {fleet.channels["w0"]: Turn.FIRST}
        assert told == fleet.rule(Wakeup("default", 1, receipt.job_id))


def test_a_worker_of_an_earlier_jobdef_gets_every_worker_told_on_the_schema_s_channel(
    pg_backend: PostgresBackend, fleet: Fleet
) -> None:
    fleet.add("w0")
    fleet.add("old", ["default"], channel=None)  # listens on the schema's channel only
    fleet.add("w2", ["mail"])
    (receipt,) = pg_backend.enqueue([NewJob("a", {}, "default")])
    heard = fleet.heard()
    # As earlier releases did: the plain wake-up, each worker takes its turn itself.
    assert heard == {pg_backend.channel: [Wakeup("default", 1, receipt.job_id, at=_at(heard))]}
    # The old worker does not serve mail: its workers are told their turns.
    (receipt,) = pg_backend.enqueue([NewJob("a", {}, "mail")])
    told = _told(fleet.heard())
    assert told == fleet.rule(Wakeup("mail", 1, receipt.job_id))
    assert set(told) == {fleet.channels["w0"], fleet.channels["w2"]}


def test_with_no_live_worker_of_the_queue_the_schema_s_channel_is_told(
    pg_backend: PostgresBackend, fleet: Fleet
) -> None:
    fleet.add("w0", ["mail"])
    pg_backend.enqueue([NewJob("a", {}, "default")])
    heard = fleet.heard()
    assert list(heard) == [pg_backend.channel]  # a worker starting now may hear it
    assert heard[pg_backend.channel][0].turn is None


def test_a_worker_registers_the_channel_it_listens_on_and_hears_its_turn_there(
    pg_backend: PostgresBackend, postgres_url: str
) -> None:
    pg_backend.register_worker(WorkerInfo("real", "host", 1, None, 1, LEASE, "0", 0.0, 0.0))
    with PostgresBackend(postgres_url, schema=pg_backend.schema) as enqueuer:
        (receipt,) = enqueuer.enqueue([NewJob("a", {}, "default")])
    deadline = time.monotonic() + 30
    heard: list[Wakeup] = []
    while not heard and time.monotonic() < deadline:
        heard = pg_backend.wait_for_jobs(1.0)
    assert [(w.queue, w.first_id, w.turn) for w in heard] == [("default", receipt.job_id, "first")]


def _at(heard: dict[str, list[Wakeup]]) -> float | None:
    return next(iter(heard.values()))[0].at


def test_a_worker_behind_a_transaction_pooler_registers_that_it_takes_no_turn(
    pg_backend: PostgresBackend, postgres_url: str, fleet: Fleet
) -> None:
    fleet.add("w0")
    with PostgresBackend(f"{postgres_url}?wake=poll", schema=pg_backend.schema) as polling:
        polling.register_worker(WorkerInfo("polling", "host", 1, None, 1, LEASE, "0", 0.0, 0.0))
    table = sql.Identifier(pg_backend.schema, "jobdef_workers")
    [(channel,)] = fleet.conn.execute(
        sql.SQL("SELECT wake_channel FROM {} WHERE id = 'polling'").format(table)
    ).fetchall()
    assert channel == ""
    pg_backend.enqueue([NewJob("a", {}, "default")])
    assert _told(fleet.heard()) == {fleet.channels["w0"]: Turn.FIRST}  # the queue's only one
