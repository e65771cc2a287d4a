"""Args are plain JSON, bounded in size and depth: the same ArgsError on every engine.

Each call goes through the queue API (``Queue.enqueue``) onto a real store of
each engine. A value JSON does not have used to be stored as a string by
PostgreSQL's driver and to raise ``TypeError`` on SQLite; now both refuse it
before the engine sees it, with the same message naming the arg and the type,
and store nothing.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from jobdef.backends.rows import dump_json
from jobdef.errors import ArgsError
from jobdef.policy.registry import Registry
from jobdef.runtime.queue import Queue
from jobdef.sheets.args_json import encode_args
from jobdef.sheets.pipeline import load_registry

SHEET = """\
apiVersion: jobdef/v1
kind: Job
name: carry
title: Carry a payload
description: Takes any JSON value.
owner: tests
handler: tests_handlers:carry
args:
  payload: {required: false}
max_attempts: 1
errors: {default: fatal}
timeout: 30s
limits: {args_bytes: 4096}
"""


@pytest.fixture
def queue(backend, tmp_path: Path) -> Queue:
    (tmp_path / "carry.yaml").write_text(SHEET, encoding="utf-8")
    registry: Registry = load_registry([tmp_path / "carry.yaml"])
    return Queue(backend, registry)


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


# (the value of args.payload, the end of the ArgsError's message)
REFUSED = {
    "decimal": (Decimal("1.5"), "args.payload is a Decimal, which is not JSON; pass a str"),
    "datetime": (
        datetime(2026, 1, 2, tzinfo=UTC),
        "args.payload is a datetime, which is not JSON; pass an ISO 8601 str",
    ),
    "set": ({1, 2}, "args.payload is a set, which is not JSON; pass a list (sorted(value))"),
    "bytes": (b"\x00\x01", "args.payload is a bytes, which is not JSON; pass a str"),
    "nested decimal": (
        {"items": [1, Decimal("2")]},
        "args.payload.items[1] is a Decimal, which is not JSON",
    ),
    "nan": (math.nan, "args.payload is nan, which JSON does not have"),
    "infinity": (-math.inf, "args.payload is -inf, which JSON does not have"),
    "lone surrogate": ("a\ud800b", "args.payload holds a lone surrogate, which is not UTF-8"),
    "nul": ("a\x00b", "args.payload holds a NUL character (\\u0000), which PostgreSQL cannot"),
    "int key": ({1: "one"}, "args.payload has the key 1, a int: JSON keys are strings"),
    "too deep": (_nested(40), "is nested more than 32 levels deep"),
    "too large": ("x" * 5000, "args are 5014 bytes as JSON, more than the 4096 this job allows"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_args_json_cannot_hold_are_refused_alike_and_nothing_is_stored(
    queue: Queue, case: str
) -> None:
    value, expected = REFUSED[case]
    with pytest.raises(ArgsError) as raised:
        queue.enqueue("carry", {"payload": value})
    message = str(raised.value)
    assert message.startswith("job 'carry': "), message
    assert expected in message
    assert message.endswith("Nothing was stored")
    assert queue.backend.list_jobs() == []


def test_one_bad_call_in_a_bulk_enqueue_stores_none_of_them(queue: Queue) -> None:
    with pytest.raises(ArgsError, match=r"args.payload is a Decimal"):
        queue.enqueue_many("carry", [{"payload": 1}, {"payload": Decimal("2")}])
    assert queue.backend.list_jobs() == []


# Args within the limits that JSON holds in more than one way.
PAYLOAD = {
    "text": "日本語 and emoji 🎉",
    "deep": _nested(30),
    "numbers": [0, -1, 2**62, 1.5, True, None],
    "tuple": (1, 2),
}


def test_args_within_the_limits_come_back_as_they_were_given(queue: Queue) -> None:
    result = queue.enqueue("carry", {"payload": PAYLOAD})
    record = queue.backend.get(result.id)
    assert record is not None
    assert record.args == {"payload": PAYLOAD | {"tuple": [1, 2]}}


def test_a_bulk_enqueue_stores_each_call_s_args_as_they_were_given(queue: Queue) -> None:
    calls = [{"payload": PAYLOAD | {"n": n}} for n in range(2 * 250 + 1)]  # several statements
    results = queue.enqueue_many("carry", calls)
    stored = [queue.backend.get(r.id) for r in results]
    assert [r.args if r else None for r in stored] == [
        {"payload": call["payload"] | {"tuple": [1, 2]}} for call in calls
    ]


def test_a_call_too_large_late_in_a_bulk_enqueue_stores_none_of_them(queue: Queue) -> None:
    calls = [{"payload": n} for n in range(2 * 250 + 1)]
    calls[-1] = {"payload": "x" * 5000}
    with pytest.raises(ArgsError, match=r"args are 5014 bytes as JSON, more than the 4096"):
        queue.enqueue_many("carry", calls)
    assert queue.backend.list_jobs() == []


def test_the_text_the_size_check_encodes_is_the_text_stored() -> None:
    """The queue stores the encode its size check made: it is the text of dump_json,
    which every other write of a JSON column uses."""
    args = {"payload": PAYLOAD, "z": 1, "a": [None, False]}
    text, problem = encode_args(args, max_bytes=4096)
    assert (text, problem) == (dump_json(args), None)
    assert encode_args({"payload": "x" * 5000}, max_bytes=4096)[0] is None


def test_the_limit_counts_utf8_bytes_and_defaults_to_256_kib(backend, tmp_path: Path) -> None:
    (tmp_path / "carry.yaml").write_text(
        SHEET.replace("limits: {args_bytes: 4096}\n", ""), encoding="utf-8"
    )
    queue = Queue(backend, load_registry([tmp_path / "carry.yaml"]))
    queue.enqueue("carry", {"payload": "x" * (256 * 1024 - 20)})
    # 3 bytes a character in UTF-8: a third as many characters pass the same limit.
    with pytest.raises(ArgsError, match=r"more than the 262144 this job allows"):
        queue.enqueue("carry", {"payload": "語" * (256 * 1024 // 3)})
    assert len(backend.list_jobs()) == 1
