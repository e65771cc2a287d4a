"""Rows to job records (backends/rows.py): what a claim maps for every job it leases."""

from __future__ import annotations

import json
import random

import pytest

from jobdef.backends.records import ErrorInfo, JobRecord
from jobdef.backends.rows import (
    _COLUMNS,
    _REQUIRED,
    in_claim_order,
    job_records_by_position,
    json_text,
)

VALUES = [
    7, "j", "q", 2, {"n": 1}, "running", 1, 3, "key", 10.0, 9.0, 11.0,
    None, "w", 40.0, ErrorInfo("E", "boom"), 0.5, {"done": 1}, "a note", 60.0,
    "00-trace", [1, "two"], 1, "token", 11.0, 5, "step",
]  # fmt: skip


def _row(record: dict[str, object], names: list[str]) -> tuple[object, ...]:
    return tuple(record[name] for name in names)


def test_rows_are_read_by_their_columns_names_in_any_order() -> None:
    stored = dict(zip(_COLUMNS, VALUES, strict=True))
    stored |= {"args": '{"n": 1}', "last_error": None, "progress": None, "result": "[1]"}
    names = list(reversed(_COLUMNS))
    [record] = job_records_by_position(names, [_row(stored, names)], json_text)
    assert record == JobRecord(
        **(stored | {"args": {"n": 1}, "progress": None, "result": [1]})  # type: ignore[arg-type]
    )


def test_a_row_of_a_store_older_than_the_query_reads_its_missing_columns_as_none() -> None:
    stored = dict(zip(_COLUMNS, VALUES, strict=True)) | {"args": {}, "last_error": None}
    names = list(_REQUIRED)
    [record] = job_records_by_position(names, [_row(stored, names)])
    assert [getattr(record, name) for name in _REQUIRED] == [stored[n] for n in _REQUIRED]
    assert all(getattr(record, name) is None for name in _COLUMNS[len(_REQUIRED) :])


def test_a_row_without_a_required_column_is_refused() -> None:
    with pytest.raises(KeyError, match="queue"):
        job_records_by_position([n for n in _COLUMNS if n != "queue"], [])


@pytest.mark.parametrize(
    "text",
    ['{"a":[1,2.5,null,true]}', '"é☃"', "[]", "12", ' {"a": 1} ', '{"a": 1}\n', b'{"a": 1}'],
)
def test_json_text_reads_what_json_loads_reads(text: str) -> None:
    assert json_text(text) == json.loads(text)


@pytest.mark.parametrize("text", ['{"a": 1} x', '{"a": 1}{}', "", " {", "\ufeff{}"])
def test_json_text_fails_where_json_loads_fails_and_says_the_same(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as raised:
        json_text(text)
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    assert raised.value.msg == expected.value.msg


def test_claimed_jobs_come_in_claim_order_priority_desc_then_run_after_then_id() -> None:
    draw = random.Random(7)
    records = [
        JobRecord(
            *[job_id, "j", "q", draw.choice([-1, 0, 0, 5]), {}, "running", 1, 1, None]
            + [draw.choice([1.0, 2.0, 3.0]), 0.0, 0.0]
            + [None] * 15
        )
        for job_id in draw.sample(range(1000), 200)
    ]
    expected = sorted(records, key=lambda r: (-r.priority, r.run_after, r.id))
    assert in_claim_order(records) == expected
    assert [r.id for r in in_claim_order(reversed(records))] == [r.id for r in expected]
