"""A workflow's page and explain: the graph, one row per step, the worst-case timeline, in
both languages; finally drawn after the last steps and said to run whatever happened."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from jobdef.render.docs import render_docs
from jobdef.render.flow import cancelled_by, explain_flow
from jobdef.sheets.pipeline import load_registry

FIXTURE = Path(__file__).resolve().parents[1] / "sheets" / "valid" / "workflow"


def test_the_page_draws_the_graph_with_finally_after_the_last_step() -> None:
    registry = load_registry([FIXTURE])
    page = render_docs(registry, "en", base=FIXTURE)["order_placed.md"]
    graph = page.split("```mermaid\n", 1)[1].split("```", 1)[0]
    assert graph.splitlines() == [
        "flowchart TD",
        '    charge["charge: charge_order"]',
        '    receipt["receipt: send_receipt"]',
        '    ledger["ledger: post_ledger"]',
        '    finally["finally: post_ledger"]',
        "    charge --> receipt",
        "    receipt --> ledger",
        "    ledger -. finally .-> finally",
        "    classDef critical stroke-width:3px",
        "    class charge,receipt,ledger,finally critical",
    ]
    assert (
        "| finally | [post_ledger](post_ledger.md) | every other step, whatever their outcome "
        "| recorded; the flow's outcome is that of the other steps |"
    ) in page
    assert "| charge | 0s | 3m26s | 3m26s | yes |" in page
    assert "[order_placed](order_placed.md)" in render_docs(registry, "en")["index.md"]


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_explain_names_the_lease_it_counted_with(lang: str) -> None:
    registry = load_registry([FIXTURE])
    flow = registry.workflow("order_placed")
    default = explain_flow(flow, registry, lang=lang)
    longer = explain_flow(flow, registry, lang=lang, lease=90.0)
    assert ("default lease 30s" if lang == "en" else "既定のリース30秒") in default
    assert ("lease of 1m30s (--lease)" if lang == "en" else "リース1分30秒（--lease）") in longer


def test_a_failure_cancels_the_steps_behind_cancel_edges_only() -> None:
    registry = load_registry([Path(__file__).resolve().parents[2] / "jobdefs"])
    flow = registry.workflow("order_placed")
    assert cancelled_by(flow, "charge") == ("mail_receipt", "award_points", "post_ledger")
    assert cancelled_by(flow, "award_points") == ()  # post_ledger runs anyway
    assert cancelled_by(flow, "mail_receipt") == ("post_ledger",)


def test_a_literal_for_a_sensitive_arg_is_hidden_wherever_the_flow_is_shown(
    tmp_path: Path,
) -> None:
    shutil.copytree(FIXTURE, tmp_path / "sheets")
    flow = tmp_path / "sheets" / "flow.yaml"
    text = flow.read_text("utf-8").replace(
        '      note: {value: "posted by the flow"}',
        '      note: {value: "signed by hunter2"}',
    )
    assert "hunter2" in text
    jobs = tmp_path / "sheets" / "jobs.yaml"
    jobs.write_text(
        jobs.read_text("utf-8").replace(
            "  note: {type: string, required: false}",
            "  note: {type: string, required: false, sensitive: true}",
        ),
        "utf-8",
    )
    flow.write_text(text, "utf-8")
    registry = load_registry([tmp_path / "sheets"])
    shown = [
        explain_flow(registry.workflow("order_placed"), registry, fmt)
        for fmt in ("text", "markdown", "json")
    ]
    assert all("hunter2" not in out for out in shown)
    assert 'note = "***"' in shown[0]
