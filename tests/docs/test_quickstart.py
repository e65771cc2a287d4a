"""docs/quickstart.md, run as written: its file blocks written and its `sh` blocks run,
in order, in a fresh temporary folder, each step's outcome checked.

A block whose info string names a path (```` ```python app/invoices.py ````) is written
there; a ```` ```sh ```` block is run line by line; ```` ```sh install ```` (pip) is not.
Each command must have a check below: a command added to the page fails this test
until it says what the step must achieve. A ```` ```text output ```` block shows what
the ``sh`` block before it prints: each of its lines is a line of that output, in
any order, where ``...`` stands for text that differs from run to run (times, ids).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "quickstart.md"
BLOCK = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)

pytestmark = pytest.mark.slow

Done = subprocess.CompletedProcess[str]


def _db(root: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(root / "jobdef.db") as conn:
        return conn.execute(sql).fetchall()


def _init(root: Path, done: Done) -> None:
    for name in (
        "pyproject.toml",
        "jobdefs/defaults.yaml",
        "jobdefs/channels.yaml",
        ".jobdef/jobdef-v1.schema.json",
        ".vscode/settings.json",
        ".pre-commit-config.yaml",
        ".github/workflows/jobdef.yml",
    ):
        assert (root / name).is_file(), name


def _new(root: Path, done: Done) -> None:
    assert "wrote jobdefs/send_invoice.yaml" in done.stdout
    assert "max_attempts" in (root / "jobdefs/send_invoice.yaml").read_text("utf-8")


def _validate(root: Path, done: Done) -> None:
    assert "3 files checked, no findings" in done.stdout
    assert "handler app.invoices:send_invoice imports and takes its args" in done.stdout


def _upgrade(root: Path, done: Done) -> None:
    assert _db(root, "SELECT count(*) FROM jobdef_jobs") == [(0,)]


def _place_order(root: Path, done: Done) -> None:
    assert _db(root, "SELECT id, sent FROM invoices") == [(1, 0)]
    assert _db(root, "SELECT job, state FROM jobdef_jobs") == [("send_invoice", "queued")]


def _status(root: Path, done: Done) -> None:
    row = next(line.split() for line in done.stdout.splitlines() if "send_invoice" in line)
    assert row[:4] == ["send_invoice", "default", "queued", "1"]


def _worker(root: Path, done: Done) -> None:
    assert _db(root, "SELECT id, sent FROM invoices") == [(1, 1)]


def _jobs(root: Path, done: Done) -> None:
    (job,) = json.loads(done.stdout)
    assert (job["job"], job["state"], job["attempt"]) == ("send_invoice", "done", 1)


def _docs(root: Path, done: Done) -> None:
    page = (root / "docs/jobs/send_invoice.md").read_text("utf-8")
    assert "| Max attempts | How many runs in total, the first included | 5 attempts |" in page


def _docs_check(root: Path, done: Done) -> None:
    assert "2 page(s) up to date" in done.stderr


def _github(root: Path, done: Done) -> None:
    assert done.stdout == "3 files checked, no findings\n"


def _sarif(root: Path, done: Done) -> None:
    run = json.loads((root / "jobdef.sarif").read_text("utf-8"))["runs"][0]
    assert run["results"] == []
    assert run["originalUriBaseIds"]["PROJECTROOT"]["uri"] == root.as_uri() + "/"


CHECKS: dict[str, Callable[[Path, Done], None]] = {
    "jobdef init": _init,
    "jobdef new send_invoice": _new,
    "jobdef validate --strict --check-imports": _validate,
    "jobdef db upgrade": _upgrade,
    "python3 place_order.py": _place_order,
    "jobdef status": _status,
    "jobdef worker --burst": _worker,
    "jobdef jobs --format json": _jobs,
    "jobdef docs": _docs,
    "jobdef docs --check": _docs_check,
    "jobdef validate --strict --format github": _github,
    "jobdef validate --format sarif > jobdef.sarif": _sarif,
}


def steps(text: str) -> list[tuple[str, str]]:
    """``("run", command)``, ``("write", path)`` and ``("expect", lines)`` in the order of
    the page (a write's content follows its path after a NUL)."""
    out = []
    for language, info, body in BLOCK.findall(text):
        words = info.split()
        if language == "sh":
            if "install" in words:
                continue
            out += [("run", line.strip()) for line in body.splitlines() if line.strip()]
        elif language == "text" and words == ["output"]:
            out.append(("expect", body))
        elif words:
            out.append(("write", f"{words[0]}\0{body}"))
    return out


def shown_in(expected: str, printed: str) -> None:
    """Each line of ``expected`` is a line of ``printed`` (``...``: any text). Not in
    order: a command's log lines on stderr and its result on stdout interleave on a
    terminal, not in a capture."""
    lines = printed.splitlines()
    for want in expected.splitlines():
        pattern = re.compile(".*?".join(re.escape(part) for part in want.split("...")))
        assert any(pattern.fullmatch(line) for line in lines), (
            f"the page shows {want!r}, which the commands did not print:\n{printed}"
        )


def test_every_command_of_the_page_has_a_check() -> None:
    page = steps(PAGE.read_text("utf-8"))
    commands = [value for kind, value in page if kind == "run"]
    assert commands == list(CHECKS), "every command of the page has a check, in this order"
    written = [v.split("\0")[0] for k, v in steps(PAGE.read_text("utf-8")) if k == "write"]
    assert written == ["jobdefs/send_invoice.yaml", "app/invoices.py", "place_order.py"]


def test_the_quickstart_runs_as_written(tmp_path: Path) -> None:
    root = tmp_path / "shop"
    root.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBDEF_")}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.pop("GITHUB_STEP_SUMMARY", None)
    printed = ""
    shown = 0
    for kind, value in steps(PAGE.read_text("utf-8")):
        if kind == "expect":  # what the commands since the last block of another kind printed
            shown_in(value, printed)
            shown += 1
        if kind != "run":
            printed = ""
        if kind == "expect":
            continue
        if kind == "write":
            path, body = value.split("\0", 1)
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(body, encoding="utf-8")
            continue
        done = subprocess.run(
            ["bash", "-c", value],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert done.returncode == 0, f"{value}: exit {done.returncode}\n{done.stdout}{done.stderr}"
        assert "Traceback" not in done.stderr, f"{value}\n{done.stderr}"
        CHECKS[value](root, done)
        printed += done.stdout + done.stderr
    assert str(root) not in (root / "docs/jobs/send_invoice.md").read_text("utf-8")
    assert shown >= 6, "the page shows what its commands print"
