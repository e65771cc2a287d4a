"""A batch job's next five runs, in `jobdef explain` and on its docs page; async jobs have none."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from jobdef.cli import main
from jobdef.render.docs import RunsAfter, render_docs, utc_today
from jobdef.sheets.pipeline import load_registry

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


def _docs(out: Path, *extra: str) -> int:
    return main(["docs", "--sheets", SHEETS, "--out", str(out), *extra])


def test_the_docs_page_lists_the_next_five_runs_after_the_day_it_states(tmp_path) -> None:
    pages = render_docs(load_registry([SHEETS]), "en", runs_after=RunsAfter(date(2026, 12, 31)))
    page = pages["nightly_report.md"]
    assert page.splitlines()[1] == "<!-- jobdef:next-runs-after 2026-12-31 -->"
    assert "The next five runs after 2026-12-31 00:00 (Asia/Tokyo)" in page
    # 00:00 in Tokyo on the 31st: the 03:00 run of that day is the first.
    rows = [line for line in page.splitlines() if line.startswith("| 20")]
    assert rows[0] == "| 2026-12-31T03:00+09:00 | 2026-12-30T18:00+00:00 |"
    assert [row.split(" | ")[0] for row in rows] == [
        "| 2026-12-31T03:00+09:00",
        "| 2027-01-01T03:00+09:00",
        "| 2027-01-02T03:00+09:00",
        "| 2027-01-03T03:00+09:00",
        "| 2027-01-04T03:00+09:00",
    ]
    assert "Next runs" not in pages["send_reservation_mail.md"]
    assert "next-runs-after" not in pages["send_reservation_mail.md"]


def test_the_docs_runs_agree_with_explain_for_the_same_moment(capsys) -> None:
    pages = render_docs(load_registry([SHEETS]), "en", runs_after=RunsAfter(date(2026, 6, 1)))
    now = ["--now", "2026-06-01T00:00+09:00"]
    main(["explain", "nightly_report", "--sheets", SHEETS, "--format", "json", *now])
    runs = json.loads(capsys.readouterr().out)["next_runs"]
    for run in runs:
        assert f"| {run['local']} | {run['utc']} |" in pages["nightly_report.md"]


def test_check_compares_with_the_day_a_page_states_so_the_calendar_alone_is_no_drift(
    tmp_path,
) -> None:
    out = tmp_path / "docs"
    assert _docs(out, "--as-of", "2026-01-01") == 0
    page = out / "nightly_report.md"
    written = page.read_text(encoding="utf-8")
    assert "after 2026-01-01 00:00" in written
    # Today is not 2026-01-01: the page is still up to date, and rewriting keeps it.
    assert _docs(out, "--check") == 0
    assert _docs(out) == 0
    assert page.read_text(encoding="utf-8") == written
    # --as-of moves the day; --check then holds the new one.
    assert _docs(out, "--as-of", "2026-02-01") == 0
    assert "after 2026-02-01 00:00" in page.read_text(encoding="utf-8")
    assert _docs(out, "--check") == 0


def test_a_page_rewritten_for_another_reason_lists_runs_after_today(tmp_path) -> None:
    sheets = tmp_path / "sheets"
    sheets.mkdir()
    for source in Path(SHEETS).glob("*.yaml"):
        (sheets / source.name).write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    out = tmp_path / "docs"
    argv = ["docs", "--sheets", str(sheets), "--out", str(out)]
    assert main([*argv, "--as-of", "2026-01-01"]) == 0
    sheet = sheets / "nightly_report.yaml"
    sheet.write_text(
        sheet.read_text(encoding="utf-8").replace("timeout: 30m", "timeout: 20m"), encoding="utf-8"
    )
    assert main([*argv, "--check"]) == 1  # stale: the sheet changed
    assert main(argv) == 0
    page = (out / "nightly_report.md").read_text(encoding="utf-8")
    assert "| 20m |" in page
    assert f"after {utc_today().isoformat()} 00:00" in page
    assert main([*argv, "--check"]) == 0


def test_as_of_that_is_not_a_date_says_how_to_write_it(tmp_path, capsys) -> None:
    assert _docs(tmp_path / "docs", "--as-of", "2026-13-01") == 2
    err = capsys.readouterr().err
    assert "--as-of '2026-13-01' is not a date; write it as YYYY-MM-DD" in err
    assert "Traceback" not in err
