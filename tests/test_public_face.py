"""The public face: `from jobdef import ...` and a cheap `import jobdef`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import jobdef
from jobdef.runtime.queue import Queue

HEAVY = ("jinja2", "jsonschema", "psycopg", "yaml", "sqlite3")


def _modules_after(statement: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``statement``."""
    script = f"{statement}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_import_jobdef_loads_nothing_heavy() -> None:
    modules = _modules_after("import jobdef")
    loaded = sorted(m for m in modules if m.split(".")[0] in HEAVY)
    assert loaded == []
    assert sorted(m for m in modules if m.startswith("jobdef.")) == []


def test_the_public_names_are_the_ones_of_their_homes() -> None:
    from jobdef import Context, Receipt, Worker, WorkerSettings, connect, first_run, load_registry
    from jobdef.backends.records import Receipt as BackendReceipt
    from jobdef.runtime.context import Context as RuntimeContext
    from jobdef.runtime.idempotency import first_run as runtime_first_run
    from jobdef.runtime.queue import connect as runtime_connect
    from jobdef.runtime.settings import WorkerSettings as RuntimeWorkerSettings
    from jobdef.runtime.worker import Worker as RuntimeWorker
    from jobdef.sheets.pipeline import load_registry as pipeline_load_registry

    assert load_registry is pipeline_load_registry
    assert connect is runtime_connect
    assert Worker is RuntimeWorker
    assert WorkerSettings is RuntimeWorkerSettings
    assert Context is RuntimeContext
    assert first_run is runtime_first_run
    assert Receipt is BackendReceipt


def test_load_registry_and_connect_from_jobdef_make_a_queue(
    example_sheets: Path, tmp_path: Path
) -> None:
    from jobdef import connect, load_registry

    registry = load_registry([example_sheets])
    queue = connect(f"sqlite:///{tmp_path / 'jobs.db'}", registry)
    try:
        assert isinstance(queue, Queue)
        assert "send_reservation_mail" in registry.jobs
    finally:
        queue.close()


def test_every_name_in_all_resolves_and_others_do_not() -> None:
    for name in jobdef.__all__:
        assert getattr(jobdef, name) is not None
    assert set(jobdef.__all__) <= set(dir(jobdef))
    with pytest.raises(AttributeError, match="no attribute 'Queue'"):
        _ = jobdef.Queue
