"""A tiny application that runs its own jobs with the embedded worker.

    python embedded_app.py DB_URL SHEETS LEDGER COUNT SECONDS READY_FILE

It enqueues COUNT jobs, writes READY_FILE, then "serves" until SIGTERM, which it
turns into an exit of the main thread (signals reach only the main thread), so
the ``with`` block ends and the embedded worker drains.
"""

from __future__ import annotations

import logging
import signal
import sys
import time
from pathlib import Path

from jobdef import WorkerSettings, connect, load_registry
from jobdef.runtime.embedded import embedded_worker


def main(argv: list[str]) -> None:
    db, sheets, ledger, count, seconds, ready = argv
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    queue = connect(db, load_registry([sheets]))
    settings = WorkerSettings(concurrency=2, grace=30.0, lease_seconds=1.0, poll_interval=0.05)
    with embedded_worker(queue, settings=settings):
        for index in range(int(count)):
            queue.enqueue("steady", {"ledger": ledger, "index": index, "seconds": float(seconds)})
        Path(ready).write_text("enqueued\n", "utf-8")
        while True:  # the application serves its requests here
            time.sleep(0.05)


if __name__ == "__main__":  # the worker's child processes import this module: guard it
    main(sys.argv[1:])
