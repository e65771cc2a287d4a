from __future__ import annotations

import pytest

from jobdef.errors import DurationError
from jobdef.policy.durations import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("250ms", 0.25),
        ("10s", 10),
        ("5m", 300),
        ("1h", 3600),
        ("30d", 2592000),
        ("1h30m", 5400),
        ("1.5s", 1.5),
    ],
)
def test_parses_durations_with_units(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    "value", [30, 90, "30", "1:30", "", "5 minutes", "30m1h", "1m1m", True, None]
)
def test_refuses_values_without_a_unit_and_says_how_to_write_one(value: object) -> None:
    with pytest.raises(DurationError, match="30s"):
        parse_duration(value)


@pytest.mark.parametrize(
    ("seconds", "en", "ja"),
    [
        (10, "10s", "10秒"),
        (600, "10m", "10分"),
        (5400, "1h30m", "1時間30分"),
        (2592000, "30d", "30日"),
        (0.25, "250ms", "250ミリ秒"),
        (0, "0s", "0秒"),
    ],
)
def test_formats_durations_as_people_write_them(seconds: float, en: str, ja: str) -> None:
    assert format_duration(seconds) == en
    assert format_duration(seconds, "ja") == ja
    assert parse_duration(en) == seconds
