"""Milliseconds of one `jobdef enqueue` from the shell, a whole process, start-up included:
what a cron line, a deploy script or an operator pays per job.

Runs ``jobdef init`` and ``jobdef new my_job`` in a temporary folder, creates the store
(``jobdef db upgrade``), then times, as separate processes interleaved run by run so
that each sees the same machine load, ``jobdef enqueue my_job --args '{"record_id": N}'``
with a new ``N`` each run (a real insert, not the merge into an active job):

- on the project's SQLite store (``jobdef.db`` in the folder);
- on PostgreSQL with ``--url`` (a schema ``bench_cli_enqueue`` of its own, dropped
  after), unless ``--no-postgres``;

once per ``--src`` given (that folder first on PYTHONPATH, so two checkouts compare
side by side; none: the installed jobdef), with the ``jobdef`` script next to this
Python; and ``python -c pass``, the start of this Python with its environment's site
(its ``.pth`` files run at every start: a sandbox's or a tool's can cost tens of
milliseconds), which every command pays before jobdef's first import.

Usage: ``python bench/cli_enqueue.py [--runs 30] [--src DIR ...] [--url URL]``.
Prints the median and the minimum wall time and the median CPU time of each.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pg_store import drop_schema
from validate_startup import bytecode_env, print_medians, timed

SCHEMA = "bench_cli_enqueue"
INTERPRETER = "python -c pass"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="runs of each command")
    parser.add_argument("--src", action="append", default=[], help="a checkout's src folder")
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--no-postgres", action="store_true", help="time SQLite only")
    args = parser.parse_args()
    script = str(Path(sys.executable).parent / "jobdef")
    env = bytecode_env()
    stores = {"sqlite": []} if args.no_postgres else {"sqlite": [], "postgres": []}
    if "postgres" in stores:
        stores["postgres"] = ["--db", f"{args.url}?schema={SCHEMA}"]
    commands: dict[str, tuple[list[str], dict[str, str]]] = {}
    for src in args.src or [""]:
        name = f" ({src})" if src else ""
        src_env = {**env, "PYTHONPATH": src} if src else env
        for store, db in stores.items():
            command = [script, "enqueue", "my_job", *db]
            commands[f"jobdef enqueue, {store}{name}"] = (command, src_env)
    commands[INTERPRETER] = ([sys.executable, "-c", "pass"], env)
    folder = Path(tempfile.mkdtemp(prefix="jobdef-enqueue-"))
    record_ids = itertools.count(1)

    def run(label: str) -> tuple[float, float]:
        command, command_env = commands[label]
        if label == INTERPRETER:
            return timed(command, folder, command_env)
        values = json.dumps({"record_id": next(record_ids)})
        return timed([*command, "--args", values], folder, command_env)

    try:
        first_env = next(iter(commands.values()))[1]
        setup = [["init"], ["new", "my_job"], ["db", "upgrade"]]
        if "postgres" in stores:
            drop_schema(args.url, SCHEMA)
            setup.append(["db", "upgrade", *stores["postgres"]])
        for words in setup:
            subprocess.run(
                [sys.executable, script, *words],
                cwd=folder,
                env=first_env,
                stdout=subprocess.DEVNULL,
                check=True,
            )
        for label in commands:  # compiles and caches the bytecode
            run(label)
        runs: dict[str, list[tuple[float, float]]] = {label: [] for label in commands}
        labels = list(commands)
        for number in range(args.runs):
            for label in labels if number % 2 == 0 else reversed(labels):
                runs[label].append(run(label))
        print_medians(runs)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if "postgres" in stores:
            drop_schema(args.url, SCHEMA)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
