"""Plan vs actual on its own: each divergence the job page flags, and the schedules page."""

from __future__ import annotations

import json
import time

from dashboard_steps import SHEETS

from jobdef.backends import open_backend
from jobdef.backends.records import AttemptRecord, ErrorInfo, JobRecord, NewJob
from jobdef.dashboard import views
from jobdef.dashboard.plan import place
from jobdef.dashboard.store import Store
from jobdef.policy.leases import DEFAULT_LEASE, RECLAIM_INTERVAL
from jobdef.sheets.pipeline import load_registry

EXAMPLES = SHEETS.parent.parent.parent / "jobdefs"
T0 = 1_700_000_000.0


def job(attempt: int) -> JobRecord:
    return JobRecord(
        id=1,
        job="ship_order",
        queue="default",
        priority=0,
        args={"order_id": 1},
        state="dead",
        attempt=attempt,
        max_attempts=3,
        idempotency_key=None,
        run_after=T0,
        created_at=T0,
        updated_at=T0,
    )


def attempt(n: int, start: float, took: float, outcome: str, error: str | None = None):
    return AttemptRecord(
        job_id=1,
        attempt=n,
        worker_id="w",
        started_at=T0 + start,
        finished_at=T0 + start + took,
        outcome=outcome,
        error=None if error is None else ErrorInfo(error, "boom"),
    )


def test_each_kind_of_divergence_is_flagged_and_a_kept_plan_is_not():
    policy = load_registry([SHEETS]).jobs["ship_order"]  # 3 attempts, 1 s apart, 5 s timeout
    kept = place(
        job(3),
        [
            attempt(1, 0.1, 0.2, "retry", "ConnectionError"),
            attempt(2, 1.5, 0.2, "retry", "ConnectionError"),
            attempt(3, 3.0, 0.2, "dead", "ConnectionError"),
        ],
        policy,
    )
    assert kept.divergences == []
    assert [a.window for a in kept.attempts] == [(0.0, 0.0), (1.0, 6.0), (2.0, 12.0)]

    diverged = place(
        job(4),
        [
            attempt(1, 0.1, 0.2, "retry", "ValueError"),  # fatal in the sheet, yet retried
            attempt(2, 0.3, 12.0, "retry", "ConnectionError"),  # past its timeout
            attempt(3, 0.6, 0.2, "retry", "ConnectionError"),  # before its window (2 s ..)
            attempt(4, 1.0, 0.2, "dead", "ConnectionError"),  # one more than max_attempts
        ],
        policy,
    )
    assert diverged.divergences == [
        "run 1 attempt 1: ValueError is fatal in the sheet but was retried",
        "run 1 attempt 2: ran 12.0s, past its timeout of 5.0s",
        "run 1 attempt 3: started 1.4s before its earliest planned start",
        "run 1 attempt 4: more attempts than max_attempts (3)",
    ]
    late = place(job(2), [attempt(1, 0.0, 0.1, "retry"), attempt(2, 200.0, 0.1, "done")], policy)
    assert late.divergences == ["run 1 attempt 2: started 3.2m after its latest planned start"]


def test_an_attempt_after_a_reclaim_has_the_lease_and_a_reclaim_more_and_others_do_not():
    policy = load_registry([SHEETS]).jobs["ship_order"]  # 3 attempts, 1 s apart, 5 s timeout
    slack = DEFAULT_LEASE + RECLAIM_INTERVAL
    # Attempt 1's worker died: the job came back once its lease had run out and a
    # reclaimer found it, 37 s after the attempt began. Attempt 2 starts 60 s in: late
    # for a failure (its latest start is 6 s), within the reclaim bound (6 s + 32 s).
    reclaimed = place(
        job(3),
        [
            attempt(1, 0.0, 5.0 + slack, "reclaimed", "jobdef.runtime.errors.LeaseExpired"),
            attempt(2, 60.0, 0.2, "retry", "ConnectionError"),
            attempt(3, 62.0, 0.2, "done"),
        ],
        policy,
    )
    assert reclaimed.divergences == []
    assert [a.window for a in reclaimed.attempts] == [
        (0.0, 0.0),
        (1.0, 6.0 + slack),
        (2.0, 12.0 + slack),
    ]
    assert [r["latest_start_lost"] for r in reclaimed.rows] == [0.0, 6.0 + slack, 12.0 + 2 * slack]

    # The same starts after ordinary failures are late, and so is a run that took as
    # long as a reclaim without being one.
    failed = place(
        job(3),
        [
            attempt(1, 0.0, 5.0 + slack, "retry", "ConnectionError"),
            attempt(2, 60.0, 0.2, "retry", "ConnectionError"),
            attempt(3, 62.0, 0.2, "done"),
        ],
        policy,
    )
    assert failed.divergences == [
        "run 1 attempt 1: ran 37.0s, past its timeout of 5.0s",
        "run 1 attempt 2: started 54.0s after its latest planned start",
        "run 1 attempt 3: started 50.0s after its latest planned start",
    ]

    # A reclaim allows for one reclaim, not more: far past that, the start is flagged.
    stuck = place(
        job(2),
        [
            attempt(1, 0.0, 5.0 + slack, "reclaimed", "jobdef.runtime.errors.LeaseExpired"),
            attempt(2, 200.0, 0.2, "done"),
        ],
        policy,
    )
    assert stuck.divergences == ["run 1 attempt 2: started 2.7m after its latest planned start"]

    # A requeue starts a new run: the reclaim of the run before (whose job went dead
    # from it, as `on_reclaim: fail` does) moves nothing in it.
    requeued = place(
        job(2),
        [
            attempt(1, 0.0, 5.0 + slack, "reclaimed", "jobdef.runtime.errors.LeaseExpired"),
            attempt(1, 5000.0, 0.1, "retry", "ConnectionError"),
            attempt(2, 5060.0, 0.1, "done"),
        ],
        policy,
    )
    assert requeued.attempts[2].window == (1.0, 6.0)
    assert requeued.divergences == ["run 2 attempt 2: started 54.0s after its latest planned start"]


def test_a_requeue_starts_a_new_run_timed_from_its_first_start():
    policy = load_registry([SHEETS]).jobs["ship_order"]
    plan = place(
        job(1),
        [
            attempt(1, 0.0, 0.1, "dead", "ConnectionError"),
            attempt(1, 5000.0, 0.1, "done"),  # requeued more than an hour later
        ],
        policy,
    )
    assert [(a.run, a.attempt, a.offset) for a in plan.attempts] == [(1, 1, 0.0), (2, 1, 0.0)]
    assert plan.divergences == []


def test_a_job_without_a_sheet_has_attempts_but_no_plan():
    plan = place(job(1), [attempt(1, 0.0, 0.1, "done")], None)
    assert plan.rows == []
    assert plan.divergences == []
    assert plan.attempts[0].window is None


def test_schedules_show_the_cron_line_the_next_runs_and_the_missed_slots(tmp_path):
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    registry = load_registry([EXAMPLES])
    backend = open_backend(url)
    try:
        # A 03:00 Tokyo slot (18:00 UTC the day before) three or four days ago ran;
        # at least two came due since, and none was stored: missed.
        day = 86400
        slot = (time.time() // day) * day - 6 * 3600 - 3 * day
        backend.enqueue([NewJob("nightly_report", {}, "batch", slot=slot)])
    finally:
        backend.close()
    store = Store(url)
    try:
        [nightly] = views.schedules(store, registry)["schedules"]
    finally:
        store.close()
    assert nightly["schedule"] == "0 3 * * *"
    assert nightly["timezone"] == "Asia/Tokyo"
    assert len(nightly["next_runs"]) == 5
    assert [s["state"] for s in nightly["last_slots"]] == ["queued"]
    assert len(nightly["missed"]) >= 2
    assert all(m.endswith("T03:00+09:00") for m in nightly["missed"])


def test_a_reclaim_allows_for_the_lease_the_dashboard_is_told():
    """Workers on ``--lease 2m``: a lost attempt keeps its job up to two minutes past its
    timeout. With the default lease that reads as a divergence; told the lease (``jobdef
    dashboard --lease 2m``), the plan allows for it, as ``jobdef explain --lease`` does."""
    policy = load_registry([SHEETS]).jobs["ship_order"]  # 3 attempts, 1 s apart, 5 s timeout
    lease = 120.0
    history = [
        attempt(1, 0.0, 5.0 + lease + RECLAIM_INTERVAL, "reclaimed", "LeaseExpired"),
        attempt(2, 130.0, 0.2, "done"),
    ]
    default = place(job(2), history, policy)
    assert default.divergences == [
        "run 1 attempt 1: ran 2.1m, past its timeout of 5.0s",
        "run 1 attempt 2: started 1.5m after its latest planned start",
    ]
    told = place(job(2), history, policy, lease=lease)
    assert told.divergences == []
    assert told.attempts[1].window == (1.0, 6.0 + lease + RECLAIM_INTERVAL)
    assert [r["latest_start_lost"] for r in told.rows][:2] == [0.0, 6.0 + lease + RECLAIM_INTERVAL]


def test_the_job_page_of_a_dashboard_told_the_lease_plans_with_it(tmp_path, serve):
    from dashboard_steps import Client

    from jobdef.dashboard import create_app

    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    backend = open_backend(url)
    try:
        [stored] = backend.enqueue(
            [NewJob(job="ship_order", args={"order_id": 9}, queue="default", max_attempts=3)]
        )
    finally:
        backend.close()
    lease = 120.0
    for told, bound in ((None, 6.0 + DEFAULT_LEASE), (lease, 6.0 + lease)):
        app = create_app(url, SHEETS) if told is None else create_app(url, SHEETS, lease=told)
        client = Client(serve(app).url)
        status, _, body = client.request(f"/api/jobs/{stored.id}")
        assert status == 200
        plan = json.loads(body)["plan"]
        assert plan["lease"] == (told or DEFAULT_LEASE)
        assert [row["latest_start_lost"] for row in plan["rows"]][1] == bound + RECLAIM_INTERVAL
        status, _, html = client.request(f"/jobs/{stored.id}")
        assert status == 200
        want = "2m" if told else "30s"
        assert f'<span id="plan-lease">{want}</span>' in html


def test_a_lease_no_worker_can_hold_is_refused_when_the_app_is_made(tmp_path):
    """Not at the first job page, as a server error: retry_timeline refuses it there."""
    import pytest

    from jobdef.dashboard import create_app
    from jobdef.errors import UsageError

    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    open_backend(url).close()
    for lease in (0, -5.0, 0.5, float("nan"), float("inf"), True, "30"):
        with pytest.raises(UsageError, match="the workers' lease is seconds, 1 or more"):
            create_app(url, SHEETS, lease=lease)
