"""docs/api.md describes every public name of jobdef and every public member of the
objects they are or return (Queue, Worker, Context, the records they hand back)."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import jobdef
from jobdef.backends.records import Receipt
from jobdef.runtime.queue import Queue
from jobdef.runtime.receipts import ReceiptStatus
from jobdef.runtime.worker import WorkerStats

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text("utf-8")


def _section(name: str) -> str:
    heading = f"## `{name}`\n"
    assert heading in PAGE, f"docs/api.md has no section {heading.strip()!r}"
    text = PAGE[PAGE.index(heading) + len(heading) :]
    return text[: text.index("\n## ")] if "\n## " in text else text


def _public(cls: type) -> set[str]:
    names = {name for name, _ in inspect.getmembers(cls) if not name.startswith("_")}
    if dataclasses.is_dataclass(cls):
        names |= {f.name for f in dataclasses.fields(cls) if not f.name.startswith("_")}
    return names


def test_every_public_name_has_a_section() -> None:
    for name in jobdef.__all__:
        _section(name)


def test_every_parameter_of_the_public_functions_is_described() -> None:
    for name in ("load_registry", "connect", "first_run", "Worker", "WorkerSettings"):
        section = _section(name)
        for parameter in inspect.signature(getattr(jobdef, name)).parameters:
            assert f"{parameter}" in section, (name, parameter)


def test_every_public_member_is_described_in_its_section() -> None:
    for section, cls in (
        ("connect", Queue),
        ("Worker", jobdef.Worker),
        ("Context", jobdef.Context),
        ("connect", Receipt),
        ("connect", ReceiptStatus),
        ("Worker", WorkerStats),
        ("WorkerSettings", jobdef.WorkerSettings),
    ):
        text = _section(section)
        missing = sorted(name for name in _public(cls) if f"`{name}" not in text)
        assert missing == [], f"{cls.__name__} members not in docs/api.md ## {section}: {missing}"
