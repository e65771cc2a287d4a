"""``jobdef demo``: the example sheets run for real, in worker processes that really die.

Four scenes, each checked against the database afterwards:

1. a mail job fails twice on a transient error and succeeds on attempt 3;
2. an image job with a bad input goes dead at once (its error is fatal by sheet)
   and its notify channel hears about it, through the outbox;
3. a points award whose worker is killed (SIGKILL) after doing the work but
   before reporting it is reclaimed after its lease and run again, and the
   balance still ends at 100, not 200, thanks to the idempotency key;
4. two workers claiming concurrently never receive the same job.

Backoff waits are shortened and queue rates raised by the same factor
(``WAIT_SCALE``) so the demo takes seconds, not minutes; every other value comes
from the sheets as they are.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import multiprocessing
import os
import signal
import sqlite3
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

from jobdef.backends import open_backend
from jobdef.backends.protocol import Backend
from jobdef.backends.records import JobRecord
from jobdef.policy.durations import format_duration
from jobdef.policy.registry import Registry
from jobdef.policy.values import freeze
from jobdef.sheets.pipeline import load_registry

WAIT_SCALE = 0.01
LEASE = 1.5
TIMEOUT = 25.0


def example_sheets() -> Path:
    """The example sheets: shipped in the wheel, or the repository's ``jobdefs/`` folder."""
    shipped = resources.files("jobdef") / "examples" / "sheets"
    if shipped.is_dir():
        return Path(str(shipped))
    repo = Path(__file__).resolve().parents[3] / "jobdefs"
    if repo.is_dir():
        return repo
    raise FileNotFoundError("the example sheets are missing from this installation")


def shorten_waits(registry: Registry, factor: float) -> Registry:
    """The same policies on a clock ``1 / factor`` times faster: every backoff wait
    multiplied by ``factor``, every queue's start rate divided by it."""
    jobs = {}
    for policy in registry:
        b = policy.backoff
        backoff = dataclasses.replace(
            b,
            initial=b.initial * factor,
            max=None if b.max is None else b.max * factor,
            delays=tuple(d * factor for d in b.delays),
        )
        jobs[policy.name] = dataclasses.replace(policy, backoff=backoff)
    queues = {
        name: dataclasses.replace(q, rate=None if q.rate is None else q.rate / factor)
        for name, q in registry.queues.items()
    }
    return Registry(jobs=freeze(jobs), channels=registry.channels, queues=freeze(queues))


def _worker_main(url: str, sheets: str, name: str, env: dict[str, str], burst: bool) -> None:
    """The body of one demo worker process."""
    from jobdef.runtime.settings import WorkerSettings
    from jobdef.runtime.worker import Worker

    os.environ.update(env)
    logging.basicConfig(
        filename=str(Path(env["JOBDEF_EXAMPLES_DIR"]) / f"worker-{name}.log"),
        level=logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    registry = shorten_waits(load_registry([sheets]), WAIT_SCALE)
    backend = open_backend(url)
    settings = WorkerSettings(
        burst=burst, lease_seconds=LEASE, poll_interval=0.05, id=f"{name}:{os.getpid()}"
    )
    worker = Worker(backend, registry, settings)
    worker.run()
    backend.close()


def _print(text: str) -> None:
    print(text, flush=True)


class Demo:
    def __init__(self, folder: Path, out: Callable[[str], None] = _print) -> None:
        self.folder = folder
        self.url = f"sqlite:///{folder / 'demo.db'}"
        self.sheets = example_sheets()
        self.out = out
        self.ctx = multiprocessing.get_context("spawn")
        self.backend: Backend = open_backend(self.url)
        self.env = {"JOBDEF_EXAMPLES_DIR": str(folder)}
        self.passed: list[bool] = []
        self.processes: list[multiprocessing.process.BaseProcess] = []

    # -- helpers ----------------------------------------------------------------

    def start_worker(
        self, name: str, burst: bool = False, **env: str
    ) -> multiprocessing.process.BaseProcess:
        process = self.ctx.Process(
            target=_worker_main,
            args=(self.url, str(self.sheets), name, self.env | env, burst),
            name=f"jobdef-demo-{name}",
        )
        process.start()
        self.processes.append(process)
        return process

    @contextmanager
    def worker(self, name: str, **env: str) -> Iterator[multiprocessing.process.BaseProcess]:
        process = self.start_worker(name, burst=False, **env)
        try:
            yield process
        finally:
            if process.is_alive() and process.pid is not None:
                os.kill(process.pid, signal.SIGTERM)
            process.join(15)
            if process.is_alive():
                process.kill()
                process.join()

    def wait_for(self, what: str, condition: Callable[[], Any]) -> Any:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            value = condition()
            if value:
                return value
            time.sleep(0.05)
        raise TimeoutError(f"gave up waiting for {what} after {TIMEOUT:g}s")

    def finished(self, job_id: int) -> JobRecord | None:
        record = self.backend.get(job_id)
        return record if record and record.state in ("done", "dead") else None

    def show_attempts(self, job_id: int) -> None:
        for attempt in self.backend.attempts(job_id):
            line = f"     attempt {attempt.attempt}  {attempt.outcome or 'running':<9}"
            if attempt.error:
                line += f" {attempt.error.type.rpartition('.')[2]}: {attempt.error.message}"
            self.out(line)

    def check(self, ok: bool, text: str) -> None:
        self.passed.append(ok)
        self.out(f"   {'✓' if ok else '✗ FAILED:'} {text}")

    def enqueue(self, name: str, args: dict[str, Any]) -> int:
        from jobdef.runtime.queue import Queue

        registry = load_registry([self.sheets])
        result = Queue(self.backend, registry).enqueue(name, args)
        return result.id

    # -- the scenes -------------------------------------------------------------

    def run(self) -> bool:
        previous = os.environ.get("JOBDEF_EXAMPLES_DIR")
        os.environ["JOBDEF_EXAMPLES_DIR"] = str(self.folder)
        try:
            return self._run()
        finally:
            for process in self.processes:
                if process.is_alive():
                    process.kill()
                    process.join()
            if previous is None:
                os.environ.pop("JOBDEF_EXAMPLES_DIR", None)
            else:
                os.environ["JOBDEF_EXAMPLES_DIR"] = previous

    def _run(self) -> bool:
        from jobdef.examples.chat_receiver import ChatReceiver

        # The sheets' ops-chat webhook URL comes from the environment, as in production:
        # here it is a receiver on loopback.
        with ChatReceiver() as chat:
            self.env["OPS_CHAT_WEBHOOK_URL"] = chat.url
            return self._scenes()

    def _scenes(self) -> bool:
        started = time.monotonic()
        self.out("jobdef demo: the example sheets, run by real worker processes")
        self.out(f"   sheets:   {self.sheets}")
        self.out(f"   database: {self.url}")
        self.out(
            f"   backoff waits shortened and queue rates raised {1 / WAIT_SCALE:g}x for the "
            f"demo (10s -> {format_duration(10 * WAIT_SCALE)}); every other value is the sheets'"
        )
        self.retry_then_succeed_and_fatal()
        self.killed_after_the_work()
        self.two_workers()
        seconds = time.monotonic() - started
        ok = all(self.passed)
        self.out("")
        self.out(
            f"{'all' if ok else 'NOT all'} {len(self.passed)} checks "
            f"{'passed' if ok else 'passed: see ✗ above'} in {seconds:.1f}s"
        )
        return ok

    def retry_then_succeed_and_fatal(self) -> None:
        self.out("")
        self.out("1. send_reservation_mail: the SMTP relay refuses twice (ConnectionError)")
        (self.folder / "uploads").mkdir(exist_ok=True)
        (self.folder / "uploads" / "broken.jpg").write_bytes(b"\xff\xd8 not really an image")
        mail = self.enqueue("send_reservation_mail", {"reservation_id": 42})
        image = self.enqueue("resize_image", {"image_id": "broken.jpg", "width": 320})
        with self.worker("A", JOBDEF_DEMO_MAIL_FAILURES="2"):
            record = self.wait_for("the mail job", lambda: self.finished(mail))
            self.show_attempts(mail)
            eml = self.folder / "outbox-mail" / "42_confirm-mail.eml"
            self.check(
                record.state == "done" and record.attempt == 3 and eml.is_file(),
                f"done on attempt {record.attempt} of {record.max_attempts}; mail written to {eml}",
            )
            self.out("")
            self.out("2. resize_image: the upload is not an image (BadImage, fatal by sheet)")
            record = self.wait_for("the image job", lambda: self.finished(image))
            self.show_attempts(image)
            self.check(
                record.state == "dead" and record.attempt == 1,
                f"dead after {record.attempt} attempt of {record.max_attempts}, no retry",
            )
        # resize_image notifies ops-log, a log channel: the worker's sender writes the
        # message to its log once the outbox row (written with the move to dead) is due.
        log = self.folder / "worker-A.log"
        message_id = f"message id: resize_image:{image}:1:dead:"
        self.wait_for(
            "the notification",
            lambda: any(
                " jobdef.notify WARNING " in x and message_id in x
                for x in log.read_text().splitlines()
            ),
        )
        # The sender records the delivery right after writing the line.
        self.wait_for("the delivery", lambda: all(d for *_, d in self.outbox_messages(image)))
        messages = self.outbox_messages(image)
        sent = next(p for _, event, _, p in self.outbox_rows(image) if event == "dead")
        for channel, event, delivered in messages:
            state = "delivered" if delivered else "waiting for the sender"
            self.out(f"     outbox -> channel {channel}: {event} of job {image} ({state})")
        self.out(
            f"     ops-log <- {sent['event']} {sent['job']} job {sent['job_id']} "
            f"{sent['key_args']}; re-run: {sent['requeue_command']}"
        )
        self.check(
            any(event == "dead" and delivered for _, event, delivered in messages)
            and sent["error_type"] == "jobdef.examples.errors.BadImage",
            "the message was written to the outbox with the move to dead, then delivered",
        )

    def outbox_messages(self, job_id: int) -> list[tuple[str, str, bool]]:
        """(channel, event, delivered) of a job's messages, delivered ones included."""
        return [(c, e, d) for c, e, d, _ in self.outbox_rows(job_id)]

    def outbox_rows(self, job_id: int) -> list[tuple[str, str, bool, dict[str, Any]]]:
        """(channel, event, delivered, payload) of a job's messages, delivered ones included.

        The demo always runs on its own SQLite file, so it reads the outbox table
        directly: the protocol lists only pending messages, and a sender running in
        the workers may already have delivered this one.
        """
        conn = sqlite3.connect(self.folder / "demo.db")
        try:
            rows = conn.execute(
                "SELECT channel, event, delivered_at IS NOT NULL, payload "
                "FROM jobdef_outbox ORDER BY id"
            ).fetchall()
        finally:
            conn.close()
        found = [(c, e, bool(d), json.loads(p)) for c, e, d, p in rows]
        return [row for row in found if row[3].get("job_id") == job_id]

    def killed_after_the_work(self) -> None:
        from jobdef.examples.points import balance

        self.out("")
        self.out("3. award_member_points: the worker is killed after the award, before reporting")
        job = self.enqueue("award_member_points", {"order_id": 1001, "member_id": 7, "points": 100})
        victim = self.start_worker("B", JOBDEF_DEMO_POINTS_PAUSE="8")
        self.wait_for("the award", lambda: balance(7) == 100)
        assert victim.pid is not None
        os.kill(victim.pid, signal.SIGKILL)
        victim.join()
        self.out(f"     worker B (pid {victim.pid}) awarded 100 points, then got SIGKILL")
        with self.worker("C"):
            self.out(f"     worker C reclaims the job once its {LEASE:g}s lease has expired")
            record = self.wait_for("the reclaimed award", lambda: self.finished(job))
        self.show_attempts(job)
        outcomes = [a.outcome for a in self.backend.attempts(job)]
        self.check(
            record.state == "done" and outcomes == ["reclaimed", "done"],
            "reclaimed after the lease and run again by another worker",
        )
        self.check(
            balance(7) == 100,
            f"balance of member 7 is {balance(7)}, not 200: key {record.idempotency_key} "
            "was already recorded with the award",
        )

    def two_workers(self) -> None:
        from jobdef.runtime.queue import Queue

        self.out("")
        count = 400
        self.out(f"4. two workers drain {count} mail jobs at the same time")
        workers = [self.start_worker(name) for name in ("D", "E")]
        logs = [self.folder / f"worker-{name}.log" for name in ("D", "E")]
        self.wait_for(
            "both workers to start",
            lambda: all(log.is_file() and "started" in log.read_text() for log in logs),
        )
        registry = load_registry([self.sheets])
        results = Queue(self.backend, registry).enqueue_many(
            "send_reservation_mail", [{"reservation_id": 10_000 + i} for i in range(count)]
        )
        ids = [r.id for r in results]
        self.wait_for("the mail jobs", lambda: all(self.finished(i) for i in ids))
        for process in workers:
            if process.pid is not None:
                os.kill(process.pid, signal.SIGTERM)
        for process in workers:
            process.join(TIMEOUT)
        per_worker: Counter[str] = Counter()
        runs: Counter[int] = Counter()
        for result in results:
            for attempt in self.backend.attempts(result.id):
                per_worker[attempt.worker_id.partition(":")[0]] += 1
                runs[result.id] += 1
        twice = sum(1 for n in runs.values() if n > 1)
        done = sum(1 for r in results if (rec := self.backend.get(r.id)) and rec.state == "done")
        split = ", ".join(f"worker {w} ran {n}" for w, n in sorted(per_worker.items()))
        self.out(f"     {split}")
        self.check(
            done == count and twice == 0 and len(runs) == count,
            f"{done} of {count} done, each exactly once (jobs claimed twice: {twice})",
        )


def run_demo(folder: Path | None = None, out: Callable[[str], None] = _print) -> bool:
    """Run the demo in ``folder`` (default: a fresh temporary folder); True if all checks pass."""
    if folder is not None:
        return Demo(folder, out).run()
    with tempfile.TemporaryDirectory(prefix="jobdef-demo-") as tmp:
        demo = Demo(Path(tmp), out)
        try:
            return demo.run()
        finally:
            demo.backend.close()
