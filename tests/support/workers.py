"""Real ``python -m jobdef worker`` processes for tests: started, waited for, stopped.

Every test folder that runs workers as processes builds on :class:`Processes`: each
process writes its output to a log file of its own (never a pipe, so nothing blocks
and nothing is left open), and :meth:`Processes.close` stops every one at teardown and
reaps it, so no zombie outlives the test.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from support.polling import eventually

SRC = Path(__file__).resolve().parents[2] / "src"
REAP_TIMEOUT = 30.0
"""Seconds a killed process may take to be reaped before the test fails."""

_STARTED = re.compile(r"worker \S+ started")


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` (a handler's child, say) still runs; a zombie its parent
    has not reaped yet counts as ended."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(") ", 1)[1][:1] != "Z"
    except (OSError, IndexError):
        # Reaped between the kill and the read: the open fails (FileNotFoundError) or,
        # open already, the read does (ProcessLookupError).
        return False


def worker_command(db_url: str, sheets: Path, *options: str, poll: str = "50ms") -> list[str]:
    """``python -m jobdef worker`` on ``db_url`` and ``sheets``, polling every ``poll``."""
    command = [sys.executable, "-m", "jobdef", "worker", "--db", db_url]
    return [*command, "--sheets", str(sheets), "--poll", poll, *options]


def worker_env(*importable: Path, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment with ``importable`` folders and src/ on
    ``PYTHONPATH`` (so the handlers of the test's folder import in the worker), and
    ``env`` on top: a ``PYTHONPATH`` there replaces that one."""
    path = os.pathsep.join([*map(str, importable), str(SRC)])
    return os.environ | {"PYTHONPATH": path} | dict(env or {})


class WorkerProcess:
    """One started process and the file its output goes to."""

    def __init__(self, process: subprocess.Popen[bytes], log_path: Path, group: bool) -> None:
        self.process = process
        self.log_path = log_path
        self.group = group
        """Whether the process leads a process group: a kill then reaches its children."""

    @property
    def pid(self) -> int:
        return self.process.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_up(self, timeout: float = 60) -> None:
        """Wait until the worker says it started; fail with its log if it exits first."""

        def up() -> bool:
            if _STARTED.search(self.log()):
                return True
            assert self.process.poll() is None, f"the worker exited at start-up:\n{self.log()}"
            return False

        eventually(up, timeout, "the worker to start")

    def stop(self, grace: float = 30) -> int:
        """SIGTERM (after SIGCONT, in case it is frozen), SIGKILL if still running after
        ``grace`` seconds; the exit code, once the process is reaped."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(grace)
        except subprocess.TimeoutExpired:
            return self.kill()

    def kill(self) -> int:
        """SIGKILL it at once (its whole process group, if it leads one), as a lost host
        would be; the exit code, once reaped."""
        if self.process.poll() is None:
            if self.group:
                os.killpg(self.process.pid, signal.SIGKILL)
            else:
                self.process.send_signal(signal.SIGCONT)
                self.process.kill()
        return self.process.wait(REAP_TIMEOUT)


def start_process(
    command: list[str],
    log: Path,
    *,
    env: Mapping[str, str],
    cwd: Path | None = None,
    group: bool = False,
    append: bool = False,
) -> WorkerProcess:
    """Start ``command`` with its stdout and stderr in ``log``; with ``group``, as the
    leader of a new session, so that :meth:`WorkerProcess.kill` reaches its children."""
    with log.open("ab" if append else "wb") as out:
        process = subprocess.Popen(
            command,
            env=dict(env),
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            start_new_session=group,
        )
    return WorkerProcess(process, log, group)


class Processes:
    """Processes a test starts, each with a log ``<name>.log`` in ``logs`` (added to,
    with ``append``), ``env`` and ``importable`` in their environment, ``logs`` as their
    working folder; with ``group``, each leads a process group of its own.

    ``grace`` is how long :meth:`close` lets them stop on SIGTERM before it kills
    them; 0 kills them at once, as a lost host (the runtime tests' teardown).
    """

    def __init__(
        self,
        logs: Path,
        *,
        importable: tuple[Path, ...] = (),
        env: Mapping[str, str] | None = None,
        group: bool = False,
        grace: float = 0,
        append: bool = False,
    ) -> None:
        self.logs = logs
        self.importable = importable
        self.env: Mapping[str, str] = env or {}
        self.group = group
        self.grace = grace
        self.append = append
        self.started: list[WorkerProcess] = []

    def start(
        self, name: str, command: list[str], *, env: Mapping[str, str] | None = None
    ) -> WorkerProcess:
        environ = worker_env(*self.importable, env=dict(self.env) | dict(env or {}))
        log = self.logs / f"{name}.log"
        started = start_process(
            command, log, env=environ, cwd=self.logs, group=self.group, append=self.append
        )
        self.started.append(started)
        return started

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")

    def close(self) -> None:
        """Stop every process started (SIGTERM, then SIGKILL past ``grace``) and reap it."""
        running = [started for started in self.started if started.process.poll() is None]
        if self.grace > 0:
            for started in running:
                started.process.send_signal(signal.SIGCONT)
                started.process.send_signal(signal.SIGTERM)
            for started in running:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    started.process.wait(self.grace)
        for started in self.started:
            started.kill()
