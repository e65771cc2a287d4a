"""Receipts: every enqueue hands back a token stored with its job, unique and unguessable;
a merged enqueue hands back the receipt of the job it merged into; a token finds its job."""

from __future__ import annotations

import re

import pytest

from jobdef.backends.records import NewJob, Receipt, RetentionRule
from jobdef.backends.rows import receipt_token, receipt_tokens

TOKEN = re.compile(r"[0-9a-f]{12}[A-Za-z0-9_-]{23}")  # its time, then 136 random bits


def _job(**overrides):
    values = {"job": "mail", "args": {"id": 1}, "queue": "mail", "max_attempts": 3}
    return NewJob(**(values | overrides))


def _stored_token(store, job_id: int) -> str | None:
    [(token,)] = store.raw("SELECT receipt FROM {prefix}jobs WHERE id = {p}", job_id)
    return token


def test_every_enqueue_returns_a_receipt_whose_token_is_stored_with_its_job(backend, store):
    [single] = backend.enqueue([_job()])  # one plain job: PostgreSQL's one-statement path
    bulk = backend.enqueue([_job(args={"id": n}) for n in range(50)])
    keyed = backend.enqueue([_job(idempotency_key="k")])
    for receipt in [single, *bulk, *keyed]:
        assert isinstance(receipt, Receipt)
        assert receipt.created
        assert TOKEN.fullmatch(receipt.token), receipt.token
        assert str(receipt) == receipt.token
        assert receipt.id == receipt.job_id
        assert _stored_token(store, receipt.job_id) == receipt.token
        assert backend.get(receipt.job_id).receipt == receipt.token
    tokens = [r.token for r in [single, *bulk, *keyed]]
    assert len(set(tokens)) == len(tokens)


def test_no_token_starts_with_a_dash_which_a_command_line_takes_for_an_option():
    """`jobdef wait -x...` would be an unknown option: one token in 64 of a plain
    token_urlsafe starts so, and none of these 10,000 may. Tokens made one after
    another start alike, so they sit together in the index."""
    tokens = [receipt_token() for _ in range(10_000)]
    assert all(TOKEN.fullmatch(token) for token in tokens)
    assert len(set(tokens)) == len(tokens)
    assert [t[:12] for t in tokens] == sorted(t[:12] for t in tokens)


def test_the_tokens_of_a_batch_are_drawn_alike_and_all_differ():
    """A batch's tokens (one draw of random bytes for all) look as the tokens drawn one
    at a time do, start with the same time, and none repeats."""
    tokens = receipt_tokens(10_000)
    assert all(TOKEN.fullmatch(token) for token in tokens)
    assert {len(token) for token in tokens} == {len(receipt_token())}
    assert len({token[12:] for token in tokens}) == len(tokens)
    assert [t[:12] for t in tokens] == sorted(t[:12] for t in tokens)
    assert receipt_tokens(0) == []


def test_a_token_finds_its_job_in_every_state_it_passes_through(backend, worker):
    """Queued, running, done (PostgreSQL finds a running job through the index of
    running jobs and the others through the receipts', migration 0017); another
    job running meanwhile is not found by this token."""
    [receipt, other] = backend.enqueue([_job(), _job(args={"id": 2})])

    def found_state() -> str | None:
        record = backend.find_receipt(receipt.token)
        assert record is None or record.id == receipt.job_id
        return None if record is None else record.state

    assert found_state() == "queued"
    [first, second] = worker.claim(2)
    assert found_state() == "running"
    assert backend.find_receipt(other.token).state == "running"
    backend.complete([first.lease, second.lease])
    assert found_state() == "done"
    wrong = receipt.token[:-1] + ("A" if receipt.token[-1] != "A" else "B")
    assert backend.find_receipt(wrong) is None


def test_a_receipt_shows_only_the_start_of_its_token(backend):
    [receipt] = backend.enqueue([_job()])
    assert receipt.token not in repr(receipt)
    assert repr(receipt) == (
        f"Receipt(job_id={receipt.job_id}, token='{receipt.token[:4]}...', created=True)"
    )


def test_a_duplicate_of_an_active_job_returns_that_jobs_receipt(backend):
    [first] = backend.enqueue([_job(idempotency_key="k")])
    [again] = backend.enqueue([_job(idempotency_key="k", args={"id": 2})])
    inside = backend.enqueue([_job(idempotency_key="j"), _job(idempotency_key="j")])
    assert again == Receipt(first.job_id, first.token, created=False)
    assert inside[1] == Receipt(inside[0].job_id, inside[0].token, created=False)


def test_a_done_job_inside_its_dedupe_window_returns_its_receipt(backend, worker, clock):
    [first] = backend.enqueue([_job(idempotency_key="k", dedupe_window=60)])
    backend.complete([worker.claim_one().lease])
    clock.advance(30)
    [again] = backend.enqueue([_job(idempotency_key="k", dedupe_window=60)])
    assert again == Receipt(first.job_id, first.token, created=False)


def test_a_job_stored_before_receipts_gets_one_when_an_enqueue_merges_into_it(backend, store):
    """A row of an older release has no token: the merge draws one and stores it, and
    the next merge returns that same one."""
    [old] = backend.enqueue([_job(idempotency_key="k")])
    conn = store.connect()
    try:
        store.raw(
            "UPDATE {prefix}jobs SET receipt = NULL WHERE id = {p}", old.job_id, connection=conn
        )
        conn.commit()
    finally:
        conn.close()
    [merged] = backend.enqueue([_job(idempotency_key="k")])
    [again] = backend.enqueue([_job(idempotency_key="k")])
    assert (merged.job_id, merged.created) == (old.job_id, False)
    assert TOKEN.fullmatch(merged.token)
    assert merged.token != old.token
    assert _stored_token(store, old.job_id) == merged.token
    assert again == merged


def test_a_cron_slot_taken_returns_its_jobs_receipt_and_an_empty_one_once_pruned(
    backend, worker, clock
):
    [first] = backend.enqueue([_job(slot=3600.0)])
    [again] = backend.enqueue([_job(slot=3600.0)])
    assert again == Receipt(first.job_id, first.token, created=False)
    backend.complete([worker.claim_one().lease])
    clock.advance(10)
    assert backend.prune([RetentionRule("mail", done=1, dead=None)]) == 1
    [after_prune] = backend.enqueue([_job(slot=3600.0)])
    assert after_prune == Receipt(first.job_id, "", created=False)


def test_an_enqueue_on_the_callers_connection_returns_its_receipt(backend, store):
    conn = store.connect()
    try:
        [receipt] = backend.enqueue([_job()], connection=conn)
        conn.commit()
    finally:
        conn.close()
    assert TOKEN.fullmatch(receipt.token)
    assert backend.find_receipt(receipt.token).id == receipt.job_id


def test_a_token_finds_its_job_and_nothing_else_finds_one(backend):
    [receipt] = backend.enqueue([_job()])
    [other] = backend.enqueue([_job(args={"id": 2})])
    assert backend.find_receipt(receipt.token).id == receipt.job_id
    assert backend.find_receipt(other.token).id == other.job_id
    for wrong in (
        receipt.token[:-1] + ("A" if receipt.token[-1] != "A" else "B"),  # one character off
        receipt.token.upper() if receipt.token.upper() != receipt.token else "x" * 23,
        str(receipt.job_id),  # an id is not a token
        "",
        "' OR 1=1 --",
        "é" * 23,
        receipt.token + "\x00",
    ):
        assert backend.find_receipt(wrong) is None, wrong


def test_two_jobs_cannot_hold_one_token(backend, store):
    """The unique index of receipts: a token names one job at most."""
    [first] = backend.enqueue([_job()])
    [second] = backend.enqueue([_job(args={"id": 2})])
    conn = store.connect()
    try:
        with pytest.raises(Exception, match=r"(?i)unique|duplicate"):
            store.raw(
                "UPDATE {prefix}jobs SET receipt = {p} WHERE id = {p}",
                first.token,
                second.job_id,
                connection=conn,
            )
    finally:
        conn.close()


def test_ended_jobs_returns_the_ended_ones_and_the_gone_ids(backend, worker, clock):
    done, running, queued, cancelled = (
        backend.enqueue([_job(args={"id": n})])[0] for n in range(4)
    )
    backend.complete([worker.claim_one().lease])
    worker.claim_one()
    backend.cancel(cancelled.job_id)
    ids = [done.job_id, running.job_id, queued.job_id, cancelled.job_id, 999_999]
    for read in (backend.ended_jobs, backend.watch_jobs):
        ended, gone = read(ids)
        assert sorted((r.id, r.state) for r in ended) == [
            (done.job_id, "done"),
            (cancelled.job_id, "cancelled"),
        ]
        assert gone == [999_999]
