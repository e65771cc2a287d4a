"""The timeline in the docs and in `jobdef explain` is the runtime's schedule, number for number."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobdef.cli import main as jobdef_main
from jobdef.policy.backoff import retry_timeline
from jobdef.policy.leases import DEFAULT_LEASE, RECLAIM_INTERVAL
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
            describe.duration(row.latest_start_lost),
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
        assert got["latest_start_lost"] == row.latest_start_lost
    lost = data["timeline"]["lost_attempt"]
    assert lost["assumed_lease"] == timeline.lease == DEFAULT_LEASE
    assert lost["lease_is_default"] is True
    assert lost["reclaim_interval"] == RECLAIM_INTERVAL
    assert lost["slack"] == DEFAULT_LEASE + RECLAIM_INTERVAL


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
    # Lost instead of failed, each earlier attempt comes back up to the default lease
    # (30s) and one reclaim interval (2s) later: 32s more per earlier attempt.
    assert [r["latest_start_lost"] for r in rows] == [0, 72, 154, 256, 398]


def test_explain_lease_moves_only_the_bounds_after_a_lost_attempt(registry: Registry) -> None:
    job = registry.job("send_reservation_mail")
    default = json.loads(explain(job, registry, "json"))["timeline"]
    data = json.loads(explain(job, registry, "json", lease=10.0))["timeline"]
    assert data["lost_attempt"]["assumed_lease"] == 10.0
    assert data["lost_attempt"]["lease_is_default"] is False
    assert data["lost_attempt"]["slack"] == 10.0 + RECLAIM_INTERVAL
    assert [r["latest_start_lost"] for r in data["rows"]] == [0, 52, 114, 196, 318]
    for key in ("earliest_start", "latest_start", "latest_end", "wait_min", "wait_max"):
        assert [r[key] for r in data["rows"]] == [r[key] for r in default["rows"]]
    assert data["worst_case"] == default["worst_case"]


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_explain_says_which_lease_the_bounds_after_a_lost_attempt_assume(
    registry: Registry, lang: str
) -> None:
    job = registry.job("send_reservation_mail")
    lease, every = describe.duration(DEFAULT_LEASE, lang), describe.duration(RECLAIM_INTERVAL, lang)
    for fmt in ("text", "markdown"):
        shown = explain(job, registry, fmt, lang=lang)
        [line] = [line for line in shown.splitlines() if "--lease" in line]
        assert lease in line
        assert every in line
    given = explain(job, registry, "text", lang=lang, lease=45.0)
    [line] = [line for line in given.splitlines() if "--lease" in line]
    assert describe.duration(45.0, lang) in line
    assert lease not in line


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("10", "--lease '10' is not a duration; write the lease the worker runs with"),
        ("soon", "--lease 'soon' is not a duration"),
        ("500ms", "--lease 500ms is shorter than jobdef worker accepts; write 1s or more"),
    ],
)
def test_explain_lease_is_a_worker_lease_or_one_line_says_what_to_write(
    capsys: pytest.CaptureFixture[str], given: str, said: str
) -> None:
    code = jobdef_main(
        ["explain", "send_reservation_mail", "--sheets", str(REPO / "jobdefs"), "--lease", given]
    )
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    [line] = err.splitlines()
    assert line.startswith(f"jobdef explain: error: {said}")


def test_explain_lease_takes_what_jobdef_worker_takes(capsys: pytest.CaptureFixture[str]) -> None:
    sheets = str(REPO / "jobdefs")
    code = jobdef_main(["explain", "send_reservation_mail", "--sheets", sheets, "--lease", "1m30s"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert "the lease of 1m30s (--lease)" in out
    assert "2m12s" in out  # attempt 2: 40s + 1m30s + 2s
