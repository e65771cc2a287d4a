"""LISTEN/NOTIFY: an idle worker wakes when a job is enqueued, and polls when it cannot listen."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import psycopg
import pytest

from jobdef.backends.postgres.engine import ALIKE_CHUNK, PostgresBackend
from jobdef.backends.records import NewJob, Wakeup
from jobdef.errors import ArgsError, BackendError

from .helpers import terminate

LONG = 60.0  # a wait this long ends early only through a notification


def test_an_enqueue_elsewhere_wakes_a_waiting_engine(
    pg_backend: PostgresBackend, postgres_url: str
) -> None:
    assert pg_backend.wait_for_jobs(0.01) == []  # now listening

    def enqueue_elsewhere() -> None:
        with PostgresBackend(postgres_url, schema=pg_backend.schema) as other:
            other.enqueue([NewJob("a", {}, "default")])

    thread = threading.Thread(target=enqueue_elsewhere)
    thread.start()
    try:
        heard = pg_backend.wait_for_jobs(LONG)
    finally:
        thread.join()
    # The queue, how many jobs and the first one's id: whose turn it is (wake_share).
    assert [(w.queue, w.count) for w in heard] == [("default", 1)]
    assert heard[0].first_id is not None


def test_an_enqueue_while_busy_is_not_missed(pg_backend: PostgresBackend) -> None:
    pg_backend.wait_for_jobs(0.01)
    pg_backend.enqueue([NewJob("a", {}, "default")])
    pg_backend.try_maintenance_lock()  # another statement on the listening session
    assert pg_backend.wait_for_jobs(LONG)


def test_a_rolled_back_enqueue_wakes_nobody(pg_backend: PostgresBackend) -> None:
    pg_backend.wait_for_jobs(0.01)
    with psycopg.connect(pg_backend.conninfo) as conn:
        pg_backend.enqueue([NewJob("a", {}, "default")], connection=conn)
        conn.rollback()
    assert pg_backend.wait_for_jobs(0.3) == []


def test_after_losing_the_listening_session_it_polls_then_listens_again(
    pg_backend: PostgresBackend,
) -> None:
    pg_backend.wait_for_jobs(0.01)
    terminate(pg_backend.conninfo, pg_backend.listener._session.info.backend_pid)
    assert pg_backend.wait_for_jobs(LONG) == [Wakeup()]  # lost: claim now, by polling
    assert pg_backend.wait_for_jobs(0.01) == []  # listening again on a new session
    pg_backend.enqueue([NewJob("a", {}, "default")])
    assert pg_backend.wait_for_jobs(LONG)


def test_resuming_a_queue_wakes_the_listening_workers_and_pausing_does_not(
    pg_backend: PostgresBackend, postgres_url: str
) -> None:
    pg_backend.wait_for_jobs(0.01)
    with PostgresBackend(postgres_url, schema=pg_backend.schema) as operator:
        operator.set_paused("mail", True)
        assert pg_backend.wait_for_jobs(0.3) == []  # a pause makes nothing runnable
        operator.set_paused("mail", False)
    # The queue's backlog is claimed now, not at the next poll.
    assert [w.queue for w in pg_backend.wait_for_jobs(LONG)] == ["mail"]


def test_a_queue_whose_name_no_notification_can_carry_still_resumes(
    pg_backend: PostgresBackend,
) -> None:
    name = "q" * 9000  # past NOTIFY's 8000-byte payload
    pg_backend.set_paused(name, True)
    pg_backend.set_paused(name, False)
    assert not any(info.queue == name and info.paused for info in pg_backend.queues())


def test_wake_ends_a_wait_at_once(pg_backend: PostgresBackend) -> None:
    pg_backend.wait_for_jobs(0.01)
    timer = threading.Timer(0.05, pg_backend.wake)
    timer.start()
    try:
        assert pg_backend.wait_for_jobs(LONG) == [Wakeup()]  # every queue: claim
    finally:
        timer.join()
    assert pg_backend.wait_for_jobs(0.01) == []  # the wake-up was used up


def test_a_batch_says_per_queue_how_many_jobs_came_and_the_first_id(
    pg_backend: PostgresBackend,
) -> None:
    pg_backend.wait_for_jobs(0.01)
    jobs = [NewJob("a", {"n": n}, "default") for n in range(3)] + [NewJob("a", {}, "mail")]
    receipts = pg_backend.enqueue(jobs)
    heard = {w.queue: w for w in pg_backend.wait_for_jobs(LONG)}
    assert (heard["default"].count, heard["default"].first_id) == (3, receipts[0].job_id)
    assert (heard["mail"].count, heard["mail"].first_id) == (1, receipts[3].job_id)


def test_a_batch_of_delayed_jobs_says_when_the_first_comes_due(
    pg_backend: PostgresBackend,
) -> None:
    pg_backend.wait_for_jobs(0.01)
    now = pg_backend.clock()
    later = [NewJob("a", {"n": n}, "default", run_after=now + 30 + n) for n in range(2)]
    mixed = [NewJob("a", {}, "mail", run_after=now + 30), NewJob("a", {}, "mail")]
    pg_backend.enqueue(later + mixed)
    heard = {w.queue: w for w in pg_backend.wait_for_jobs(LONG)}
    assert heard["default"].due == pytest.approx(now + 30)
    assert heard["mail"].due is None  # one of them is due now: claim now
    assert Wakeup.parse("default 1 7 nan").due is None  # only a time it can wait for
    assert Wakeup.parse("default 1 7 soon") == Wakeup("default", 1, 7)


def test_every_enqueue_says_by_its_clock_when_its_jobs_were_due(
    pg_backend: PostgresBackend,
) -> None:
    """``at``: the enqueuer's reading of the engine's clock, by which the jobs due now
    were due; said by each of the three enqueue statements (one job, a batch with keys,
    a batch alike but for the args), delayed or not."""
    pg_backend.wait_for_jobs(0.01)
    before = pg_backend.clock()
    pg_backend.enqueue([NewJob("a", {}, "one")])
    pg_backend.enqueue([NewJob("a", {}, "keyed", idempotency_key="k")])
    pg_backend.enqueue_alike(NewJob("a", {}, "alike"), ['{"n": 1}', '{"n": 2}'])
    pg_backend.enqueue([NewJob("a", {}, "later", run_after=before + 30)])
    after = pg_backend.clock()
    heard = {w.queue: w for w in _heard(pg_backend, 4)}
    assert set(heard) == {"one", "keyed", "alike", "later"}
    for wakeup in heard.values():
        assert wakeup.at is not None, wakeup
        assert before <= wakeup.at <= after, wakeup
    assert [heard[q].due for q in ("one", "keyed", "alike")] == [None, None, None]
    assert heard["later"].due == pytest.approx(before + 30)
    assert Wakeup.parse("default 1 7 - 12.5") == Wakeup("default", 1, 7, None, 12.5)
    assert Wakeup.parse("default 1 7 20 12.5") == Wakeup("default", 1, 7, 20.0, 12.5)
    assert Wakeup.parse("default 1 7 - inf") == Wakeup("default", 1, 7)


def _heard(backend: PostgresBackend, count: int) -> list[Wakeup]:
    """The wake-ups of ``count`` notifications (delivered together at a commit)."""
    heard: list[Wakeup] = []
    while len(heard) < count:
        more = backend.wait_for_jobs(LONG)
        assert more, f"heard {len(heard)} of {count} notifications"
        heard.extend(more)
    return heard


def test_a_batch_alike_but_for_the_args_says_each_statement_s_count_and_first_id(
    pg_backend: PostgresBackend,
) -> None:
    """A batch longer than one statement (ALIKE_CHUNK jobs) notifies once a statement:
    the counts add up to the batch, each first id is its statement's first job."""
    pg_backend.wait_for_jobs(0.01)
    size = 2 * ALIKE_CHUNK + 7
    texts = (f'{{"n": {n}}}' for n in range(size))
    receipts = pg_backend.enqueue_alike(NewJob("a", {}, "default"), texts)
    heard = sorted(_heard(pg_backend, 3), key=lambda w: w.first_id or 0)
    assert [(w.queue, w.count, w.due) for w in heard] == [
        ("default", ALIKE_CHUNK, None),
        ("default", ALIKE_CHUNK, None),
        ("default", 7, None),
    ]
    firsts = [receipts[0], receipts[ALIKE_CHUNK], receipts[2 * ALIKE_CHUNK]]
    assert [w.first_id for w in heard] == [r.job_id for r in firsts]


def test_a_delayed_batch_alike_but_for_the_args_says_when_it_comes_due(
    pg_backend: PostgresBackend,
) -> None:
    pg_backend.wait_for_jobs(0.01)
    now = pg_backend.clock()
    job = NewJob("a", {}, "mail", run_after=now + 30)
    pg_backend.enqueue_alike(job, ['{"n": 1}', '{"n": 2}'])
    [heard] = _heard(pg_backend, 1)
    assert (heard.queue, heard.count) == ("mail", 2)
    assert heard.due == pytest.approx(now + 30)


def test_a_batch_alike_whose_args_fail_midway_stores_nothing_and_wakes_nobody(
    pg_backend: PostgresBackend,
) -> None:
    """The statements of the chunks read before the failure were sent already: the
    transaction they are in rolls back, their notifications with it."""
    pg_backend.wait_for_jobs(0.01)

    def texts() -> Iterator[str]:
        yield from ['{"n": 1}'] * (2 * ALIKE_CHUNK + 1)
        raise ArgsError("job 'a': args.n is bad. Nothing was stored")

    with pytest.raises(ArgsError, match="Nothing was stored"):
        pg_backend.enqueue_alike(NewJob("a", {}, "default"), texts())
    assert pg_backend.wait_for_jobs(0.3) == []
    assert pg_backend.list_jobs() == []
    [stored] = pg_backend.enqueue_alike(NewJob("a", {}, "default"), ['{"n": 2}'])
    assert pg_backend.get(stored.job_id).args == {"n": 2}


def test_a_stranger_s_notify_on_the_channel_is_a_wake_up_never_an_error(
    pg_backend: PostgresBackend,
) -> None:
    """Any role that can connect may NOTIFY on the workers' channel: payloads that are
    not the engine's (non-ASCII digits, a number past any id, garbage) wake the
    waiting worker for that queue and raise nothing."""
    pg_backend.wait_for_jobs(0.01)
    hostile = ["default \u00b2 1", "default 1 " + "9" * 5000, "default x y z", ""]
    with psycopg.connect(pg_backend.conninfo, autocommit=True) as conn:
        for payload in hostile:
            conn.execute("SELECT pg_notify(%s, %s)", [pg_backend.channel, payload])
    heard: list[Wakeup] = []
    while len(heard) < len(hostile):
        heard.extend(pg_backend.wait_for_jobs(LONG))
    assert heard == [Wakeup("default")] * 3 + [Wakeup()]


def test_behind_a_transaction_pooler_nothing_listens_and_a_wait_only_sleeps(
    postgres_url: str, pg_backend: PostgresBackend
) -> None:
    url = f"{postgres_url}{'&' if '?' in postgres_url else '?'}wake=poll"
    with PostgresBackend(url, schema=pg_backend.schema) as pooled:
        assert pooled.wait_for_jobs(0.01) == []
        pg_backend.enqueue([NewJob("a", {}, "default")])
        assert pooled.wait_for_jobs(0.2) == []  # nobody tells it: it polls
        assert not pooled.listening
        assert pooled.try_maintenance_lock()  # the lease is a row, on its one session
        assert pooled.listener._session is None
        # Nothing a pooler would lose or leak between transactions: no prepared
        # statement, no session setting.
        session = pooled.sessions.connection()
        assert session.prepare_threshold is None
        assert session.execute("SHOW enable_bitmapscan").fetchone() == ("on",)


def test_an_unknown_wake_mode_is_one_line_naming_both(postgres_url: str) -> None:
    url = f"{postgres_url}{'&' if '?' in postgres_url else '?'}wake=loud"
    with pytest.raises(BackendError) as caught:
        PostgresBackend(url)
    assert str(caught.value) == (
        "?wake=loud in the database URL is not a wake mode; write ?wake=listen "
        "(the default: LISTEN/NOTIFY) or ?wake=poll (behind PgBouncer in transaction mode)"
    )
