"""The worker's phases: running; draining after the first stop request (no new claims,
what runs may finish); stopping once the grace is over or at a second request (what
still runs is killed and released). Steered with real signals to a real worker process."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from jobdef.runtime.queue import Queue
from jobdef.runtime.worker import Phase, phase_of
from support import eventually


@pytest.mark.parametrize(
    ("requests", "deadline", "now", "phase"),
    [
        (0, None, 100.0, Phase.RUNNING),
        (1, None, 100.0, Phase.DRAINING),  # the drain begins: its deadline is set on entry
        (1, 110.0, 105.0, Phase.DRAINING),
        (1, 110.0, 110.0, Phase.DRAINING),  # the grace ends after its last instant
        (1, 110.0, 110.5, Phase.STOPPING),
        (2, None, 100.0, Phase.STOPPING),  # two requests before a turn: no drain at all
        (2, 110.0, 105.0, Phase.STOPPING),
    ],
)
def test_the_phase_follows_the_stop_requests_and_the_drain_deadline(
    requests: int, deadline: float | None, now: float, phase: Phase
) -> None:
    assert phase_of(requests, deadline, now) is phase


def _outcomes(backend, job_id):
    return [a.outcome for a in backend.attempts(job_id)]


@pytest.mark.slow
def test_a_drain_claims_nothing_and_past_its_grace_kills_what_runs_and_counts_its_attempt(
    backend, registry, workers, tmp_path
):
    marker = str(tmp_path / "started")
    queue = Queue(backend, registry)
    slow = queue.enqueue("sleep", {"seconds": 60, "marker": marker}).id
    worker = workers.start("--grace", "2s", lease="30s")
    eventually(lambda: Path(f"{marker}.1").exists(), what="the slow job to start")

    worker.send_signal(signal.SIGTERM)  # running -> draining
    signalled = time.monotonic()
    eventually(lambda: "draining" in workers.log(), what="the drain to begin")
    late = queue.enqueue("sleep", {"seconds": 0}).id  # a draining worker claims nothing

    assert worker.wait(30) == 0  # draining -> stopping when the grace is over
    assert time.monotonic() - signalled >= 2.0
    log = workers.log()
    assert log.index("draining") < log.index("grace period over")
    # The handler ran: its attempt is used (a release would run it again under the same
    # number, with no row for the run that was cut short).
    record = backend.get(slow)
    assert (record.state, record.attempt) == ("queued", 1)
    [attempt] = backend.attempts(slow)
    assert attempt.outcome == "crashed"
    assert attempt.error is not None
    assert "grace was over" in attempt.error.message
    record = backend.get(late)
    assert (record.state, record.attempt) == ("queued", 0)
    assert _outcomes(backend, late) == []


@pytest.mark.slow
def test_a_drain_ends_as_soon_as_the_last_running_job_is_recorded(
    backend, registry, workers, tmp_path
):
    marker = str(tmp_path / "started")
    job = Queue(backend, registry).enqueue("sleep", {"seconds": 1, "marker": marker}).id
    worker = workers.start("--grace", "60s", lease="30s")
    eventually(lambda: Path(f"{marker}.1").exists(), what="the job to start")

    worker.send_signal(signal.SIGTERM)
    signalled = time.monotonic()
    assert worker.wait(30) == 0  # long before the grace of 60s
    assert time.monotonic() - signalled < 30
    assert "grace period over" not in workers.log()
    assert _outcomes(backend, job) == ["done"]


@pytest.mark.slow
@pytest.mark.every_engine
def test_an_idle_worker_with_a_long_poll_stops_as_soon_as_it_is_signalled(
    backend, registry, workers
):
    """Its wait for the next poll (60 s) ends at the signal: a long --poll must not hold
    up a stop (an orchestrator kills what has not stopped after 30 s)."""
    job = Queue(backend, registry).enqueue("noop", {"n": 1}).id
    worker = workers.start("--poll", "60s", lease="30s")
    # Its completion went with a claim that found nothing: the worker waits for its poll.
    eventually(lambda: backend.get(job).state == "done", what="the job to run")
    time.sleep(0.3)

    worker.send_signal(signal.SIGTERM)
    signalled = time.monotonic()
    assert worker.wait(30) == 0
    assert time.monotonic() - signalled < 30  # the poll would have held it up to 60 s
