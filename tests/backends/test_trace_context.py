"""The enqueuer's trace context: stored with the job it created, in the same
transaction, handed out by the claim; a duplicate merged into an active job keeps
that job's context."""

from __future__ import annotations

from jobdef.backends.records import ClaimOptions, NewJob

TRACED = '{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}'
OTHER = '{"traceparent":"00-11111111111111111111111111111111-2222222222222222-01"}'


def _job(**overrides):
    values = {"job": "mail", "args": {"id": 1}, "queue": "mail", "max_attempts": 3}
    return NewJob(**(values | overrides))


def test_a_traced_job_keeps_its_context_to_the_claim(backend):
    [plain, traced] = backend.enqueue([_job(), _job(args={"id": 2}, trace_context=TRACED)])
    [single] = backend.enqueue([_job(args={"id": 3}, trace_context=OTHER)])
    claimed = backend.claim(ClaimOptions(worker_id="w", lease_seconds=30, limit=3))
    contexts = {record.id: record.trace_context for record in claimed}
    assert contexts == {plain.id: None, traced.id: TRACED, single.id: OTHER}
    assert backend.get(traced.id).trace_context == TRACED


def test_a_merged_duplicate_keeps_the_first_enqueues_context(backend):
    [first] = backend.enqueue([_job(idempotency_key="k", trace_context=TRACED)])
    [again] = backend.enqueue([_job(idempotency_key="k", trace_context=OTHER)])
    assert (again.id, again.created) == (first.id, False)
    assert backend.get(first.id).trace_context == TRACED
