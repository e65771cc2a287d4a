"""Cron next/previous runs against two cron libraries' own test vectors, DST included.

The vectors are read in place from ``../shared/external/cron/`` (see its SOURCE.txt):
cronsim's (which follows Debian cron) and croniter's DST cases. jobdef takes
5-field lines only, so cronsim's 6-field (seconds) cases are left out and counted.
"""

from __future__ import annotations

import json
from datetime import datetime
from itertools import islice
from pathlib import Path
from typing import Any

import pytest

from jobdef.schedule import CronSchedule
from support.external import external_data


def vectors(name: str) -> Any:
    folder: Path = external_data("cron")
    return json.loads((folder / name).read_text(encoding="utf-8"))


def five_fields(expr: str) -> bool:
    return len(expr.split()) == 5


def test_cronsim_next_runs(capsys: pytest.CaptureFixture[str]) -> None:
    cases = vectors("cronsim-vectors.json")["next"]
    checked = 0
    wrong = []
    for case in cases:
        if not five_fields(case["expr"]):
            continue
        slots = CronSchedule(case["expr"], case["tz"]).after(datetime.fromisoformat(case["start"]))
        got = [slot.isoformat() for slot in islice(slots, len(case["expected"]))]
        checked += 1
        if got != case["expected"]:
            wrong.append(f"{case['source']}: {case['expr']} from {case['start']}: {got}")
    with capsys.disabled():
        print(f"\ncronsim vectors: {checked} checked, {len(cases) - checked} 6-field left out")
    assert wrong == []
    assert checked >= 40


def test_croniter_dst_runs(capsys: pytest.CaptureFixture[str]) -> None:
    cases = vectors("croniter-vectors.json")
    wrong = []
    for case in cases:
        schedule = CronSchedule(case["expr"], case["tz"])
        start = datetime.fromisoformat(case["start"])
        if case.get("direction") == "prev":  # croniter's get_prev: strictly before
            found = (s for s in schedule.at_or_before(start) if s.timestamp() < start.timestamp())
        else:
            found = schedule.after(start)
        got = list(islice(found, len(case["expected"])))
        expected = [datetime.fromisoformat(e) for e in case["expected"]]
        if case.get("compare") == "wall":
            walls = [e.replace(tzinfo=None) for e in expected]
            same = [g.replace(tzinfo=None) for g in got] == walls
        else:
            same = [g.isoformat() for g in got] == case["expected"]
        if not same:
            wrong.append(f"{case['source']}: {case['expr']} from {case['start']}: {got}")
    with capsys.disabled():
        print(f"\ncroniter DST vectors: {len(cases)} checked")
    assert wrong == []


def test_cronsim_reverse_walks_retrace_the_forward_ones() -> None:
    data = vectors("cronsim-vectors.json")
    lines = [line for line in data["reverse_samples"] if five_fields(line)]
    assert len(lines) >= 20
    for start in data["reverse_starts"]:
        moment = datetime.fromisoformat(start["start"])
        for line in lines:
            schedule = CronSchedule(line, start["tz"])
            forward = list(islice(schedule.after(moment), 60))
            backward = list(islice(schedule.at_or_before(forward[-1]), len(forward)))
            assert [s.isoformat() for s in backward] == [s.isoformat() for s in forward[::-1]], (
                f"{line} in {start['tz']} from {start['start']}"
            )
