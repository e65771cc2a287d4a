"""A failing assertion of the kit says what was expected, what is there instead, what to do."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from jobdef.errors import UsageError

EXAMPLES = Path(__file__).resolve().parents[2] / "jobdefs"
START = datetime(2026, 12, 1, 1, 0, tzinfo=UTC)

pytestmark = [
    pytest.mark.jobdef(sheets=str(EXAMPLES), start=START),
    pytest.mark.usefixtures("examples_dir"),
]


def failure(call, *args, **kwargs) -> str:
    with pytest.raises(AssertionError) as caught:
        call(*args, **kwargs)
    return str(caught.value)


def test_nothing_enqueued_says_so_and_where_to_look(jobdef_queue):
    text = failure(jobdef_queue.assert_enqueued, "send_reservation_mail", {"reservation_id": 1})
    assert text == (
        "expected job 'send_reservation_mail' with args {\"reservation_id\": 1} to be enqueued, "
        "but no such job was stored; nothing was enqueued\n"
        "check that the code under test enqueues on this queue (pass it jobdef_queue)"
    )


def test_other_args_are_listed_with_the_jobs_of_that_name_first(jobdef_queue):
    jobdef_queue.enqueue("export_csv", {"export_id": "0" * 36, "month": "2026-11"})
    jobdef_queue.enqueue("send_reservation_mail", {"reservation_id": 41})
    jobdef_queue.enqueue("send_reservation_mail", {"reservation_id": 43})
    text = failure(jobdef_queue.assert_enqueued, "send_reservation_mail", {"reservation_id": 42})
    assert text == (
        "expected job 'send_reservation_mail' with args {\"reservation_id\": 42} to be "
        "enqueued, but no such job was stored; enqueued instead (2 jobs):\n"
        '  #2 send_reservation_mail {"reservation_id": 41} (queued)\n'
        '  #3 send_reservation_mail {"reservation_id": 43} (queued)\n'
        "the args differ: compare them with the call your code makes"
    )


def test_another_job_enqueued_instead_is_listed(jobdef_queue):
    jobdef_queue.enqueue("send_reservation_mail", {"reservation_id": 41})
    text = failure(jobdef_queue.assert_enqueued, "resize_image")
    assert "enqueued instead (1 job):\n  #1 send_reservation_mail" in text


def test_a_count_that_differs_lists_the_matches(jobdef_queue):
    jobdef_queue.enqueue("resize_image", {"image_id": "a", "width": 64})
    jobdef_queue.enqueue("resize_image", {"image_id": "b", "width": 64})
    text = failure(jobdef_queue.assert_enqueued, "resize_image", {"width": 64}, count=1)
    assert text.startswith(
        "expected 1 of job 'resize_image' with args {\"width\": 64} to be enqueued, found 2:\n"
    )
    assert '#2 resize_image {"image_id": "b", "width": 64} (queued)' in text


def test_an_unknown_job_name_lists_the_jobs_of_the_sheets(jobdef_queue):
    text = failure(jobdef_queue.assert_enqueued, "send_mail")
    assert text.startswith("no sheet defines a job named 'send_mail' (jobs: award_member_points,")
    assert "check the name, or load the sheets that define it" in text


def test_assert_not_enqueued_lists_what_it_found(jobdef_queue):
    jobdef_queue.enqueue("send_reservation_mail", {"reservation_id": 5})
    text = failure(jobdef_queue.assert_not_enqueued, "send_reservation_mail")
    assert text == (
        "expected no job 'send_reservation_mail' to be enqueued, but 1 job was:\n"
        '  #1 send_reservation_mail {"reservation_id": 5} (queued)'
    )


def test_a_missing_notification_lists_the_outbox_and_the_rule(jobdef_queue):
    jobdef_queue.enqueue("send_reservation_mail", {"reservation_id": 13})  # fatal: dead
    jobdef_queue.drain()
    text = failure(jobdef_queue.assert_notified, "ops-log", "dead")
    assert text.startswith(
        "expected a notification ops-log dead, but none was written; the outbox holds (1):\n"
        "  ops-chat dead send_reservation_mail {"
    )
    assert text.endswith(
        "a sheet notifies only the events in its notify.events, on its notify.channel"
    )
    text = failure(jobdef_queue.assert_notified, "ops-chat", "done")
    assert "the outbox holds (1)" in text
    text = failure(jobdef_queue.assert_not_notified, "ops-chat")
    assert text.startswith("expected no notification (ops-chat), found 1:\n  ops-chat dead")


def test_a_wrong_state_shows_the_attempts_and_the_traceback(jobdef_queue, monkeypatch):
    def broken(ctx, reservation_id):
        raise ConnectionError(f"relay down for {reservation_id}")

    monkeypatch.setattr("jobdef.examples.mail.send_reservation_mail", broken)
    job = jobdef_queue.enqueue("send_reservation_mail", {"reservation_id": 9})
    jobdef_queue.drain(until="0s")
    text = failure(jobdef_queue.assert_state, job.id, "done")
    lines = text.splitlines()
    assert lines[0] == "expected job #1 (send_reservation_mail) to be done, it is queued"
    assert lines[1] == (
        "  attempt 1 at +0s (2026-12-01T01:00:00.000+00:00): retry ConnectionError: "
        "relay down for 9"
    )
    assert lines[2] == "the last error's traceback:"
    assert "in broken" in text
    assert lines[-1] == "ConnectionError: relay down for 9"


def test_a_job_that_never_ran_says_drain_runs_what_is_due(jobdef_queue):
    job = jobdef_queue.enqueue("send_reservation_mail", {"reservation_id": 9}, delay="1h")
    text = failure(jobdef_queue.assert_state, job.id, "done")
    assert text == (
        "expected job #1 (send_reservation_mail) to be done, it is queued\n"
        "  it never ran: drain() runs what is due (it may be due later)"
    )


def test_an_attempt_outside_the_timeline_is_marked(jobdef_queue, monkeypatch):
    monkeypatch.setenv("JOBDEF_DEMO_MAIL_FAILURES", "1")
    job = jobdef_queue.enqueue("send_reservation_mail", {"reservation_id": 9})
    jobdef_queue.drain(until="0s")
    jobdef_queue.advance("1h")  # far past the 10s wait explain allows before attempt 2
    jobdef_queue.drain()
    text = failure(jobdef_queue.assert_timeline, job.id)
    assert text.splitlines() == [
        "job #1 (send_reservation_mail): 1 attempt(s) started outside the window "
        "`jobdef explain` gives (seconds after the enqueue):",
        "  attempt 1: +0s, window [0, 0]",
        "  attempt 2: +3600s, window [0, 40]  <-- outside",
    ]


def test_a_handler_that_does_not_import_is_one_clear_error(jobdef_queue, monkeypatch):
    from jobdef.errors import HandlerError
    from jobdef.examples import mail

    monkeypatch.delattr(mail, "send_reservation_mail")
    job = jobdef_queue.enqueue("send_reservation_mail", {"reservation_id": 1})
    with pytest.raises(HandlerError) as caught:
        jobdef_queue.drain()
    assert str(caught.value).startswith(
        "job 'send_reservation_mail': handler jobdef.examples.mail:send_reservation_mail does "
        "not import (AttributeError: "
    )
    # The claim is given back unrun, as the worker releases it.
    assert jobdef_queue.get(job.id).state == "queued"
    assert jobdef_queue.get(job.id).attempt == 0


CALLS: list[str] = []


def no_args(ctx):  # the sheet's reservation_id has nowhere to go
    CALLS.append("no_args")


def unfilled(ctx, reservation_id, locale):  # no arg fills locale
    CALLS.append("unfilled")


def no_ctx(reservation_id=None):  # nothing takes ctx
    CALLS.append("no_ctx")


@pytest.mark.parametrize("wrong", [no_args, unfilled, no_ctx])
def test_a_handler_the_worker_refuses_at_start_is_refused_the_same_way(
    jobdef_queue, monkeypatch, wrong
):
    from jobdef.errors import HandlerError
    from jobdef.examples import mail
    from jobdef.runtime.handlers import check_handlers

    monkeypatch.setattr(mail, "send_reservation_mail", wrong)
    with pytest.raises(HandlerError) as worker:
        check_handlers(jobdef_queue.registry, ["mail"])
    [line] = [line for line in str(worker.value).splitlines() if ": job " in line]
    job = jobdef_queue.enqueue("send_reservation_mail", {"reservation_id": 1})
    with pytest.raises(HandlerError) as kit:
        jobdef_queue.drain()
    # The worker's line (after the sheet's file), and why the kit stops at it.
    assert str(kit.value) == (
        line.partition(": ")[2] + "; a worker refuses to start with this handler, so the kit "
        "does not run it either (`jobdef validate --check-imports` finds it too)"
    )
    assert "its parameters do not fit: " in str(kit.value)
    # Never run: the claim is given back, attempt not counted.
    assert CALLS == []
    assert jobdef_queue.get(job.id).state == "queued"
    assert jobdef_queue.get(job.id).attempt == 0
    assert [a.outcome for a in jobdef_queue.attempts(job.id)] == ["released"]


def test_a_drain_that_never_ends_stops_at_its_limit(jobdef_queue, monkeypatch):
    def again(ctx, reservation_id):
        jobdef_queue.enqueue("send_reservation_mail", {"reservation_id": reservation_id + 1})

    monkeypatch.setattr("jobdef.examples.mail.send_reservation_mail", again)
    jobdef_queue.enqueue("send_reservation_mail", {"reservation_id": 1})
    text = failure(jobdef_queue.drain, limit=10)
    assert text.startswith("drain() ran 10 attempts and jobs are still due")
    assert "pass drain(until=...) or limit=" in text


def test_count_zero_points_to_the_negative_assertion(jobdef_queue):
    with pytest.raises(UsageError, match="use assert_not_enqueued"):
        jobdef_queue.assert_enqueued("resize_image", count=0)
    with pytest.raises(UsageError, match="use assert_not_notified"):
        jobdef_queue.assert_notified("ops-log", "dead", count=0)


def test_the_clock_runs_forwards_only(jobdef_queue):
    with pytest.raises(ValueError, match="runs forwards only"):
        jobdef_queue.clock.set(START.timestamp() - 1)
    with pytest.raises(ValueError, match="has no time zone"):
        jobdef_queue.enqueue(
            "resize_image", {"image_id": "a", "width": 64}, run_after=datetime(2026, 12, 2)
        )
