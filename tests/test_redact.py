"""jobdef.redact: any URL scheme, secret query parameters, passwords with reserved characters.

What the commands, the handler context and the channels print is tested where
they live (tests/cli/test_secrets_in_output.py, tests/notify/test_notify_hostile.py).
"""

from __future__ import annotations

import time

import pytest

from jobdef.redact import redact, url_secrets

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
