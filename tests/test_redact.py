"""jobdef.redact: any URL scheme, secret query parameters, passwords with reserved characters.

What the commands, the handler context and the channels print is tested where
they live (tests/cli/test_secrets_in_output.py, tests/notify/test_notify_hostile.py).
"""

from __future__ import annotations

import time

import pytest

from jobdef.policy.model import JobPolicy
from jobdef.policy.values import freeze
from jobdef.redact import (
    MASK,
    redact,
    secret_name,
    sensitive_arg,
    sensitive_values,
    shown_args,
    url_origin,
    url_path_secrets,
    url_secrets,
)
from jobdef.sheets.build import args_schema

PASSWORD = "Hunter2pw"


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://postgres:{PASSWORD}@127.0.0.1/app",
        f"mysql://admin:{PASSWORD}@db/app",
        f"postgresql+psycopg://u:{PASSWORD}@h/db",
        f"Redis://:{PASSWORD}@cache:6379/0",
        f"postgresql://u:{PASSWORD}/x@h/db",  # an unencoded '/'
        f"postgresql://u:{PASSWORD}@x@h/db",  # an unencoded '@'
        f"postgresql://u:{PASSWORD}?#@h/db",  # unencoded '?' and '#'
        f"postgresql://u@h/db?schema=s&password={PASSWORD}",
        f"https://hooks.example/x?token={PASSWORD}&a=1",
        f"https://hooks.example/x?client_secret={PASSWORD}",
        f"host=h password={PASSWORD} dbname=app",  # a libpq keyword string
    ],
)
def test_redact_hides_the_password_of_any_url(url: str) -> None:
    shown = redact(f"cannot open {url!r}: refused")
    assert PASSWORD not in shown
    assert "***" in shown


def test_redact_keeps_what_is_not_secret() -> None:
    text = "database URL 'sqlite:///tmp/jobs.db' and http://host:8080/path?schema=app&n=1"
    assert redact(text) == text
    assert redact("postgresql://postgres:pw@127.0.0.1:5432/app?schema=s") == (
        "postgresql://postgres:***@127.0.0.1:5432/app?schema=s"
    )


def test_redact_replaces_the_secrets_it_is_given_and_their_pieces() -> None:
    url = "postgresql://u:Hunter2/pw@h/db"
    # A driver cut the password at '/' and quoted the first piece as a port.
    driver = 'invalid integer value "Hunter2" for connection option "port"'
    assert "Hunter2" not in redact(driver, url_secrets(url))
    assert redact("Bearer tok-SECRET rejected", ["Bearer tok-SECRET"]) == "*** rejected"


@pytest.mark.parametrize("url", [f"0://admin:{PASSWORD}@h/app", f"\x1b[://admin:{PASSWORD}@h/x"])
def test_redact_hides_the_password_after_a_scheme_that_is_not_one(url: str) -> None:
    assert PASSWORD not in redact(f"unknown scheme in {url!r}")


@pytest.mark.parametrize(
    "text", ["A" * 70_000, "://a:" * 14_000, "x&password" * 7_000, "http://u:p@h " * 5_000]
)
def test_redact_takes_linear_time_on_a_64_kib_error_message(text: str) -> None:
    started = time.monotonic()
    redact(text)
    assert time.monotonic() - started < 1.0  # was minutes on a run of letters


# -- args as every display shows them ------------------------------------------------


def _policy(args: dict[str, dict[str, object]]) -> JobPolicy:
    return JobPolicy("signup", "app.jobs:signup", args_schema=freeze(args_schema(args)))


def test_shown_args_hides_what_the_sheet_marks_and_what_says_nothing_but_is_named_secret() -> None:
    policy = _policy(
        {
            "user": {"type": "string"},
            "pin": {"type": "string", "sensitive": True},  # a name that says nothing
            "password": {"type": "string"},  # says nothing: its name decides
            "page_token": {"type": "string", "sensitive": False},  # the sheet decided
        }
    )
    args = {"user": "ann", "pin": PASSWORD, "password": PASSWORD, "page_token": "p2"}
    assert shown_args(policy, args) == {
        "user": "ann",
        "pin": MASK,
        "password": MASK,
        "page_token": "p2",
    }
    assert args["pin"] == PASSWORD  # the caller's mapping (the stored row) is left as it is


def test_shown_args_without_a_sheet_hides_by_name_and_inside_values_too() -> None:
    args = {
        "order_id": 42,
        "db_password": PASSWORD,
        "smtp": {"host": "mail", "clientSecret": PASSWORD, "hosts": [{"api_key": PASSWORD}]},
        "callback": f"https://u:{PASSWORD}@example.test/cb",
    }
    shown = shown_args(None, args)
    assert PASSWORD not in repr(shown)
    assert shown["order_id"] == 42
    assert shown["smtp"]["host"] == "mail"
    assert shown["smtp"]["clientSecret"] == shown["db_password"] == MASK


def test_shown_args_cuts_data_nested_past_any_stored_depth() -> None:
    deep: dict[str, object] = {"leaf": 1}
    for _ in range(200):
        deep = {"d": deep}
    assert "…" in repr(shown_args(None, {"tree": deep}))  # no RecursionError


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("password", True),
        ("db_password", True),
        ("passwd", True),
        ("api_key", True),
        ("apikey", True),
        ("X-Api-Key", True),
        ("access_token", True),
        ("clientSecret", True),
        ("private_key", True),
        ("credentials", True),
        ("secret_key", True),
        ("token_count", False),
        ("password_policy", False),
        ("author", False),
        ("oauth_provider", False),
        ("keyword", False),
    ],
)
def test_secret_name_reads_the_last_word_of_a_name(name: str, secret: bool) -> None:
    assert secret_name(name) is secret


def test_sensitive_arg_prefers_what_the_schema_says_to_the_name() -> None:
    assert sensitive_arg("note", {"type": "string", "sensitive": True})
    assert not sensitive_arg("token", {"type": "string", "sensitive": False})
    assert sensitive_arg("token", {"type": "string"})
    assert sensitive_arg("token", None)  # no schema at all: the name decides


# -- channel URLs: their origin alone ------------------------------------------------

HOOK = "https://hooks.slack.com/services/T0A1B2C3D/B0E4F5G6H/Xy7SecretToken9abc"


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        (HOOK, "https://hooks.slack.com"),
        ("http://127.0.0.1:8080/hook?token=x", "http://127.0.0.1:8080"),
        ("https://user:pw@example.test/x", "https://example.test"),
        ("http://[::1]:9000/a/b", "http://[::1]:9000"),
        ("not a url", "<url>"),
        ("http://[::1/a", "<url>"),
    ],
)
def test_url_origin_is_scheme_host_and_port_only(url: str, origin: str) -> None:
    assert url_origin(url) == origin


def test_url_path_secrets_hide_every_quote_of_the_path_a_receiver_can_make() -> None:
    secrets = url_path_secrets(HOOK + "?sig=Abc123Def&x=1")
    for quoted in (
        "no such hook /services/T0A1B2C3D/B0E4F5G6H/Xy7SecretToken9abc",
        "unknown token Xy7SecretToken9abc",
        "team T0A1B2C3D channel B0E4F5G6H",
        "path %2Fservices%2FT0A1B2C3D%2FB0E4F5G6H%2FXy7SecretToken9abc",
        "bad signature Abc123Def",
    ):
        shown = redact(quoted, secrets)
        for piece in ("Xy7SecretToken9abc", "T0A1B2C3D", "B0E4F5G6H", "Abc123Def"):
            assert piece not in shown, (quoted, shown)


def test_sensitive_values_are_what_shown_args_hides_for_text_a_handler_wrote() -> None:
    policy = _policy({"pin": {"type": "integer", "sensitive": True}, "smtp": {"type": "object"}})
    args = {"pin": 4711, "smtp": {"host": "mail", "password": PASSWORD, "tags": ["x"]}}
    hidden = sensitive_values(policy, args)
    assert sorted(hidden) == sorted(["4711", PASSWORD])
    assert redact(f"login {PASSWORD} with pin 4711 to mail refused", hidden) == (
        "login *** with pin *** to mail refused"
    )
