"""Steps of the workers page's tests: a real worker process running a job that holds until
the test lets it end, and the gauges /metrics serves parsed back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from dashboard_steps import HERE, SRC

from jobdef.runtime.queue import connect
from jobdef.sheets.pipeline import load_registry

WORKERS_SHEETS = HERE / "workers_sheets"


class HeldWorker:
    """One ``jobdef worker`` (lease 1 s) and the ``hold`` job it runs until released."""

    def __init__(self, store_url: str, tmp_path: Path) -> None:
        self.store_url = store_url
        self.release = tmp_path / "release"
        self.log = tmp_path / "held-worker.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.job_id = 0

    def start(self) -> int:
        """Enqueue the holding job and start the worker; the job's id."""
        queue = connect(self.store_url, load_registry([WORKERS_SHEETS]))
        try:
            self.job_id = queue.enqueue("hold", {"until": str(self.release)}).id
        finally:
            queue.close()
        env = os.environ | {"PYTHONPATH": os.pathsep.join([str(HERE), str(SRC)])}
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "jobdef",
                    "worker",
                    "--db",
                    self.store_url,
                    "--sheets",
                    str(WORKERS_SHEETS),
                    "--lease",
                    "1s",
                    "--poll",
                    "50ms",
                ],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.release.parent,
            )
        return self.job_id

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def freeze(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def stop(self) -> None:
        self.release.touch()
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(30)


def held_worker(store_url: str, tmp_path: Path) -> Iterator[HeldWorker]:
    """The body of a test module's ``held`` fixture: the worker, stopped afterwards."""
    worker = HeldWorker(store_url, tmp_path)
    yield worker
    worker.stop()
