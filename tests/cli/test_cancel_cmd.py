"""`jobdef cancel ID --note TEXT`: the note is kept on the job, bounded."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobdef.backends import open_backend
from jobdef.backends.records import NewJob
from jobdef.cli import main
from jobdef.cli.cancel_cmd import MAX_NOTE


def test_a_huge_note_is_kept_cut_to_its_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    backend = open_backend(url)
    [stored] = backend.enqueue([NewJob("mail", {"i": 1}, "default")])
    assert main(["cancel", str(stored.job_id), "--note", "x" * 1_000_000, "--db", url]) == 0
    assert capsys.readouterr().out == f"job {stored.job_id} cancelled\n"
    record = backend.get(stored.job_id)
    backend.close()
    assert record is not None
    assert record.state == "cancelled"
    assert record.note == "cancelled with jobdef cancel: " + "x" * MAX_NOTE
