"""`jobdef diff`: the comparison of effective policies, and its consequences, kind by kind."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from jobdef.policy.backoff import retry_timeline
from jobdef.policy.registry import Registry
from jobdef.review.diff import JobChange, RegistryDiff, diff_registries
from jobdef.sheets.build import build_registry
from jobdef.sheets.document import Document
from jobdef.sheets.pipeline import load_registry
from support.sheet_repo import DEFAULTS, edit, job_sheet, write_project


@pytest.fixture
def old_sheets(tmp_path: Path) -> Path:
    return write_project(tmp_path / "old")


@pytest.fixture
def new_sheets(old_sheets: Path, tmp_path: Path) -> Path:
    """A copy of the old sheets, for a test to edit."""
    target = tmp_path / "new" / "jobdefs"
    shutil.copytree(old_sheets, target)
    return target


def _diff(old: Path, new: Path) -> RegistryDiff:
    return diff_registries(load_registry([old]), load_registry([new]))


def _job(diff: RegistryDiff, name: str) -> JobChange:
    return next(job for job in diff.jobs if job.name == name)


def _kinds(job: JobChange) -> dict[str, str]:
    return {c.kind: c.severity for c in job.consequences}


def test_identical_sheets_have_no_changes(old_sheets: Path, new_sheets: Path) -> None:
    diff = _diff(old_sheets, new_sheets)
    assert diff.empty
    assert not diff.breaking
    assert diff.unchanged == ("charge_card", "send_receipt", "ship_order")


def test_defaults_change_shows_on_every_job_that_inherits_it(
    old_sheets: Path, new_sheets: Path
) -> None:
    edit(new_sheets / "defaults.yaml", "max_attempts: 4", "max_attempts: 3")
    diff = _diff(old_sheets, new_sheets)
    # ship_order sets max_attempts itself, so the Defaults change does not reach it.
    assert [job.name for job in diff.jobs] == ["charge_card", "send_receipt"]
    assert diff.unchanged == ("ship_order",)
    for name in ("charge_card", "send_receipt"):
        (change,) = _job(diff, name).fields
        assert (change.path, change.before, change.after) == ("max_attempts", 4, 3)
        assert change.after_origin is not None
        assert change.after_origin.source == "defaults"
        assert change.after_origin.file.endswith("defaults.yaml")
    assert diff.defaults_reach() == {"max_attempts": ("charge_card", "send_receipt")}


def test_rename_is_matched_by_handler_not_reported_as_remove_and_add(
    old_sheets: Path, new_sheets: Path
) -> None:
    (new_sheets / "send_receipt.yaml").unlink()
    (new_sheets / "email_receipt.yaml").write_text(
        job_sheet("email_receipt", handler="send_receipt", extra="timeout: 45s\n")
    )
    diff = _diff(old_sheets, new_sheets)
    (job,) = diff.jobs
    assert (job.status, job.old_name, job.name) == ("renamed", "send_receipt", "email_receipt")
    # The rerun line names the job through Defaults' {name}, so it changes with the name.
    assert [c.path for c in job.fields] == ["timeout", "rerun"]
    assert _kinds(job)["job_renamed"] == "breaking"


def test_rename_is_matched_by_file_when_the_handler_moved_too(
    old_sheets: Path, new_sheets: Path
) -> None:
    edit(new_sheets / "ship_order.yaml", "name: ship_order", "name: dispatch_order")
    edit(new_sheets / "ship_order.yaml", "app.jobs:ship_order", "warehouse.jobs:dispatch")
    (job,) = _diff(old_sheets, new_sheets).jobs
    assert (job.status, job.old_name, job.name) == ("renamed", "ship_order", "dispatch_order")
    handler = next(c for c in job.fields if c.path == "handler")
    assert (handler.before, handler.after) == ("app.jobs:ship_order", "warehouse.jobs:dispatch")


def test_rename_is_matched_by_own_values_when_handler_and_file_both_changed(
    old_sheets: Path, new_sheets: Path
) -> None:
    (new_sheets / "ship_order.yaml").unlink()
    (new_sheets / "dispatch.yaml").write_text(
        job_sheet("dispatch_order", handler="dispatch", extra="max_attempts: 6\n")
    )
    (job,) = _diff(old_sheets, new_sheets).jobs
    assert (job.status, job.old_name, job.name) == ("renamed", "ship_order", "dispatch_order")


def test_jobs_that_only_share_defaults_are_not_a_rename(old_sheets: Path, new_sheets: Path) -> None:
    bare = "apiVersion: jobdef/v1\nkind: Job\nname: {name}\nhandler: app.{name}:run\n"
    (old_sheets / "ping_a.yaml").write_text(bare.format(name="ping_a"))
    (new_sheets / "ping_b.yaml").write_text(bare.format(name="ping_b"))
    diff = _diff(old_sheets, new_sheets)
    assert {(j.status, j.name) for j in diff.jobs} == {("removed", "ping_a"), ("added", "ping_b")}


def test_unrelated_jobs_are_added_and_removed_not_renamed(
    old_sheets: Path, new_sheets: Path
) -> None:
    (new_sheets / "send_receipt.yaml").unlink()
    (new_sheets / "rebuild_index.yaml").write_text(
        "apiVersion: jobdef/v1\nkind: Job\nname: rebuild_index\nhandler: search.jobs:rebuild\n"
        "mode: batch\nschedule: '0 4 * * *'\nmax_attempts: 1\ntimeout: 2h\n"
    )
    diff = _diff(old_sheets, new_sheets)
    assert {(j.status, j.name) for j in diff.jobs} == {
        ("removed", "send_receipt"),
        ("added", "rebuild_index"),
    }
    assert _job(diff, "send_receipt").breaking
    assert not _job(diff, "rebuild_index").breaking


def test_idempotency_recipe_change_is_breaking(old_sheets: Path, new_sheets: Path) -> None:
    edit(new_sheets / "charge_card.yaml", '"order-{order_id}"', '"charge-{order_id}"')
    job = _job(_diff(old_sheets, new_sheets), "charge_card")
    assert _kinds(job) == {"idempotency_recipe": "breaking"}
    (consequence,) = job.consequences
    assert consequence.facts == {
        "before": "order-{order_id}",
        "after": "charge-{order_id}",
        "dedupe_window": None,  # nothing reaches past the queued rows
        "first_run": False,
    }


def test_retention_cut_is_breaking_and_a_longer_one_is_not(
    old_sheets: Path, new_sheets: Path
) -> None:
    edit(new_sheets / "charge_card.yaml", "deadline: 1h\n", "retention: {done: 7d, dead: 14d}\n")
    edit(new_sheets / "ship_order.yaml", "max_attempts: 6\n", "max_attempts: 6\n"
         "retention: {done: 90d}\n")  # fmt: skip
    diff = _diff(old_sheets, new_sheets)
    cuts = [c.facts for c in _job(diff, "charge_card").consequences if c.kind == "retention_cut"]
    assert cuts == [
        {"state": "done", "before": 30 * 86400.0, "after": 7 * 86400.0},
        {"state": "dead", "before": None, "after": 14 * 86400.0},
    ]
    assert _job(diff, "charge_card").breaking
    assert not _job(diff, "ship_order").breaking


def test_notify_channel_removed_is_breaking_and_a_changed_one_warns(
    old_sheets: Path, new_sheets: Path
) -> None:
    edit(
        new_sheets / "charge_card.yaml",
        "deadline: 1h\n",
        "notify: {channel: ops-log, events: [dead]}\n",
    )
    edit(new_sheets / "defaults.yaml", "notify: {channel: ops-chat, events: [dead]}\n", "")
    diff = _diff(old_sheets, new_sheets)
    assert _kinds(_job(diff, "charge_card"))["notify_channel_changed"] == "warning"
    assert _kinds(_job(diff, "send_receipt"))["notify_channel_removed"] == "breaking"
    assert not _job(diff, "charge_card").breaking


def test_attempts_lowered_is_breaking_and_raised_is_not(old_sheets: Path, new_sheets: Path) -> None:
    edit(new_sheets / "ship_order.yaml", "max_attempts: 6", "max_attempts: 2")
    edit(new_sheets / "charge_card.yaml", "deadline: 1h\n", "deadline: 1h\nmax_attempts: 5\n")
    diff = _diff(old_sheets, new_sheets)
    lowered = _job(diff, "ship_order")
    assert _kinds(lowered)["attempts_lowered"] == "breaking"
    assert next(c for c in lowered.consequences if c.kind == "attempts_lowered").facts == {
        "before": 6,
        "after": 2,
    }
    raised = _job(diff, "charge_card")
    assert not raised.breaking
    assert _kinds(raised)["attempts_raised"] == "info"


def test_queue_change_is_breaking(old_sheets: Path, new_sheets: Path) -> None:
    edit(new_sheets / "ship_order.yaml", "max_attempts: 6\n", "max_attempts: 6\nqueue: slow\n")
    job = _job(_diff(old_sheets, new_sheets), "ship_order")
    assert _kinds(job) == {"queue_changed": "breaking"}


def test_error_class_moving_from_retry_to_fatal_warns(old_sheets: Path, new_sheets: Path) -> None:
    edit(new_sheets / "charge_card.yaml", "retry: [ConnectionError]", "retry: []")
    edit(
        new_sheets / "charge_card.yaml",
        "fatal: [ValueError]",
        "fatal: [ValueError, ConnectionError]",
    )
    job = _job(_diff(old_sheets, new_sheets), "charge_card")
    (moved,) = [c for c in job.consequences if c.kind == "error_class"]
    assert moved.severity == "warning"
    assert moved.facts["error"] == "ConnectionError"
    assert (moved.facts["before"], moved.facts["after"]) == ("retry", "fatal")


def test_unlisted_error_follows_a_changed_default(old_sheets: Path, new_sheets: Path) -> None:
    edit(new_sheets / "charge_card.yaml", "retry: [ConnectionError]", "retry: []")
    edit(new_sheets / "defaults.yaml", "errors: {default: retry}", "errors: {default: fatal}")
    job = _job(_diff(old_sheets, new_sheets), "charge_card")
    moved = next(c for c in job.consequences if c.kind == "error_class")
    assert moved.facts == {
        "error": "ConnectionError",
        "before": "retry",
        "after": "fatal",
        "listed_before": True,
        "listed_after": False,
    }
    assert _kinds(job)["error_default"] == "warning"


def _registry(*sheets: str) -> Registry:
    """A registry built straight from sheet texts, without the validator.

    For changes the validator refuses on their own (a worst case over the
    deadline), which the diff must still word when it sees them.
    """
    documents = [
        Document(data=data, file=f"sheet{i}.yaml")
        for i, text in enumerate(sheets)
        for data in yaml.safe_load_all(text)
    ]
    return build_registry(documents)


def test_retry_window_is_the_backoff_timeline_and_flags_a_missed_deadline() -> None:
    before_text = job_sheet("charge_card", extra="deadline: 1h\nmax_attempts: 4\n")
    old = _registry(DEFAULTS, before_text)
    new = _registry(DEFAULTS, before_text.replace("max_attempts: 4", "max_attempts: 12"))
    job = _job(diff_registries(old, new), "charge_card")
    window = next(c for c in job.consequences if c.kind == "retry_window")
    before = retry_timeline(old.jobs["charge_card"])
    after = retry_timeline(new.jobs["charge_card"])
    assert window.facts["before"]["worst_case"] == before.worst_case
    assert window.facts["after"]["worst_case"] == after.worst_case
    assert before.fits_deadline is True
    assert after.fits_deadline is False
    missed = next(c for c in job.consequences if c.kind == "deadline_missed")
    assert missed.facts == {"worst_case": after.worst_case, "deadline": 3600.0}
    assert not job.breaking  # a missed deadline is a warning: only the author knows if it matters


def test_retry_window_shrinks_when_attempts_are_lowered(old_sheets: Path, new_sheets: Path) -> None:
    edit(new_sheets / "ship_order.yaml", "max_attempts: 6", "max_attempts: 3")
    old, new = load_registry([old_sheets]), load_registry([new_sheets])
    job = _job(diff_registries(old, new), "ship_order")
    window = next(c for c in job.consequences if c.kind == "retry_window")
    assert window.facts["before"] == {
        "attempts": 6,
        "worst_case": retry_timeline(old.jobs["ship_order"]).worst_case,
        "deadline": None,
        "fits_deadline": None,
    }
    assert window.facts["after"]["worst_case"] == retry_timeline(new.jobs["ship_order"]).worst_case
    assert window.facts["after"]["worst_case"] < window.facts["before"]["worst_case"]


def test_diff_of_empty_registry_reports_every_job_added(old_sheets: Path) -> None:
    empty = Registry(jobs={}, channels={})
    diff = diff_registries(empty, load_registry([old_sheets]))
    assert [(j.status, j.name) for j in diff.jobs] == [
        ("added", "charge_card"),
        ("added", "send_receipt"),
        ("added", "ship_order"),
    ]
    assert [(i.kind, i.status, i.name) for i in diff.items] == [
        ("channel", "added", "ops-chat"),
        ("channel", "added", "ops-log"),
    ]
