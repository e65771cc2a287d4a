"""The timeline in the docs and in `jobdef explain` is the runtime's schedule, number for number."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobdef.policy.backoff import retry_timeline
from jobdef.policy.registry import Registry
from jobdef.render import describe
from jobdef.render.docs import render_docs
from jobdef.render.explain import explain
from jobdef.sheets.pipeline import load_registry

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def registry() -> Registry:
    return load_registry([REPO / "jobdefs"])


def _timeline_cells(page: str) -> list[list[str]]:
    lines = page.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| Attempt |"))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


@pytest.mark.parametrize(
    "name",
    [
        "award_member_points",
        "export_csv",
        "nightly_report",
        "resize_image",
        "send_reservation_mail",
    ],
)
def test_docs_page_shows_the_backoff_functions_timeline(registry: Registry, name: str) -> None:
    job = registry.job(name)
    page = render_docs(registry, "en")[f"{name}.md"]
    expected = [
        [
            str(row.attempt),
            describe.wait_range(row.wait_min, row.wait_max),
            describe.duration(row.earliest_start),
            describe.duration(row.latest_start),
            describe.duration(row.latest_end),
            describe.yes_no(row.within_deadline),
        ]
        for row in retry_timeline(job).rows
    ]
    assert _timeline_cells(page) == expected
    assert len(expected) == job.max_attempts


def test_explain_json_carries_the_timeline_in_seconds(registry: Registry) -> None:
    job = registry.job("send_reservation_mail")
    data = json.loads(explain(job, registry, "json"))
    timeline = retry_timeline(job)
    assert data["timeline"]["worst_case"] == timeline.worst_case
    for got, row in zip(data["timeline"]["rows"], timeline.rows, strict=True):
        assert got["wait_min"] == row.wait_min
        assert got["wait_max"] == row.wait_max
        assert got["latest_start"] == row.latest_start
        assert got["latest_end"] == row.latest_end


def test_reservation_mail_timeline_worked_out_by_hand(registry: Registry) -> None:
    # exponential 10s x2 capped at 10m, full jitter, 30s timeout, 5 attempts:
    # waits 0-10, 0-20, 0-40, 0-80; latest starts 0, 30+10, 70+20, 120+40, 190+80.
    data = json.loads(explain(registry.job("send_reservation_mail"), registry, "json"))
    rows = data["timeline"]["rows"]
    assert [(r["wait_min"], r["wait_max"]) for r in rows] == [
        (0, 0),
        (0, 10),
        (0, 20),
        (0, 40),
        (0, 80),
    ]
    assert [r["latest_start"] for r in rows] == [0, 40, 90, 160, 270]
    assert [r["latest_end"] for r in rows] == [30, 70, 120, 190, 300]
    assert data["timeline"]["deadline"] == 7200
    assert data["timeline"]["fits_deadline"] is True
