"""The shared worker-process helper itself: it waits for a real worker by its log, stops
with SIGTERM and kills past the grace, and reaps everything it started."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from support import eventually
from support.workers import (
    Processes,
    process_alive,
    start_process,
    worker_command,
    worker_env,
)

TESTS = Path(__file__).resolve().parent
SHEETS = TESTS / "telemetry" / "sheets"
# Says it is ready, then ignores SIGTERM: only a kill ends it.
STUBBORN = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "time.sleep(60)\n"
)


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


@pytest.mark.slow
def test_wait_up_returns_once_a_real_worker_has_started_and_stop_ends_it(tmp_path: Path) -> None:
    command = worker_command(f"sqlite:///{tmp_path / 'jobs.db'}", SHEETS)
    started = start_process(command, tmp_path / "w.log", env=worker_env(SHEETS.parent))
    try:
        started.wait_up()
        assert "started: concurrency 1" in started.log()
        assert started.stop() == 0, started.log()
    finally:
        started.kill()
    assert started.process.returncode == 0


@pytest.mark.slow
def test_wait_up_fails_with_the_log_when_the_worker_exits_first(tmp_path: Path) -> None:
    command = worker_command("nosuchengine://x", SHEETS)
    started = start_process(command, tmp_path / "w.log", env=worker_env())
    with pytest.raises(AssertionError, match="the worker exited at start-up"):
        started.wait_up()
    assert started.process.poll() is not None


def test_stop_kills_what_ignores_sigterm_once_the_grace_is_over(tmp_path: Path) -> None:
    started = start_process(_python(STUBBORN), tmp_path / "p.log", env=worker_env())
    eventually(lambda: "ready" in started.log(), 30, "the process to be ready")
    assert started.stop(grace=0.5) == -signal.SIGKILL
    assert not process_alive(started.pid)


def test_stop_wakes_a_frozen_process_before_its_sigterm(tmp_path: Path) -> None:
    started = start_process(_python("import time; time.sleep(60)"), tmp_path / "p.log", env={})
    started.process.send_signal(signal.SIGSTOP)
    assert started.stop(grace=30) == -signal.SIGTERM


def test_close_kills_each_group_with_its_children_and_reaps_the_leader(tmp_path: Path) -> None:
    processes = Processes(tmp_path, group=True)
    child = tmp_path / "child.pid"
    code = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(child)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)\n"
    )
    leader = processes.start("leader", _python(code))
    eventually(lambda: child.exists() and child.read_text(), 30, "the child to start")
    processes.close()
    assert leader.process.returncode == -signal.SIGKILL
    eventually(lambda: not process_alive(int(child.read_text())), 30, "the child to be gone")


def test_a_pythonpath_the_test_gives_replaces_the_helpers_own() -> None:
    assert worker_env(SHEETS.parent)["PYTHONPATH"].startswith(str(SHEETS.parent))
    assert worker_env(SHEETS.parent, env={"PYTHONPATH": "given"})["PYTHONPATH"] == "given"
