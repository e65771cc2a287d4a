"""How long `jobdef diff git:HEAD .` takes over a repository of N sheets.

Builds a temporary git repository with N job sheets that inherit from one
Defaults document, commits it, changes the Defaults (so that every job changes)
and times the whole command in-process, median of 3 runs.

    python bench/review_diff.py --jobs 2000
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from jobdef.cli import main

DEFAULTS = """\
apiVersion: jobdef/v1
kind: Defaults
max_attempts: 4
backoff: {strategy: exponential, initial: 10s, multiplier: 2, max: 10m, jitter: full}
timeout: 30s
errors: {default: retry}
retention: {done: 30d, dead: until_resolved}
"""

JOB = """\
apiVersion: jobdef/v1
kind: Job
name: job_{i}
handler: app.jobs:job_{i}
args:
  item_id: {{type: integer, minimum: 1}}
idempotency: {{key: "item-{{item_id}}-{i}"}}
errors: {{retry: [ConnectionError], fatal: [ValueError]}}
"""


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def build(root: Path, jobs: int) -> None:
    sheets = root / "jobdefs"
    sheets.mkdir()
    (sheets / "defaults.yaml").write_text(DEFAULTS, "utf-8")
    for i in range(jobs):
        (sheets / f"job_{i}.yaml").write_text(JOB.format(i=i), "utf-8")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "sheets")
    defaults = sheets / "defaults.yaml"
    defaults.write_text(defaults.read_text().replace("max_attempts: 4", "max_attempts: 3"))


def run_once() -> float:
    out = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out):
        code = main(["diff", "git:HEAD", ".", "--format", "json"])
    elapsed = time.perf_counter() - start
    if code != 0:
        raise SystemExit(f"jobdef diff exited {code}")
    return elapsed


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="jobdef-bench-diff-") as temp:
        root = Path(temp)
        build(root, args.jobs)
        cwd = Path.cwd()
        os.chdir(root)
        try:
            times = [run_once() for _ in range(3)]
        finally:
            os.chdir(cwd)
    median = statistics.median(times)
    print(
        f"jobdef diff git:HEAD . over {args.jobs} sheets, every job changed: "
        f"median {median:.2f}s of 3 (both sides loaded, validated and compared; "
        f"{2 * args.jobs / median:.0f} sheets/s)"
    )


if __name__ == "__main__":
    main_bench()
