"""Flows against plain jobs: start 1,000 flows of 10 steps and drain them, on both engines.

Each flow is one step, then 8 in parallel, then a fan-in (10 steps of a no-op
job, one reading its parent's result). Its peer in the same run is the same number
of plain no-op jobs (10 per flow), enqueued 10 per call and drained by the same
worker. Measured, per engine:

- start: flows started per second (``Queue.start``, one flow per call, each one
  transaction of the flow row and its 10 steps), against ``enqueue_many`` of 10
  plain jobs per call;
- drain: a burst worker (``--concurrency 2``, handlers in child processes, group
  commits) from the first attempt's start to the last job's end, read from the
  store: flows per second, and steps per second against plain jobs per second.

The ratio is the cost of a flow's step over a plain job's (plain jobs/s over
steps/s): what settling a flow in each step's end transaction costs.

    python bench/flows.py                                   # both engines, medians of 3
    python bench/flows.py --flows 100 --runs 1 --engines sqlite   # smoke
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from jobdef.backends import open_backend
from jobdef.policy.registry import Registry
from jobdef.runtime.queue import Queue
from jobdef.runtime.settings import WorkerSettings
from jobdef.runtime.worker import Worker
from jobdef.sheets.pipeline import load_registry

FAN = 8
STEPS = FAN + 2

SHEET = (
    f"""\
apiVersion: jobdef/v1
kind: Job
name: noop
handler: {Path(__file__).stem}:noop
max_attempts: 1
backoff: {{strategy: fixed, initial: 0s, jitter: none}}
timeout: 60s
errors: {{default: fatal}}
retention: {{done: 1h, dead: until_resolved}}
args:
  n: {{type: integer, required: false}}
result:
  schema: {{type: object, properties: {{n: {{type: integer}}}}}}
---
apiVersion: jobdef/v1
kind: Workflow
name: ten
args:
  n: {{type: integer}}
steps:
  head:
    job: noop
    args: {{n: {{from: args.n}}}}
"""
    + "".join(
        f"""  leaf{i}:
    job: noop
    after: [head]
    args: {{n: {{from: steps.head.result.n}}}}
"""
        for i in range(FAN)
    )
    + f"""  tail:
    job: noop
    after: [{", ".join(f"leaf{i}" for i in range(FAN))}]
"""
)


def noop(ctx: Any, n: int = 0) -> dict[str, int]:
    """Every step and every plain job: returns its arg."""
    return {"n": n}


def _store(engine: str, server: str, folder: Path) -> tuple[str, Any]:
    """The URL of a fresh store, and how to remove it."""
    if engine == "sqlite":
        return f"sqlite:///{folder / 'jobs.db'}", lambda: None
    from pg_store import drop_schema

    schema = f"bench_flows_{uuid.uuid4().hex[:8]}"
    return f"{server}?schema={schema}", lambda: drop_schema(server, schema)


def _window(queue: Queue) -> float:
    """Seconds from the first attempt's start to the last job's end, on the store's clock."""
    jobs = queue.backend.list_jobs(limit=10**7)
    first = min(job.started_at for job in jobs if job.started_at is not None)
    last = max(job.finished_at for job in jobs if job.finished_at is not None)
    return last - first


def measure(url: str, registry: Registry, flows: int, kind: str) -> tuple[float, float]:
    """(starts or enqueues per second, jobs drained per second) of one kind: flow or plain."""
    queue = Queue(open_backend(url), registry)
    try:
        started = time.perf_counter()
        for n in range(flows):
            if kind == "flow":
                queue.start("ten", {"n": n})
            else:
                queue.enqueue_many("noop", [{"n": n}] * STEPS)
        start_rate = flows / (time.perf_counter() - started)
        stats = Worker(queue.backend, registry, WorkerSettings(concurrency=2, burst=True)).run()
        if stats.done != flows * STEPS:
            raise RuntimeError(f"{kind}: drained {stats.done} of {flows * STEPS} jobs")
        if kind == "flow":
            ended = queue.backend.flow_counts()
            if ended != [("ten", "done", flows)]:
                raise RuntimeError(f"flows did not all end done: {ended}")
        return start_rate, flows * STEPS / _window(queue)
    finally:
        queue.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--engines", default="sqlite,postgres", help="comma list")
    parser.add_argument("--flows", type=int, default=1000, help="flows (of 10 steps) per run")
    parser.add_argument("--runs", type=int, default=3, help="runs; the figures are medians")
    args = parser.parse_args(argv)
    load = os.getloadavg()
    print(
        f"{os.cpu_count()} CPUs, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
        f"{args.flows} flows of {STEPS} steps (and {args.flows * STEPS} plain jobs) per run, "
        f"medians of {args.runs} run(s), flow and plain runs interleaved",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="jobdef-bench-") as tmp:
        sheets = Path(tmp) / "sheets"
        sheets.mkdir()
        (sheets / "flows.yaml").write_text(SHEET, "utf-8")
        registry = load_registry([sheets])
        for engine in args.engines.split(","):
            figures: dict[str, list[tuple[float, float]]] = {"flow": [], "plain": []}
            for run in range(args.runs):
                for kind in ("flow", "plain") if run % 2 == 0 else ("plain", "flow"):
                    folder = Path(tmp) / f"{engine}-{kind}-{run}"
                    folder.mkdir()
                    url, drop = _store(engine, args.url, folder)
                    try:
                        figures[kind].append(measure(url, registry, args.flows, kind))
                    finally:
                        drop()
            _report(engine, figures)
    return 0


def _report(engine: str, figures: dict[str, list[tuple[float, float]]]) -> None:
    flow_start = statistics.median(f[0] for f in figures["flow"])
    plain_start = statistics.median(f[0] for f in figures["plain"])
    steps = statistics.median(f[1] for f in figures["flow"])
    plain = statistics.median(f[1] for f in figures["plain"])
    print(
        f"{engine:<9} start {flow_start:8.1f} flows/s   (plain: {plain_start:8.1f} calls of "
        f"{STEPS} jobs/s; ratio {plain_start / flow_start:.2f})\n"
        f"{'':<9} drain {steps / STEPS:8.1f} flows/s = {steps:8.1f} steps/s   (plain: "
        f"{plain:8.1f} jobs/s; cost per step / per job {plain / steps:.2f})\n"
        f"{'':<9} runs: steps/s "
        + ", ".join(f"{f[1]:.0f}" for f in figures["flow"])
        + "; jobs/s "
        + ", ".join(f"{f[1]:.0f}" for f in figures["plain"]),
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
