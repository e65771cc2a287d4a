"""`jobdef docs`, `jobdef tsv` and `jobdef explain` as a user runs them."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jobdef.cli import main
from jobdef.render.docs import GENERATED_MARK

REPO = Path(__file__).resolve().parents[2]
SHEETS = str(REPO / "jobdefs")


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def _run_process(*argv: str, cwd: Path, hashseed: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONHASHSEED": hashseed}
    return subprocess.run(
        [sys.executable, "-m", "jobdef", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


@pytest.mark.parametrize("lang", ["en", "ja"])
@pytest.mark.slow
def test_two_runs_in_separate_processes_write_byte_identical_files(
    tmp_path: Path, lang: str
) -> None:
    for run, seed in (("a", "1"), ("b", "2")):
        result = _run_process(
            "docs", "--sheets", SHEETS, "--out", str(tmp_path / run), "--lang", lang,
            "--as-of", "2026-03-07", cwd=tmp_path, hashseed=seed,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
    first, second = _digest(tmp_path / "a"), _digest(tmp_path / "b")
    assert len(first) == 10  # eight jobs, one workflow, the index
    assert first == second


def test_check_fails_on_a_stale_file_and_shows_the_diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "docs"
    assert main(["docs", "--sheets", SHEETS, "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["docs", "--sheets", SHEETS, "--out", str(out), "--check"]) == 0
    assert "up to date" in capsys.readouterr().err

    page = out / "send_reservation_mail.md"
    fresh = page.read_text(encoding="utf-8")
    page.write_text(fresh.replace("| 5 attempts |", "| 3 attempts |"), encoding="utf-8")
    (out / "export_csv.md").unlink()
    assert main(["docs", "--sheets", SHEETS, "--out", str(out), "--check"]) == 1
    captured = capsys.readouterr()
    assert "--- a/docs/send_reservation_mail.md" in captured.out
    assert "+++ b/docs/send_reservation_mail.md" in captured.out
    assert "-| Max attempts | How many runs in total, the first included | 3 attempts |" in (
        captured.out
    )
    assert "+| Max attempts | How many runs in total, the first included | 5 attempts |" in (
        captured.out
    )
    assert "--- /dev/null" in captured.out
    assert "+++ b/docs/export_csv.md" in captured.out
    assert "2 generated file(s) missing or stale" in captured.err
    # --check writes nothing.
    assert "| 3 attempts |" in page.read_text(encoding="utf-8")
    assert not (out / "export_csv.md").exists()

    assert main(["docs", "--sheets", SHEETS, "--out", str(out)]) == 0
    assert page.read_text(encoding="utf-8") == fresh
    assert main(["docs", "--sheets", SHEETS, "--out", str(out), "--check"]) == 0


def test_a_page_whose_job_is_gone_is_stale_and_deleted_but_other_files_are_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "docs"
    assert main(["docs", "--sheets", SHEETS, "--out", str(out)]) == 0
    (out / "old_job.md").write_text(f"{GENERATED_MARK}\n\n# old_job\n", encoding="utf-8")
    (out / "notes.md").write_text("# Notes written by hand\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["docs", "--sheets", SHEETS, "--out", str(out), "--check"]) == 1
    captured = capsys.readouterr().out
    assert "+++ /dev/null" in captured
    assert "notes.md" not in captured
    assert main(["docs", "--sheets", SHEETS, "--out", str(out)]) == 0
    assert not (out / "old_job.md").exists()
    assert (out / "notes.md").read_text(encoding="utf-8") == "# Notes written by hand\n"


def test_inject_replaces_only_the_text_between_the_markers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    design = tmp_path / "design" / "jobs.md"
    design.parent.mkdir()
    design.write_text(
        "# Design\n\nBefore.\n\n<!-- jobdef:begin -->\nold table\n<!-- jobdef:end -->\n\nAfter.\n",
        encoding="utf-8",
    )
    argv = ["docs", "--sheets", SHEETS, "--out", str(tmp_path / "docs" / "jobs")]
    assert main([*argv, "--inject", str(design), "--check"]) == 1
    assert "old table" in design.read_text(encoding="utf-8")
    assert main([*argv, "--inject", str(design)]) == 0
    text = design.read_text(encoding="utf-8")
    assert text.startswith("# Design\n\nBefore.\n\n<!-- jobdef:begin -->\n| Name |")
    assert text.endswith("|\n<!-- jobdef:end -->\n\nAfter.\n")
    assert "old table" not in text
    assert "[send_reservation_mail](../docs/jobs/send_reservation_mail.md)" in text
    rows = [line for line in text.splitlines() if line.startswith("| [")]
    assert [row.split("|")[4].strip() for row in rows] == sorted(
        row.split("|")[4].strip() for row in rows
    ), "rows are grouped by queue"
    capsys.readouterr()
    assert main([*argv, "--inject", str(design), "--check"]) == 0


def test_inject_into_a_file_without_markers_says_what_to_add(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    design = tmp_path / "design.md"
    design.write_text("# Design\n", encoding="utf-8")
    rc = main(["docs", "--sheets", SHEETS, "--out", "docs", "--inject", str(design)])
    assert rc == 2
    err = capsys.readouterr().err
    assert "design.md: no <!-- jobdef:begin --> ... <!-- jobdef:end --> pair found" in err
    assert "Traceback" not in err


def test_templates_folder_from_pyproject_replaces_one_template_and_keeps_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_templates").mkdir()
    (tmp_path / "my_templates" / "job.md.j2").write_text(
        "# {{ job.name }}: {{ describe.item_value(job, 'backoff', lang) }}\n", encoding="utf-8"
    )
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.jobdef]\nsheets = "{Path(SHEETS).as_posix()}"\ndocs = "out"\n'
        'templates = "my_templates"\nlang = "ja"\n',
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    assert main(["docs"]) == 0
    page = (tmp_path / "out" / "send_reservation_mail.md").read_text(encoding="utf-8")
    assert page == (
        f"{GENERATED_MARK}\n\n# send_reservation_mail: "
        "指数バックオフ（初回10秒、上限10分）＋ジッター\n"
    )
    index = (tmp_path / "out" / "index.md").read_text(encoding="utf-8")
    assert "# ジョブ定義一覧" in index


def test_a_custom_template_cannot_unescape_sheet_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sheets = tmp_path / "sheets"
    sheets.mkdir()
    (sheets / "job.yaml").write_text(
        "apiVersion: jobdef/v1\nkind: Job\nname: a_job\nhandler: m:f\n"
        "title: '<script>x</script> | y'\nmax_attempts: 1\nerrors: {default: retry}\n",
        encoding="utf-8",
    )
    templates = tmp_path / "t"
    templates.mkdir()
    (templates / "job.md.j2").write_text("{{ job.title }}\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    argv = ["docs", "--sheets", str(sheets), "--out", "out", "--templates", str(templates)]
    assert main(argv) == 0
    page = (tmp_path / "out" / "a_job.md").read_text(encoding="utf-8")
    assert page.endswith("&lt;script&gt;x&lt;/script&gt; \\| y\n")


def test_an_undefined_name_in_a_template_names_the_template_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    templates = tmp_path / "t"
    templates.mkdir()
    (templates / "job.md.j2").write_text("ok\n{{ job.no_such_field }}\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    argv = ["docs", "--sheets", SHEETS, "--out", "out", "--templates", str(templates)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "job.md.j2:2: the template uses an undefined value" in err
    assert "no_such_field" in err


def test_the_repository_docs_are_generated_from_its_sheets(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    assert main(["docs", "--check"]) == 0, capsys.readouterr().out


def test_tsv_of_the_reservation_mail_pastes_as_14_rows_of_3_columns(
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    assert main(["tsv", "send_reservation_mail", "--sheets", SHEETS, "--lang", "ja"]) == 0
    text = capsysbinary.readouterr().out.decode("utf-8")
    rows = list(csv.reader(io.StringIO(text), dialect="excel-tab"))
    assert len(rows) == 14
    assert all(len(row) == 3 for row in rows)
    assert text.splitlines()[0] == "項目\t記入内容\t内容"
    assert rows[1] == [
        "ジョブ名",
        "コード上の名前と日本語名",
        "send_reservation_mail（予約確定メール送信）",
    ]
    assert rows[5][2] == "指数バックオフ（初回10秒、上限10分）＋ジッター"
    assert rows[13] == [
        "保存期間",
        "完了・退避したジョブをいつまで残すか",
        "doneは30日、deadは対応が終わるまで",
    ]


def test_tsv_bom_and_output_file(tmp_path: Path) -> None:
    target = tmp_path / "overview.tsv"
    assert main(["tsv", "--sheets", SHEETS, "--bom", "-o", str(target)]) == 0
    data = target.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    rows = list(csv.reader(io.StringIO(data.decode("utf-8-sig")), dialect="excel-tab"))
    assert rows[0][0] == "Job name"
    assert [row[0].split(" ")[0] for row in rows[1:]] == [
        "award_member_points",
        "charge_order",
        "export_csv",
        "nightly_report",
        "post_ledger",
        "resize_image",
        "send_receipt_mail",
        "send_reservation_mail",
    ]
    # The 13 items of the classic sheet, and the result that export_csv declares.
    assert {len(row) for row in rows} == {14}
    assert rows[0][-1] == "Result"


def test_tsv_of_a_workflow_has_one_row_per_step_in_the_flows_order(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["tsv", "order_placed", "--sheets", SHEETS]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out), dialect="excel-tab"))
    assert rows[0] == [
        "Step", "Job", "Waits for", "If it fails", "Args", "Latest start", "Step worst case",
        "Latest end", "Critical path",
    ]  # fmt: skip
    assert [(row[0], row[1]) for row in rows[1:]] == [
        ("charge", "charge_order"),
        ("mail_receipt", "send_receipt_mail"),
        ("award_points", "award_member_points"),
        ("post_ledger", "post_ledger"),
    ]
    assert rows[4][2] == "mail_receipt, award_points (runs anyway if it fails)"
    assert rows[1][3] == ("cancels mail_receipt, award_points, post_ledger; the flow ends failed")


def test_explain_of_a_workflow_counts_the_lease_it_is_given(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["explain", "order_placed", "--sheets", SHEETS, "--format", "json"]) == 0
    default = json.loads(capsys.readouterr().out)
    argv = ["explain", "order_placed", "--sheets", SHEETS, "--format", "json", "--lease", "2m"]
    assert main(argv) == 0
    longer = json.loads(capsys.readouterr().out)
    assert default["timeline"]["lease_is_default"] is True
    assert longer["timeline"]["assumed_lease"] == 120.0
    assert longer["timeline"]["lease_is_default"] is False
    # Each lost attempt of each step on the critical path waits 90 s longer for its lease.
    lost = sum(
        {"charge": 3, "award_points": 5, "post_ledger": 3}[step]
        for step in default["timeline"]["critical_path"]
    )
    assert longer["timeline"]["worst_case"] - default["timeline"]["worst_case"] == 90 * lost
    assert default["timeline"]["critical_path"] == ["charge", "award_points", "post_ledger"]


def test_explain_json_is_machine_readable(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "resize_image", "--sheets", SHEETS, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["name"] == "resize_image"
    assert [row["attempt"] for row in data["timeline"]["rows"]] == [1, 2, 3]
    assert data["errors"][-1] == {
        "class": None,
        "text": "any error not listed (errors.default)",
        "action": "fatal",
        "treatment": "dead at once",
    }
    assert data["notify"]["channel"] == "ops-log"
    assert [item["key"] for item in data["items"]][:2] == ["name", "trigger"]
    assert data["items"][3] == {
        "key": "max_attempts",
        "label": "Max attempts",
        "hint": "How many runs in total, the first included",
        "value": "3 attempts",
    }


def test_explain_of_an_unknown_job_lists_the_known_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["explain", "no_such_job", "--sheets", SHEETS]) == 2
    err = capsys.readouterr().err
    assert "no sheet defines a job or workflow named 'no_such_job'" in err
    assert "send_reservation_mail" in err
    assert "workflows: order_placed" in err
