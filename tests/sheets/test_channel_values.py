"""Values that would break a store or a channel are refused by validate, and by every command
that loads sheets, with one line and no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SHEET = """\
apiVersion: jobdef/v1
kind: Job
name: sample_job
title: {title}
handler: app.jobs:sample
priority: {priority}
max_attempts: 1
timeout: 30s
errors:
  default: fatal
"""


def _jobdef(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jobdef", *args],
        capture_output=True,
        text=True,
        cwd=folder,
        check=False,
    )


QUEUE = """\
apiVersion: jobdef/v1
kind: Queue
name: default
concurrency: {concurrency}
"""

CASES = {
    # The subject of every dead-job mail: EmailMessage refuses a header with a line break.
    "multi-line title": (SHEET.format(title='"Send the mail\\nand retry"', priority=1), 4, "JD254"),
    # No maximum in the schema, and more than a 64-bit column holds.
    "20-digit concurrency": (QUEUE.format(concurrency="9" * 20), 4, "JD109"),
    # More digits than Python's int() reads.
    "5000 digits": (SHEET.format(title="Send the mail", priority="9" * 5000), 6, "JD109"),
}


# validate exits 1 on findings; docs, which cannot run on such sheets, exits 2.
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize(
    ("command", "status"),
    [(["validate", "--strict", "."], 1), (["docs", "--sheets", "."], 2)],
    ids=["validate", "docs"],
)
def test_a_value_no_channel_or_store_takes_is_one_line_at_its_place(
    tmp_path: Path, case: str, command: list[str], status: int
) -> None:
    text, line, code = CASES[case]
    (tmp_path / "sheet.yaml").write_text(text, encoding="utf-8")
    result = _jobdef(tmp_path, *command)
    output = result.stdout + result.stderr
    assert result.returncode == status, output
    assert "Traceback" not in output
    assert f"sheet.yaml:{line}:" in output, output
    assert code in output, output


def test_the_limit_is_18_digits(tmp_path: Path) -> None:
    from jobdef.sheets.pipeline import validate_sheets

    sheet = tmp_path / "sheet.yaml"
    sheet.write_text(
        SHEET.format(title="t", priority="1").replace(
            "max_attempts: 1", "max_attempts: " + "9" * 18
        ),
        encoding="utf-8",
    )
    assert not [d for d in validate_sheets([sheet]).diagnostics if d.code == "JD109"]
