"""``jobdef export``: the resolved policy of each job, as JSON or in a runtime's own vocabulary.

One module per format, each a pure function of the frozen policies
(``convert(job, registry, notes)``):

- :mod:`~jobdef.render.export.resolved`: ``json``, the resolved policy (schema
  ``schema/jobdef-export-v1.schema.json``);
- :mod:`~jobdef.render.export.sqs`: AWS SQS ``CreateQueue`` parameters;
- :mod:`~jobdef.render.export.cloud_tasks`: a Google Cloud Tasks ``Queue``;
- :mod:`~jobdef.render.export.step_functions`: an Amazon States Language state machine;
- :mod:`~jobdef.render.export.temporal`: Temporal activity options and retry policy;
- :mod:`~jobdef.render.export.kubernetes`: a Kubernetes ``Job`` or ``CronJob``.

What a format cannot express is a :class:`~jobdef.render.export.common.Note`,
returned beside the text (the CLI prints each on stderr) and written into the
output where the format has room: a ``notes`` list per job in the JSON formats,
the Task's ``Comment`` in ASL, annotations and comments in Kubernetes YAML.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobdef.errors import UsageError
from jobdef.policy.model import JobPolicy
from jobdef.policy.registry import Registry
from jobdef.redact import sensitive_names
from jobdef.render.escape import visible
from jobdef.render.export import (
    cloud_tasks,
    kubernetes,
    sqs,
    step_functions,
    step_functions_flow,
    temporal,
)
from jobdef.render.export.common import Note, Notes
from jobdef.render.export.resolved import resolved_document
from jobdef.render.export.resolved import schema_text as schema_text  # the CLI prints it

FORMATS = ("json", "sqs", "cloud-tasks", "step-functions", "temporal", "kubernetes")
# The formats that export a workflow (a flow of jobs) as well as jobs.
FLOW_FORMATS = ("step-functions",)

Converter = Callable[[JobPolicy, Registry, Notes], dict[str, Any]]
_CONVERTERS: dict[str, Converter] = {
    "sqs": sqs.convert,
    "cloud-tasks": cloud_tasks.convert,
    "step-functions": step_functions.convert,
    "temporal": temporal.convert,
}


# The formats whose resource names are not the jobs' own (DNS labels: no "_"): each
# refuses an export in which two jobs would share one.
_NAMED_APART: dict[str, Callable[[Registry], None]] = {
    "kubernetes": kubernetes.check_names,
    "cloud-tasks": cloud_tasks.check_names,
}


# Where each runtime shows what a job carries, and what to pass instead, for the note on
# a sensitive arg (the JSON export keeps `sensitive: true` in each arg's schema instead).
_BY_REFERENCE = "pass a reference to the secret (its name in a secret store), not the value"
_SHOWN_BY = {
    "sqs": f"anyone who may receive the queue's messages reads their bodies; {_BY_REFERENCE}",
    "cloud-tasks": "the Cloud Console and the target's request logs show a task's body; "
    + _BY_REFERENCE,
    "step-functions": f"an execution's input and history show it; {_BY_REFERENCE}",
    "temporal": "the workflow history shows activity inputs (unless a codec encrypts them); "
    + _BY_REFERENCE,
    "kubernetes": "a manifest's env values are plain text; take it from a Secret "
    "(env valueFrom.secretKeyRef), never write it in the manifest",
}


def _note_sensitive(job: JobPolicy, fmt: str, notes: Notes) -> None:
    """A note per sensitive arg: jobdef's displays hide it, the runtime's do not."""
    names = job.args_schema.get("properties", {})
    for name in sorted(sensitive_names(job, names)):
        notes.add(f"args.{name}", f"sensitive in the sheet, but {_SHOWN_BY[fmt]}")


@dataclass(frozen=True)
class Export:
    """An export's text and the notes of every field it could not express."""

    text: str
    notes: tuple[Note, ...]


def _dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False) + "\n"


def export(
    registry: Registry,
    fmt: str,
    names: Sequence[str] = (),
    *,
    base: str | Path | None = None,
) -> Export:
    """The jobs ``names`` (all, by name, when empty) in format ``fmt``; a workflow named
    among them is exported too, as one state machine (``step-functions`` only)."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")
    for name in names:
        registry.known(name)
    flows = [registry.workflow(n) for n in dict.fromkeys(names) if n in registry.workflows]
    if flows and fmt not in FLOW_FORMATS:
        raise UsageError(
            f"{flows[0].name!r} is a workflow, and only --format {', '.join(FLOW_FORMATS)} "
            f"exports a workflow; --format {fmt} takes jobs (export each step's job by name)"
        )
    job_names = [n for n in dict.fromkeys(names) if n not in registry.workflows]
    jobs = [registry.job(name) for name in job_names] if names else list(registry)
    if fmt in _NAMED_APART:
        _NAMED_APART[fmt](registry)
    if fmt == "json":
        return Export(_dumps(resolved_document(jobs, registry, base)), ())
    collected: list[Note] = []
    if fmt == "kubernetes":
        manifests = []
        for job in jobs:
            notes = Notes(job.name)
            _note_sensitive(job, fmt, notes)
            manifest = kubernetes.convert(job, registry, notes)
            kubernetes.annotate(manifest, notes)
            manifests.append((manifest, _visible(notes)))
            collected.extend(notes.items)
        return Export(kubernetes.render_yaml(manifests), tuple(collected))
    out: dict[str, Any] = {"format": fmt, "jobs": {}}
    for job in jobs:
        notes = Notes(job.name)
        _note_sensitive(job, fmt, notes)
        entry = _CONVERTERS[fmt](job, registry, notes)
        entry["notes"] = notes.texts()
        out["jobs"][job.name] = entry
        collected.extend(notes.items)
    for flow in flows:
        notes = Notes(flow.name)
        entry = step_functions_flow.convert_flow(flow, registry, notes)
        entry["notes"] = notes.texts()
        out.setdefault("workflows", {})[flow.name] = entry
        collected.extend(notes.items)
    return Export(_dumps(out), tuple(collected))


def _visible(notes: Notes) -> Notes:
    """The notes with control characters escaped, for a comment line that must stay one line."""
    return Notes(notes.job, [Note(n.job, n.field, visible(n.text)) for n in notes.items])
