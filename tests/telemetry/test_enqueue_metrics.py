"""The enqueue counters of an application process: counted on jobdef's enqueue path into
prometheus_client's default registry, served by the application's own /metrics, and summed
over processes in prometheus_client's multiprocess mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobdef.backends import open_backend
from jobdef.runtime.queue import Queue
from jobdef.sheets.pipeline import load_registry

pytestmark = pytest.mark.every_engine

prometheus_parser = pytest.importorskip("prometheus_client.parser")

HERE = Path(__file__).resolve().parent
SRC = HERE.parent.parent / "src"
SHEETS = HERE / "enqueue_sheets"
APP = HERE / "enqueue_app.py"
ENQUEUED = "jobdef_jobs_enqueued_total"
DEDUPLICATED = "jobdef_jobs_enqueue_deduplicated_total"


class App:
    """``enqueue_app.py`` in a process of its own."""

    def __init__(self, db: str, tmp_path: Path, env: dict[str, str] | None = None) -> None:
        self.db = db
        self.tmp_path = tmp_path
        self.env = os.environ | {"PYTHONPATH": os.pathsep.join([str(HERE), str(SRC)])}
        self.env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        self.env |= env or {}
        self.serving: list[subprocess.Popen[str]] = []

    def command(self, *options: str) -> list[str]:
        return [sys.executable, str(APP), self.db, str(SHEETS), *options]

    def run(self, *options: str) -> None:
        subprocess.run(self.command(*options), env=self.env, check=True, timeout=120)

    def serve(self, *options: str) -> int:
        """Start it with --serve; the port of its /metrics once it has enqueued."""
        process = subprocess.Popen(
            self.command(*options, "--serve"),
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.serving.append(process)
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("port "), f"the app did not start: {line!r}"
        return int(line.split()[1])

    def stop(self) -> None:
        for process in self.serving:
            assert process.stdin is not None
            process.stdin.close()
            process.wait(30)
            if process.stdout is not None:
                process.stdout.close()


@pytest.fixture
def app(db_url: str, tmp_path: Path) -> Iterator[App]:
    made = App(db_url, tmp_path)
    yield made
    made.stop()


def scrape(port: int) -> dict[str, dict[tuple[str, str], float]]:
    """The enqueue counters of /metrics, by sample name and (job, queue), zeros left out
    (a job's series start at zero once it is enqueued)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    found: dict[str, dict[tuple[str, str], float]] = {ENQUEUED: {}, DEDUPLICATED: {}}
    for family in prometheus_parser.text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in found and sample.value:
                key = (sample.labels["job"], sample.labels["queue"])
                found[sample.name][key] = found[sample.name].get(key, 0.0) + sample.value
    return found


def stored(db: str) -> dict[tuple[str, str], float]:
    """(job, queue) -> rows in the jobs table."""
    backend = open_backend(db, create=False)
    try:
        counts: Counter[tuple[str, str]] = Counter()
        for count in backend.stats():
            counts[(count.job, count.queue)] += count.count
        return {key: float(value) for key, value in counts.items()}
    finally:
        backend.close()


@pytest.mark.slow
def test_an_application_serving_its_own_metrics_counts_what_it_stored(app: App) -> None:
    port = app.serve("--mails", "7", "--reports", "5", "--again", "3")
    samples = scrape(port)
    assert samples[ENQUEUED] == stored(app.db) == {("mail", "default"): 7, ("report", "reports"): 5}
    assert samples[DEDUPLICATED] == {("mail", "default"): 3}


@pytest.mark.slow
def test_multiprocess_mode_sums_the_processes_that_enqueued(app: App, tmp_path: Path) -> None:
    directory = tmp_path / "prometheus"
    directory.mkdir()
    app.env["PROMETHEUS_MULTIPROC_DIR"] = str(directory)
    # One process enqueues and exits; the other enqueues and serves the sum, as one
    # gunicorn worker answers the scrape for all of them.
    app.run("--mails", "4", "--reports", "2", "--first", "100", "--again", "1")
    port = app.serve("--mails", "6", "--reports", "3", "--again", "2")
    samples = scrape(port)
    expected = {("mail", "default"): 10, ("report", "reports"): 5}
    assert samples[ENQUEUED] == stored(app.db) == expected
    assert samples[DEDUPLICATED] == {("mail", "default"): 3}


def test_enqueues_in_this_process_are_counted_in_the_default_registry(tmp_path: Path) -> None:
    from prometheus_client import REGISTRY

    def value(name: str, job: str) -> float:
        labels = {"job": job, "queue": "default" if job == "mail" else "reports"}
        return REGISTRY.get_sample_value(name, labels) or 0.0

    before = value(ENQUEUED, "mail"), value(DEDUPLICATED, "mail"), value(ENQUEUED, "report")
    backend = open_backend(f"sqlite:///{tmp_path / 'jobs.db'}")
    try:
        queue = Queue(backend, load_registry([SHEETS]))
        assert queue.enqueue("mail", {"i": 1}).created
        assert not queue.enqueue("mail", {"i": 1}).created
        queue.enqueue_many("report", [{"i": 1}, {"i": 2}])
    finally:
        backend.close()
    after = value(ENQUEUED, "mail"), value(DEDUPLICATED, "mail"), value(ENQUEUED, "report")
    assert [b - a for a, b in zip(before, after, strict=True)] == [1, 1, 2]


def test_the_enqueue_path_imports_prometheus_client_only_when_it_enqueues() -> None:
    script = (
        "import json, sys\n"
        "import jobdef\n"
        "first = 'prometheus_client' in sys.modules\n"
        "import jobdef.runtime.queue\n"
        "print(json.dumps([first, 'prometheus_client' in sys.modules]))"
    )
    env = os.environ | {"PYTHONPATH": str(SRC)}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == [False, False]


def test_without_prometheus_client_an_enqueue_stores_and_counts_nothing(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'jobs.db'}"
    script = (
        "import json, sys\n"
        "sys.modules['prometheus_client'] = None  # as if it were not installed\n"
        "from jobdef import connect, load_registry\n"
        "from jobdef.telemetry import enqueues\n"
        f"queue = connect({db!r}, load_registry([{str(SHEETS)!r}]))\n"
        "ids = [queue.enqueue('mail', {'i': 1}).id, queue.enqueue('mail', {'i': 1}).id]\n"
        "queue.enqueue_many('report', [{'i': 1}])\n"
        "print(json.dumps([ids[0] == ids[1], enqueues._state.counters is None]))"
    )
    env = os.environ | {"PYTHONPATH": str(SRC)}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == [True, True]
    assert stored(db) == {("mail", "default"): 1, ("report", "reports"): 1}


def test_names_taken_in_the_default_registry_leave_the_enqueue_uncounted_not_failed(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from jobdef.telemetry import enqueues

    enqueues.count("mail", "default", [])  # the counters exist in the default registry
    assert enqueues._state.counters is not None
    fresh = enqueues._State()  # as if this module were loaded a second time
    monkeypatch.setattr(enqueues, "_state", fresh)
    with caplog.at_level("WARNING", logger="jobdef.telemetry"):
        enqueues.count("mail", "default", [])
    assert fresh.looked
    assert fresh.counters is None
    assert "enqueue counters are not counted" in caplog.text


@pytest.mark.slow
def test_jobdef_enqueue_counts_only_where_a_scrape_can_see_it(app: App, tmp_path: Path) -> None:
    """`jobdef enqueue` exits at once: its default registry is never scraped, so it
    loads no prometheus_client; in multiprocess mode its count outlives it in a file."""
    from prometheus_client import CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector

    script = (
        "import json, sys\n"
        "from jobdef.cli import main\n"
        "code = main(sys.argv[1:])\n"
        "print(json.dumps([code, 'prometheus_client' in sys.modules]))"
    )
    open_backend(app.db).close()  # the store the command finds (it creates none)
    argv = ["enqueue", "mail", "--args", '{"i": 1}', "--db", app.db, "--sheets", str(SHEETS)]
    alone = subprocess.run(
        [sys.executable, "-c", script, *argv],
        env=app.env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert json.loads(alone.stdout.splitlines()[-1]) == [0, False], alone.stderr
    directory = tmp_path / "prometheus"
    directory.mkdir()
    env = app.env | {"PROMETHEUS_MULTIPROC_DIR": str(directory)}
    argv[3] = '{"i": 2}'
    counted = subprocess.run(
        [sys.executable, "-c", script, *argv], env=env, capture_output=True, text=True, check=False
    )
    assert json.loads(counted.stdout.splitlines()[-1]) == [0, True], counted.stderr
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(directory))
    labels = {"job": "mail", "queue": "default"}
    assert registry.get_sample_value(ENQUEUED, labels) == 1.0
    assert stored(app.db) == {("mail", "default"): 2}


def test_a_cli_enqueue_made_in_process_leaves_the_next_enqueues_counted(tmp_path: Path) -> None:
    """The CLI's choice not to count is scoped to its own enqueue: a program that calls
    `jobdef.cli.main` and then enqueues itself counts its own enqueues as usual."""
    db = f"sqlite:///{tmp_path / 'jobs.db'}"
    open_backend(db).close()
    script = (
        "import json, sys\n"
        "from jobdef import connect, load_registry\n"
        "from jobdef.cli import main\n"
        "from jobdef.telemetry import enqueues\n"
        f"argv = ['enqueue', 'mail', '--args', '{{\"i\": 1}}', '--db', {db!r}]\n"
        f"code = main([*argv, '--sheets', {str(SHEETS)!r}])\n"
        "after_cli = 'prometheus_client' in sys.modules\n"
        f"queue = connect({db!r}, load_registry([{str(SHEETS)!r}]))\n"
        "queue.enqueue('mail', {'i': 2})\n"
        "print(json.dumps([code, after_cli, enqueues._state.counters is not None]))"
    )
    env = os.environ | {"PYTHONPATH": str(SRC)}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout.splitlines()[-1]) == [0, False, True]
