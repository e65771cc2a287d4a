"""Whose turn a wake-up is: the workers a notification of ``count`` jobs sends to claim."""

from __future__ import annotations

from jobdef.backends.records import Wakeup
from jobdef.backends.workers import WorkerInfo
from jobdef.runtime.wake_share import BACKUP_DELAY, WakeShare

NOW = 1000.0


def _row(worker_id: str, queues: tuple[str, ...] | None = None, beat: float = NOW) -> WorkerInfo:
    return WorkerInfo(worker_id, "host", 1, queues, 1, 30.0, "0", 0.0, beat)


def _fleet(size: int) -> list[WakeShare]:
    rows = [_row(f"w{n:02d}") for n in range(size)]
    shares = [WakeShare(row.id, None) for row in rows]
    for share in shares:
        share.seen(rows, NOW)
    return shares


def test_one_job_wakes_one_worker_at_once_and_one_backup_and_turns_go_round() -> None:
    fleet = _fleet(8)
    first_claimants = set()
    for job_id in range(100, 116):
        delays = [share.delay([Wakeup("default", 1, job_id)]) for share in fleet]
        assert delays.count(0.0) == 1
        assert delays.count(BACKUP_DELAY) == 1
        assert delays.count(None) == 6
        first_claimants.add(delays.index(0.0))
    assert first_claimants == set(range(8))  # every worker gets its turn


def test_a_batch_wakes_as_many_workers_as_jobs_and_a_big_one_wakes_all() -> None:
    fleet = _fleet(8)
    delays = [share.delay([Wakeup("default", 3, 40)]) for share in fleet]
    assert (delays.count(0.0), delays.count(BACKUP_DELAY)) == (3, 3)
    assert all(share.delay([Wakeup("default", 8, 40)]) == 0.0 for share in fleet)


def test_a_wakeup_without_a_count_or_queue_wakes_everyone() -> None:
    fleet = _fleet(4)
    assert all(share.delay([Wakeup("default")]) == 0.0 for share in fleet)  # a release
    assert all(share.delay([Wakeup()]) == 0.0 for share in fleet)  # wake(), a lost session


def test_only_the_workers_of_the_queue_take_turns_and_others_ignore_it() -> None:
    rows = [_row("a", ("mail",)), _row("b", ("mail",)), _row("c", ("reports",))]
    shares = {row.id: WakeShare(row.id, row.queues) for row in rows}
    for share in shares.values():
        share.seen(rows, NOW)
    assert shares["c"].delay([Wakeup("mail", 1, 7)]) is None
    mail = sorted(str(shares[w].delay([Wakeup("mail", 1, 7)])) for w in "ab")
    assert mail == sorted([str(0.0), str(BACKUP_DELAY)])


def test_stale_rows_take_no_turn_and_a_worker_not_seen_yet_claims() -> None:
    rows = [_row("a"), _row("b", beat=NOW - 60), _row("c")]
    shares = [WakeShare(w, None) for w in ("a", "c")]
    for share in shares:
        share.seen(rows, NOW)
    # b is dead: a and c share every job between them.
    for job_id in range(10):
        delays = [share.delay([Wakeup("default", 1, job_id)]) for share in shares]
        assert sorted(map(str, delays)) == sorted([str(0.0), str(BACKUP_DELAY)])
    newcomer = WakeShare("d", None)
    newcomer.seen(rows, NOW)
    assert newcomer.delay([Wakeup("default", 1, 3)]) == 0.0


def test_of_several_wakeups_the_soonest_turn_counts() -> None:
    fleet = _fleet(4)
    mine = next(job_id for job_id in range(4) if fleet[0].delay([Wakeup("q", 1, job_id)]) == 0.0)
    others = [Wakeup("q", 1, job_id) for job_id in range(4) if job_id != mine]
    assert fleet[0].delay([*others, Wakeup("q", 1, mine)]) == 0.0
