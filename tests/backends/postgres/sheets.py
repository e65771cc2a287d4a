"""Job definition sheets for the PostgreSQL worker tests, written into a folder."""

from __future__ import annotations

from pathlib import Path

DEFAULTS = """\
apiVersion: jobdef/v1
kind: Defaults
name: test-defaults
owner: tests
queue: default
max_attempts: 3
backoff: {strategy: fixed, initial: 1s}
timeout: 120s
errors: {default: retry}
on_reclaim: retry
retention: {done: 30d, dead: until_resolved}
"""

JOB = """\
---
apiVersion: jobdef/v1
kind: Job
name: {name}
handler: postgres.handlers:{handler}
args:
{args}
"""


# fail_first's args, then its own backoff: its retry is due a moment after the failure.
RETRIED = (
    "  n: {type: integer, required: false}\n"
    "backoff: {strategy: fixed, initial: 200ms, jitter: none}\n"
)


def write_sheets(folder: Path) -> Path:
    """The sheets of the jobs ``noop``, ``slow_first_attempt``, ``pause`` and ``fail_first``."""
    folder.mkdir(parents=True, exist_ok=True)
    jobs = [
        ("noop", "noop", "  n: {type: integer, required: false}"),
        (
            "slow_first_attempt",
            "slow_first_attempt",
            "  marker: {type: string}\n  seconds: {type: number, required: false}",
        ),
        ("pause", "pause", "  marker: {type: string}\n  seconds: {type: number}"),
    ]
    text = DEFAULTS + "".join(
        JOB.format(name=name, handler=handler, args=args) for name, handler, args in jobs
    )
    text += JOB.format(name="fail_first", handler="fail_first", args=RETRIED)
    (folder / "jobs.yaml").write_text(text)
    return folder
