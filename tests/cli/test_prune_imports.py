"""`jobdef prune` loads only the retention service it runs, not the worker's other
maintenance (scheduler, outbox sender, lease reclaimer), and still prunes."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobdef.backends import open_backend
from jobdef.backends.records import NewJob

UNUSED = (
    "jobdef.runtime.maintenance.scheduler",
    "jobdef.runtime.maintenance.outbox",
    "jobdef.runtime.maintenance.reclaim",
    "jobdef.notify.sender",
)

# Runs the command in a fresh interpreter and prints the modules it loaded, as JSON,
# on the last line of stdout.
WRAPPER = """
import json, sys
from jobdef.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


@pytest.mark.slow
def test_prune_imports_only_retention_and_deletes_past_retention(
    tmp_path: Path, example_sheets: Path
) -> None:
    path = tmp_path / "jobs.db"
    url = f"sqlite:///{path}"
    backend = open_backend(url)
    old, recent = backend.enqueue(
        [
            NewJob(job="send_reservation_mail", args={"reservation_id": n}, queue="mail")
            for n in (1, 2)
        ]
    )
    backend.close()
    now = time.time()
    with sqlite3.connect(path) as conn:  # done 60 and 1 days ago; the sheets keep 30
        for record, days in ((old, 60), (recent, 1)):
            conn.execute(
                "UPDATE jobdef_jobs SET state = 'done', attempt = 1, finished_at = ? WHERE id = ?",
                (now - days * 86400, record.id),
            )
    conn.close()
    result = subprocess.run(
        [sys.executable, "-c", WRAPPER, "prune", "--db", url, "--sheets", str(example_sheets)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    *printed, last = result.stdout.splitlines()
    report = json.loads(last)
    assert report["code"] == 0
    assert printed == [
        "deleted 1 finished job past retention",
        "deleted 0 ended flows with no step left",
    ]
    assert "jobdef.runtime.maintenance.retention" in report["modules"]
    assert [name for name in UNUSED if name in report["modules"]] == []
    with sqlite3.connect(path) as conn:
        left = [row[0] for row in conn.execute("SELECT id FROM jobdef_jobs ORDER BY id")]
    conn.close()
    assert left == [recent.id]
