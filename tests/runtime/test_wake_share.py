"""Whose turn a wake-up is: the workers a notification of ``count`` jobs sends to claim."""

from __future__ import annotations

from jobdef.backends.records import Wakeup
from jobdef.backends.workers import WorkerInfo
from jobdef.runtime.wake_share import Turn, WakeShare

NOW = 1000.0
FIRST_AND_BACKUP = [Turn.BACKUP, Turn.FIRST]  # in the order sorted() gives by value


def _row(worker_id: str, queues: tuple[str, ...] | None = None, beat: float = NOW) -> WorkerInfo:
    return WorkerInfo(worker_id, "host", 1, queues, 1, 30.0, "0", 0.0, beat)


def _fleet(size: int) -> list[WakeShare]:
    rows = [_row(f"w{n:02d}") for n in range(size)]
    shares = [WakeShare(row.id, None) for row in rows]
    for share in shares:
        share.seen(rows, NOW)
    return shares


def _claimants(turns: list[Turn | None]) -> list[Turn]:
    return sorted((turn for turn in turns if turn is not None), key=lambda turn: turn.value)


def test_one_job_wakes_the_worker_whose_turn_it_is_and_one_backup_and_turns_go_round() -> None:
    fleet = _fleet(8)
    first_claimants = set()
    for job_id in range(100, 116):
        turns = [share.turn([Wakeup("default", 1, job_id)]) for share in fleet]
        assert _claimants(turns) == FIRST_AND_BACKUP
        assert turns.count(None) == 6
        first_claimants.add(turns.index(Turn.FIRST))
    assert first_claimants == set(range(8))  # every worker gets its turn


def test_a_batch_wakes_as_many_workers_as_jobs_and_a_big_one_wakes_all() -> None:
    fleet = _fleet(8)
    turns = [share.turn([Wakeup("default", 3, 40)]) for share in fleet]
    assert (turns.count(Turn.FIRST), turns.count(Turn.BACKUP)) == (3, 3)
    assert all(share.turn([Wakeup("default", 8, 40)]) is Turn.FIRST for share in fleet)


def test_a_wakeup_without_a_count_or_queue_wakes_everyone() -> None:
    fleet = _fleet(4)
    assert all(share.turn([Wakeup("default")]) is Turn.FIRST for share in fleet)  # a release
    assert all(share.turn([Wakeup()]) is Turn.FIRST for share in fleet)  # wake(), lost session


def test_only_the_workers_of_the_queue_take_turns_and_others_ignore_it() -> None:
    rows = [_row("a", ("mail",)), _row("b", ("mail",)), _row("c", ("reports",))]
    shares = {row.id: WakeShare(row.id, row.queues) for row in rows}
    for share in shares.values():
        share.seen(rows, NOW)
    assert shares["c"].turn([Wakeup("mail", 1, 7)]) is None
    assert _claimants([shares[w].turn([Wakeup("mail", 1, 7)]) for w in "ab"]) == FIRST_AND_BACKUP


def test_stale_rows_and_workers_that_poll_take_no_turn_and_a_worker_not_seen_yet_claims() -> None:
    polling = WorkerInfo("b2", "host", 1, None, 1, 30.0, "0", 0.0, NOW, wake_channel="")
    rows = [_row("a"), _row("b", beat=NOW - 60), polling, _row("c")]
    shares = [WakeShare(w, None) for w in ("a", "c")]
    for share in shares:
        share.seen(rows, NOW)
    # b is dead and b2 does not listen: a and c share every job between them.
    for job_id in range(10):
        turns = [share.turn([Wakeup("default", 1, job_id)]) for share in shares]
        assert _claimants(turns) == FIRST_AND_BACKUP
    newcomer = WakeShare("d", None)
    newcomer.seen(rows, NOW)
    assert newcomer.turn([Wakeup("default", 1, 3)]) is Turn.FIRST


def test_of_several_wakeups_the_first_turn_counts() -> None:
    fleet = _fleet(4)
    mine = next(n for n in range(4) if fleet[0].turn([Wakeup("q", 1, n)]) is Turn.FIRST)
    others = [Wakeup("q", 1, n) for n in range(4) if n != mine]
    assert fleet[0].turn([*others, Wakeup("q", 1, mine)]) is Turn.FIRST
