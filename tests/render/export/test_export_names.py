"""Resource names of the formats that cannot hold ``_`` (Kubernetes, Cloud Tasks): jobs
whose names differ only in their underscores stay apart, the same in an export of one
job as in an export of all, and an export in which two would still meet is refused."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml
from export_cases import check_cloud_tasks, check_kubernetes

from jobdef.cli import main
from jobdef.errors import UsageError
from jobdef.render.export import export
from jobdef.render.export.cloud_tasks import QUEUE_PREFIX

NEAR = ("send_mail", "send__mail", "send_mail_")
HASH = hashlib.sha256(b"send_mail_").hexdigest()[:8]
EXPECTED = {"send_mail": "send-mail", "send__mail": "send--mail", "send_mail_": f"send-mail-{HASH}"}


def kubernetes_names(registry, *names: str) -> dict[str, str]:
    manifests = yaml.safe_load_all(export(registry, "kubernetes", names).text)
    return {
        m["metadata"]["annotations"]["jobdef.dev/job"]: m["metadata"]["name"] for m in manifests
    }


def cloud_tasks_names(registry, *names: str) -> dict[str, str]:
    jobs = json.loads(export(registry, "cloud-tasks", names).text)["jobs"]
    return {job: entry["queue"]["name"].removeprefix(QUEUE_PREFIX) for job, entry in jobs.items()}


def test_names_that_differ_only_in_underscores_stay_apart(sheets) -> None:
    registry = sheets(dict.fromkeys(NEAR, "max_attempts: 2\n"))
    assert kubernetes_names(registry) == EXPECTED
    assert cloud_tasks_names(registry) == EXPECTED
    for manifest in yaml.safe_load_all(export(registry, "kubernetes").text):
        check_kubernetes(manifest)
    for entry in json.loads(export(registry, "cloud-tasks").text)["jobs"].values():
        check_cloud_tasks(entry)
    # The one whose name could not be written as it is says so.
    notes = [note.line() for note in export(registry, "kubernetes").notes if note.field == "name"]
    assert notes == [
        f"send_mail_: name: a Kubernetes name cannot begin or end with '-' (here an '_'); "
        f"named send-mail-{HASH}, the hash of the whole name keeping it apart from send-mail"
    ]


def test_an_export_of_one_job_names_it_as_an_export_of_all(sheets) -> None:
    registry = sheets(dict.fromkeys(NEAR, "max_attempts: 2\n"))
    for job in NEAR:
        assert kubernetes_names(registry, job) == {job: EXPECTED[job]}
        assert cloud_tasks_names(registry, job) == {job: EXPECTED[job]}


@pytest.mark.parametrize(
    ("fmt", "target"),
    [("kubernetes", "the Kubernetes name"), ("cloud-tasks", "the Cloud Tasks queue")],
)
def test_two_jobs_that_would_still_share_a_name_are_refused(sheets, fmt, target) -> None:
    # send_mail_ is written with the hash of its name, which a job may carry already.
    registry = sheets(dict.fromkeys(("send_mail_", f"send_mail_{HASH}"), "max_attempts: 2\n"))
    with pytest.raises(UsageError) as refused:
        export(registry, fmt, ["send_mail_"])  # refused even when only one is exported
    assert str(refused.value) == (
        f"jobs 'send_mail_' and 'send_mail_{HASH}' would both be {target} "
        f"'send-mail-{HASH}', and one would replace the other; rename one of them in its sheet"
    )


def test_the_command_refuses_them_in_one_line(sheets, capsys, tmp_path: Path) -> None:
    sheets(dict.fromkeys(("send_mail_", f"send_mail_{HASH}"), "max_attempts: 2\n"))
    folder = tmp_path / "jobdefs"
    assert main(["export", "--format", "kubernetes", "--sheets", str(folder)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        f"jobdef export: error: jobs 'send_mail_' and 'send_mail_{HASH}' would both be the "
        f"Kubernetes name 'send-mail-{HASH}', and one would replace the other; rename one "
        "of them in its sheet"
    ]
