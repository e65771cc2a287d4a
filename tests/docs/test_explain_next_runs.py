"""`jobdef explain` lists a batch job's next five runs; async jobs and the docs do not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobdef.cli import main
from jobdef.registry import load_registry
from jobdef.render.docs import render_docs

REPO = Path(__file__).resolve().parents[2]
SHEETS = str(REPO / "jobdefs")


def test_explain_json_lists_the_next_five_slots_in_the_sheets_zone_and_utc(capsys) -> None:
    code = main(
        [
            "explain",
            "nightly_report",
            "--sheets",
            SHEETS,
            "--format",
            "json",
            "--now",
            "2026-12-31T17:59Z",
        ]
    )
    runs = json.loads(capsys.readouterr().out)["next_runs"]
    assert code == 0
    assert [run["local"] for run in runs] == [
        "2027-01-01T03:00+09:00",
        "2027-01-02T03:00+09:00",
        "2027-01-03T03:00+09:00",
        "2027-01-04T03:00+09:00",
        "2027-01-05T03:00+09:00",
    ]
    assert runs[0]["utc"] == "2026-12-31T18:00+00:00"


def test_explain_text_shows_next_runs_only_for_batch_jobs(capsys) -> None:
    main(["explain", "nightly_report", "--sheets", SHEETS, "--now", "2026-06-01T00:00Z"])
    assert "Next runs (0 3 * * *, Asia/Tokyo)" in capsys.readouterr().out
    main(["explain", "send_reservation_mail", "--sheets", SHEETS, "--now", "2026-06-01T00:00Z"])
    assert "Next runs" not in capsys.readouterr().out


def test_now_without_an_offset_is_a_usage_error_that_shows_the_form(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["explain", "nightly_report", "--sheets", SHEETS, "--now", "2026-06-01T00:00"])
    assert exit_.value.code == 2
    assert "no UTC offset" in capsys.readouterr().err


def test_generated_docs_stay_free_of_clock_dependent_run_times() -> None:
    pages = render_docs(load_registry([SHEETS]), "en", base=REPO)
    assert "Next runs" not in pages["nightly_report.md"]
