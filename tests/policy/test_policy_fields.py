"""Every field of the schema's ``Job`` reaches every place that lists job fields.

policy/fields.py JOB_FIELDS is the one list of them, with each field's kind and
default. The builder (sheets/build.py), ``jobdef diff``'s comparison
(review/diff.py), the docs' origin table, ``jobdef explain``'s data, ``jobdef
new``'s scaffold, the resolved export (render/export/resolved.py), the duration
rule (JD201), the size rule (JD202) and the adapters' fidelity table all follow it.
A field added to the schema and forgotten in one of them fails here, with the place
to fix named.

Each check looks at what the place produces, not at its source: the builder
must turn a change of the field into a change of the policy, the diff must
report it, the docs and explain must show a row for it, the scaffold must
write a line for it, and the export must carry the change (or say it leaves
the field out).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from collections.abc import Mapping
from datetime import date
from typing import Any

import jsonschema
import pytest

from jobdef.adapters.fidelity import RULES, RUNTIMES
from jobdef.policy.fields import FIELDS, JOB_FIELDS
from jobdef.policy.model import JobPolicy
from jobdef.policy.registry import Registry
from jobdef.policy.values import EMPTY
from jobdef.render.docs import RunsAfter, render_docs
from jobdef.render.explain import explain_data
from jobdef.render.export.resolved import LEFT_OUT, resolved_job, schema_text
from jobdef.review.diff import diff_jobs
from jobdef.review.new_sheet import _STARTERS, render_sheet
from jobdef.sheets import field_paths
from jobdef.sheets.build import build_job
from jobdef.sheets.document import Document
from jobdef.sheets.rules import durations, sizes
from jobdef.sheets.schema_check import schema

# Two sheets that set every field, each value unlike the built-in default and
# unlike the other sheet's. The builder does not validate, so a value may be
# one the schema refuses (dead_letter.target has a single allowed value).
SHEET_A: dict[str, Any] = {
    "apiVersion": "jobdef/v1",
    "kind": "Job",
    "name": "job_a",
    "title": "Job A",
    "description": "Does A.",
    "owner": "team-a",
    "trigger": "nightly",
    "mode": "batch",
    "schedule": "0 3 * * *",
    "timezone": "Asia/Tokyo",
    "catch_up": "all",
    "handler": "app.jobs:a",
    "args": {"order_id": {"type": "integer", "required": False}},
    "rerun": "jobdef requeue --job job_a",
    "decision": {
        "time_triggered": True,
        "result_needed_at_once": False,
        "done_within_seconds": False,
        "calls_external_systems": True,
        "must_accept_when_external_down": True,
    },
    "queue": "reports",
    "priority": 5,
    "max_attempts": 4,
    "backoff": {
        "strategy": "exponential",
        "initial": "5s",
        "multiplier": 3,
        "max": "1m",
        "jitter": "equal",
        "delays": ["1s", "2s"],
    },
    "timeout": "20s",
    "deadline": "1h",
    "idempotency": {"key": "{order_id}:a", "dedupe_window": "1d"},
    "errors": {"retry": ["ConnectionError"], "fatal": ["ValueError"], "default": "fatal"},
    "on_reclaim": "fail",
    "dead_letter": {"target": "table_a"},
    "notify": {"channel": "ops", "events": ["dead"], "key_args": ["order_id"]},
    "retention": {"done": "7d", "dead": "until_resolved"},
    "limits": {"args_bytes": 65536},
    "result": {
        "store": True,
        "max_bytes": "16KiB",
        "retention": "5d",
        "schema": {"type": "object", "properties": {"total": {"type": "integer"}}},
        "public": ["total"],
        "notify": ["total"],
    },
    "runtime": {"celery": {"accept": ["priority"]}, "rq": {"accept": ["on_reclaim"]}},
}

SHEET_B: dict[str, Any] = {
    "apiVersion": "jobdef/v1",
    "kind": "Job",
    "name": "job_b",
    "title": "Job B",
    "description": "Does B.",
    "owner": "team-b",
    "trigger": "on signup",
    "mode": "async",
    "schedule": "*/5 * * * *",
    "timezone": "Europe/Paris",
    "catch_up": "none",
    "handler": "app.jobs:b",
    "args": {"user_id": {"type": "string"}},
    "rerun": "jobdef requeue --job job_b",
    "decision": {
        "time_triggered": False,
        "result_needed_at_once": True,
        "done_within_seconds": True,
        "calls_external_systems": False,
        "must_accept_when_external_down": False,
    },
    "queue": "mail",
    "priority": -5,
    "max_attempts": 7,
    "backoff": {
        "strategy": "list",
        "initial": "7s",
        "multiplier": 4,
        "max": "2m",
        "jitter": "decorrelated",
        "delays": ["3s"],
    },
    "timeout": "40s",
    "deadline": "3h",
    "idempotency": {"key": "{user_id}:b", "dedupe_window": "2d"},
    "errors": {"retry": ["TimeoutError"], "fatal": ["KeyError"], "default": "retry"},
    "on_reclaim": "retry",
    "dead_letter": {"target": "table_b"},
    "notify": {"channel": "mail", "events": ["retry"], "key_args": ["user_id"]},
    "retention": {"done": "3d", "dead": "30d"},
    "limits": {"args_bytes": 524288},
    "result": {
        "store": False,
        "max_bytes": 4096,
        "retention": "1d",
        "schema": {"type": "integer"},
        "public": True,
        "notify": [],
    },
    "runtime": {"celery": {"accept": ["timeout"]}, "rq": {"accept": ["priority", "timeout"]}},
}

_ENVELOPE = ("apiVersion", "kind")


def _paths(properties: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Leaf field paths: a property with named sub-properties opens one level (not ``args``)."""
    out: list[str] = []
    for key, node in properties.items():
        if not prefix and key in _ENVELOPE:
            continue
        path = f"{prefix}{key}"
        children = node.get("properties")
        out.extend(_paths(children, f"{path}.") if children else [path])
    return out


FIELD_PATHS = _paths(schema()["definitions"]["Job"]["properties"])


def _get(sheet: Mapping[str, Any], path: str) -> Any:
    value: Any = sheet
    for part in path.split("."):
        value = value[part]
    return value


def _with(sheet: Mapping[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(dict(sheet))
    *parents, leaf = path.split(".")
    node = out
    for part in parents:
        node = node[part]
    node[leaf] = copy.deepcopy(value)
    return out


def _job(sheet: Mapping[str, Any]) -> JobPolicy:
    return build_job(Document(data=sheet, file=f"{sheet['name']}.yaml"))


def _covers(shown: set[str], path: str) -> bool:
    """``path`` is shown as itself or through its children (``args`` as ``args.order_id``)."""
    return path in shown or any(s.startswith(path + ".") for s in shown)


def test_the_two_sample_sheets_set_every_field_differently() -> None:
    for path in FIELD_PATHS:
        try:
            a, b = _get(SHEET_A, path), _get(SHEET_B, path)
        except KeyError:
            pytest.fail(
                f"the schema's Job has {path!r} and the sample sheets here do not: add a value "
                "to SHEET_A and SHEET_B, then see it through the builder, diff, docs, explain "
                "and new"
            )
        assert a != b, path


@pytest.mark.parametrize("path", FIELD_PATHS)
def test_the_builder_reads_every_field(path: str) -> None:
    before = _job(SHEET_A)
    after = _job(_with(SHEET_A, path, _get(SHEET_B, path)))
    assert dataclasses.replace(before, origins=EMPTY) != dataclasses.replace(
        after, origins=EMPTY
    ), f"sheets/build.py build_job ignores {path}"


@pytest.mark.parametrize("path", FIELD_PATHS)
def test_diff_compares_every_field(path: str) -> None:
    change = diff_jobs(_job(SHEET_A), _job(_with(SHEET_A, path, _get(SHEET_B, path))))
    assert change is not None, f"review/diff.py does not compare {path}"
    compared = {c.path for c in change.fields} | ({"name"} if change.old_name else set())
    assert _covers(compared, path), f"review/diff.py reports {sorted(compared)}, not {path}"


def _registry() -> Registry:
    jobs = {p.name: p for p in (_job(SHEET_A), _job(SHEET_B))}
    return Registry(jobs=jobs, channels={}, queues={})


_ORIGIN_ROW = re.compile(r"^\| (\S+) \| .* \| (?:sheet|built-in default|Defaults) .*\|$")


def _origin_table_paths() -> set[str]:
    pages = render_docs(_registry(), runs_after=RunsAfter(date(2026, 1, 1)))
    shown: set[str] = set()
    for name in ("job_a", "job_b"):
        for line in pages[f"{name}.md"].splitlines():
            if match := _ORIGIN_ROW.match(line):
                shown.add(match.group(1).replace("\\_", "_"))
    return shown


@pytest.mark.parametrize("path", FIELD_PATHS)
def test_the_docs_origin_table_shows_every_field(path: str) -> None:
    shown = _origin_table_paths()
    assert _covers(shown, path), f"the docs' origin table (render/describe.py) lacks {path}"


@pytest.mark.parametrize("path", FIELD_PATHS)
def test_explain_data_holds_every_field(path: str) -> None:
    registry = _registry()
    shown: set[str] = set()
    for job in registry.jobs.values():
        data = explain_data(job, registry, now=0.0)
        shown |= {row["path"] for row in data["fields"]}
    assert _covers(shown, path), f"`jobdef explain` (render/explain.py) lacks {path}"


_KEY_LINE = re.compile(r"^( *)(?:# )?([a-z_][a-z0-9_]*):(?: |$)")


def _scaffold_paths() -> set[str]:
    """The field paths a new sheet writes, as lines or commented-out lines."""
    shown: set[str] = set()
    parents: list[str] = []  # the keys above the line, one per two spaces of indent
    for line in render_sheet("new_job").splitlines():
        if match := _KEY_LINE.match(line):
            indent, key = match.groups()
            depth = len(indent) // 2
            parents = [*parents[:depth], key]
            if len(parents) == depth + 1:
                shown.add(".".join(parents))
    return shown


@pytest.mark.parametrize("path", FIELD_PATHS)
def test_the_new_sheet_writes_every_field(path: str) -> None:
    shown = _scaffold_paths()
    assert _covers(shown, path), f"`jobdef new` (review/new_sheet.py) does not write {path}"


def test_the_field_table_lists_exactly_the_schema_fields() -> None:
    listed = [field.path for field in JOB_FIELDS]
    assert len(listed) == len(set(listed))
    assert set(listed) == set(FIELD_PATHS), (
        "policy/fields.py JOB_FIELDS differs from the schema's Job: "
        f"missing {sorted(set(FIELD_PATHS) - set(listed))}, "
        f"extra {sorted(set(listed) - set(FIELD_PATHS))}"
    )


def _groups(paths: list[str]) -> set[str]:
    """The groups above the fields: ``backoff``, ``runtime`` and ``runtime.celery``..."""
    return {path.rsplit(".", i)[0] for path in paths for i in range(1, path.count(".") + 1)}


def test_the_new_sheet_has_words_for_every_field_and_group() -> None:
    wanted = {"apiVersion", "kind", *FIELD_PATHS, *_groups(FIELD_PATHS)}
    assert set(_STARTERS) == wanted, (
        "review/new_sheet.py _STARTERS differs from the schema's Job: "
        f"missing {sorted(wanted - set(_STARTERS))}, extra {sorted(set(_STARTERS) - wanted)}"
    )


_MISSING = object()


def _exported(data: Mapping[str, Any], path: str) -> Any:
    value: Any = data
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return _MISSING
        value = value[part]
    return value


@pytest.mark.parametrize("path", FIELD_PATHS)
def test_the_export_carries_every_field_it_does_not_leave_out(path: str) -> None:
    before = resolved_job(_job(SHEET_A), _registry(), None)
    after = resolved_job(_job(_with(SHEET_A, path, _get(SHEET_B, path))), _registry(), None)
    if path.partition(".")[0] in LEFT_OUT:
        assert _exported(before, path) is _MISSING, f"{path} is exported and in LEFT_OUT"
        return
    assert _exported(before, path) is not _MISSING, (
        f"render/export/resolved.py does not export {path}; export it (and add it to "
        "schema/jobdef-export-v1.schema.json) or name it in LEFT_OUT"
    )
    assert _exported(before, path) != _exported(after, path), (
        f"the export of {path} does not follow the sheet"
    )


@pytest.mark.parametrize("sheet", [SHEET_A, SHEET_B], ids=["a", "b"])
def test_the_export_of_every_field_is_valid_against_the_export_schema(
    sheet: dict[str, Any],
) -> None:
    exported = resolved_job(_job(_with(sheet, "dead_letter.target", "table")), _registry(), None)
    schema_of_job = json.loads(schema_text())
    validator = jsonschema.Draft7Validator({**schema_of_job, "$ref": "#/definitions/Job"})
    errors = [f"{'.'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(exported)]
    assert errors == [], "render/export/schema/jobdef-export-v1.schema.json does not describe it"


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_the_fidelity_table_has_a_verdict_on_every_field(runtime: str) -> None:
    wanted = {path for path in FIELD_PATHS if not path.startswith("runtime.")}
    ruled = set(RULES[runtime])  # type: ignore[index]
    assert ruled == wanted, (
        f"adapters/fidelity.py has no {runtime} verdict on {sorted(wanted - ruled)}"
        f"{f', and one on fields no sheet has: {sorted(ruled - wanted)}' if ruled - wanted else ''}"
    )


def _schema_node(path: str) -> Mapping[str, Any]:
    node: Mapping[str, Any] = schema()["definitions"]["Job"]
    for part in path.split("."):
        node = node["properties"][part]
    return node


def _kinds_of(node: Mapping[str, Any]) -> set[str]:
    """The kinds a field whose schema is ``node`` may be declared as."""
    text = json.dumps(node)
    if node.get("type") == ["boolean", "array"]:
        return {"selection"}
    if node.get("type") == "array":
        return {"durations"} if "#/definitions/duration" in text else {"names", "errors"}
    if "#/definitions/duration" in text:
        return {"duration"}
    if "#/definitions/bytes" in text:
        return {"bytes"}
    return {
        "integer": {"integer"},
        "number": {"number"},
        "boolean": {"answer", "flag"},
        "object": {"args", "schema"},
    }.get(node.get("type", "string"), {"text"})


@pytest.mark.parametrize("path", FIELD_PATHS)
def test_each_field_is_declared_with_the_kind_its_schema_gives(path: str) -> None:
    kinds = _kinds_of(_schema_node(path))
    assert FIELDS[path].kind in kinds, (
        f"policy/fields.py declares {path} as {FIELDS[path].kind!r}; the schema makes it "
        f"{' or '.join(sorted(kinds))}, which the builder and the duration rule read it as"
    )


@pytest.mark.parametrize(
    "path", [p for p in FIELD_PATHS if FIELDS[p].kind in ("duration", "durations")]
)
def test_the_duration_rule_checks_every_duration_field(path: str) -> None:
    bare = ["30"] if FIELDS[path].kind == "durations" else "30"
    doc = Document(data=_with(SHEET_A, path, bare), file="a.yaml")
    flagged = {found for found, _ in durations.check_document(doc)}
    assert any(".".join(map(str, found)).startswith(path) for found in flagged), (
        f"JD201 (sheets/rules/durations.py) does not check {path}"
    )


@pytest.mark.parametrize("path", [p for p in FIELD_PATHS if FIELDS[p].kind == "bytes"])
def test_the_size_rule_checks_every_size_field(path: str) -> None:
    doc = Document(data=_with(SHEET_A, path, "64KB"), file="a.yaml")
    flagged = {found for found, _ in sizes.check_document(doc)}
    assert tuple(path.split(".")) in flagged, f"JD202 (sheets/rules/sizes.py) does not check {path}"


def test_every_group_a_defaults_document_sets_merges_field_by_field() -> None:
    defaults = schema()["definitions"]["Defaults"]["properties"]
    groups = {name for name, node in defaults.items() if "properties" in node}
    # `runtime` merges too, one entry per runtime, its accept lists added together.
    assert {*field_paths.MERGED_MAPPINGS, field_paths.RUNTIME} == groups, (
        "sheets/field_paths.py MERGED_MAPPINGS (and RUNTIME) should list the groups the "
        f"schema's Defaults has: {sorted(groups)}"
    )
