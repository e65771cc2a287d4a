"""`jobdef diff` on workflows: steps and edges added, removed or changed, and what a change
(to the flow or to a job its steps run) does to the flow's worst case."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from jobdef.cli import main
from jobdef.review.diff import diff_registries
from jobdef.review.render import render
from jobdef.sheets.pipeline import load_registry

FIXTURE = Path(__file__).resolve().parents[1] / "sheets" / "valid" / "workflow"


@pytest.fixture
def sides(tmp_path: Path) -> tuple[Path, Path]:
    old, new = tmp_path / "old", tmp_path / "new"
    shutil.copytree(FIXTURE, old)
    shutil.copytree(FIXTURE, new)
    return old, new


def _edit(path: Path, before: str, after: str) -> None:
    text = path.read_text("utf-8")
    assert before in text
    path.write_text(text.replace(before, after, 1), "utf-8")


def test_an_unchanged_flow_is_not_listed(sides: tuple[Path, Path]) -> None:
    old, new = sides
    diff = diff_registries(load_registry([old]), load_registry([new]))
    assert diff.flows == ()
    assert diff.empty


def test_steps_and_edges_added_removed_and_changed(sides: tuple[Path, Path]) -> None:
    old, new = sides
    _edit(
        new / "flow.yaml",
        "  ledger:\n    job: post_ledger\n    after: {receipt: cancel}",
        "  audit:\n    job: post_ledger\n    after: [charge]\n"
        "    args: {order_id: {from: args.order_id}, charge_id: audit}\n"
        "  ledger:\n    job: post_ledger\n    after: {receipt: run, audit: cancel}",
    )
    diff = diff_registries(load_registry([old]), load_registry([new]))
    (flow,) = diff.flows
    assert flow.status == "changed"
    assert flow.steps_added == (("audit", "post_ledger"),)
    assert flow.steps_removed == ()
    assert set(flow.edges_added) == {("charge", "audit", "cancel"), ("audit", "ledger", "cancel")}
    assert flow.edges_changed == (("receipt", "ledger", "cancel", "run"),)
    text = render(diff, "old", "new")
    assert "~ order_placed (workflow, changed, " in text
    assert "    + step audit (job post_ledger)" in text
    assert "    ~ edge receipt → ledger: cancel → run" in text


def test_a_jobs_retry_policy_moves_the_worst_case_of_every_flow_that_runs_it(
    sides: tuple[Path, Path],
) -> None:
    old, new = sides
    _edit(new / "jobs.yaml", "max_attempts: 3\n", "max_attempts: 4\n")  # charge_order
    diff = diff_registries(load_registry([old]), load_registry([new]))
    (flow,) = diff.flows
    assert flow.steps_added == flow.edges_added == flow.edges_changed == ()
    assert flow.worst_before is not None
    assert flow.worst_after is not None
    # One more attempt: a 10 s wait, a 30 s timeout, and 32 s if it is lost too.
    assert flow.worst_after - flow.worst_before == 10 + 30 + 32
    assert flow.path_before == flow.path_after == ("charge", "receipt", "ledger", "finally")
    line = render(diff, "old", "new").splitlines()[-1]
    # charge 3m26s + receipt 2m14s + ledger 3m9s + finally 3m9s, then charge 4m38s.
    assert line == (
        "    worst case: 11m58s (charge → receipt → ledger → finally), fits the deadline of 1h"
        " → 13m10s (charge → receipt → ledger → finally), fits the deadline of 1h"
    )


def test_added_and_removed_flows_and_the_json(
    sides: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = sides
    (old / "flow.yaml").unlink()
    assert main(["diff", str(old), str(new), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (flow,) = data["workflows"]
    assert flow["status"] == "added"
    assert [s["step"] for s in flow["steps_added"]] == ["charge", "receipt", "ledger", "finally"]
    assert flow["worst_case"]["before"] is None
    assert flow["critical_path"]["after"] == ["charge", "receipt", "ledger", "finally"]
    assert main(["diff", str(new), str(old), "--format", "markdown", "--lang", "ja"]) == 0
    out = capsys.readouterr().out
    assert "#### `order_placed` (ワークフロー, 削除)" in out
    assert "- ステップ charge（ジョブ charge_order）" in out
