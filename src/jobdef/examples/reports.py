"""``nightly_report``: summarise the CSV exports into one report file for the day before."""

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
    # The slot (03:00 in the sheet's zone) says which day this run reports on, even
    # when it runs late or is caught up; a run by hand reports on the day before now.
    run_for = ctx.slot or datetime.datetime.now(datetime.UTC)
    day = (run_for.date() - datetime.timedelta(days=1)).isoformat()
    report = data_dir() / "reports" / f"{day}.txt"
    report.parent.mkdir(exist_ok=True)
    report.write_text(f"{day}: {len(exports)} exports, {total} reservations\n", encoding="utf-8")
