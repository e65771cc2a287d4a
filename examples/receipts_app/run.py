"""Run the example: the application on http://127.0.0.1:8000/ and one worker beside it.

    python examples/receipts_app/run.py [--db URL] [--port 8000]

The job store is a new SQLite file in a temporary folder unless ``--db`` names one
(``postgresql://...`` works as well). Ctrl-C stops both.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import uvicorn
from app import SHEETS, create_app

from jobdef.backends import upgrade

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="the job store's URL (default: a new SQLite file)")
    parser.add_argument("--port", type=int, default=8000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="jobdef-receipts-") as folder:
        db = options.db or f"sqlite:///{Path(folder) / 'jobs.db'}"
        upgrade(db)
        # The worker imports the handler (report_jobs) from this folder.
        path = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
        worker = subprocess.Popen(
            [sys.executable, "-m", "jobdef", "worker", "--db", db, "--sheets", str(SHEETS)],
            env={**os.environ, "PYTHONPATH": path},
        )
        try:
            print(f"open http://127.0.0.1:{options.port}/  (jobs in {db})", flush=True)
            # No access log: the receipt tokens are in the paths it would print.
            uvicorn.run(
                create_app(db),
                host="127.0.0.1",
                port=options.port,
                access_log=False,
                timeout_graceful_shutdown=1,
            )
        finally:
            worker.terminate()
            worker.wait(30)


if __name__ == "__main__":
    main()
