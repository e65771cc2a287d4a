"""What a receipt shows, decided without a server: the caller's language, the public
part of a result, the CORS headers, and the events of a stream."""

from __future__ import annotations

import dataclasses
import json

import pytest
from receipt_steps import SHEETS

from jobdef.runtime.receipt_view import (
    EventStream,
    cors_headers,
    language,
    public_args,
    public_result,
)
from jobdef.runtime.receipts import ReceiptStatus
from jobdef.sheets.pipeline import load_registry

REGISTRY = load_registry([SHEETS])


def _status(job: str, state: str = "done", result: object = None) -> ReceiptStatus:
    return ReceiptStatus(
        state=state,
        job=job,
        title=None,
        attempts=1,
        max_attempts=1,
        progress=None,
        result=result,
        next_start=None,
        created_at=1.0,
        updated_at=1.0,
        started_at=1.0,
        finished_at=2.0,
        job_id=7,
        token="t" * 35,
    )


@pytest.mark.parametrize(
    ("header", "lang"),
    [
        (None, "en"),
        ("", "en"),
        ("ja", "ja"),
        ("JA-jp", "ja"),
        ("en, ja", "en"),
        ("ja, en", "ja"),
        ("en;q=0.5, ja;q=0.6", "ja"),
        ("ja;q=0.5, en;q=0.5", "ja"),  # equal weight: the one written first
        ("de, fr;q=0.9", "en"),
        ("*", "en"),
        ("ja;q=0, en;q=0", "en"),
        ("ja;q=2", "en"),  # not a weight: refused
        ("ja;q=nan", "en"),
        ("ja;q=-1", "en"),
        ("ja" + ",x" * 10_000, "ja"),
        ("x," * 10_000 + "ja", "en"),  # only the first 1000 characters are read
    ],
)
def test_the_language_is_the_callers_first_choice_of_en_and_ja(
    header: str | None, lang: str
) -> None:
    assert language(header) == lang


def test_a_result_shows_as_the_sheet_says() -> None:
    export, whole, hidden = (REGISTRY.jobs[n] for n in ("export", "whole", "hidden"))
    value = {"file": "a.csv", "rows": 3, "path": "/srv"}
    assert public_result(export, _status("export", result=value)) == {"file": "a.csv", "rows": 3}
    assert public_result(export, _status("export", result={"rows": 0})) == {"rows": 0}
    # Field names of something that is not an object name nothing.
    assert public_result(export, _status("export", result=["file", "rows"])) is None
    assert public_result(export, _status("export", result="file")) is None
    assert public_result(whole, _status("whole", result=[1, 2])) == [1, 2]
    assert public_result(hidden, _status("hidden", result=value)) is None
    # Not done: no result; no sheet: nothing at all.
    assert public_result(whole, _status("whole", state="running", result=value)) is None
    assert public_result(None, _status("gone", result=value)) is None


def test_only_public_args_show_and_none_without_a_sheet() -> None:
    args = {"month": "2026-11", "note": "n", "api_token": "t", "extra": "x"}
    assert public_args(REGISTRY.jobs["export"], args) == {"month": "2026-11"}
    assert public_args(None, args) == {}


def test_cors_headers_only_for_an_allowed_origin() -> None:
    assert cors_headers("https://a.example", ()) == {}
    assert cors_headers(None, ["https://a.example"]) == {}
    assert cors_headers("https://a.example", ["https://a.example"]) == {
        "access-control-allow-origin": "https://a.example",
        "vary": "Origin",
    }
    # Exactly: another scheme, port or a suffix is another origin.
    for other in ("http://a.example", "https://a.example:8443", "https://a.example.evil"):
        assert "access-control-allow-origin" not in cors_headers(other, ["https://a.example"])
    assert cors_headers("https://b.example", ["*"]) == {"access-control-allow-origin": "*"}


class _Queue:
    registry = REGISTRY


def test_a_stream_sends_a_status_only_when_it_changed_then_end_or_gone() -> None:
    stream = EventStream(_Queue(), "ja")
    accepted = _status("whole", state="accepted")
    first = stream.start((accepted, {}))
    assert first.startswith("retry: 3000\n\nevent: status\ndata: ")
    assert json.loads(first.split("data: ", 1)[1])["label"] == "受付済み"
    assert stream.look((accepted, {})) == ""  # nothing changed: nothing sent
    running = dataclasses.replace(accepted, state="running", progress={"done": 1})
    assert stream.look((running, {})).startswith("event: status\n")
    done = dataclasses.replace(running, state="done", result={"count": 2})
    text = stream.look((done, {}))
    assert [line for line in text.splitlines() if line.startswith("event:")] == [
        "event: status",
        "event: end",
    ]
    assert stream.done

    gone = EventStream(_Queue(), "en")
    gone.start((accepted, {}))
    assert gone.look(None) == "event: gone\ndata: {}\n\n"
    assert gone.done
