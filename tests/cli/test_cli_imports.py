"""The CLI loads only what a command uses: `import jobdef.cli` loads no third-party
library at all, `jobdef enqueue` on SQLite none of the dashboard's, the
schema validator's, PostgreSQL's driver or asyncio, and neither it nor `jobdef validate`
the workflows' code for sheets without a workflow (read in a fresh interpreter's
sys.modules, not timed: start-up time is measured in bench/, never asserted)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from jobdef.backends import open_backend

REPO = Path(__file__).resolve().parents[2]

# Libraries some commands need and others must not pay for.
HEAVY = (
    "asyncio",
    "jsonschema",
    "referencing",
    "jinja2",
    "psycopg",
    "starlette",
    "yaml",
    "sqlite3",
    "prometheus_client",
    "opentelemetry",
)

# Runs the command (none: only imports the CLI) in a fresh interpreter and prints the
# modules it loaded, as JSON, on the last line of stdout.
WRAPPER = """
import json, sys
from jobdef.cli import main
code = main(sys.argv[1:]) if sys.argv[1:] else 0
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


# What a project of Job sheets alone, without a pyproject.toml, has no use for: the
# workflows' policies, timelines and rules, the TOML reader, HTML escaping (the docs'),
# the logging package (nothing to log) and uuid (the scratch stores of tests).
NOT_FOR_JOBS_ALONE = (
    "jobdef.policy.workflow",
    "jobdef.policy.flow_timeline",
    "jobdef.sheets.rules.workflows",
    "jobdef.sheets.rules.flow_args",
    "jobdef.sheets.rules.flow_deadline",
    "jobdef.sheets.rules.flow_runtime",
    "jobdef.sheets.rules.flow_notify",
    "tomllib",
    "html",
    "logging",
    "uuid",
)


def _loaded(
    *argv: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> tuple[int, set[str]]:
    result = subprocess.run(
        [sys.executable, "-c", WRAPPER, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
        env=None if env is None else {**os.environ, **env},
    )
    found = json.loads(result.stdout.strip().splitlines()[-1])
    return found["code"], set(found["modules"])


def test_importing_the_cli_loads_none_of_the_heavy_libraries() -> None:
    _, modules = _loaded()
    assert [name for name in HEAVY if name in modules] == []


def test_enqueue_on_sqlite_loads_neither_asyncio_nor_the_other_engines_libraries(
    tmp_path: Path, example_sheets: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    open_backend(url).close()
    code, modules = _loaded(
        *("enqueue", "send_reservation_mail", "--args", '{"reservation_id": 1}'),
        *("--db", url, "--sheets", str(example_sheets)),
    )
    assert code == 0
    unused = ("asyncio", "jsonschema", "referencing", "jinja2", "psycopg", "starlette")
    assert [name for name in unused if name in modules] == []
    # No tracer provider can be set in this process: its enqueue span would be a no-op.
    assert "opentelemetry" not in modules


def test_a_worker_loads_no_template_engine_until_it_renders_a_message(
    tmp_path: Path, example_sheets: Path
) -> None:
    # Its notification channels have no template of their own: the built-in layouts are
    # compiled when a message is first rendered, which a worker that sends none never does.
    sheets = _jobs_alone(tmp_path, example_sheets)
    assert "template" not in (sheets / "channels.yaml").read_text()
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    open_backend(url).close()
    code, modules = _loaded(
        *("worker", "--burst", "--db", url, "--sheets", str(sheets)),
        cwd=REPO,
        env={"OPS_CHAT_WEBHOOK_URL": "http://127.0.0.1:9/hook"},  # its channel's; never called
    )
    assert code == 0
    assert "jobdef.notify.render" in modules  # what renders them is there
    assert "jinja2" not in modules


def _jobs_alone(tmp_path: Path, example_sheets: Path) -> Path:
    """A sheets folder with one Job, its channel and its queue: no workflow."""
    sheets = tmp_path / "jobdefs"
    sheets.mkdir()
    for name in ("send_reservation_mail.yaml", "channels.yaml", "queues.yaml"):
        shutil.copy(example_sheets / name, sheets / name)
    return sheets


def test_validate_of_jobs_alone_loads_no_workflow_code_nor_the_toml_reader(
    tmp_path: Path, example_sheets: Path
) -> None:
    sheets = _jobs_alone(tmp_path, example_sheets)
    code, modules = _loaded("validate", str(sheets), cwd=tmp_path)
    assert code == 0
    assert [name for name in NOT_FOR_JOBS_ALONE if name in modules] == []
    # Nor what only other runs need: the registry (built by enqueue and --check-env),
    # the second reading of documents with errors (none here).
    assert [m for m in ("jobdef.policy.registry", "jobdef.sheets.salvage") if m in modules] == []


def test_enqueue_of_jobs_alone_loads_no_workflow_code_nor_logging(
    tmp_path: Path, example_sheets: Path
) -> None:
    sheets = _jobs_alone(tmp_path, example_sheets)
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    open_backend(url).close()
    code, modules = _loaded(
        *("enqueue", "send_reservation_mail", "--args", '{"reservation_id": 1}'),
        *("--db", url, "--sheets", str(sheets)),
        cwd=tmp_path,
    )
    assert code == 0
    assert [name for name in NOT_FOR_JOBS_ALONE if name in modules] == []


# A fresh interpreter without site, so that no .pth file of the environment imports a
# module before the command does; sys.path is the one site made for this one.
WITHOUT_SITE = """
import json, sys
before = set(sys.modules)
from jobdef.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(set(sys.modules) - before)}))
"""

# What `jobdef validate` of a freshly initialised project (its Defaults and its Channel,
# no Job) has no use for: the policy model and the builder (nothing to build), argparse's
# way to the terminal's width (shutil, which loads the compression modules) and the
# finder of the draft-07 meta-schema (read for a job's args).
NOT_FOR_A_PROJECT_WITHOUT_JOBS = (
    "jobdef.policy.model",
    "jobdef.sheets.build",
    "shutil",
    "importlib.util",
)


def _reported_by(script: str, *argv: str, cwd: Path) -> dict[str, Any]:
    """What ``script`` (run as ``python -S -c script argv`` in ``cwd``, this interpreter's
    path as its PYTHONPATH) prints as JSON on its last line."""
    result = subprocess.run(
        [sys.executable, "-S", "-c", script, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    found: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return found


def _loaded_by_command(*argv: str, cwd: Path) -> tuple[int, set[str]]:
    found = _reported_by(WITHOUT_SITE, *argv, cwd=cwd)
    return found["code"], set(found["modules"])


def test_validate_of_a_project_without_jobs_loads_neither_the_policy_model_nor_shutil(
    tmp_path: Path,
) -> None:
    subprocess.run([sys.executable, "-m", "jobdef", "init"], cwd=tmp_path, check=True)
    code, modules = _loaded_by_command("validate", cwd=tmp_path)
    assert code == 0
    assert "jobdef.sheets.strict_yaml" in modules  # what the command loaded is seen
    assert [name for name in NOT_FOR_A_PROJECT_WITHOUT_JOBS if name in modules] == []


def test_validate_of_a_job_loads_the_policy_model(tmp_path: Path, example_sheets: Path) -> None:
    sheets = _jobs_alone(tmp_path, example_sheets)
    code, modules = _loaded_by_command("validate", str(sheets), cwd=tmp_path)
    assert code == 0
    assert {"jobdef.policy.model", "jobdef.sheets.build"} <= modules
    assert "shutil" not in modules


# Runs `jobdef validate` as _loaded_by_command does, and prints the regular expressions
# compiled meanwhile (re keeps each compiled pattern in its cache) and how many times
# typing.get_type_hints ran (it compiles each annotation it reads).
COMPILED = """
import json, re, sys, typing
hints = typing.get_type_hints
calls = []
typing.get_type_hints = lambda *args, **kwargs: calls.append(args) or hints(*args, **kwargs)
from jobdef.cli import main
code = main(sys.argv[1:])
patterns = [key[1] for key in re._cache if isinstance(key[1], str)]
print(json.dumps({"code": code, "patterns": patterns, "hints": len(calls)}))
"""


def test_validate_of_a_job_compiles_no_pattern_that_only_mistakes_and_other_commands_use(
    tmp_path: Path,
) -> None:
    from jobdef import redact
    from jobdef.render import escape
    from jobdef.sheets import strict_yaml
    from jobdef.sheets.rules import durations, handler, notify, schedule, sizes

    subprocess.run([sys.executable, "-m", "jobdef", "init"], cwd=tmp_path, check=True)
    subprocess.run([sys.executable, "-m", "jobdef", "new", "my_job"], cwd=tmp_path, check=True)
    found = _reported_by(COMPILED, "validate", cwd=tmp_path)
    assert found["code"] == 0
    assert found["hints"] == 0  # the builder reads the model's annotations as text
    unused = {
        "escape": [escape._INVISIBLE, escape._NEWLINES, escape._MD_SPECIAL, escape._MD_ANY],
        "redact": [redact._USERINFO, redact._SECRET_PARAM],
        "rules": [durations._SEXAGESIMAL, durations._SPACED, handler._DOTTED, sizes._WRITTEN],
        "channels and schedules": [notify._TOKEN, schedule._ITEM],
        "block scalars": [strict_yaml._GLUED_HEADER_COMMENT],
    }
    compiled = set(found["patterns"])
    assert {
        what: [p for p in patterns if getattr(p, "pattern", p) in compiled]
        for what, patterns in unused.items()
    } == {what: [] for what in unused}
