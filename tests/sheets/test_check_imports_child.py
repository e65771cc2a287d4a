"""`validate --check-imports` imports the project's code in one child process: a module that
exits, hangs or crashes at import is a JD302 finding at its sheet's `handler:` line, and
neither ends nor freezes the validator."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from jobdef.sheets.rules import imports

pytestmark = pytest.mark.slow  # child processes

SHEET = """\
apiVersion: jobdef/v1
kind: Job
name: {name}
handler: {module}:run
max_attempts: 1
timeout: 30s
errors:
  default: fatal
"""

# Module bodies by job name; each records the process that imported it.
MODULES = {
    "exits_job": "import sys\nsys.exit(0)\n",
    "hard_exit_job": "import os\nos._exit(3)\n",
    "hangs_job": "import time\ntime.sleep(600)\n",
    "crashes_job": "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n",
    "prints_job": 'print(\'{"not": "the report"}\')\n\ndef run(ctx):\n    pass\n',
    "fine_job": "def run(ctx):\n    pass\n",
}
RECORD = "import os\nwith open({log!r}, 'a') as f:\n    f.write(f'{{os.getpid()}}\\n')\n"


def _project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    sheets = tmp_path / "jobdefs"
    sheets.mkdir()
    names = {}
    log = tmp_path / "pids.log"
    for job, body in MODULES.items():
        module = f"mod_{job}_{uuid.uuid4().hex[:6]}"
        names[job] = module
        (tmp_path / f"{module}.py").write_text(RECORD.format(log=str(log)) + body, "utf-8")
        (sheets / f"{job}.yaml").write_text(SHEET.format(name=job, module=module), "utf-8")
    return sheets, names


def test_modules_that_exit_hang_or_crash_are_findings_at_their_handler_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sheets, _modules = _project(tmp_path)
    monkeypatch.setattr(imports, "IMPORT_TIMEOUT", 3.0, raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    from jobdef.sheets.pipeline import validate_sheets

    result = validate_sheets([sheets], check_imports=True)
    found = {Path(d.file).stem: d for d in result.diagnostics if d.code == "JD302"}
    assert set(found) == {"exits_job", "hard_exit_job", "hangs_job", "crashes_job"}
    assert all(d.line == 4 for d in found.values())  # the handler: line
    assert "called sys.exit(0)" in found["exits_job"].message
    assert "exit code 3" in found["hard_exit_job"].message
    assert "did not finish within 3 s" in found["hangs_job"].message
    assert "SIGSEGV" in found["crashes_job"].message
    pids = set((tmp_path / "pids.log").read_text("utf-8").split())
    assert str(os.getpid()) not in pids  # nothing was imported in this process
    # One child for all, and one more after each that ended its child (3 of them).
    assert len(pids) <= 4


def test_the_cli_reports_them_and_its_json_stays_clean(tmp_path: Path) -> None:
    sheets, _ = _project(tmp_path)
    for job in ("hangs_job",):  # the default timeout is 30 s: keep the run short
        (sheets / f"{job}.yaml").unlink()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "jobdef",
            "validate",
            str(sheets),
            "--check-imports",
            "--pythonpath",
            str(tmp_path),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    report = json.loads(result.stdout)  # what the modules print does not reach it
    text = json.dumps(report)
    for job in ("exits_job", "hard_exit_job", "crashes_job"):
        assert f"{job}.yaml" in text
    assert "prints_job.yaml" not in text
