"""A real worker's log: JSON lines from the worker and its handler processes alike, one
line per finished attempt, no secret of the environment in any of them."""

from __future__ import annotations

import json
import socket

import pytest
from telemetry_handlers import SECRET_VARIABLE, WARN_VARIABLE

from jobdef.runtime.queue import Queue
from jobdef.telemetry.logs import FIELDS

SECRET = "tok-4f9a1c77e2b84d0c"

pytestmark = pytest.mark.slow


def test_json_lines_of_a_failing_and_a_succeeding_job(queue: Queue, workers) -> None:
    ok = queue.enqueue("quick", {"i": 1}).id
    bad = queue.enqueue("broken", {"i": 2}).id
    worker = workers.start("--burst", "--log-format", "json", env={SECRET_VARIABLE: SECRET})
    assert worker.process.wait(60) == 0
    text = worker.log()
    assert SECRET not in text
    # Every line is a JSON object, the exit summary (on stdout) the last of them.
    *parsed, summary = [json.loads(line) for line in text.splitlines()]
    assert list(summary)[: len(FIELDS)] == list(FIELDS)
    assert summary["message"].startswith(f"worker {summary['worker']}: 1 done, 0 retried, ")
    counts = {"done": 1, "retried": 0, "dead": 1, "released": 0, "late_writes_refused": 0}
    assert {name: summary[name] for name in counts} == counts
    assert (summary["logger"], summary["level"]) == ("jobdef.worker", "info")
    for line in parsed:
        assert list(line)[: len(FIELDS)] == list(FIELDS)
    attempts = {line["job_id"]: line for line in parsed if line["outcome"] is not None}
    assert set(attempts) == {ok, bad}
    done, dead = attempts[ok], attempts[bad]
    assert (done["job"], done["attempt"], done["queue"], done["level"]) == (
        "quick",
        1,
        "default",
        "info",
    )
    assert done["message"].startswith(f"job {ok} quick attempt 1 done in ")
    assert isinstance(done["duration_ms"], float)
    assert done["error_type"] is None
    assert (dead["outcome"], dead["error_type"], dead["level"]) == ("dead", "ValueError", "warning")
    # The handler's own lines, from its process, with its identity and its extras.
    handler = [line for line in parsed if line["logger"] == "jobdef.jobs.quick"]
    assert [line["message"] for line in handler] == [
        "calling the API with ***",
        "quick job working",
    ]
    assert all((line["job_id"], line["attempt"]) == (ok, 1) for line in handler)
    assert handler[1]["step"] == 1
    assert handler[1]["credentials"] == "token=***"
    assert {line["worker"] for line in parsed} == {done["worker"]}
    assert "job_args" not in done  # args only with --log-args


def test_text_lines_say_each_attempt_and_args_only_with_log_args(queue: Queue, workers) -> None:
    queue.enqueue("flaky", {"i": 3})
    worker = workers.start("--burst", "--log-args")
    assert worker.process.wait(60) == 0
    lines = [line for line in worker.log().splitlines() if " flaky attempt " in line]
    assert len(lines) == 2
    assert " INFO job 1 flaky attempt 1 failed, retried after " in lines[0]
    assert "(ConnectionError); next attempt in 0.0s" in lines[0]
    assert " INFO job 1 flaky attempt 2 done in " in lines[1]
    assert lines[1].endswith(' queue=default job_args={"i":3}')


def test_json_lines_hold_the_error_that_stops_the_worker_at_start(workers, tmp_path) -> None:
    """A worker that cannot start (its health port taken) says why in a JSON line too."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        worker = workers.start("--burst", "--log-format", "json", "--health-port", port)
        assert worker.process.wait(60) == 2
    [line] = [json.loads(line) for line in worker.log().splitlines()]
    assert line["level"] == "error"
    assert line["message"] == (
        f"jobdef worker: error: --health-port {port}: cannot listen on 127.0.0.1 "
        "(Address already in use); choose a free port"
    )


def test_json_lines_hold_the_warnings_of_the_handlers_modules(queue: Queue, workers) -> None:
    """A module a handler imports may warn: in the worker (its check at start imports
    the handlers) and in each handler process, the warning is a JSON line too."""
    queue.enqueue("quick", {"i": 1})
    worker = workers.start("--burst", "--log-format", "json", env={WARN_VARIABLE: "1"})
    assert worker.process.wait(60) == 0
    parsed = [json.loads(line) for line in worker.log().splitlines()]
    warned = [line for line in parsed if line["logger"] == "py.warnings"]
    assert warned, worker.log()
    assert all(
        "UserWarning: this module is imported with a warning" in w["message"] for w in warned
    )
    assert {w["level"] for w in warned} == {"warning"}
