"""WorkerSettings: one object, checked once, that `jobdef worker`, the embedded worker and
a program's own Worker build the same way; the worker reads its store's URL from the
backend it is given."""

from __future__ import annotations

import argparse
import dataclasses
import re

import pytest

from jobdef.backends.protocol import Backend
from jobdef.cli import build_parser
from jobdef.cli.worker_cmd import FLAGS, worker_settings
from jobdef.errors import UsageError
from jobdef.policy.registry import Registry
from jobdef.policy.values import freeze
from jobdef.runtime.embedded import EMBEDDED_SETTINGS, EmbeddedWorker
from jobdef.runtime.queue import Queue
from jobdef.runtime.settings import WorkerOptionError, WorkerSettings
from jobdef.runtime.worker import Worker
from jobdef.telemetry.observer import WorkerTelemetry

# Each bound, with the option it names and a phrase of what to write.
OUT_OF_BOUNDS = [
    ({"concurrency": 0}, "concurrency 0 is out of bounds: write a whole number from 1 to 256"),
    ({"concurrency": 257}, "concurrency 257 is out of bounds"),
    ({"concurrency": 2.5}, "concurrency 2.5 is out of bounds"),
    ({"concurrency": True}, "concurrency True is out of bounds"),
    ({"prefetch": 0}, "prefetch 0 is out of bounds: write a whole number from 1 to 10,000"),
    ({"prefetch": 10_001}, "prefetch 10001 is out of bounds"),
    (
        {"prefetch_mib": 0},
        "prefetch_mib 0 is out of bounds: write a whole number from 1 to 1,000,000 (64 by",
    ),
    (
        {"async_per_process": 0},
        "async_per_process 0 is out of bounds: write a whole number from 1 to 10,000",
    ),
    ({"lease_seconds": 0.5}, "lease_seconds 0.5s is too short"),
    ({"poll_interval": 0.0}, "poll_interval 0s is too short"),
    ({"grace": -1.0}, "grace -1s is negative: write 0s or more"),
    ({"queues": "reports"}, "queues 'reports' is one string: write a list of queue names"),
    ({"queues": ["reports", ""]}, "queues ['reports', ''] holds a name that is empty"),
    ({"queues": [" reports"]}, "holds a name that is empty, not a string, or padded"),
]


def _cli_args(*flags: str) -> argparse.Namespace:
    return build_parser("worker").parse_args(["worker", *flags])


@pytest.mark.parametrize(("given", "said"), OUT_OF_BOUNDS)
def test_a_setting_out_of_bounds_is_one_line_naming_the_option(given, said) -> None:
    with pytest.raises(WorkerOptionError) as caught:
        WorkerSettings(**given)
    [option] = given
    assert caught.value.option == option
    assert said in caught.value.message
    assert "\n" not in caught.value.message
    assert isinstance(caught.value, UsageError)
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (("--lease", "500ms"), "--lease 0.5s is too short"),
        (("--concurrency", "257"), "--concurrency 257 is out of bounds"),
        (("--poll", "0s"), "--poll 0s is too short"),
    ],
)
def test_the_command_names_its_flag_instead_of_the_field(flags, said) -> None:
    with pytest.raises(WorkerOptionError, match=said):
        worker_settings(_cli_args(*flags), "w1")


def test_the_command_without_flags_builds_the_default_settings() -> None:
    assert worker_settings(_cli_args(), "w1") == WorkerSettings(id="w1")


def test_the_command_builds_each_flag_into_its_setting() -> None:
    built = worker_settings(
        _cli_args(
            "--queues",
            "mail, reports,",
            "--concurrency",
            "3",
            "--burst",
            "--lease",
            "45s",
            "--poll",
            "50ms",
            "--grace",
            "2s",
            "--prefetch",
            "4",
            "--prefetch-mib",
            "16",
            "--async-per-process",
            "50",
        ),
        "w1",
    )
    assert built == WorkerSettings(
        queues=("mail", "reports"),
        concurrency=3,
        burst=True,
        lease_seconds=45.0,
        poll_interval=0.05,
        grace=2.0,
        prefetch=4,
        prefetch_mib=16,
        async_per_process=50,
        id="w1",
    )


def test_every_setting_the_command_sets_has_its_flag(capsys: pytest.CaptureFixture[str]) -> None:
    """A new field gets a flag (or is set otherwise, as child_setup and id are)."""
    fields = {f.name for f in dataclasses.fields(WorkerSettings)}
    assert set(FLAGS) == fields - {"child_setup", "id"}
    with pytest.raises(SystemExit):
        build_parser("worker").parse_args(["worker", "--help"])
    shown = set(re.findall(r"--[a-z-]+", capsys.readouterr().out))
    assert set(FLAGS.values()) <= shown


def test_queues_are_kept_as_a_tuple_and_none_or_empty_means_every_queue() -> None:
    assert WorkerSettings(queues=["mail", "reports"]).queues == ("mail", "reports")
    assert WorkerSettings(queues=[]).queues is None
    assert WorkerSettings().queues is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        WorkerSettings().concurrency = 2  # type: ignore[misc]


def test_the_embedded_worker_takes_the_same_settings(backend: Backend, registry: Registry) -> None:
    queue = Queue(backend, registry)
    assert EmbeddedWorker(queue).settings == EMBEDDED_SETTINGS == WorkerSettings(concurrency=2)
    mine = WorkerSettings(queues=["reports"], grace=3.0)
    assert EmbeddedWorker(queue, settings=mine).settings is mine


def test_a_handler_is_given_the_url_of_the_store_the_worker_runs_on(
    backend: Backend, registry: Registry
) -> None:
    policy = dataclasses.replace(registry.job("noop"), handler="rt_handlers:store_url")
    sheets = Registry(
        jobs=freeze({**registry.jobs, "noop": policy}),
        channels=registry.channels,
        queues=registry.queues,
    )
    job = Queue(backend, sheets).enqueue("noop", {"n": 1}).id
    Worker(backend, sheets, WorkerSettings(burst=True), services=[]).run()
    record = backend.get(job)
    assert record is not None
    assert record.state == "done"
    assert record.result == backend.url


def test_the_settings_id_is_the_one_the_workers_log_lines_carry(
    backend: Backend, registry: Registry
) -> None:
    telemetry = WorkerTelemetry(log_args=True)
    worker = Worker(backend, registry, WorkerSettings(id="w-7"), telemetry=telemetry, services=[])
    assert worker.id == telemetry.worker_id == "w-7"
    assert Worker(backend, registry, services=[]).id != Worker(backend, registry, services=[]).id
