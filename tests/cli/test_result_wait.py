"""`jobdef result ID|TOKEN` and `jobdef wait ID|TOKEN`, on both engines: one line each (or
`--format json`), the result once done; wait exits 0 done, 1 dead/failed/cancelled, 2 when
its timeout passed; an unknown id or token is one line and exit 2."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from jobdef.backends import open_backend
from jobdef.backends.protocol import Backend
from jobdef.backends.records import ClaimOptions, ErrorInfo, Receipt
from jobdef.cli import main
from jobdef.runtime.queue import Queue
from jobdef.sheets.pipeline import load_registry

pytestmark = pytest.mark.every_engine

JOB = "send_reservation_mail"  # of the example sheets: 5 attempts, a Japanese title


@pytest.fixture
def enqueue(backend: Backend, example_sheets: Path) -> Callable[[int], Receipt]:
    queue = Queue(backend, load_registry([example_sheets]))
    return lambda n: queue.enqueue(JOB, {"reservation_id": n})


@pytest.fixture
def cli(
    db_url: str, example_sheets: Path, capsys: pytest.CaptureFixture[str]
) -> Callable[..., tuple[int, str, str]]:
    def run(*argv: str) -> tuple[int, str, str]:
        code = main([*argv, "--db", db_url, "--sheets", str(example_sheets)])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


def _claim(backend: Backend, job_id: int):  # type: ignore[no-untyped-def]
    [record] = backend.claim(ClaimOptions("w1", 60.0))
    assert record.id == job_id
    return record


def test_result_prints_the_state_and_once_done_the_result(
    backend: Backend, enqueue: Callable[[int], Receipt], cli: Callable[..., tuple[int, str, str]]
) -> None:
    receipt = enqueue(1)
    job = f"job {receipt.job_id} ({JOB})"
    assert cli("result", str(receipt.job_id)) == (0, f"{job}: accepted, not started yet\n", "")
    record = _claim(backend, receipt.job_id)
    backend.heartbeat(record.lease, 60.0, {"step": 1})
    assert (
        cli("result", receipt.token)[1]
        == f'{job}: running, attempt 1 of 5, progress {{"step":1}}\n'
    )
    backend.complete([record.lease], results={receipt.job_id: '{"sent": true}'})
    code, out, err = cli("result", receipt.token)
    assert (code, err) == (0, "")
    assert out == f'{job}: done after 1 of 5 attempts, result {{"sent":true}}\n'
    assert receipt.token not in out  # the line never shows the token

    code, out, _ = cli("result", str(receipt.job_id), "--format", "json")
    shown = json.loads(out)
    assert out.count("\n") == 1
    assert (shown["state"], shown["ended"], shown["result"]) == (
        "done",
        True,
        {"sent": True},
    )
    assert (shown["job"], shown["title"], shown["token"]) == (
        JOB,
        "予約確定メール送信",
        receipt.token,
    )
    assert (shown["attempts"], shown["max_attempts"], shown["job_id"]) == (1, 5, receipt.job_id)


def test_result_shows_a_retry_its_next_start_and_a_long_result_cut(
    backend: Backend, enqueue: Callable[[int], Receipt], cli: Callable[..., tuple[int, str, str]]
) -> None:
    retried, done = enqueue(1), enqueue(2)
    record = _claim(backend, retried.job_id)
    backend.retry(record.lease, ErrorInfo("OSError", "down"), 2_000_000_000.0, 60)
    _, out, _ = cli("result", retried.token)
    assert out == (
        f"job {retried.job_id} ({JOB}): retry_waiting, 1 of 5 attempts used, "
        "next start 2033-05-18 03:33:20 UTC\n"
    )
    record = _claim(backend, done.job_id)
    backend.complete([record.lease], results={done.job_id: json.dumps("x" * 2000)})
    _, out, _ = cli("result", done.token)
    assert out.endswith(" (cut; --format json shows all 2002 characters)\n")
    assert len(out) < 700
    _, out, _ = cli("result", done.token, "--format", "json")
    assert json.loads(out)["result"] == "x" * 2000


def _end_soon(action: Callable[[], object]) -> threading.Thread:
    """Run ``action`` (another session ending the job) while the command waits."""

    def later() -> None:
        time.sleep(0.5)
        action()

    thread = threading.Thread(target=later)
    thread.start()
    return thread


def test_wait_exits_0_done_1_dead_failed_cancelled_and_2_on_its_timeout(
    db_url: str,
    backend: Backend,
    enqueue: Callable[[int], Receipt],
    cli: Callable[..., tuple[int, str, str]],
) -> None:
    done, dead, failed, cancelled, waiting = (enqueue(n) for n in range(1, 6))
    other = open_backend(db_url)  # ends the jobs as a worker would, on its own session
    try:
        lease = _claim(backend, done.job_id).lease
        thread = _end_soon(lambda: other.complete([lease], results={done.job_id: "1"}))
        code, out, _ = cli("wait", done.token, "--timeout", "60s")
        thread.join()
        assert (code, out) == (
            0,
            f"job {done.job_id} ({JOB}): done after 1 of 5 attempts, result 1\n",
        )

        lease = _claim(backend, dead.job_id).lease
        thread = _end_soon(lambda: other.bury(lease, ErrorInfo("ValueError", "bad")))
        code, out, _ = cli("wait", str(dead.job_id), "--timeout", "60s")
        thread.join()
        assert (code, out) == (
            1,
            f"job {dead.job_id} ({JOB}): dead after 1 of 5 attempts "
            f"(jobdef jobs show {dead.job_id} says why)\n",
        )

        backend.bury(_claim(backend, failed.job_id).lease, ErrorInfo("ValueError", "bad"))
        backend.resolve(failed.job_id, "refunded by hand")
        code, out, _ = cli("wait", failed.token)
        assert (code, out) == (
            1,
            f"job {failed.job_id} ({JOB}): failed: dead after 1 of 5 attempts, resolved by an "
            "operator\n",
        )

        thread = _end_soon(lambda: other.cancel(cancelled.job_id))
        code, out, _ = cli("wait", cancelled.token, "--timeout", "60s", "--format", "json")
        thread.join()
        assert code == 1
        assert (json.loads(out)["state"], json.loads(out)["timed_out"]) == ("cancelled", False)
    finally:
        other.close()

    code, out, _ = cli("wait", waiting.token, "--timeout", "200ms")
    assert (code, out) == (
        2,
        f"job {waiting.job_id} ({JOB}): accepted, not started yet; not ended after 200ms\n",
    )
    code, out, _ = cli("wait", waiting.token, "--timeout", "0s", "--format", "json")
    assert code == 2
    assert (json.loads(out)["state"], json.loads(out)["timed_out"]) == ("accepted", True)


def test_an_unknown_or_malformed_id_or_token_is_one_line_and_exit_2(
    enqueue: Callable[[int], Receipt], cli: Callable[..., tuple[int, str, str]]
) -> None:
    receipt = enqueue(1)
    wrong_token = ("B" if receipt.token[0] == "A" else "A") + receipt.token[1:]
    for command in ("result", "wait"):
        for argv, message in (
            (["999"], "no job with id 999; list them with `jobdef jobs`"),
            (
                [wrong_token],
                "no job or flow has this receipt token (never stored, or pruned since)",
            ),
            (["0"], "'0' is not a job id; write one from 1 to"),
            (["9" * 30], "is not a job id"),
            (["not a token!"], "'not a token!' is neither a job id nor a receipt token"),
        ):
            code, out, err = cli(command, *argv)
            assert (code, out) == (2, ""), (command, argv)
            assert err.count("\n") == 1
            assert err.startswith(f"jobdef {command}: error: ")
            assert message in err
            assert wrong_token not in err
    code, _, err = cli("wait", receipt.token, "--timeout", "soon")
    assert code == 2
    assert "--timeout 'soon' is not a duration; write how long to wait, e.g. --timeout 5m" in err
