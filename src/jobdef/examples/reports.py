"""``nightly_report``: summarise the day's CSV exports into one report file."""

from __future__ import annotations

import csv
import datetime

from jobdef.examples import data_dir
from jobdef.runtime.context import Context


def nightly_report(ctx: Context) -> None:
    total = 0
    exports = sorted((data_dir() / "exports").glob("*.csv"))
    for path in exports:
        with path.open(encoding="utf-8") as stream:
            total += sum(int(row["reservations"]) for row in csv.DictReader(stream))
    day = datetime.datetime.now(datetime.UTC).date().isoformat()
    report = data_dir() / "reports" / f"{day}.txt"
    report.parent.mkdir(exist_ok=True)
    report.write_text(f"{day}: {len(exports)} exports, {total} reservations\n", encoding="utf-8")
