"""`jobdef check --runtime`: the fidelity table per sheet, what a sheet accepts, the
infrastructure checks against a real Redis, and docs/runtimes.md generated from the same
table."""

from __future__ import annotations

import contextlib
import io
import json
import re
import textwrap
from pathlib import Path

import pytest

from jobdef.adapters.fidelity import acceptable_fields, markdown_table
from jobdef.cli import main
from jobdef.sheets.files import shown_path as shown
from jobdef.sheets.schema_check import schema

DOCS = Path(__file__).resolve().parents[2] / "docs" / "runtimes.md"
SHEET = """\
apiVersion: jobdef/v1
kind: Job
name: sync_stock
handler: shop.jobs:sync_stock
max_attempts: 3
backoff: {{strategy: fixed, initial: 1500ms, jitter: none}}
timeout: 30s
errors: {{default: retry}}
{extra}"""


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _sheets(tmp_path: Path, extra: str = "") -> Path:
    folder = tmp_path / "jobdefs"
    folder.mkdir(exist_ok=True)
    (folder / "sync_stock.yaml").write_text(SHEET.format(extra=extra), encoding="utf-8")
    return folder


def test_a_field_rq_cannot_honour_exactly_fails_until_the_sheet_accepts_it(
    tmp_path: Path,
) -> None:
    sheets = _sheets(tmp_path)
    code, out, _ = _run(["check", "--runtime", "rq", "--sheets", str(sheets)])
    assert code == 1
    assert re.search(r"backoff\.initial +approximate \(RQ waits whole seconds.*NOT ACCEPTED", out)
    assert "runtime: {rq: {accept: [backoff.initial, on_reclaim]}}" in out
    assert "infrastructure: not checked" in out
    # Celery counts in fractions of a second: the same sheet is exact there.
    assert _run(["check", "--runtime", "celery", "--sheets", str(sheets)])[0] == 0

    sheets = _sheets(tmp_path, "runtime: {rq: {accept: [backoff.initial, on_reclaim]}}\n")
    code, out, _ = _run(["check", "--runtime", "rq", "--sheets", str(sheets), "--format", "json"])
    assert code == 0
    data = json.loads(out)
    fields = {f["field"]: f for f in data["jobs"][0]["fields"]}
    assert fields["backoff.initial"]["fidelity"] == "approximate"
    assert fields["backoff.initial"]["accepted"] is True
    assert fields["timeout"]["fidelity"] == "exact"


def test_a_batch_job_and_other_events_are_unsupported_on_both(tmp_path: Path) -> None:
    extra = "mode: batch\nschedule: '0 3 * * *'\nnotify: {channel: ops, events: [retry, dead]}\n"
    sheets = _sheets(tmp_path, extra)
    (sheets / "ops.yaml").write_text(
        "apiVersion: jobdef/v1\nkind: Channel\nname: ops\ntype: log\n", encoding="utf-8"
    )
    for runtime in ("celery", "rq"):
        code, out, _ = _run(["check", "--runtime", runtime, "--sheets", str(sheets)])
        assert code == 1
        assert re.search(r"schedule +unsupported \(the adapters do not drive cron", out)
        assert re.search(r"notify\.events +unsupported \(only `dead` is notified; retry", out)


def test_the_accept_list_of_the_schema_is_the_fields_a_runtime_may_not_honour() -> None:
    job = schema()["definitions"]["Job"]["properties"]["runtime"]["properties"]
    for runtime in ("celery", "rq"):
        assert job[runtime]["properties"]["accept"]["items"]["enum"] == list(acceptable_fields())


def test_a_celery_broker_visibility_timeout_shorter_than_a_held_retry_is_a_finding(
    tmp_path: Path, redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sheets = _sheets(tmp_path)
    (tmp_path / f"{prefix.replace('-', '_')}_app.py").write_text(
        textwrap.dedent(f"""\
            from celery import Celery
            from jobdef.adapters.celery import configure

            app = Celery("shop", broker={redis_url!r})
            app.conf.broker_transport_options = {{"visibility_timeout": 20}}
            configure(app, sheets={str(sheets)!r}, database="sqlite:///{tmp_path}/j.db",
                      prefix={prefix!r})
            """),
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    app = f"{prefix.replace('-', '_')}_app:app"
    code, out, _ = _run(["check", "--runtime", "celery", "--sheets", str(sheets), "--app", app])
    assert code == 1
    assert "infrastructure: the broker's visibility_timeout is 20s" in out
    assert "sync_stock's timeout plus its longest countdown (31.5s)" in out


def test_rq_queues_without_a_worker_or_a_scheduler_are_findings(
    tmp_path: Path, redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sheets = _sheets(tmp_path, f"queue: {prefix}\n")
    module = f"{prefix.replace('-', '_')}_rq"
    (tmp_path / f"{module}.py").write_text(
        textwrap.dedent(f"""\
            from redis import Redis
            from jobdef.adapters.rq import SheetQueue

            sheets = SheetQueue(Redis.from_url({redis_url!r}), sheets={str(sheets)!r},
                                prefix={prefix!r})
            """),
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    argv = ["check", "--runtime", "rq", "--sheets", str(sheets), "--app", f"{module}:sheets"]
    code, out, _ = _run(argv)
    assert code == 1
    assert f"infrastructure: no RQ worker listens on queue '{prefix}'" in out
    code, _, err = _run([*argv[:-1], f"{module}:nothing"])
    assert code == 2
    assert f"{module} has no nothing" in err


def test_docs_runtimes_holds_the_table_the_check_prints() -> None:
    text = DOCS.read_text(encoding="utf-8")
    found = re.search(r"<!-- fidelity-table -->\n(.*?)<!-- /fidelity-table -->", text, re.S)
    assert found, "docs/runtimes.md lost its fidelity-table markers"
    assert found.group(1) == markdown_table(), (
        "docs/runtimes.md is out of date: paste jobdef.adapters.fidelity.markdown_table() "
        "between its fidelity-table markers"
    )


def test_a_field_of_the_defaults_is_accepted_once_in_the_defaults_for_every_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert _run(["init"])[0] == 0  # its Defaults keep done jobs 30 days
    sheets = tmp_path / "jobdefs"
    (sheets / "sync_stock.yaml").write_text(SHEET.format(extra=""), encoding="utf-8")
    (sheets / "ship_order.yaml").write_text(
        SHEET.format(extra="priority: 5\nruntime: {celery: {accept: [priority]}}\n").replace(
            "sync_stock", "ship_order"
        ),
        encoding="utf-8",
    )
    code, out, _ = _run(["check", "--runtime", "celery"])
    assert code == 1
    assert re.search(r"retention\.done +approximate .*NOT ACCEPTED", out)
    defaults = sheets / "defaults.yaml"
    line = (
        defaults.read_text("utf-8")
        .splitlines()
        .index("retention: {done: 30d, dead: until_resolved}")
    )
    advice = (
        f"  -> celery cannot honour retention.done exactly, set in the Defaults "
        f"(jobdefs/defaults.yaml:{line + 1}): accept it there, for every job: "
        "runtime: {celery: {accept: [retention.done]}}\n"
    )
    assert advice in out
    assert "change the sheet" not in out  # neither sheet writes retention
    assert advice in DOCS.read_text("utf-8")  # docs/runtimes.md shows it as printed

    # The line jobdef init leaves commented in the Defaults, uncommented: every job
    # accepts it, and a Job's own accept adds to the Defaults' list.
    text = defaults.read_text("utf-8")
    assert "\n# runtime: {celery: {accept: [retention.done]}}\n" in text
    defaults.write_text(text.replace("\n# runtime: ", "\nruntime: "), "utf-8")
    code, out, _ = _run(["check", "--runtime", "celery", "--format", "json"])
    assert code == 0, out
    for job in json.loads(out)["jobs"]:
        accepted = {f["field"] for f in job["fields"] if f["accepted"]}
        want = {"retention.done", "priority"} if job["job"] == "ship_order" else {"retention.done"}
        assert accepted == want, job["job"]


FLOW = """\
apiVersion: jobdef/v1
kind: Workflow
name: restock
steps:
  first: {job: sync_stock}
  again: {job: sync_stock, after: {first: run}}
"""


@pytest.mark.parametrize(
    ("runtime", "maps", "lost"),
    [
        ("celery", "a chord for each fan-in, which needs a result backend", "or of finally"),
        ("rq", "Dependency(allow_failure=True) for a run edge", "never cancelled"),
    ],
)
def test_a_workflow_is_one_line_saying_it_runs_only_on_jobdefs_worker(
    tmp_path: Path, runtime: str, maps: str, lost: str
) -> None:
    sheets = _sheets(tmp_path)
    alone = _run(["check", "--runtime", runtime, "--no-app", "--sheets", str(sheets)])[0]
    (sheets / "restock.yaml").write_text(FLOW, encoding="utf-8")
    code, out, _ = _run(["check", "--runtime", runtime, "--no-app", "--sheets", str(sheets)])
    assert code == alone  # a flow's line never fails the check: validate refuses (JD372)
    [line] = [line for line in out.splitlines() if line.startswith("workflow ")]
    assert line.startswith(
        f"workflow restock ({shown(sheets / 'restock.yaml')}): runs only on jobdef's "
        f"worker (jobdef start restock), not on {runtime}: "
    )
    assert maps in line
    assert lost in line
    assert line.endswith(
        "run jobdef worker on its steps' queues (default), apart from the "
        "queues that runtime serves"
    )
    code, out, _ = _run(
        ["check", "--runtime", runtime, "--no-app", "--sheets", str(sheets), "--format", "json"]
    )
    [flow] = json.loads(out)["workflows"]
    assert flow["workflow"] == "restock"
    assert line.endswith(flow["text"])
