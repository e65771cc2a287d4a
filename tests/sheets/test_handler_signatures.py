"""Handler signatures (JD303): `--check-imports`, and the worker at start, call each handler's
parameters against the sheet's args, as the worker will call it: ``handler(ctx, **args)``."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from jobdef.sheets.pipeline import validate_sheets

SHEET = """\
apiVersion: jobdef/v1
kind: Job
name: sample_job
handler: {module}:{function}
args:
  item_id: {{type: integer}}
  note: {{type: string, required: false}}
max_attempts: 1
timeout: 30s
errors:
  default: fatal
"""

HANDLERS = """
def noop(ctx, i):
    pass

def fits(ctx, item_id, note=None):
    pass

def fits_kwargs(ctx, **kwargs):
    pass

def fits_positional(ctx, /, item_id, *, note="x"):
    pass

def no_ctx():
    pass

def optional_without_default(ctx, item_id, note):
    pass

def extra_keyword_only(ctx, item_id, *, note=None, tenant):
    pass
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """A project folder with a handlers module of a name no other test imports."""
    module = f"handlers_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(HANDLERS, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path, module


def _findings(project: tuple[Path, str], function: str) -> list[str]:
    folder, module = project
    sheet = folder / "sheet.yaml"
    sheet.write_text(SHEET.format(module=module, function=function), encoding="utf-8")
    result = validate_sheets([sheet], check_imports=True)
    return [f"{d.line}:{d.column} {d.code} {d.message}" for d in result.diagnostics]


def test_a_parameter_named_unlike_the_arg_is_reported_at_the_handler_line(project) -> None:
    [finding] = _findings(project, "noop")
    assert finding.startswith("4:10 JD303 ")
    assert "job 'sample_job'" in finding
    assert "unexpected (args it does not take): item_id, note" in finding
    assert "missing (parameters no arg fills): i" in finding
    assert "def noop(ctx, item_id, note=None)" in finding


@pytest.mark.parametrize("function", ["fits", "fits_kwargs", "fits_positional"])
def test_handlers_that_fit_every_call_pass(project, function: str) -> None:
    assert _findings(project, function) == []


@pytest.mark.parametrize(
    ("function", "words"),
    [
        ("no_ctx", "takes no first positional parameter for ctx"),
        ("optional_without_default", "without a default though the arg is optional: note"),
        ("extra_keyword_only", "missing (parameters no arg fills): tenant"),
    ],
)
def test_each_misfit_is_named(project, function: str, words: str) -> None:
    [finding] = _findings(project, function)
    assert " JD303 " in finding
    assert words in finding


def test_without_check_imports_nothing_is_imported(project) -> None:
    folder, module = project
    sheet = folder / "sheet.yaml"
    sheet.write_text(SHEET.format(module=module, function="noop"), encoding="utf-8")
    assert validate_sheets([sheet]).diagnostics == []


@pytest.mark.slow
def test_the_cli_fails_and_points_at_the_handler_line(project) -> None:
    folder, module = project
    (folder / "sheet.yaml").write_text(
        SHEET.format(module=module, function="noop"), encoding="utf-8"
    )
    result = subprocess.run(
        [sys.executable, "-m", "jobdef", "validate", "sheet.yaml", "--check-imports"],
        capture_output=True,
        text=True,
        cwd=folder,
        check=False,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "sheet.yaml:4:10: error JD303 handler " in result.stdout
    assert "Traceback" not in result.stderr
    # The handler that does not fit is not also said to take its args.
    assert "imports and takes its args" not in result.stdout


def test_the_worker_start_check_lists_every_job_that_would_fail(project) -> None:
    """What the worker asks at start: one line per job whose handler cannot be called."""
    from jobdef.sheets.handlers import handler_problems
    from jobdef.sheets.pipeline import load_registry

    folder, module = project
    for name, function in [("a_job", "noop"), ("b_job", "fits"), ("c_job", "missing_one")]:
        text = SHEET.format(module=module, function=function).replace("sample_job", name)
        (folder / f"{name}.yaml").write_text(text, encoding="utf-8")
    problems = handler_problems(load_registry([folder]))
    assert len(problems) == 2
    assert problems[0].startswith(f"job 'a_job': handler {module}:noop: its parameters do not fit")
    assert problems[1] == (
        f"job 'c_job': handler {module}:missing_one: module {module} has no attribute missing_one"
    )
