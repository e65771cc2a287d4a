"""A deterministic corpus of job definition sheets for benchmarks: ``write_corpus(folder, n)``.

The sheets vary the way real ones do (strategies, jitter, error lists with and
without descriptions, Japanese text, batch jobs), share one ``Defaults`` and
two ``Channel`` documents, and are the same bytes for the same ``n`` and seed.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

_HEADER = "# yaml-language-server: $schema=jobdef-v1.schema.json\napiVersion: jobdef/v1\n"

_SHARED = (
    _HEADER
    + """kind: Defaults
name: bench-defaults
owner: platform-team
queue: default
max_attempts: 3
backoff: {strategy: exponential, initial: 10s, multiplier: 2, max: 10m, jitter: full}
timeout: 60s
errors: {default: retry}
on_reclaim: retry
dead_letter: {target: table}
notify: {channel: ops-chat, events: [dead]}
rerun: jobdef requeue --job {name} --state dead
retention: {done: 30d, dead: until_resolved}
---
apiVersion: jobdef/v1
kind: Channel
name: ops-chat
type: webhook
description: The operations team's chat room
url_env: OPS_CHAT_WEBHOOK_URL
---
apiVersion: jobdef/v1
kind: Channel
name: ops-log
type: log
description: Structured log lines
"""
)

_BACKOFFS = (
    "backoff: {strategy: exponential, initial: 5s, multiplier: 3, max: 5m, jitter: decorrelated}",
    "backoff: {strategy: fixed, initial: 30s, jitter: equal}",
    "backoff: {strategy: linear, initial: 1m, max: 10m, jitter: full}",
    "backoff:\n  strategy: list\n  delays: [1m, 5m, 15m]\n  jitter: none",
    "",  # inherited from Defaults
)


def sheet(index: int, rng: random.Random) -> str:
    """The text of Job sheet number ``index``."""
    name = f"bench_job_{index:05d}"
    batch = index % 10 == 0
    lines = [
        _HEADER + "kind: Job",
        f"name: {name}",
        f"title: ベンチマーク用ジョブ {index}",
        f"owner: team-{index % 17}",
        f"trigger: 注文{index}が確定したとき",
        f"handler: bench.jobs:job_{index % 50}",
        f"queue: queue_{index % 8}",
        f"priority: {rng.randint(-5, 5)}",
    ]
    if batch:
        lines += ["mode: batch", f'schedule: "{index % 60} 3 * * *"', "timezone: Asia/Tokyo"]
    lines += [
        "args:",
        "  order_id: {type: integer, minimum: 1, description: 注文ID}",
        "  note: {type: string, required: false}",
        f"max_attempts: {rng.randint(2, 8)}",
    ]
    backoff = _BACKOFFS[index % len(_BACKOFFS)]
    if backoff:
        lines.append(backoff)
    lines += [
        f"timeout: {rng.choice(['10s', '30s', '2m', '15m'])}",
        f"deadline: {rng.choice(['6h', '12h', '1d'])}",
        'idempotency: {key: "order-{order_id}:' + name + '"}',
        "errors:",
        "  retry:",
        "    - {class: ConnectionError, description: 接続エラー}",
        "    - TimeoutError",
        "  fatal: [ValueError, PermissionError]",
        f"  default: {'fatal' if index % 3 else 'retry'}",
        f"notify: {{channel: {'ops-chat' if index % 2 else 'ops-log'}, events: [dead]}}",
        f"retention: {{done: {rng.choice(['7d', '30d', '90d'])}, dead: until_resolved}}",
    ]
    return "\n".join(lines) + "\n"


def write_corpus(folder: Path, count: int = 2000, seed: int = 0) -> Path:
    """Write ``count`` Job sheets plus the shared documents into ``folder``; return it."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    (folder / "_shared.yaml").write_text(_SHARED, encoding="utf-8")
    for index in range(count):
        (folder / f"job_{index:05d}.yaml").write_text(sheet(index, rng), encoding="utf-8")
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--sheets", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    write_corpus(args.folder, args.sheets, args.seed)


if __name__ == "__main__":
    main()
