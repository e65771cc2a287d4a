"""Data-driven fixtures: every sheet under tests/sheets/valid passes ``--strict``; every case
under tests/sheets/invalid gives exactly the text in its ``expected.txt``.

Run with ``JOBDEF_UPDATE_GOLDEN=1`` to rewrite the expected files after a
deliberate change of wording, then review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jobdef.cli.validate_cmd import exit_code
from jobdef.reporters import Report, render
from jobdef.sheets.pipeline import validate_sheets

SHEETS = Path(__file__).parent
VALID = sorted(p for p in (SHEETS / "valid").iterdir() if p.is_dir())
INVALID = sorted(p for p in (SHEETS / "invalid").iterdir() if p.is_dir())


def _text_report(case: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, int]:
    monkeypatch.chdir(case)
    result = validate_sheets(["."])
    report = Report(result.diagnostics, result.files, strict=True)
    return render("text", report), exit_code(result.diagnostics, strict=True)


@pytest.mark.parametrize("case", VALID, ids=[p.name for p in VALID])
def test_valid_sheets_pass_strict(case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text, code = _text_report(case, monkeypatch)
    assert code == 0, text
    assert text.endswith("no findings\n")


@pytest.mark.parametrize("case", INVALID, ids=[p.name for p in INVALID])
def test_invalid_sheets_give_expected_diagnostics(
    case: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text, code = _text_report(case, monkeypatch)
    expected = case / "expected.txt"
    if os.environ.get("JOBDEF_UPDATE_GOLDEN") == "1":
        expected.write_text(text, encoding="utf-8")
    assert code == 1
    assert text == expected.read_text(encoding="utf-8")


def test_every_rule_has_a_failing_fixture() -> None:
    from jobdef.sheets.rules import all_rules

    # Rules that need something a fixture folder cannot hold: a 1 MiB file
    # (test_loader), importable modules (test_validate_cli --check-imports) and
    # the environment (tests/notify/test_notify_cli.py --check-env); JD303 is in
    # test_handler_signatures (--check-imports).
    elsewhere = {"JD003", "JD235", "JD253", "JD302", "JD303"}
    covered = set()
    for case in INVALID:
        for line in (case / "expected.txt").read_text(encoding="utf-8").splitlines():
            parts = line.split(" ")
            if len(parts) > 2 and parts[1] in ("error", "warning"):
                covered.add(parts[2])
    missing = {rule.id for rule in all_rules()} - covered - elsewhere
    assert not missing, f"rules without a failing fixture: {sorted(missing)}"
