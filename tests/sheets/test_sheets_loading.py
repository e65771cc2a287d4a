"""load_documents / load_registry: validated documents whose origins point at real lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobdef.errors import SheetError
from jobdef.sheets.pipeline import load_documents, load_registry

REPO = Path(__file__).resolve().parents[2]
INVALID = REPO / "tests" / "sheets" / "invalid"


def _line_of(path: Path, text: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(number for number, line in enumerate(lines, 1) if text in line)


def test_origins_point_at_the_sheet_line_or_the_defaults_line() -> None:
    registry = load_registry([REPO / "jobdefs"])
    job = registry.job("send_reservation_mail")
    sheet = REPO / "jobdefs" / "send_reservation_mail.yaml"
    own = job.origins["backoff.max"]
    assert (own.file, own.line, own.column, own.source) == (
        str(sheet),
        _line_of(sheet, "  max: 10m"),
        8,
        "sheet",
    )
    inherited = registry.job("export_csv").origins["on_reclaim"]
    defaults = REPO / "jobdefs" / "defaults.yaml"
    assert (inherited.file, inherited.line, inherited.source) == (
        str(defaults),
        _line_of(defaults, "on_reclaim: retry"),
        "defaults",
    )


def test_load_documents_raises_sheet_error_carrying_every_diagnostic() -> None:
    with pytest.raises(SheetError) as caught:
        load_documents([INVALID / "duplicate_job_name"])
    assert [d.code for d in caught.value.diagnostics] == ["JD271", "JD271"]
    assert "a.yaml:3:7: error JD271" in caught.value.message
    assert caught.value.message.endswith("`jobdef validate` lists every finding")


def test_warnings_do_not_stop_loading() -> None:
    docs = load_documents([INVALID / "retry_unreachable"])
    assert [doc.kind for doc in docs] == ["Job"]
    assert docs[0].positions[("max_attempts",)] == (7, 15)


JOB = """\
apiVersion: jobdef/v1
kind: Job
name: {name}
handler: shop.jobs:{name}
errors: {{default: retry}}
{extra}"""


def test_a_jobs_runtime_accept_adds_to_the_defaults_list(tmp_path: Path) -> None:
    (tmp_path / "defaults.yaml").write_text(
        "apiVersion: jobdef/v1\nkind: Defaults\nretention: {done: 30d}\n"
        "runtime: {rq: {accept: [retention.done, on_reclaim]}}\n",
        encoding="utf-8",
    )
    own = "priority: 5\nruntime: {rq: {accept: [priority, on_reclaim]}, celery: {}}\n"
    (tmp_path / "a.yaml").write_text(JOB.format(name="a", extra=own), encoding="utf-8")
    (tmp_path / "b.yaml").write_text(JOB.format(name="b", extra=""), encoding="utf-8")
    registry = load_registry([tmp_path])
    a, b = registry.job("a").runtime, registry.job("b").runtime
    assert a.rq.accept == ("retention.done", "on_reclaim", "priority")
    assert b.rq.accept == ("retention.done", "on_reclaim")
    # Naming a runtime says it runs the job, from the sheet or from the Defaults.
    assert (a.rq.named, a.celery.named, b.rq.named, b.celery.named) == (True, True, True, False)
    origins = [registry.job(n).origin("runtime.rq.accept") for n in ("a", "b")]
    assert [o and o.source for o in origins] == ["sheet", "defaults"]


def test_two_defaults_naming_one_runtime_are_refused(tmp_path: Path) -> None:
    for name in ("team", "platform"):
        (tmp_path / f"{name}.yaml").write_text(
            f"apiVersion: jobdef/v1\nkind: Defaults\nname: {name}\n"
            "runtime: {celery: {accept: [priority]}}\n",
            encoding="utf-8",
        )
    with pytest.raises(SheetError) as caught:
        load_documents([tmp_path])
    assert [d.code for d in caught.value.diagnostics] == ["JD272"]
    assert "runtime.celery is also set by the Defaults at" in caught.value.message
