"""An application that enqueues jobs and serves prometheus_client's /metrics, as a web
app exposing its own metrics would: the enqueue counters come from jobdef's enqueue path.

    python enqueue_app.py DB_URL SHEETS --mails N --reports M --again D [--serve]

enqueues N ``mail`` jobs one by one (keys mail-0 .. mail-N-1), M ``report`` jobs in one
``enqueue_many``, then the first D mails again (deduplicated by their idempotency key).
With ``--serve`` it then serves /metrics on a free port, prints ``port N`` and waits
for its stdin to close: from the default registry, or, when PROMETHEUS_MULTIPROC_DIR
is set, summed over every process that wrote there (prometheus_client's multiprocess
mode, as under gunicorn).
"""

from __future__ import annotations

import argparse
import os
import sys

from prometheus_client import REGISTRY, CollectorRegistry, multiprocess, start_http_server

from jobdef import connect, load_registry


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("sheets")
    parser.add_argument("--mails", type=int, default=0)
    parser.add_argument("--reports", type=int, default=0)
    parser.add_argument("--again", type=int, default=0)
    parser.add_argument("--first", type=int, default=0, help="the first mail's key number")
    parser.add_argument("--serve", action="store_true")
    args = parser.parse_args()
    queue = connect(args.db, load_registry([args.sheets]))
    for i in range(args.first, args.first + args.mails):
        queue.enqueue("mail", {"i": i})
    if args.reports:
        queue.enqueue_many("report", [{"i": i} for i in range(args.reports)])
    for i in range(args.first, args.first + args.again):
        assert not queue.enqueue("mail", {"i": i}).created
    queue.close()
    if not args.serve:
        return
    registry = REGISTRY
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    server, _thread = start_http_server(0, "127.0.0.1", registry=registry)
    print(f"port {server.server_address[1]}", flush=True)
    sys.stdin.read()  # until the test closes it
    server.shutdown()


if __name__ == "__main__":
    main()
