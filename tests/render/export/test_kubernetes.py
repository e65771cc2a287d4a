"""``--format kubernetes``: Job and CronJob manifests valid for the Kubernetes API schemas
(kubernetes-validate, strict: no unknown field), notes as annotations and comments."""

from __future__ import annotations

import yaml
from export_cases import check_kubernetes

from jobdef.render.export import export


def _manifests(registry, *names):
    return list(yaml.safe_load_all(export(registry, "kubernetes", names).text))


def test_every_example_sheet_is_a_valid_job_or_cronjob(examples):
    manifests = _manifests(examples)
    assert len(manifests) == len(examples)
    for manifest in manifests:
        check_kubernetes(manifest)


def test_the_mail_job_maps_field_by_field(examples):
    (job,) = _manifests(examples, "send_reservation_mail")
    assert job["kind"] == "Job"
    spec = job["spec"]
    assert spec["backoffLimit"] == 4  # Kubernetes counts retries
    assert spec["activeDeadlineSeconds"] == 7200  # the deadline, over all attempts
    assert spec["ttlSecondsAfterFinished"] == 30 * 86400  # retention.done
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never"  # each attempt a new pod
    assert pod["activeDeadlineSeconds"] == 30  # one attempt's timeout
    assert "jobdef.dev/note.backoff" in job["metadata"]["annotations"]


def test_a_batch_job_is_a_cronjob_in_its_time_zone(examples):
    (cron,) = _manifests(examples, "nightly_report")
    assert cron["kind"] == "CronJob"
    assert (cron["spec"]["schedule"], cron["spec"]["timeZone"]) == ("0 3 * * *", "Asia/Tokyo")
    assert cron["spec"]["jobTemplate"]["spec"]["backoffLimit"] == 2


def test_each_note_is_a_comment_above_its_document(examples):
    text = export(examples, "kubernetes", ["export_csv"]).text
    (manifest,) = yaml.safe_load_all(text)
    comments = [
        line[len("# note: ") :] for line in text.splitlines() if line.startswith("# note: ")
    ]
    notes = [k for k in manifest["metadata"]["annotations"] if k.startswith("jobdef.dev/note.")]
    assert comments
    assert len(notes) == len({c.partition(":")[0] for c in comments})


def test_a_long_name_fits_a_cronjob_name(sheets):
    name = "n" * 70
    registry = sheets({name: 'mode: batch\nschedule: "0 * * * *"\nmax_attempts: 2\n'})
    (cron,) = _manifests(registry)
    assert len(cron["metadata"]["name"]) <= 52
    check_kubernetes(cron)
