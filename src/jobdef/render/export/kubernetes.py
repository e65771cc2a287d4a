"""``jobdef export --format kubernetes``: a ``batch/v1`` Job (async) or CronJob (batch) per job.

- ``max_attempts`` -> ``backoffLimit`` (``max_attempts - 1``: Kubernetes counts
  retries), with ``restartPolicy: Never`` so that each attempt is a new pod;
- ``timeout`` -> the pod's ``activeDeadlineSeconds`` (each attempt's pod);
- ``deadline`` -> the Job's ``activeDeadlineSeconds`` (all attempts, from the
  Job's start);
- ``retention.done`` -> ``ttlSecondsAfterFinished``;
- ``schedule`` and ``timezone`` -> the CronJob's ``schedule`` and ``timeZone``.

Each note is a ``jobdef.dev/note.<field>`` annotation and a ``# note:`` comment
above its document. The container's image is ``${IMAGE}``, to be filled in.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from jobdef.policy.model import JobPolicy
from jobdef.policy.registry import Registry
from jobdef.render.describe import retention
from jobdef.render.export.common import (
    Notes,
    bounded_name,
    clamp_count,
    distinct_names,
    note_fatal_timeout,
    note_result,
    queue_policy,
    retries,
    sheet_waits,
    waits_text,
    whole_seconds,
)

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
JOB_NAME_MAX = 63  # the Job's name becomes a pod label value
CRONJOB_NAME_MAX = 52  # the CronJob controller appends an 11-character suffix
ANNOTATION_PREFIX = "jobdef.dev/"
_KEY_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def _manifest_name(job: JobPolicy, notes: Notes) -> str:
    limit = CRONJOB_NAME_MAX if job.mode == "batch" else JOB_NAME_MAX
    return bounded_name(job.name, limit, notes, "a Kubernetes name", dns=True)


def check_names(registry: Registry) -> None:
    """Refuse an export in which two jobs of ``registry`` would be one manifest's name."""
    distinct_names(
        registry, lambda job: _manifest_name(job, Notes(job.name)), "the Kubernetes name"
    )


def _job_spec(job: JobPolicy, notes: Notes, name: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "backoffLimit": clamp_count(
            retries(job), 0, INT32_MAX, notes, "max_attempts", target="backoffLimit (retries)"
        )
    }
    if job.deadline is not None:
        spec["activeDeadlineSeconds"] = whole_seconds(
            job.deadline, 1, INT64_MAX, notes, "deadline", target="activeDeadlineSeconds"
        )
    if job.retention.done is not None:
        spec["ttlSecondsAfterFinished"] = whole_seconds(
            job.retention.done,
            0,
            INT32_MAX,
            notes,
            "retention.done",
            target="ttlSecondsAfterFinished",
        )
    spec["template"] = {
        "metadata": {"labels": {"app.kubernetes.io/name": name}},
        "spec": {
            "restartPolicy": "Never",
            "activeDeadlineSeconds": whole_seconds(
                job.timeout,
                1,
                INT64_MAX,
                notes,
                "timeout",
                target="the pod's activeDeadlineSeconds",
            ),
            "containers": [
                {
                    "name": "job",
                    "image": "${IMAGE}",
                    "env": [
                        {"name": "JOBDEF_JOB", "value": job.name},
                        {"name": "JOBDEF_HANDLER", "value": job.handler},
                    ],
                }
            ],
        },
    }
    return spec


def convert(job: JobPolicy, registry: Registry, notes: Notes) -> dict[str, Any]:
    """The manifest of ``job``; its notes become annotations when the caller adds them."""
    name = _manifest_name(job, notes)
    spec = _job_spec(job, notes, name)
    metadata: dict[str, Any] = {
        "name": name,
        "labels": {"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "jobdef"},
        "annotations": {ANNOTATION_PREFIX + "job": job.name},
    }
    _notes(job, registry, notes)
    if job.mode == "batch" and job.schedule:
        return {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": metadata,
            "spec": {
                "schedule": job.schedule,
                "timeZone": job.timezone,
                "jobTemplate": {"spec": spec},
            },
        }
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": spec}


def annotate(manifest: dict[str, Any], notes: Notes) -> None:
    """Add each note as a ``jobdef.dev/note.<field>`` annotation (notes of a field joined)."""
    annotations: dict[str, str] = manifest["metadata"]["annotations"]
    for note in notes.items:
        key = ANNOTATION_PREFIX + "note." + _KEY_NAME.sub("-", note.field).strip("._-")[:58]
        annotations[key] = f"{annotations[key]} {note.text}" if key in annotations else note.text


def _notes(job: JobPolicy, registry: Registry, notes: Notes) -> None:
    waits = sheet_waits(job)
    if waits:
        notes.add(
            "backoff",
            "Kubernetes waits 10s, 20s, 40s, ... (at most 6m) before recreating a failed pod; "
            f"the sheet's waits ({waits_text(waits)}) cannot be set",
        )
    if job.errors.retry or job.errors.fatal or job.errors.default == "fatal":
        notes.add(
            "errors",
            "Kubernetes sees exit codes, not error classes: exit with a code that a "
            "podFailurePolicy rule (action FailJob) matches for fatal errors",
        )
    note_fatal_timeout(
        job, notes, "a pod past its activeDeadlineSeconds counts toward backoffLimit and is retried"
    )
    if job.mode == "async":
        notes.add(
            "mode",
            "a Job runs once: create one from this manifest per enqueue, with the args "
            "in the container's environment",
        )
    elif job.catch_up != "latest":
        notes.add(
            "catch_up",
            f"{job.catch_up} cannot be expressed: a CronJob starts the latest missed run "
            "(within startingDeadlineSeconds)",
        )
    if job.retention.done is None or job.retention.dead != job.retention.done:
        notes.add(
            "retention",
            "one ttlSecondsAfterFinished covers done and failed Jobs alike; the sheet keeps "
            f"{retention(job.retention)}",
        )
    if job.idempotency.key:
        notes.add(
            "idempotency.key",
            "name each Job from the key: Kubernetes refuses a second Job of the same name "
            "while the first exists",
        )
    if job.priority != 0:
        notes.add("priority", f"use a priorityClassName for priority {job.priority}")
    queue = queue_policy(job, registry)
    if queue is not None and (queue.concurrency is not None or queue.rate is not None):
        notes.add(
            "queue",
            f"the limits of queue {job.queue} are not Job fields; a ResourceQuota on the "
            "namespace can bound the pods",
        )
    if job.notify.events:
        notes.add("notify", "Kubernetes sends no notification; alert on the JobFailed condition")
    if job.result.store:
        note_result(
            job,
            notes,
            "a Job keeps no return value (a container's termination message holds 4 KiB at "
            "most): the container stores it itself, within the sheet's bounds",
        )


def render_yaml(manifests: list[tuple[dict[str, Any], Notes]]) -> str:
    """A YAML stream of the manifests, each led by a ``# note:`` comment per note."""
    docs: list[str] = []
    for manifest, notes in manifests:
        head = [
            f"# jobdef export: {manifest['metadata']['annotations'][ANNOTATION_PREFIX + 'job']}"
        ]
        head += [f"# note: {text}" for text in notes.texts()]
        body = yaml.safe_dump(manifest, sort_keys=False, allow_unicode=True, width=1000)
        docs.append("\n".join(head) + "\n" + body)
    return "---\n".join(docs)
