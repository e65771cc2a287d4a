"""The example sheets' behaviour, through the testing kit as a project's tests would use it.

Each test takes the ``jobdef_queue`` fixture of the installed plugin, loaded with
``jobdefs/``; the example handlers write under ``$JOBDEF_EXAMPLES_DIR``, a folder
of the test's own. Failures are steered the way the examples allow (their
environment variables) or by monkeypatching a handler, which the kit looks up
anew for every attempt.
"""

from __future__ import annotations

import itertools
import time
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from jobdef.errors import UsageError
from jobdef.examples import mail, points

EXAMPLES = Path(__file__).resolve().parents[2] / "jobdefs"
TOKYO = ZoneInfo("Asia/Tokyo")
START = datetime(2026, 12, 1, 10, 0, tzinfo=TOKYO)

pytestmark = [
    pytest.mark.jobdef(sheets=str(EXAMPLES), start=START),
    pytest.mark.usefixtures("examples_dir"),
]


def test_a_mail_is_sent_once_and_nothing_is_notified(jobdef_queue, examples_dir):
    job = jobdef_queue.enqueue("send_reservation_mail", {"reservation_id": 42})
    [attempt] = jobdef_queue.drain()
    assert (attempt.number, attempt.outcome) == (1, "done")
    jobdef_queue.assert_state(job.id, "done")
    assert (examples_dir / "outbox-mail" / "42_confirm-mail.eml").is_file()
    assert jobdef_queue.outbox == []


def test_after_five_connection_errors_the_mail_is_dead_and_ops_chat_got_one_message(
    jobdef_queue, monkeypatch
):
    monkeypatch.setenv("JOBDEF_DEMO_MAIL_FAILURES", "5")
    job = jobdef_queue.enqueue("send_reservation_mail", {"reservation_id": 42})
    ran = jobdef_queue.drain()
    assert [a.outcome for a in ran] == ["retry"] * 4 + ["dead"]
    jobdef_queue.assert_state(job.id, "dead")
    note = jobdef_queue.assert_notified("ops-chat", "dead", job="send_reservation_mail", count=1)
    assert note.payload["attempts_used"] == 5
    assert note.payload["key_args"] == {"reservation_id": 42}
    assert note.payload["error_type"] == "ConnectionError"
    # Exponential 10s x2 with full jitter: every start inside explain's window.
    attempts = jobdef_queue.assert_timeline(job.id)
    rows = jobdef_queue.explain_timeline("send_reservation_mail")
    assert len(attempts) == len(rows) == 5
    waits = [b.offset - a.offset for a, b in itertools.pairwise(attempts)]
    assert all(0 <= w <= row["wait_max"] for w, row in zip(waits, rows[1:], strict=True))


def test_a_mail_that_succeeds_on_the_third_attempt_notifies_nothing(jobdef_queue, monkeypatch):
    monkeypatch.setenv("JOBDEF_DEMO_MAIL_FAILURES", "2")
    job = jobdef_queue.enqueue("send_reservation_mail", {"reservation_id": 7})
    assert [a.outcome for a in jobdef_queue.drain()] == ["retry", "retry", "done"]
    jobdef_queue.assert_state(job.id, "done")
    jobdef_queue.assert_not_notified()


def test_the_list_backoff_of_the_nightly_report_starts_exactly_where_explain_says(
    jobdef_queue, monkeypatch
):
    def refused(ctx):
        raise ConnectionError("the warehouse refused the connection")

    monkeypatch.setattr("jobdef.examples.reports.nightly_report", refused)
    job = jobdef_queue.enqueue("nightly_report", {})
    jobdef_queue.drain()
    rows = jobdef_queue.explain_timeline("nightly_report")
    # No jitter and handlers that fail at once: each start is explain's earliest start.
    assert [a.offset for a in jobdef_queue.attempts(job.id)] == [
        row["earliest_start"] for row in rows
    ]
    assert [row["earliest_start"] for row in rows] == [0.0, 60.0, 360.0]
    jobdef_queue.assert_notified("ops-chat", "dead", job="nightly_report", count=1)


def test_timeouts_are_enforced_and_take_the_sheets_timeout_of_virtual_time(
    jobdef_queue, monkeypatch
):
    # 30s of sheet timeout is 60 ms of real time; the virtual clock still moves 30s.
    jobdef_queue.timeout_scale = 0.002

    def hangs(ctx, reservation_id):
        while True:
            time.sleep(0.005)

    monkeypatch.setattr(mail, "send_reservation_mail", hangs)
    job = jobdef_queue.enqueue("send_reservation_mail", {"reservation_id": 3})
    ran = jobdef_queue.drain()
    assert [a.outcome for a in ran] == ["timeout"] * 5
    assert {a.error.type for a in ran} == {"jobdef.runtime.errors.AttemptTimedOut"}
    assert "timeout of 30s" in ran[0].error.message
    attempts = jobdef_queue.assert_timeline(job.id)
    for before, after in itertools.pairwise(attempts):
        assert after.started_at - before.started_at >= 30.0  # ran to the timeout, then waited
    jobdef_queue.assert_notified("ops-chat", "dead", job="send_reservation_mail", count=1)


def test_a_timeout_not_listed_as_retryable_is_fatal(jobdef_queue, monkeypatch):
    jobdef_queue.timeout_scale = 0.002  # 20s: 40 ms

    def hangs(ctx, image_id, width):
        while True:
            time.sleep(0.005)

    monkeypatch.setattr("jobdef.examples.images.resize_image", hangs)
    job = jobdef_queue.enqueue("resize_image", {"image_id": "cat.pgm", "width": 64})
    assert [a.outcome for a in jobdef_queue.drain()] == ["timeout"]
    record = jobdef_queue.assert_state(job.id, "dead")
    assert "errors.default is fatal" in record.last_error.message
    # The sheet notifies dead only, not each timeout.
    jobdef_queue.assert_notified("ops-log", "dead", job="resize_image", count=1)
    assert jobdef_queue.notifications(event="timeout") == []


@pytest.mark.parametrize(
    ("reservation_id", "error"),
    [(13, "jobdef.examples.errors.Cancelled"), (404, "jobdef.examples.errors.InvalidAddress")],
)
def test_fatal_errors_bury_the_mail_at_once(jobdef_queue, reservation_id, error):
    job = jobdef_queue.enqueue("send_reservation_mail", {"reservation_id": reservation_id})
    [attempt] = jobdef_queue.drain()
    assert (attempt.outcome, attempt.error.type) == ("dead", error)
    record = jobdef_queue.assert_state(job.id, "dead")
    assert "is listed in errors.fatal" in record.last_error.message
    jobdef_queue.assert_notified("ops-chat", "dead", job="send_reservation_mail", count=1)


def test_an_image_that_is_not_one_is_fatal_and_logged_to_ops_log(jobdef_queue, examples_dir):
    (examples_dir / "uploads").mkdir(parents=True)
    (examples_dir / "uploads" / "cat.pgm").write_bytes(b"GIF89a not a pgm")
    job = jobdef_queue.enqueue("resize_image", {"image_id": "cat.pgm", "width": 64})
    [attempt] = jobdef_queue.drain()
    assert attempt.error.type == "jobdef.examples.errors.BadImage"
    jobdef_queue.assert_state(job.id, "dead")
    jobdef_queue.assert_notified("ops-log", "dead", job="resize_image", count=1)
    jobdef_queue.assert_not_notified("ops-chat")


def test_points_are_awarded_once_when_a_run_is_repeated_after_it_committed(
    jobdef_queue, monkeypatch
):
    """The first attempt commits the award and then fails (as if its worker died before
    recording it); the retry finds the key recorded by first_run and changes nothing."""
    original = points.award_member_points

    def commits_then_fails(ctx, **args):
        original(ctx, **args)
        if ctx.attempt == 1:
            raise ConnectionError("the connection dropped after the commit")

    monkeypatch.setattr(points, "award_member_points", commits_then_fails)
    args = {"order_id": 501, "member_id": 8, "points": 120}
    job = jobdef_queue.enqueue("award_member_points", args)
    assert [a.outcome for a in jobdef_queue.drain()] == ["retry", "done"]
    jobdef_queue.assert_state(job.id, "done")
    assert points.balance(8) == 120


def test_paying_one_order_twice_stores_one_award(jobdef_queue):
    args = {"order_id": 77, "member_id": 8, "points": 50}
    first = jobdef_queue.enqueue("award_member_points", args)
    second = jobdef_queue.enqueue("award_member_points", {**args, "points": 50})
    assert (first.created, second.created, second.id) == (True, False, first.id)
    jobdef_queue.assert_enqueued("award_member_points", {"order_id": 77}, count=1)
    jobdef_queue.drain()
    # Within the sheet's 7d dedupe window a finished award still absorbs a repeat.
    jobdef_queue.advance("6d")
    assert not jobdef_queue.enqueue("award_member_points", args).created
    jobdef_queue.drain()
    assert points.balance(8) == 50


def test_a_closed_member_is_fatal_and_ops_chat_hears_of_it(jobdef_queue):
    job = jobdef_queue.enqueue("award_member_points", {"order_id": 5, "member_id": 9, "points": 1})
    jobdef_queue.drain()
    jobdef_queue.assert_state(job.id, "dead")
    jobdef_queue.assert_notified("ops-chat", "dead", job="award_member_points", count=1)


def test_an_export_reports_progress_and_notifies_ops_log_when_done(jobdef_queue, examples_dir):
    export_id = "0f8fad5b-d9cb-469f-a165-70867728950e"
    job = jobdef_queue.enqueue("export_csv", {"export_id": export_id, "month": "2026-11"})
    jobdef_queue.drain()
    record = jobdef_queue.assert_state(job.id, "done")
    assert record.progress == {"days_done": 30, "days": 30}
    assert (examples_dir / "exports" / f"{export_id}.csv").is_file()
    note = jobdef_queue.assert_notified("ops-log", "done", job="export_csv", count=1)
    assert note.payload["key_args"] == {"export_id": export_id}


def test_a_batch_slot_runs_for_its_own_day(jobdef_queue, examples_dir):
    slot = datetime(2026, 12, 2, 3, 0, tzinfo=TOKYO)
    record = jobdef_queue.run_batch_slot("nightly_report", at=slot)
    assert record.state == "done"
    assert record.slot == slot.timestamp()
    assert jobdef_queue.now == slot.timestamp()  # the clock was moved to the slot
    report = (examples_dir / "reports" / "2026-12-01.txt").read_text("utf-8")
    assert report.startswith("2026-12-01: 0 exports")
    # The same slot is stored once, ever: running it again adds no job.
    again = jobdef_queue.run_batch_slot("nightly_report", at="2026-12-02T03:00")
    assert again.id == record.id
    assert len(jobdef_queue.jobs("nightly_report")) == 1


def test_a_moment_that_is_not_a_slot_names_the_nearest_slots(jobdef_queue):
    with pytest.raises(UsageError) as caught:
        jobdef_queue.run_batch_slot("nightly_report", at="2026-12-02T04:00")
    assert str(caught.value) == (
        "2026-12-02T04:00:00+09:00 is not a slot of nightly_report's schedule '0 3 * * *' "
        "(Asia/Tokyo); the nearest slots are 2026-12-02T03:00:00+09:00 and "
        "2026-12-03T03:00:00+09:00"
    )
    with pytest.raises(UsageError, match="not a batch job"):
        jobdef_queue.run_batch_slot("export_csv", at=START)


def test_drain_until_runs_only_what_is_due_by_then(jobdef_queue, monkeypatch):
    later = jobdef_queue.enqueue("send_reservation_mail", {"reservation_id": 1}, delay="2h")
    now = jobdef_queue.enqueue("send_reservation_mail", {"reservation_id": 2})
    assert [a.job_id for a in jobdef_queue.drain(until="1h")] == [now.id]
    assert jobdef_queue.now == START.timestamp() + 3600
    assert jobdef_queue.get(later.id).state == "queued"
    assert [a.job_id for a in jobdef_queue.drain()] == [later.id]
    assert jobdef_queue.attempts(later.id)[0].offset == 7200.0


def test_a_paused_queue_is_not_drained(jobdef_queue):
    job = jobdef_queue.enqueue("send_reservation_mail", {"reservation_id": 1})
    jobdef_queue.backend.set_paused("mail", True)
    assert jobdef_queue.drain() == []
    assert jobdef_queue.get(job.id).state == "queued"
