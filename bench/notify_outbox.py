"""Outbox sender benchmark: how fast the sender drains a backlog into a webhook on loopback.

Fills a SQLite outbox the way the runtime does (jobs buried with their
notifications), then times one :class:`~jobdef.notify.sender.OutboxSender`
delivering everything to a local HTTP server, twice:

- ``single``: ``digest_after`` above the backlog, so every event is one POST
  (claim, POST, mark delivered, per message);
- ``digest``: the default ``digest_after`` of 20, so after 20 POSTs the rest
  goes out in digests of 200 events (the sender's clock is moved past the
  one-minute window instead of waiting for it).

    python bench/notify_outbox.py                  # 5,000 events, medians of 3
    python bench/notify_outbox.py --events 500 --runs 1   # smoke
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from jobdef.backends import open_backend
from jobdef.backends.records import ClaimOptions, ErrorInfo, NewJob, Notification
from jobdef.notify.checks import build_channels
from jobdef.notify.sender import OutboxSender, SenderSettings
from jobdef.policy.model import ChannelPolicy, JobPolicy, NotifyPolicy
from jobdef.policy.registry import Registry
from jobdef.policy.values import freeze


class Clock:
    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


def receiver() -> tuple[ThreadingHTTPServer, list[int]]:
    posts: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            posts.append(body.get("count", 1))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, posts


def fill(url: str, events: int) -> None:
    backend = open_backend(url)
    backend.enqueue([NewJob("bench_job", {"n": i}, "default") for i in range(events)])
    claimed = backend.claim(ClaimOptions("bench", 600, limit=events))
    error = ErrorInfo("ConnectionError", "refused")
    for record in claimed:
        note = Notification(
            "ops",
            "dead",
            "bench_job",
            {"job": "bench_job", "job_id": record.id, "key_args": {"n": record.args["n"]}},
            f"bench_job:{record.id}:1:dead:0",
        )
        backend.bury(record.lease, error, notifications=[note])
    backend.close()


def run(events: int, digest_after: int) -> dict[str, float]:
    server, posts = receiver()
    hook = f"http://127.0.0.1:{server.server_address[1]}/hook"
    settings = {"url_env": "BENCH_HOOK", "digest_after": digest_after}
    channel = ChannelPolicy("ops", "webhook", freeze(settings))
    job = JobPolicy("bench_job", "x:y", notify=NotifyPolicy("ops", ("dead",)))
    channels = build_channels(Registry({"bench_job": job}, {"ops": channel}), {"BENCH_HOOK": hook})
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        fill(url, events)
        clock = Clock()
        backend = open_backend(url, clock=clock)
        sender = OutboxSender(backend, channels, SenderSettings(batch_size=200), clock=clock)
        started = time.perf_counter()
        while True:
            report = sender.run_once()
            if report.claimed == 0 and not sender.held:
                break
            if report.claimed == 0:
                clock.offset += 61  # the minute passes: held events go out as digests
        seconds = time.perf_counter() - started
        assert backend.outbox_pending() == []
        backend.close()
    server.shutdown()
    server.server_close()
    assert sum(posts) == events, (sum(posts), events)
    return {"seconds": seconds, "events_per_s": events / seconds, "posts": len(posts)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    for name, digest_after in (("single", args.events + 1), ("digest", 20)):
        results = [run(args.events, digest_after) for _ in range(args.runs)]
        rate = statistics.median(r["events_per_s"] for r in results)
        print(
            f"{name:>6}: {args.events} events in {results[0]['posts']} POSTs, "
            f"median {rate:,.0f} events/s over {args.runs} run(s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
