"""A job's result: what its handler returned, stored by the fenced completion, on both engines.

The completion takes each handler's return value as JSON text (checked in the worker's
child); a job without one gets NULL. The result lives in the row: a requeue clears it,
prune removes it with the row, and ``jobdef jobs show`` prints it escaped and cut.
"""

from __future__ import annotations

import json

import pytest

from jobdef.backends.protocol import complete_and_claim
from jobdef.backends.records import ClaimOptions, NewJob, RetentionRule
from jobdef.cli import main
from jobdef.cli.jobs_cmd import RESULT_WIDTH


def _enqueue(backend, n=1):
    jobs = [NewJob(job="j", args={"n": i}, queue="q", max_attempts=2) for i in range(n)]
    return [r.id for r in backend.enqueue(jobs)]


def test_complete_stores_each_result_and_null_for_a_job_without_one(backend, worker):
    first, second, third = _enqueue(backend, 3)
    a, b, c = worker.claim(limit=3)
    value = {"rows": [1, 2], "name": "é", "nested": {"ok": True}, "none": None}
    results = {a.id: json.dumps(value), c.id: json.dumps("sent")}
    assert backend.complete([a.lease, b.lease], None, results) == [True, True]
    assert backend.get(a.id).result == value
    assert backend.get(b.id).result is None
    # In a turn's completion with its claim too (one statement on PostgreSQL).
    more = _enqueue(backend)
    options = ClaimOptions(worker_id=worker.worker_id, lease_seconds=30)
    accepted, claimed = complete_and_claim(backend, [c.lease], None, options, results)
    assert accepted == [True]
    assert [r.id for r in claimed] == more
    assert backend.get(c.id).result == "sent"
    assert backend.get(more[0]).result is None
    assert {first, second, third} == {a.id, b.id, c.id}


def test_a_refused_completion_stores_no_result(backend, worker, other_worker, clock):
    [job_id] = _enqueue(backend)
    held = worker.claim_one()
    clock.advance(worker.lease + 1)
    [expired] = backend.expired_leases()
    assert backend.retry(
        expired.lease, error=_error(), run_after=clock(), delay=0, outcome="reclaimed"
    )
    taken = other_worker.claim_one()
    assert backend.complete([held.lease], None, {job_id: '"late"'}) == [False]
    assert backend.get(job_id).result is None
    assert backend.complete([taken.lease], None, {job_id: '"mine"'}) == [True]
    assert backend.get(job_id).result == "mine"


def test_a_requeue_clears_the_result_and_prune_removes_it_with_the_row(backend, worker, clock):
    [job_id] = _enqueue(backend)
    record = worker.claim_one()
    backend.complete([record.lease], None, {job_id: '{"v": 1}'})
    assert backend.requeue([job_id], state="done") == 1
    assert backend.get(job_id).result is None
    again = worker.claim_one()
    assert again.result is None
    backend.complete([again.lease], None, {job_id: '{"v": 2}'})
    assert backend.get(job_id).result == {"v": 2}
    clock.advance(100)
    assert backend.prune([RetentionRule("j", done=10, dead=None)]) == 1
    assert backend.get(job_id) is None


def test_jobs_show_prints_the_result_escaped_and_cut(backend, store, worker, capsys):
    short, long = _enqueue(backend, 2)
    a, b = worker.claim(limit=2)
    hostile = {"text": "\x1b[31mred\u202e\x9b"}
    big = {"text": "x" * 5000}
    results = {a.id: json.dumps(hostile), b.id: json.dumps(big)}
    backend.complete([a.lease, b.lease], None, results)

    assert main(["jobs", "show", str(short), "--db", store.url]) == 0
    out = capsys.readouterr().out
    assert not {"\x1b", "\u202e", "\x9b"} & set(out)
    [line] = [x for x in out.splitlines() if x.startswith("  result ")]
    # JSON escapes the C0 controls itself; the rest is escaped as args are.
    assert line == '  result       {"text":"\\u001b[31mred\\u202e\\x9b"}'

    assert main(["jobs", "show", str(long), "--db", store.url]) == 0
    [line] = [x for x in capsys.readouterr().out.splitlines() if x.startswith("  result ")]
    text = json.dumps(big, separators=(",", ":"))
    shown = line.removeprefix("  result       ")
    assert shown.startswith(text[: RESULT_WIDTH - 1] + "…")
    assert shown.endswith(f"(cut; --format json shows all {len(text)} characters)")

    assert main(["jobs", "show", str(long), "--db", store.url, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["job"]["result"] == big


@pytest.mark.parametrize("state", ["queued", "running"])
def test_jobs_show_prints_no_result_for_a_job_not_done(backend, store, worker, capsys, state):
    [job_id] = _enqueue(backend)
    if state == "running":
        worker.claim_one()
    assert main(["jobs", "show", str(job_id), "--db", store.url]) == 0
    assert "  result " not in capsys.readouterr().out


def _error():
    from jobdef.backends.records import ErrorInfo

    return ErrorInfo("TimeoutError", "lease expired")
