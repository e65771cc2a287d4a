"""Values that would break a store or a channel are refused by validate, and by every command
that loads sheets, with one line and no traceback."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from jobdef.cli import main

JobdefIn = Callable[..., tuple[int, str]]

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


@pytest.fixture
def jobdef(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> JobdefIn:
    """Runs the CLI in this process in ``tmp_path``: its exit status and all it printed
    (a traceback would be an exception out of ``main``)."""
    monkeypatch.chdir(tmp_path)

    def run(*argv: str) -> tuple[int, str]:
        returned = main(list(argv))
        captured = capsys.readouterr()
        return returned, captured.out + captured.err

    return run


# validate exits 1 on findings; docs, which cannot run on such sheets, exits 2.
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize(
    ("command", "status"),
    [(["validate", "--strict", "."], 1), (["docs", "--sheets", "."], 2)],
    ids=["validate", "docs"],
)
def test_a_value_no_channel_or_store_takes_is_one_line_at_its_place(
    tmp_path: Path, case: str, command: list[str], status: int, jobdef: JobdefIn
) -> None:
    text, line, code = CASES[case]
    (tmp_path / "sheet.yaml").write_text(text, encoding="utf-8")
    returned, output = jobdef(*command)
    assert returned == status, output
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
