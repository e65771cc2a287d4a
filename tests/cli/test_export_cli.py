"""``jobdef export`` from the command line: stdout, -o, notes on stderr, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from jobdef.cli import main
from jobdef.render.export import FORMATS
from jobdef.sheets.pipeline import load_registry

REPO = Path(__file__).resolve().parents[2]
JOBS = sorted(load_registry([REPO / "jobdefs"]).jobs)


@pytest.fixture
def jobdef(capfd, monkeypatch):
    """Run ``jobdef ARGS`` in this process from the repository root; (code, stdout, stderr)."""
    monkeypatch.chdir(REPO)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        capfd.readouterr()
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse refusing an option
            code = int(exc.code or 0)
        out, err = capfd.readouterr()
        return subprocess.CompletedProcess(list(args), code, out, err)

    return run


@pytest.mark.slow
def test_the_installed_command_exports():
    result = subprocess.run(
        [sys.executable, "-m", "jobdef", "export", "--format", "step-functions", "export_csv"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert list(json.loads(result.stdout)["jobs"]) == ["export_csv"]
    assert result.stderr.startswith("jobdef export: note: export_csv: ")


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_of_the_example_sheets_exits_0_and_parses(jobdef, fmt):
    result = jobdef("export", "--format", fmt, "--sheets", "jobdefs")
    assert result.returncode == 0, result.stderr
    if fmt == "kubernetes":
        names = [
            m["metadata"]["annotations"]["jobdef.dev/job"]
            for m in yaml.safe_load_all(result.stdout)
        ]
        assert names == JOBS
    else:
        assert json.loads(result.stdout)


def test_each_note_is_one_line_on_stderr_and_in_the_output(jobdef):
    result = jobdef("export", "--format", "temporal", "send_reservation_mail")
    assert result.returncode == 0
    lines = result.stderr.splitlines()
    assert lines
    prefix = "jobdef export: note: send_reservation_mail: "
    assert all(line.startswith(prefix) for line in lines)
    notes = json.loads(result.stdout)["jobs"]["send_reservation_mail"]["notes"]
    assert [line[len(prefix) :] for line in lines] == notes


def test_json_has_no_notes(jobdef):
    result = jobdef("export", "send_reservation_mail")
    assert result.returncode == 0
    assert result.stderr == ""
    assert json.loads(result.stdout)["format"] == "jobdef-export/v1"


def test_dash_o_writes_the_file(jobdef, tmp_path):
    out = tmp_path / "queues.json"
    result = jobdef("export", "--format", "sqs", "-o", str(out))
    assert result.returncode == 0
    assert result.stdout == ""
    assert list(json.loads(out.read_text("utf-8"))["jobs"]) == JOBS


def test_an_unknown_job_is_one_line_and_exit_2(jobdef):
    result = jobdef("export", "no_such_job")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "no sheet defines a job or workflow named 'no_such_job'" in result.stderr


def test_an_unknown_format_is_refused_by_the_parser(jobdef):
    result = jobdef("export", "--format", "yaml")
    assert result.returncode == 2
    assert "invalid choice: 'yaml'" in result.stderr


def test_dash_o_a_folder_is_one_line(jobdef, tmp_path):
    result = jobdef("export", "-o", str(tmp_path))
    assert result.returncode == 2
    assert "is a folder" in result.stderr
    assert "Traceback" not in result.stderr


def test_dash_o_dash_is_standard_output(jobdef):
    result = jobdef("export", "--format", "kubernetes", "export_csv", "-o", "-")
    assert result.returncode == 0
    assert result.stdout.startswith("# jobdef export: export_csv\n")
    assert not (REPO / "-").exists()


def test_a_workflow_exports_to_step_functions_and_other_formats_refuse_it(jobdef):
    result = jobdef("export", "order_placed", "--format", "step-functions")
    assert result.returncode == 0
    assert list(json.loads(result.stdout)["workflows"]) == ["order_placed"]
    assert "jobdef export: note: order_placed: steps: a failing branch stops" in result.stderr
    result = jobdef("export", "order_placed", "--format", "temporal")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert "'order_placed' is a workflow, and only --format step-functions exports" in (
        result.stderr
    )
