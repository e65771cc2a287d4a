"""``export_csv``: write a month of reservations as CSV, reporting progress as it goes, and
return the file's name and row count for the admin screen."""

from __future__ import annotations

import calendar
import csv

from jobdef.examples import data_dir
from jobdef.runtime.context import Context


def export_csv(ctx: Context, export_id: str, month: str) -> dict[str, object]:
    """Write the CSV file; return its name and row count (the sheet's `result`)."""
    year, number = (int(part) for part in month.split("-"))
    days = calendar.monthrange(year, number)[1]
    target = data_dir() / "exports"
    target.mkdir(exist_ok=True)
    with (target / f"{export_id}.csv").open("w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(["date", "reservations"])
        for day in range(1, days + 1):
            writer.writerow([f"{month}-{day:02d}", (day * 7) % 23])
            if day % 10 == 0:
                ctx.heartbeat({"days_done": day, "days": days})
    return {"file": f"{export_id}.csv", "rows": days}
