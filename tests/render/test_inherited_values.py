"""A value inherited from Defaults that shapes the schedule is shown where it came from, and
the words of the Definition table say what the timeline (the runtime's schedule) does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from jobdef.policy.backoff import retry_timeline
from jobdef.policy.registry import Registry
from jobdef.render import describe
from jobdef.render.docs import render_docs
from jobdef.sheets.pipeline import load_registry

DEFAULTS = """\
apiVersion: jobdef/v1
kind: Defaults
name: team-defaults
max_attempts: 5
backoff:
  strategy: exponential
  initial: 10s
  max: 5m
errors:
  default: retry
"""

JOB = """\
apiVersion: jobdef/v1
kind: Job
name: {name}
handler: app.jobs:run
backoff:
{backoff}
timeout: 30s
"""

JOBS = {
    "listed_job": "  strategy: list\n  delays: [30s, 2m, 10m]\n  jitter: none",
    "fixed_job": "  strategy: fixed\n  initial: 15m\n  jitter: none",
    # The cap cuts nothing this job reaches: no row, the words as written.
    "uncut_job": "  strategy: list\n  delays: [30s, 2m]\n  jitter: none",
}


def _sheets(folder: Path, name: str, backoff: str | None = None) -> tuple[Path, Registry]:
    """The Defaults and the one job ``name``, written to ``folder``, and their registry."""
    (folder / "defaults.yaml").write_text(DEFAULTS, encoding="utf-8")
    text = JOB.format(name=name, backoff=backoff or JOBS[name])
    (folder / f"{name}.yaml").write_text(text, encoding="utf-8")
    return folder, load_registry([folder])


def _rows(page: str, first: str) -> list[list[str]]:
    lines = page.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def _definition(page: str, label: str) -> str:
    lines = [line for line in page.splitlines() if line.startswith(f"| {label} |")]
    return lines[0].strip("|").split("|")[-1].strip()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["listed_job", "fixed_job"])
def test_an_inherited_cap_that_cuts_a_wait_has_its_row_and_origin(
    tmp_path: Path, name: str
) -> None:
    sheets, registry = _sheets(tmp_path, name)
    page = render_docs(registry, "en", base=sheets)[f"{name}.md"]
    origins = {row[0]: row for row in _rows(page, "| Field |")}
    assert origins["backoff.max"][1:] == ["5m", "Defaults defaults.yaml:8"]
    result = subprocess.run(
        [sys.executable, "-m", "jobdef", "explain", name, "--sheets", ".", "--format", "json"],
        capture_output=True,
        text=True,
        cwd=sheets,
        check=True,
    )
    fields = {field["path"]: field for field in json.loads(result.stdout)["fields"]}
    assert fields["backoff.max"]["origin"] == {
        "file": "defaults.yaml",
        "line": 8,
        "column": 8,
        "source": "defaults",
    }


def test_a_cap_that_cuts_nothing_reached_stays_out(tmp_path: Path) -> None:
    sheets, registry = _sheets(tmp_path, "uncut_job")
    page = render_docs(registry, "en", base=sheets)["uncut_job.md"]
    assert "backoff.max" not in {row[0] for row in _rows(page, "| Field |")}
    assert _definition(page, "Wait between attempts") == (
        "listed waits (30s, 2m, then the last again)"
    )


@pytest.mark.parametrize(
    ("name", "words", "waits"),
    [
        (
            "listed_job",
            "listed waits (30s, 2m, 5m, then the last again, max 5m)",
            ["30s", "2m", "5m", "5m"],
        ),
        ("fixed_job", "fixed wait of 5m (max 5m)", ["5m", "5m", "5m", "5m"]),
    ],
)
def test_the_definition_row_says_what_the_timeline_does(
    tmp_path: Path, name: str, words: str, waits: list[str]
) -> None:
    _, registry = _sheets(tmp_path, name)
    page = render_docs(registry, "en")[f"{name}.md"]
    assert _definition(page, "Wait between attempts") == words
    timeline = [describe.duration(row.wait_max) for row in retry_timeline(registry.job(name)).rows]
    assert timeline[1:] == waits
    assert [row[1] for row in _rows(page, "| Attempt |")][1:] == waits


def test_every_field_the_timeline_reads_has_a_row(tmp_path: Path) -> None:
    """Decorrelated jitter draws each wait from backoff.initial, even under a list."""
    backoff = "  strategy: list\n  delays: [1m]\n  jitter: decorrelated"
    sheets, registry = _sheets(tmp_path, "decorrelated_list_job", backoff)
    page = render_docs(registry, "en", base=sheets)["decorrelated_list_job.md"]
    origins = {row[0]: row for row in _rows(page, "| Field |")}
    assert origins["backoff.initial"][1:] == ["10s", "Defaults defaults.yaml:7"]
    assert origins["backoff.max"][1:] == ["5m", "Defaults defaults.yaml:8"]


def test_the_definition_row_of_listed_waits_under_decorrelated_jitter(tmp_path: Path) -> None:
    """Decorrelated jitter never reads the list: the words say so, as the timeline shows."""
    backoff = "  strategy: list\n  delays: [1m, 2m]\n  jitter: decorrelated"
    _, registry = _sheets(tmp_path, "jittered_job", backoff)
    page = render_docs(registry, "en")["jittered_job.md"]
    assert _definition(page, "Wait between attempts") == (
        "decorrelated jitter (first 10s, max 5m); the listed waits are not used"
    )
    assert [row[1] for row in _rows(page, "| Attempt |")][1:3] == ["10s–30s", "10s–1m30s"]
