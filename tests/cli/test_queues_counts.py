"""`jobdef queues` says when a queue's depth is only "at least": the store counts
queued jobs up to a cap, so a huge backlog costs no more to list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobdef.backends import open_backend, verbs
from jobdef.backends.records import NewJob
from jobdef.cli import main


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    backend = open_backend(url)
    backend.enqueue([NewJob(job="j", args={"n": i}, queue="deep") for i in range(5)])
    backend.enqueue([NewJob(job="j", args={"n": i}, queue="shallow") for i in range(2)])
    backend.close()
    return url


def test_a_depth_at_the_cap_reads_as_at_least(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(verbs, "QUEUED_COUNT_CAP", 4)
    no_sheets = str(tmp_path / "none")
    assert main(["queues", "--db", db, "--sheets", no_sheets]) == 0
    rows = {line.split()[0]: line.split()[1:] for line in capsys.readouterr().out.splitlines()}
    assert rows["deep"][:2] == ["active", "4+"]
    assert rows["shallow"][:2] == ["active", "2"]
    assert main(["queues", "--db", db, "--sheets", no_sheets, "--format", "json"]) == 0
    facts = {f["queue"]: f for f in json.loads(capsys.readouterr().out)["queues"]}
    assert (facts["deep"]["queued"], facts["deep"]["queued_at_least"]) == (4, True)
    assert (facts["shallow"]["queued"], facts["shallow"]["queued_at_least"]) == (2, False)
