"""Steps of the workers page's tests: a real worker process running a job that holds until
the test lets it end, and the gauges /metrics serves parsed back."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

from dashboard_steps import HERE

from jobdef.runtime.queue import connect
from jobdef.sheets.pipeline import load_registry
from support.workers import WorkerProcess, start_process, worker_command, worker_env

WORKERS_SHEETS = HERE / "workers_sheets"


class HeldWorker:
    """One ``jobdef worker`` (lease 1 s) and the ``hold`` job it runs until released."""

    def __init__(self, store_url: str, tmp_path: Path) -> None:
        self.store_url = store_url
        self.release = tmp_path / "release"
        self.log = tmp_path / "held-worker.log"
        self.process: WorkerProcess | None = None
        self.job_id = 0

    def start(self) -> int:
        """Enqueue the holding job and start the worker; the job's id."""
        queue = connect(self.store_url, load_registry([WORKERS_SHEETS]))
        try:
            self.job_id = queue.enqueue("hold", {"until": str(self.release)}).id
        finally:
            queue.close()
        command = worker_command(self.store_url, WORKERS_SHEETS, "--lease", "1s")
        env = worker_env(HERE)
        self.process = start_process(command, self.log, env=env, cwd=self.release.parent)
        return self.job_id

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def freeze(self) -> None:
        assert self.process is not None
        self.process.process.send_signal(signal.SIGSTOP)

    def stop(self) -> None:
        self.release.touch()
        if self.process is not None:
            self.process.stop(grace=30)


def held_worker(store_url: str, tmp_path: Path) -> Iterator[HeldWorker]:
    """The body of a test module's ``held`` fixture: the worker, stopped afterwards."""
    worker = HeldWorker(store_url, tmp_path)
    yield worker
    worker.stop()
