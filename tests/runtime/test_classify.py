"""Error classification by the sheet: the most specific listed class wins."""

from __future__ import annotations

import smtplib

from jobdef.policy.model import ErrorClass, ErrorPolicy
from jobdef.runtime.classify import canonical, classify, exception_names


def _policy(retry=(), fatal=(), default="retry"):
    return ErrorPolicy(
        retry=tuple(ErrorClass(n) for n in retry),
        fatal=tuple(ErrorClass(n) for n in fatal),
        default=default,
    )


def test_exception_names_are_the_mro_as_sheets_write_them():
    names = exception_names(smtplib.SMTPServerDisconnected("bye"))
    assert names[:3] == ("smtplib.SMTPServerDisconnected", "smtplib.SMTPException", "OSError")
    refused = exception_names(ConnectionRefusedError())
    assert refused[:2] == ("ConnectionRefusedError", "ConnectionError")


def test_the_nearest_listed_class_wins_like_ordered_except_clauses():
    policy = _policy(retry=["ConnectionError"], fatal=["OSError"])
    refused = classify(policy, exception_names(ConnectionRefusedError()))
    missing = classify(policy, exception_names(FileNotFoundError()))
    assert (refused.action, refused.matched) == ("retry", "ConnectionError")
    assert (missing.action, missing.matched) == ("fatal", "OSError")


def test_a_narrow_fatal_class_beats_a_wide_retry_class():
    policy = _policy(retry=["Exception"], fatal=["ValueError"])
    decode_error = UnicodeDecodeError("utf-8", b"", 0, 1, "x")
    assert classify(policy, exception_names(decode_error)).action == "fatal"
    assert classify(policy, exception_names(KeyError())).action == "retry"


def test_an_unlisted_error_takes_the_default_and_says_so():
    policy = _policy(retry=["ConnectionError"], default="fatal")
    found = classify(policy, exception_names(KeyError()))
    assert (found.action, found.matched) == ("fatal", None)
    assert "errors.default is fatal" in found.reason


def test_aliases_in_sheets_resolve_to_the_real_class():
    assert canonical("IOError") == "OSError"
    assert canonical("socket.timeout") == "TimeoutError"
    assert canonical("smtplib.SMTPServerDisconnected") == "smtplib.SMTPServerDisconnected"
    assert canonical("no.such.module.Error") == "no.such.module.Error"
    found = classify(_policy(fatal=["socket.timeout"]), exception_names(TimeoutError()))
    assert found.action == "fatal"


def test_dotted_classes_of_the_handlers_own_modules_match_without_importing_them():
    names = ("myapp.errors.Gone", "Exception", "BaseException", "object")
    assert classify(_policy(fatal=["myapp.errors.Gone"]), names).action == "fatal"
