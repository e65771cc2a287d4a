"""`jobdef diff` over a real git repository: revisions read without checkout, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobdef.cli import main
from support.sheet_repo import DEFAULTS, commit_all, edit, git, init_repo, job_sheet


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository with one commit of sheets, as the working directory."""
    init_repo(tmp_path)
    monkeypatch.chdir(tmp_path)
    for name in ("JOBDEF_SHEETS", "JOBDEF_LANG"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["diff", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_diff_across_commits_reads_both_revisions(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit(repo / "jobdefs/defaults.yaml", "timeout: 30s", "timeout: 2m")
    commit_all(repo, "slower timeout")
    edit(repo / "jobdefs/charge_card.yaml", "deadline: 1h\n", "deadline: 1h\ntimeout: 5s\n")
    commit_all(repo, "charge_card is quick")

    code, out, _ = _run(capsys, "git:HEAD~2", "git:HEAD~1", "--format", "json")
    report = json.loads(out)
    assert code == 0
    assert (report["old"], report["new"]) == ("git:HEAD~2", "git:HEAD~1")
    # The Defaults change reaches all three jobs; none of them sets its own timeout.
    changed = {job["name"]: job["fields"] for job in report["jobs"]}
    assert sorted(changed) == ["charge_card", "send_receipt", "ship_order"]
    for fields in changed.values():
        assert [(f["path"], f["before"], f["after"]) for f in fields] == [("timeout", 30.0, 120.0)]
        assert fields[0]["after_origin"]["file"] == "jobdefs/defaults.yaml"
        assert fields[0]["after_origin"]["source"] == "defaults"

    code, out, _ = _run(capsys, "git:HEAD~1", "git:HEAD", "--format", "json")
    (job,) = json.loads(out)["jobs"]
    assert job["name"] == "charge_card"
    assert job["fields"][0]["after_origin"]["file"] == "jobdefs/charge_card.yaml"


def test_working_tree_against_head_from_the_project_root_without_checkout(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit(repo / "jobdefs/send_receipt.yaml", '"order-{order_id}"', '"receipt-{order_id}"')
    status_before = git(repo, "status", "--porcelain")
    head_before = git(repo, "rev-parse", "HEAD")

    code, out, _ = _run(capsys, "git:HEAD", ".")
    assert code == 0
    assert "send_receipt" in out
    assert "order-{order_id} → receipt-{order_id}" in out
    assert "BREAKING" in out
    assert "keys of jobs already queued will not match" in out
    # Reading the revision touched neither the work tree nor HEAD.
    assert git(repo, "status", "--porcelain") == status_before
    assert git(repo, "rev-parse", "HEAD") == head_before
    assert (repo / "jobdefs/send_receipt.yaml").read_text().count("receipt-{order_id}") == 1


def test_fail_on_breaking_exits_1_only_when_a_change_is_breaking(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit(repo / "jobdefs/ship_order.yaml", "max_attempts: 6", "max_attempts: 8")
    code, out, _ = _run(capsys, "git:HEAD", ".", "--fail-on", "breaking")
    assert code == 0
    assert out.splitlines()[1] == "no breaking change · jobs: 1 changed, 2 unchanged"
    edit(repo / "jobdefs/ship_order.yaml", "max_attempts: 8", "max_attempts: 3")
    assert _run(capsys, "git:HEAD", ".", "--fail-on", "breaking")[0] == 1
    assert _run(capsys, "git:HEAD", ".")[0] == 0  # without --fail-on the diff is a report


def test_rename_across_commits(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    git(repo, "mv", "jobdefs/send_receipt.yaml", "jobdefs/email_receipt.yaml")
    edit(repo / "jobdefs/email_receipt.yaml", "name: send_receipt", "name: email_receipt")
    commit_all(repo, "rename")
    code, out, _ = _run(capsys, "git:HEAD~1", "git:HEAD", "--format", "json")
    (job,) = json.loads(out)["jobs"]
    assert (job["status"], job["old_name"], job["name"]) == (
        "renamed",
        "send_receipt",
        "email_receipt",
    )
    assert job["breaking"] is True
    assert code == 0


def test_markdown_is_a_pull_request_comment(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit(repo / "jobdefs/defaults.yaml", "done: 30d", "done: 7d")
    (repo / "jobdefs/refund_card.yaml").write_text(job_sheet("refund_card"))
    code, out, _ = _run(capsys, "git:HEAD", ".", "--format", "markdown")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "### jobdef diff: `git:HEAD` → `.`"
    assert lines[2] == "**3 breaking changes · jobs: 3 changed, 1 added**"
    assert "#### `charge_card` (changed) · **breaking**" in lines
    assert "| Field | Before | After | Set in |" in lines
    retention_line = DEFAULTS.splitlines().index("retention: {done: 30d, dead: until_resolved}")
    assert (
        f"| `retention.done` | `30d` | `7d` | Defaults jobdefs/defaults.yaml:{retention_line + 1} |"
        in lines
    )
    assert any(
        line.startswith("- 🛑 **breaking**: Retention of done jobs cut from 30d to 7d")
        for line in lines
    )
    assert "#### `refund_card` (added)" in lines
    added = next(line for line in lines if "New job" in line)
    assert added.startswith("- ℹ️ note: New job: queue `default`, 4 attempts, worst case ")
    assert added.endswith("idempotency key `order-{order_id}`; `ops-chat` is told about dead jobs.")
    # A Defaults change that reaches several jobs is called out once, at the top.
    assert "> - `retention.done`: `charge_card`, `send_receipt`, `ship_order`" in lines


def test_japanese_report(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit(repo / "jobdefs/defaults.yaml", "notify: {channel: ops-chat, events: [dead]}\n", "")
    code, out, _ = _run(capsys, "git:HEAD", ".", "--lang", "ja")
    assert code == 0
    assert "破壊的な変更 3件" in out
    assert "通知先 ops-chat を削除: ジョブが退避しても誰にも知らされない。" in out


def test_explicit_path_inside_the_revision(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "git:HEAD:jobdefs", "jobdefs", "--format", "json")
    assert code == 0
    assert json.loads(out)["summary"]["unchanged"] == 3


def test_unknown_revision_is_a_one_line_error(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "git:no-such-branch", ".")
    assert code == 2
    assert out == ""
    assert err.startswith(
        "jobdef diff: error: git:no-such-branch: 'no-such-branch' is not a revision"
    )
    assert "git log --oneline" in err
    assert "Traceback" not in err


def test_revision_before_the_sheets_existed_shows_every_job_added(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    git(repo, "checkout", "-q", "--orphan", "empty")
    git(repo, "rm", "-rq", "--cached", ".")
    git(repo, "commit", "-q", "--allow-empty", "-m", "nothing yet")
    code, out, err = _run(capsys, "git:empty", ".", "--format", "json")
    assert code == 0
    assert [job["status"] for job in json.loads(out)["jobs"]] == ["added"] * 3
    assert "note: git:empty holds no sheets" in err


def test_missing_folder_is_a_one_line_error(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "git:HEAD", "no-such-folder")
    assert code == 2
    assert "no-such-folder: no such folder" in err


def test_outside_a_repository_git_revisions_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.chdir(plain)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    code, _, err = _run(capsys, "git:HEAD", ".")
    assert code == 2
    assert "is not inside a git repository" in err


# One edit per breaking kind: (file, old text, new text), applied as one commit.
BREAKING_EDITS = {
    "idempotency_recipe": ("send_receipt.yaml", '"order-{order_id}"', '"receipt-{order_id}"'),
    "retention_cut": ("defaults.yaml", "done: 30d", "done: 1d"),
    "notify_channel_removed": ("defaults.yaml", "notify: {channel: ops-chat, events: [dead]}", ""),
    "attempts_lowered": ("ship_order.yaml", "max_attempts: 6", "max_attempts: 2"),
    "queue_changed": ("charge_card.yaml", "deadline: 1h", "deadline: 1h\nqueue: payments"),
    "job_renamed": ("charge_card.yaml", "name: charge_card", "name: capture_card"),
}


@pytest.mark.parametrize("kind", sorted(BREAKING_EDITS))
def test_each_breaking_kind_across_commits_fails_the_check(
    repo: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    file, old, new = BREAKING_EDITS[kind]
    edit(repo / "jobdefs" / file, old, new)
    commit_all(repo, kind)
    code, out, _ = _run(
        capsys, "git:HEAD~1", "git:HEAD", "--format", "json", "--fail-on", "breaking"
    )
    report = json.loads(out)
    kinds = {c["kind"] for job in report["jobs"] for c in job["consequences"] if c["breaking"]}
    assert code == 1
    assert kind in kinds
    assert report["breaking"] is True


def test_removed_job_across_commits_fails_the_check(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    git(repo, "rm", "-q", "jobdefs/send_receipt.yaml")
    commit_all(repo, "drop send_receipt")
    code, out, _ = _run(
        capsys, "git:HEAD~1", "git:HEAD", "--format", "json", "--fail-on", "breaking"
    )
    (job,) = json.loads(out)["jobs"]
    assert (job["status"], job["name"], job["breaking"]) == ("removed", "send_receipt", True)
    assert code == 1


def test_option_like_revision_is_refused(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "git:--output=/tmp/x", ".")
    assert code == 2
    assert "name a revision after git:" in err


def test_a_broken_sheet_at_a_revision_is_named_by_its_place_in_git(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit(repo / "jobdefs/ship_order.yaml", "max_attempts: 6", "max_attempts: six")
    commit_all(repo, "typo")
    code, out, err = _run(capsys, "git:HEAD~1", "git:HEAD")
    assert code == 2
    assert out == ""
    assert "git:HEAD: " in err
    assert "git:HEAD:jobdefs/ship_order.yaml:" in err
    assert "jobdef-diff-" not in err  # never the temporary folder


def test_database_counts_the_jobs_queued_under_the_old_policy(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from jobdef.runtime import connect
    from jobdef.sheets.pipeline import load_registry

    url = f"sqlite:///{repo / 'jobs.db'}"
    queue = connect(url, load_registry([repo / "jobdefs"]))
    for order_id in (1, 2, 3):
        queue.enqueue("send_receipt", {"order_id": order_id})
    queue.enqueue("ship_order", {"order_id": 1})
    queue.backend.close()
    edit(repo / "jobdefs/send_receipt.yaml", '"order-{order_id}"', '"receipt-{order_id}"')
    edit(repo / "jobdefs/charge_card.yaml", '"order-{order_id}"', '"charge-{order_id}"')

    code, out, _ = _run(capsys, "git:HEAD", ".", "--db", url, "--format", "json")
    assert code == 0
    recipe = {
        job["name"]: next(c for c in job["consequences"] if c["kind"] == "idempotency_recipe")
        for job in json.loads(out)["jobs"]
    }
    assert recipe["send_receipt"]["facts"]["active"] == 3
    assert recipe["charge_card"]["facts"]["active"] == 0
    assert recipe["send_receipt"]["message"].endswith(
        "adds a second job (3 queued or running now)."
    )


def test_database_that_does_not_exist_is_not_created(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{repo / 'missing.db'}"
    code, _, err = _run(capsys, "git:HEAD", ".", "--db", url)
    assert code == 2
    assert "Traceback" not in err
    assert not (repo / "missing.db").exists()
