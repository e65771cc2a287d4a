"""A project uses the plugin exactly as a user would: its own pytest, its own config.

``user_project/`` is a small shop with a sheet, handlers under ``src/`` found
through ``[tool.jobdef]`` and tests that take ``jobdef_queue``. A copy of it is
tested by ``python -m pytest`` in a process of its own: once with the plugin
loaded through the installed entry point (where a failing test shows the kit's
message in pytest's report), once with entry points off and ``-p jobdef.testing``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent / "user_project"

pytestmark = pytest.mark.slow


@pytest.fixture
def project(tmp_path: Path) -> Path:
    copy = tmp_path / "shop"
    shutil.copytree(PROJECT, copy, ignore=shutil.ignore_patterns("__pycache__", ".*"))
    return copy


def run_pytest(
    project: Path, *args: str, autoload: bool = True
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "JOBDEF_"))}
    if not autoload:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_installed_plugin_gives_the_fixture_and_its_messages(project):
    (project / "tests" / "test_wrong.py").write_text(
        "from shop.signup import sign_up\n\n\n"
        "def test_wrong_address(jobdef_queue):\n"
        '    sign_up(jobdef_queue, "ann@example.com")\n'
        '    jobdef_queue.assert_enqueued("send_welcome_mail", {"email": "anne@example.com"})\n',
        "utf-8",
    )
    done = run_pytest(project)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 4 passed" in done.stdout
    assert (
        "AssertionError: expected job 'send_welcome_mail' with args "
        '{"email": "anne@example.com"} to be enqueued, but no such job was stored; '
        "enqueued instead (1 job):" in done.stdout
    )
    assert '#1 send_welcome_mail {"email": "ann@example.com"} (queued)' in done.stdout
    assert "the args differ: compare them with the call your code makes" in done.stdout


def test_the_plugin_loads_with_dash_p_when_entry_points_are_off(project):
    done = run_pytest(project, "-p", "jobdef.testing", autoload=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout
    # Without it the fixture is unknown: the first run really used the -p plugin.
    bare = run_pytest(project, autoload=False)
    assert bare.returncode == 1
    assert "fixture 'jobdef_queue' not found" in bare.stdout


def test_the_sheets_option_overrides_tool_jobdef(project, tmp_path):
    elsewhere = tmp_path / "other-sheets"
    shutil.move(project / "jobs", elsewhere)
    done = run_pytest(project, f"--jobdef-sheets={elsewhere}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout
