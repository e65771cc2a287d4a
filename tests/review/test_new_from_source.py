"""`jobdef new NAME` where the project already has a function NAME (a Django task, a
jobdef handler): the sheet names its real handler and declares its parameters as args,
read from the source without importing it."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
import yaml

from jobdef.cli import main
from jobdef.sheets.pipeline import validate_sheets

TASKS = """\
from django.tasks import task

import this_module_is_not_installed  # never imported by jobdef new


@task()
def send_confirmation(reservation_id: int) -> None: ...


@task(takes_context=True)
def award_points(context, order_id: int, points: "int" = 10, *, note: str | None = None):
    ...


def send_invoice(ctx, invoice_id: int, copies: list[str], extra) -> None: ...


@app.task(bind=True, base=SheetTask, name="sync_stock")
def sync_stock(self, sku: str) -> None: ...
"""


@pytest.fixture
def django_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Django project's layout: manage.py, an app with tasks.py, an empty jobdefs/."""
    (tmp_path / "manage.py").write_text("", "utf-8")
    app = tmp_path / "reservations"
    app.mkdir()
    (app / "__init__.py").write_text("", "utf-8")
    (app / "tasks.py").write_text(TASKS, "utf-8")
    (app / "migrations").mkdir()
    (app / "migrations" / "0001_tasks.py").write_text(TASKS, "utf-8")  # not a module to run
    (tmp_path / "jobdefs").mkdir()
    monkeypatch.chdir(tmp_path)
    for name in ("JOBDEF_SHEETS", "JOBDEF_LANG", "JOBDEF_PYTHONPATH"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def _new(name: str, capsys: pytest.CaptureFixture[str]) -> tuple[dict, str, str]:
    assert main(["new", name, "--sheets", "jobdefs"]) == 0
    out = capsys.readouterr()
    text = (Path("jobdefs") / f"{name}.yaml").read_text("utf-8")
    return yaml.safe_load(text), out.out, out.err


def test_a_django_task_gives_its_path_and_parameters(
    django_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sheet, out, err = _new("send_confirmation", capsys)
    assert sheet["handler"] == "reservations.tasks:send_confirmation"
    assert sheet["args"] == {"reservation_id": {"type": "integer"}}
    assert sheet["idempotency"]["key"] == "{reservation_id}:send_confirmation"
    assert out.splitlines()[-1] + "\n" == (
        "wrote jobdefs/send_confirmation.yaml with the handler and args of "
        "reservations.tasks:send_confirmation (reservations/tasks.py:7); fill in the TODO "
        "lines, then run: jobdef explain send_confirmation\n"
    )
    assert err == ""
    # Only the TODO lines are left: no error, and no finding about the handler or args.
    found = validate_sheets(["jobdefs"]).diagnostics
    assert {d.code for d in found} == {"JD321"}, found


def test_a_context_parameter_is_no_arg_and_defaults_make_args_optional(
    django_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sheet, _, _ = _new("award_points", capsys)
    assert sheet["handler"] == "reservations.tasks:award_points"
    assert sheet["args"] == {
        "order_id": {"type": "integer"},
        "points": {"type": "integer", "required": False},
        "note": {"type": ["string", "null"], "required": False},
    }


def test_a_jobdef_handler_leaves_ctx_out_and_an_unannotated_arg_says_what_to_write(
    django_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sheet, _, _ = _new("send_invoice", capsys)
    assert sheet["handler"] == "reservations.tasks:send_invoice"
    assert sheet["args"] == {
        "invoice_id": {"type": "integer"},
        "copies": {"type": "array"},
        "extra": {"description": "TODO: what extra is, and its type (type: integer, ...)"},
    }


def test_a_bound_celery_task_leaves_self_out(
    django_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sheet, _, _ = _new("sync_stock", capsys)
    assert sheet["args"] == {"sku": {"type": "string"}}


def test_two_functions_of_the_name_are_named_and_the_sheet_keeps_its_placeholder(
    django_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = django_project / "billing.py"
    other.write_text("def send_confirmation(ctx, order_id: int): ...\n", "utf-8")
    sheet, _, err = _new("send_confirmation", capsys)
    assert sheet["handler"] == "app.jobs:send_confirmation"
    assert err == (
        "note: several functions are named send_confirmation: billing:send_confirmation "
        "(billing.py:1), reservations.tasks:send_confirmation (reservations/tasks.py:7); "
        "write the sheet's handler\n"
    )


def test_no_function_of_the_name_keeps_the_placeholder(
    django_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sheet, out, _ = _new("rebuild_index", capsys)
    assert sheet["handler"] == "app.jobs:rebuild_index"
    assert list(sheet["args"]) == ["record_id"]
    assert "with the handler" not in out


def test_the_sheet_of_a_task_without_parameters_has_no_key_to_guess(
    django_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (django_project / "reservations" / "tasks.py").write_text(
        textwrap.dedent("""\
            from django.tasks import task


            @task()
            def nightly_cleanup() -> None: ...
            """),
        "utf-8",
    )
    sheet, _, _ = _new("nightly_cleanup", capsys)
    assert sheet["args"] == {}
    assert "idempotency" not in sheet
    assert {d.code for d in validate_sheets(["jobdefs"]).diagnostics} == {"JD321"}


def test_a_fifo_or_a_link_among_the_sources_is_not_read(
    django_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.mkfifo(django_project / "reservations" / "pipe.py")  # a read would wait for ever
    (django_project / "linked.py").symlink_to(django_project / "reservations" / "tasks.py")
    sheet, _, err = _new("send_confirmation", capsys)
    assert sheet["handler"] == "reservations.tasks:send_confirmation"
    assert err == ""


def test_a_package_under_src_is_named_by_its_packages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    package = tmp_path / "src" / "shop"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", "utf-8")
    (package / "jobs.py").write_text("def send_receipt(ctx, order_id: int): ...\n", "utf-8")
    (tmp_path / "jobdefs").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JOBDEF_PYTHONPATH", raising=False)
    sheet, _, _ = _new("send_receipt", capsys)
    assert sheet["handler"] == "shop.jobs:send_receipt"
    assert sheet["args"] == {"order_id": {"type": "integer"}}
