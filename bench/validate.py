"""Files per second of `jobdef validate` as a whole process, against `check-jsonschema`.

Generates a deterministic corpus of realistic sheets (a seeded mix of the
example jobs' shapes: mail, image resize, points, export, nightly batch; plus
one Defaults and one Channel file), then times, as separate processes and
side by side in one run:

- ``jobdef validate CORPUS --strict`` (strict YAML, schema, every semantic rule,
  line numbers), and
- ``check-jsonschema --schemafile <the same schema> <every file>`` (schema only).

Each is run ``--runs`` times; the median wall time gives files per second.
Usage: ``python bench/validate.py [--sheets 2000] [--runs 3] [--keep DIR]``.
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCHEMA = Path(__file__).resolve().parent.parent / "src/jobdef/sheets/schema/jobdef-v1.schema.json"

DEFAULTS = """\
apiVersion: jobdef/v1
kind: Defaults
name: team-defaults
max_attempts: 3
backoff: {strategy: exponential, initial: 10s, multiplier: 2, max: 10m, jitter: full}
timeout: 60s
errors: {default: retry}
notify: {channel: ops-chat, events: [dead]}
retention: {done: 30d, dead: until_resolved}
"""
CHANNEL = """\
apiVersion: jobdef/v1
kind: Channel
name: ops-chat
type: webhook
url_env: OPS_CHAT_WEBHOOK_URL
format: slack
"""
TEAMS = ["reservations", "media", "membership", "reporting", "payments", "search"]
EXCEPTIONS = ["ConnectionError", "TimeoutError", "ConnectionResetError", "BrokenPipeError"]


def sheet(rng: random.Random, number: int) -> str:
    team = rng.choice(TEAMS)
    name = f"{team}_job_{number:05d}"
    arg = rng.choice(["order_id", "reservation_id", "member_id", "image_id"])
    attempts = rng.randint(2, 8)
    strategy = rng.choice(["exponential", "exponential", "fixed", "linear"])
    initial = rng.choice(["5s", "10s", "30s", "1m"])
    lines = [
        "# yaml-language-server: $schema=../schema/jobdef-v1.schema.json",
        "apiVersion: jobdef/v1",
        "kind: Job",
        f"name: {name}",
        f"title: {team} job number {number}",
        f"owner: {team}-team",
        f"trigger: when a {arg.removesuffix('_id')} changes",
        "mode: async",
        f"handler: {team}.jobs:{name}",
        f"queue: {team}",
        f"priority: {rng.randint(-10, 10)}",
        "args:",
        f"  {arg}: {{type: integer, minimum: 1, description: the {arg}}}",
        "  note: {type: string, required: false, maxLength: 200}",
        f"max_attempts: {attempts}",
        "backoff:",
        f"  strategy: {strategy}",
        f"  initial: {initial}",
        "  multiplier: 2" if strategy == "exponential" else "  multiplier: 1.5",
        "  max: 15m",
        f"  jitter: {rng.choice(['full', 'equal', 'none'])}",
        f"timeout: {rng.choice(['10s', '30s', '1m', '5m'])}",
        "deadline: 12h",
        "idempotency:",
        f'  key: "{{{arg}}}:{name}"',
        "errors:",
        "  retry:",
        *(f"    - {{class: {e}, description: transient}}" for e in rng.sample(EXCEPTIONS, 2)),
        "  fatal:",
        f"    - {{class: {team}.errors.Invalid, description: bad input}}",
        "  default: retry",
        "dead_letter: {target: table}",
        "notify:",
        "  channel: ops-chat",
        "  events: [dead]",
        f"rerun: jobdef requeue --job {name} --state dead",
        "retention:",
        f"  done: {rng.choice(['7d', '30d', '90d'])}",
        "  dead: until_resolved",
    ]
    return "\n".join(lines) + "\n"


def make_corpus(folder: Path, count: int, seed: int = 20260101) -> list[Path]:
    """Write ``count`` files (count - 2 Job sheets, one Defaults, one Channel)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    files = [folder / "defaults.yaml", folder / "channels.yaml"]
    files[0].write_text(DEFAULTS, encoding="utf-8")
    files[1].write_text(CHANNEL, encoding="utf-8")
    for number in range(count - 2):
        path = folder / f"job_{number:05d}.yaml"
        path.write_text(sheet(rng, number), encoding="utf-8")
        files.append(path)
    return files


def timed(command: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if result.returncode != 0:
        raise SystemExit(
            f"{command[0]} exited {result.returncode}:\n"
            + result.stdout[-2000:]
            + result.stderr[-2000:]
        )
    return elapsed, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sheets", type=int, default=2000, help="files in the corpus")
    parser.add_argument("--runs", type=int, default=3, help="runs of each tool; median reported")
    parser.add_argument("--keep", type=Path, help="write the corpus here and keep it")
    args = parser.parse_args()
    bindir = Path(sys.executable).parent
    jobdef = str(bindir / "jobdef")
    checker = shutil.which("check-jsonschema", path=str(bindir)) or shutil.which("check-jsonschema")
    folder = args.keep or Path(tempfile.mkdtemp(prefix="jobdef-bench-"))
    try:
        files = make_corpus(folder / "jobdefs", args.sheets)
        commands = {"jobdef validate": [jobdef, "validate", str(folder / "jobdefs"), "--strict"]}
        if checker:
            commands["check-jsonschema"] = [
                checker,
                "--schemafile",
                str(SCHEMA),
                *map(str, files),
            ]
        else:
            print("check-jsonschema not found: pip install -e '.[bench]'", file=sys.stderr)
        runs: dict[str, list[tuple[float, float]]] = {}
        for _ in range(args.runs):  # interleaved, so both see the same machine load
            for label, command in commands.items():
                runs.setdefault(label, []).append(timed(command))
        print(f"corpus: {len(files)} files, medians of {args.runs} runs")
        rates, cpu_rates = {}, {}
        for label, times in runs.items():
            wall = statistics.median(t[0] for t in times)
            cpu = statistics.median(t[1] for t in times)
            rates[label], cpu_rates[label] = len(files) / wall, len(files) / cpu
            print(
                f"{label:18} {wall:7.3f} s wall {rates[label]:7.0f} files/s   "
                f"{cpu:7.3f} s CPU {cpu_rates[label]:7.0f} files/CPU-s"
            )
        if len(rates) == 2:
            ratio = rates["jobdef validate"] / rates["check-jsonschema"]
            cpu_ratio = cpu_rates["jobdef validate"] / cpu_rates["check-jsonschema"]
            print(
                f"jobdef validate is {ratio:.1f}x check-jsonschema "
                f"({cpu_ratio:.1f}x per CPU second)"
            )
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
