"""docs/workflows.md shows the example flow as it is: its sheet and its explain output."""

from __future__ import annotations

from pathlib import Path

from jobdef.render.flow import explain_flow
from jobdef.sheets.pipeline import load_registry
from jobdef.sheets.rules import all_rules

REPO = Path(__file__).resolve().parents[2]
PAGE = (REPO / "docs" / "workflows.md").read_text("utf-8")


def test_the_example_is_the_sheet_in_jobdefs() -> None:
    sheet = (REPO / "jobdefs" / "order_placed.yaml").read_text("utf-8")
    body = "".join(line for line in sheet.splitlines(keepends=True) if not line.startswith("#"))
    shown = PAGE.split("```yaml\n", 1)[1].split("```", 1)[0]
    assert shown == body


def test_the_explain_excerpt_is_the_current_output() -> None:
    registry = load_registry([REPO / "jobdefs"])
    text = explain_flow(registry.workflow("order_placed"), registry)
    excerpt = PAGE.split("$ jobdef explain order_placed\n...\n", 1)[1].split("```", 1)[0]
    assert excerpt in text


def test_every_workflow_rule_is_in_the_table() -> None:
    ids = [r.id for r in all_rules() if "JD351" <= r.id <= "JD399"]
    assert ids
    for rule_id in ids:
        assert f"[{rule_id}](rules.md#{rule_id.lower()})" in PAGE
