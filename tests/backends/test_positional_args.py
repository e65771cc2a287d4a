"""How many args a job's enqueuer passed by position: stored with the job it created,
in the same transaction, read back by get and the claim; None for a job that says
nothing; a duplicate merged into an active job keeps that job's count."""

from __future__ import annotations

from jobdef.backends.records import ClaimOptions, NewJob


def _job(**overrides):
    values = {"job": "mail", "args": {"id": 1, "to": "a"}, "queue": "mail", "max_attempts": 3}
    return NewJob(**(values | overrides))


def test_the_count_is_kept_to_the_claim(backend):
    [named, two] = backend.enqueue([_job(), _job(args={"id": 2, "to": "b"}, positional_args=2)])
    [single] = backend.enqueue([_job(args={"id": 3, "to": "c"}, positional_args=1)])
    assert backend.get(two.id).positional_args == 2
    assert backend.get(named.id).positional_args is None
    claimed = backend.claim(ClaimOptions(worker_id="w", lease_seconds=30, limit=3))
    counts = {record.id: record.positional_args for record in claimed}
    assert counts == {named.id: None, two.id: 2, single.id: 1}


def test_a_merged_duplicate_keeps_the_first_enqueues_count(backend):
    [first] = backend.enqueue([_job(idempotency_key="k", positional_args=2)])
    [again] = backend.enqueue([_job(idempotency_key="k")])
    assert (again.id, again.created) == (first.id, False)
    assert backend.get(first.id).positional_args == 2
