"""A sheet's ``result:`` becomes one frozen ResultPolicy: sizes in bytes, a retention that
follows ``retention.done`` unless the sheet says otherwise, Defaults merged field by field,
the schema frozen as written; and an arg's ``public: true`` decides what a receipt shows."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

import pytest

from jobdef.policy.fields import declares_result
from jobdef.policy.model import JobPolicy, ResultPolicy
from jobdef.policy.sizes import format_size, parse_size, parse_size_or_none
from jobdef.policy.values import DEFAULT_RESULT_BYTES
from jobdef.redact import public_arg, public_names
from jobdef.sheets.build import build_job
from jobdef.sheets.document import Document
from jobdef.sheets.pipeline import load_registry

DEFAULTS = """\
apiVersion: jobdef/v1
kind: Defaults
errors: {default: retry}
retention: {done: 30d}
result: {max_bytes: 16KiB}
"""


def _jobs(tmp_path: Path, body: str, defaults: str = DEFAULTS) -> dict[str, JobPolicy]:
    (tmp_path / "defaults.yaml").write_text(defaults, encoding="utf-8")
    (tmp_path / "jobs.yaml").write_text(body, encoding="utf-8")
    return dict(load_registry([tmp_path]).jobs)


def _job(name: str, result: str = "", extra: str = "") -> str:
    text = f"apiVersion: jobdef/v1\nkind: Job\nname: {name}\nhandler: app.jobs:{name}\n{extra}"
    return text + (f"result:\n{result}" if result else "")


@pytest.mark.parametrize(
    ("written", "size"),
    [(65536, 65536), ("64KiB", 65536), ("1MiB", 1048576), ("512B", 512), ("0KiB", 0)],
)
def test_a_size_is_bytes_or_a_whole_number_with_a_binary_unit(written: object, size: int) -> None:
    assert parse_size(written) == size


@pytest.mark.parametrize("written", ["64KB", "64 KiB", "1.5MiB", "64kib", "", True, 1.5, None])
def test_anything_else_is_no_size(written: object) -> None:
    assert parse_size_or_none(written) is None
    with pytest.raises(ValueError, match="64KiB"):
        parse_size(written)


@pytest.mark.parametrize("size", [1, 1000, 1024, 65536, 65537, 1048576, 3 * 1048576])
def test_a_size_is_written_in_the_largest_unit_that_divides_it(size: int) -> None:
    assert parse_size(format_size(size)) == size
    assert format_size(65536) == "64KiB"
    assert format_size(1000) == "1000B"


def test_a_job_that_says_nothing_stores_its_value_as_today(tmp_path: Path) -> None:
    plain = "apiVersion: jobdef/v1\nkind: Defaults\nerrors: {default: retry}\n"
    job = _jobs(tmp_path, _job("plain"), defaults=plain)["plain"]
    assert job.result == ResultPolicy()
    assert job.result.store is True
    assert job.result.max_bytes == DEFAULT_RESULT_BYTES == 64 * 1024
    assert job.result.retention is None  # as long as the row: retention.done is forever here
    assert not declares_result(job)


def test_retention_follows_retention_done_unless_the_sheet_says_otherwise(tmp_path: Path) -> None:
    jobs = _jobs(
        tmp_path,
        _job("inherits", extra="retention: {done: 7d}\n")
        + "---\n"
        + _job("own", "  retention: 2d\n", extra="retention: {done: 7d}\n")
        + "---\n"
        + _job("from_defaults"),
    )
    assert jobs["inherits"].result.retention == 7 * 86400
    assert jobs["inherits"].origin("result.retention") is None
    assert jobs["own"].result.retention == 2 * 86400
    assert jobs["from_defaults"].result.retention == 30 * 86400


def test_defaults_and_the_sheet_merge_field_by_field(tmp_path: Path) -> None:
    job = _jobs(tmp_path, _job("quote", "  store: true\n  retention: 1d\n"))["quote"]
    assert job.result.max_bytes == 16 * 1024  # from Defaults, beside the sheet's own fields
    assert job.result.retention == 86400
    origin = job.origin("result.max_bytes")
    assert origin is not None
    assert origin.source == "defaults"
    assert declares_result(job)


def test_the_schema_public_and_notify_are_frozen_as_written(tmp_path: Path) -> None:
    result = """\
  schema:
    type: object
    required: [total]
    properties: {total: {type: integer}, lines: {type: array}}
  public: [total, lines]
  notify: [total]
"""
    job = _jobs(tmp_path, _job("quote", result))["quote"]
    schema = job.result.schema
    assert isinstance(schema, MappingProxyType)
    assert schema["required"] == ("total",)
    assert dict(schema["properties"]["total"]) == {"type": "integer"}
    assert job.result.public == ("total", "lines")
    assert job.result.notify == ("total",)
    with pytest.raises(TypeError):
        schema["type"] = "array"  # type: ignore[index]


@pytest.mark.parametrize(("written", "public"), [("true", True), ("false", False), ("[]", ())])
def test_public_is_true_false_or_names(tmp_path: Path, written: str, public: object) -> None:
    job = _jobs(tmp_path, _job("quote", f"  public: {written}\n"))["quote"]
    assert job.result.public == public


def test_store_false_is_read(tmp_path: Path) -> None:
    job = _jobs(tmp_path, _job("purge", "  store: false\n"))["purge"]
    assert job.result.store is False


def test_a_receipt_shows_only_public_args_and_never_a_sensitive_one() -> None:
    args = {
        "order_id": {"type": "integer", "public": True},
        "coupon": {"type": "string"},
        "shown_token": {"type": "string", "sensitive": False, "public": True},
        # JD114 refuses this sheet; built anyway, the receipt still hides the arg.
        "card": {"type": "string", "sensitive": True, "public": True},
    }
    data = {"apiVersion": "jobdef/v1", "kind": "Job", "name": "quote", "handler": "a:b"}
    job = build_job(Document(data={**data, "args": args}, file="quote.yaml"))
    names = ["order_id", "coupon", "shown_token", "card", "unknown"]
    assert public_names(job, names) == {"order_id", "shown_token"}
    assert public_names(None, names) == set()
    assert not public_arg("api_token", {"type": "string", "public": True})  # a secret by name
    assert not public_arg("order_id", {"type": "integer", "public": "yes"})
