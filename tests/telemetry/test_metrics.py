"""A running worker's /metrics, scraped over HTTP while it drains every kind of outcome:
its counters are the attempts table's counts, its gauges the queue's state."""

from __future__ import annotations

import urllib.request
from collections import Counter

import pytest

from jobdef.backends.protocol import Backend
from jobdef.runtime.queue import Queue
from support import eventually

prometheus_parser = pytest.importorskip("prometheus_client.parser")

pytestmark = pytest.mark.slow

# job -> how many to enqueue; their attempts end done, retry then done, dead (fatal),
# timeout and crashed. Two jobs of queue "later" wait an hour: the gauges' depth.
MIX = {"quick": 3, "flaky": 2, "broken": 2, "slow": 1, "crash": 1}
FINAL = ("done", "dead")


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of /metrics by (sample name, sorted labels)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    samples = {}
    for family in prometheus_parser.text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def by(samples, name: str, *keys: str) -> dict[tuple[str, ...], float]:
    """The samples called ``name`` summed by the values of ``keys``, zeros left out."""
    found: Counter[tuple[str, ...]] = Counter()
    for (sample, labels), value in samples.items():
        if sample == name and value:
            found[tuple(dict(labels)[key] for key in keys)] += value
    return dict(found)


def attempt_counts(backend: Backend, ids: list[int]) -> dict[tuple[str, str], float]:
    """(job, outcome) -> number of rows in the attempts table."""
    found: Counter[tuple[str, str]] = Counter()
    for job_id in ids:
        for attempt in backend.attempts(job_id):
            if attempt.outcome is not None:
                record = backend.get(job_id)
                assert record is not None
                found[(record.job, attempt.outcome)] += 1
    return dict(found)


def test_counters_match_the_attempts_table_and_gauges_the_queue(
    queue: Queue, backend: Backend, workers
) -> None:
    ids = [queue.enqueue(job, {"i": n}).id for job, count in MIX.items() for n in range(count)]
    later = [queue.enqueue("later", {"i": n}, delay=3600).id for n in range(2)]
    worker = workers.start(
        "--concurrency", "2", "--lease", "2s",
        "--metrics-port", "0", "--metrics-interval", "1s",
    )  # fmt: skip
    port = worker.port("--metrics-port")

    # Scraped while it drains: no counter ever goes down.
    seen: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}

    def drained() -> bool:
        samples = scrape(port)
        for key, value in samples.items():
            if key[0].endswith("_total"):
                assert value >= seen.get(key, 0.0), key
        seen.update(samples)
        states = [backend.get(job_id).state for job_id in ids]  # type: ignore[union-attr]
        return all(state in FINAL for state in states)

    eventually(drained, 60, "the mix to drain")

    def agrees() -> bool:
        samples = scrape(port)
        finished = by(samples, "jobdef_jobs_finished_total", "job", "outcome")
        started = by(samples, "jobdef_jobs_started_total", "job")
        expected = attempt_counts(backend, ids)
        per_job = Counter()
        for (job, _outcome), count in expected.items():
            per_job[(job,)] += count
        return finished == expected and started == dict(per_job)

    eventually(agrees, 30, "the counters to equal the attempts table")
    samples = scrape(port)
    outcomes = {
        outcome for _job, outcome in by(samples, "jobdef_jobs_finished_total", "job", "outcome")
    }
    assert outcomes == {"done", "retry", "dead", "timeout", "crashed"}
    durations = by(samples, "jobdef_attempt_duration_seconds_count", "job")
    assert durations[("quick",)] == 3
    assert durations[("flaky",)] == 4
    assert durations[("slow",)] == 1  # measured to the kill at its timeout
    # The outbox sender's thread delivers the done notifications of the quick jobs.
    eventually(
        lambda: by(scrape(port), "jobdef_outbox_deliveries_total", "channel") == {("ops",): 3},
        30,
        "three deliveries on channel ops",
    )

    def gauges_agree() -> bool:
        samples = scrape(port)
        infos = {info.queue: info for info in backend.queues()}
        dead = Counter()
        for count in backend.stats():
            if count.state == "dead":
                dead[(count.job,)] += count.count
        depth = by(samples, "jobdef_queue_depth", "queue")
        running = by(samples, "jobdef_queue_running", "queue")
        return (
            depth == {(q,): i.queued for q, i in infos.items() if i.queued}
            and running == {(q,): i.running for q, i in infos.items() if i.running}
            and by(samples, "jobdef_jobs_dead", "job") == dict(dead)
            and samples[("jobdef_outbox_backlog", ())] == len(backend.outbox_pending())
        )

    eventually(gauges_agree, 30, "the gauges to equal the queue's state")
    assert by(scrape(port), "jobdef_queue_depth", "queue") == {("later",): len(later)}
    assert worker.stop() == 0
