"""Key recipes: the placeholders of an idempotency recipe, the key of a call and of a slot."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from jobdef.errors import ArgsError
from jobdef.policy.keys import idempotency_key, key_placeholders, slot_key
from jobdef.policy.model import IdempotencyPolicy, JobPolicy


def job(key: str | None) -> JobPolicy:
    return JobPolicy(name="mail_job", handler="app:mail", idempotency=IdempotencyPolicy(key=key))


@pytest.mark.parametrize(
    ("recipe", "names"),
    [
        ("{order_id}:mail", ["order_id"]),
        ("{order_id}:{kind}", ["order_id", "kind"]),
        ("{order_id:>5}", ["order_id"]),
        ("{{order_id}}", []),  # doubled braces are literal, as str.format reads them
        ("mail", []),
    ],
)
def test_placeholders_are_read_as_str_format_reads_them(recipe: str, names: list[str]) -> None:
    assert key_placeholders(recipe) == names


@pytest.mark.parametrize("recipe", ["{order_id}}:mail", "{order_id", "}"])
def test_a_lone_brace_is_a_value_error(recipe: str) -> None:
    with pytest.raises(ValueError, match=r"format string|expected"):
        key_placeholders(recipe)


def test_the_key_fills_the_recipe_with_the_args() -> None:
    assert idempotency_key(job("{order_id}:mail:{{x}}"), {"order_id": 42}) == "42:mail:{x}"
    assert idempotency_key(job(None), {"order_id": 42}) is None


def test_a_missing_arg_stores_nothing_and_names_the_arg() -> None:
    with pytest.raises(ArgsError, match="uses order_id, which the call did not pass"):
        idempotency_key(job("{order_id}:mail"), {})


def test_a_slot_key_is_the_recipe_or_the_name_at_the_slot_time() -> None:
    slot = datetime(2026, 5, 2, 3, 0, tzinfo=ZoneInfo("Asia/Tokyo"))
    assert slot_key(job(None), slot) == "mail_job@2026-05-02T03:00:00+09:00"
    assert slot_key(job("nightly"), slot) == "nightly@2026-05-02T03:00:00+09:00"
