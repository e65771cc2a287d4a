"""The enqueue API: args validated by the sheet, keys from the recipe, the caller's transaction."""

from __future__ import annotations

import sqlite3

import pytest

from jobdef.errors import ArgsError, UnknownJobError
from jobdef.runtime.queue import Queue, connect


@pytest.fixture
def queue(backend, registry):
    return Queue(backend, registry)


def test_enqueue_takes_queue_priority_attempts_and_key_from_the_sheet(queue, backend):
    result = queue.enqueue("noop", {"n": 7})
    record = backend.get(result.id)
    assert (record.queue, record.max_attempts, record.idempotency_key) == ("default", 3, "noop-7")
    assert record.args == {"n": 7}


def test_bad_args_raise_a_clear_error_and_store_nothing(queue, backend):
    with pytest.raises(ArgsError) as caught:
        queue.enqueue("noop", {"n": -1, "extra": True})
    message = str(caught.value)
    assert "job 'noop'" in message
    assert "args.n: -1 is less than the minimum of 0" in message
    assert "'extra' was unexpected" in message
    assert "Nothing was stored" in message
    assert backend.list_jobs() == []


def test_bulk_enqueue_stores_nothing_when_one_call_is_bad(queue, backend):
    with pytest.raises(ArgsError, match=r"args\.n"):
        queue.enqueue_many("noop", [{"n": 1}, {"n": "two"}])
    assert backend.list_jobs() == []


def test_bulk_enqueue_stores_all_in_one_call(queue, backend):
    results = queue.enqueue_many("noop", [{"n": i} for i in range(50)])
    assert all(r.created for r in results)
    assert len(backend.list_jobs(limit=100)) == 50


# More calls than PostgreSQL stores in one statement of a batch without keys
# (engine.ALIKE_CHUNK), so that the batch takes several.
MANY = 3 * 250 + 7


@pytest.mark.every_engine
def test_bulk_enqueue_of_a_job_without_a_key_stores_every_call_in_its_order(queue, backend):
    calls = [{"seconds": n / 10, "marker": f"m{n}é"} for n in range(MANY)]
    results = queue.enqueue_many("sleep", calls)
    assert all(r.created for r in results)
    assert [r.id for r in results] == sorted(r.id for r in results)  # claimed in call order
    assert len({r.token for r in results}) == MANY
    records = {r.id: r for r in backend.list_jobs(limit=2 * MANY)}
    assert [dict(records[r.id].args) for r in results] == calls
    assert {(rec.job, rec.queue, rec.state) for rec in records.values()} == {
        ("sleep", "default", "queued")
    }
    assert backend.find_receipt(results[-1].token).id == results[-1].id


@pytest.mark.every_engine
def test_bulk_enqueue_of_a_job_without_a_key_stores_nothing_when_a_late_call_is_bad(queue, backend):
    calls = [{"seconds": 1} for _ in range(MANY)]
    calls[-3] = {"seconds": "soon"}
    with pytest.raises(ArgsError, match=r"args\.seconds"):
        queue.enqueue_many("sleep", calls)
    assert backend.list_jobs() == []
    assert len(queue.enqueue_many("sleep", [{"seconds": 1}] * 3)) == 3  # the store works on


@pytest.mark.every_engine
def test_bulk_enqueue_merges_duplicates_inside_the_batch_and_of_active_jobs(queue, backend):
    active = queue.enqueue("noop", {"n": 1})
    results = queue.enqueue_many("noop", [{"n": 1}, {"n": 2}, {"n": 3}, {"n": 2}, {"n": 1}])
    assert [r.created for r in results] == [False, True, True, False, False]
    assert results[0].id == results[4].id == active.id
    assert (results[3].id, results[3].token) == (results[1].id, results[1].token)
    assert sorted(dict(r.args)["n"] for r in backend.list_jobs()) == [1, 2, 3]


def test_a_duplicate_of_an_active_job_returns_the_existing_one(queue, backend):
    first = queue.enqueue("noop", {"n": 1})
    second = queue.enqueue("noop", {"n": 1})
    assert (second.id, second.created) == (first.id, False)


def test_unknown_job_names_the_known_ones(queue):
    with pytest.raises(UnknownJobError, match="jobs: exit_first, fail, noop"):
        queue.enqueue("nope", {})


def test_delay_sets_run_after_from_the_clock(backend, registry):
    queue = Queue(backend, registry, clock=lambda: 1000.0)
    result = queue.enqueue("noop", {"n": 1}, delay=60)
    assert backend.get(result.id).run_after == 1060.0


def test_enqueue_joins_the_callers_sqlite_transaction(registry, db_url, tmp_path):
    queue = connect(db_url, registry)
    conn = sqlite3.connect(tmp_path / "jobs.db")
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
    with conn:
        conn.execute("INSERT INTO orders VALUES (1)")
        kept = queue.enqueue("noop", {"n": 1}, connection=conn)
    conn.execute("INSERT INTO orders VALUES (2)")
    dropped = queue.enqueue("noop", {"n": 2}, connection=conn)
    conn.rollback()  # the caller's change failed
    conn.close()
    assert queue.get(kept.id) is not None
    assert queue.get(dropped.id) is None
    queue.close()


def test_the_priority_range_is_the_sheet_schemas() -> None:
    import json
    from importlib import resources

    from jobdef.policy.model import PRIORITIES

    schema = json.loads(
        resources.files("jobdef.sheets").joinpath("schema/jobdef-v1.schema.json").read_text()
    )
    bounds = schema["definitions"]["Job"]["properties"]["priority"]
    assert (PRIORITIES[0], PRIORITIES[-1]) == (bounds["minimum"], bounds["maximum"])


@pytest.mark.parametrize(
    ("priority", "shown"),
    [
        (1001, "priority 1001 is not"),
        (-1001, "priority -1001 is not"),
        (2**63, "priority of more than 18 digits is not"),
        pytest.param(10**5000, "priority of more than 18 digits is not", id="5000-digits"),
        (True, "priority of type bool is not"),
        (2.5, "priority 2.5 is not"),
        ("9", "priority of type str is not"),
    ],
)
def test_a_priority_out_of_the_sheets_range_stores_nothing(queue, backend, priority, shown):
    with pytest.raises(ArgsError) as caught:
        queue.enqueue("noop", {"n": 1}, priority=priority)
    message = str(caught.value)
    assert message.startswith(f"job 'noop': {shown} a whole number from -1000 to 1000.")
    assert "Nothing was stored" in message
    assert backend.list_jobs() == []


def test_the_ends_of_the_priority_range_are_stored(queue, backend):
    low = queue.enqueue("noop", {"n": 1}, priority=-1000)
    high = queue.enqueue("noop", {"n": 2}, priority=1000)
    assert (backend.get(low.id).priority, backend.get(high.id).priority) == (-1000, 1000)


@pytest.mark.parametrize(
    ("when", "shown"),
    [
        (253_402_300_800, "253402300800"),  # a second past 9999-12-31T23:59:59Z
        (float("inf"), "inf"),
        (float("nan"), "NaN"),
        (-1.0, "-1"),
        pytest.param(10**5000, "of more than 18 digits", id="5000-digits"),
        ("soon", "of type str"),
        (True, "of type bool"),
    ],
)
def test_a_run_after_no_date_can_show_stores_nothing(queue, backend, when, shown):
    with pytest.raises(ArgsError) as caught:
        queue.enqueue("noop", {"n": 1}, run_after=when)
    assert str(caught.value).startswith(
        f"job 'noop': run_after {shown} is not a time from 1970-01-01 to 9999-12-31"
    )
    assert backend.list_jobs() == []


def test_a_delay_past_the_last_date_stores_nothing_and_the_last_second_is_stored(backend, registry):
    queue = Queue(backend, registry, clock=lambda: 1000.0)
    with pytest.raises(ArgsError, match="Nothing was stored"):
        queue.enqueue("noop", {"n": 1}, delay=8.64e24)  # --delay 99999999999999999999d
    last = queue.enqueue("noop", {"n": 2}, run_after=253_402_300_799)
    assert backend.get(last.id).run_after == 253_402_300_799
    assert [job.id for job in backend.list_jobs()] == [last.id]
