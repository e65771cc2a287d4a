"""A small project of sheets in a temporary git repository, for the review tool tests."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

DEFAULTS = """\
apiVersion: jobdef/v1
kind: Defaults
name: team-defaults
owner: platform-team
max_attempts: 4
backoff: {strategy: exponential, initial: 10s, multiplier: 2, max: 10m, jitter: full}
timeout: 30s
errors: {default: retry}
notify: {channel: ops-chat, events: [dead]}
rerun: jobdef requeue --job {name} --state dead
retention: {done: 30d, dead: until_resolved}
"""

CHANNELS = """\
apiVersion: jobdef/v1
kind: Channel
name: ops-chat
type: log
---
apiVersion: jobdef/v1
kind: Channel
name: ops-log
type: log
"""


def job_sheet(name: str, handler: str | None = None, extra: str = "") -> str:
    """A Job sheet that inherits everything it can from the Defaults above."""
    return (
        "apiVersion: jobdef/v1\n"
        "kind: Job\n"
        f"name: {name}\n"
        f"handler: app.jobs:{handler or name}\n"
        "args:\n"
        "  order_id: {type: integer, minimum: 1}\n"
        'idempotency: {key: "order-{order_id}"}\n'
        "errors:\n"
        "  retry: [ConnectionError]\n"
        "  fatal: [ValueError]\n" + textwrap.dedent(extra)
    )


def write_project(root: Path) -> Path:
    """Sheets for three jobs under ``root/jobdefs``; returns that folder."""
    sheets = root / "jobdefs"
    sheets.mkdir(parents=True)
    (sheets / "defaults.yaml").write_text(DEFAULTS, "utf-8")
    (sheets / "channels.yaml").write_text(CHANNELS, "utf-8")
    (sheets / "charge_card.yaml").write_text(job_sheet("charge_card", extra="deadline: 1h\n"))
    (sheets / "send_receipt.yaml").write_text(job_sheet("send_receipt"))
    (sheets / "ship_order.yaml").write_text(job_sheet("ship_order", extra="max_attempts: 6\n"))
    return sheets


def git(root: Path, *args: str) -> str:
    """Run git in ``root`` with a fixed identity; fail the test on a git error."""
    result = subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@example.com", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout


def commit_all(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def init_repo(root: Path) -> Path:
    """A git repository at ``root`` whose first commit holds the project; returns the sheets."""
    git(root, "init", "-q", "-b", "main")
    sheets = write_project(root)
    commit_all(root, "sheets")
    return sheets


def edit(path: Path, old: str, new: str) -> None:
    """Replace ``old`` with ``new`` in ``path``; the text must be there."""
    text = path.read_text("utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), "utf-8")


def fill_placeholders(path: Path) -> int:
    """Replace each ``TODO: ...`` that `jobdef new` left in ``path`` with text of the
    author's, as a user does before review; how many there were (at least one)."""
    import re

    text = path.read_text("utf-8")
    filled, count = re.subn(r"'TODO: ([^'\n]*)'", r"'Filled in: \1'", text)
    assert count, f"no TODO left in {path}"
    path.write_text(filled, "utf-8")
    return count
