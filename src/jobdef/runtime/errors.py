"""The errors the worker itself records for an attempt (as opposed to a handler's own)."""

from __future__ import annotations


class HandlerCrashed(Exception):
    """The child process running the handler died (os._exit, a signal, a segfault)."""


class LeaseExpired(TimeoutError):
    """The worker holding the job stopped heart-beating; its lease expired and was reclaimed."""


class AttemptTimedOut(TimeoutError):
    """The handler ran past the sheet's ``timeout`` and was killed."""


class HandlerUnavailable(ImportError):
    """The handler did not import in the child (its module, or the function in it, is gone):
    the code deployed under the worker changed, so the job is released, never failed."""


class ResultRefused(Exception):
    """The handler returned a value its sheet's ``result:`` refuses: larger than
    ``max_bytes``, not plain JSON, or breaking ``result.schema``. The attempt fails with
    it, and the sheet's ``errors`` classify it like any error (unlisted: ``errors.default``).

    Sheets name it ``jobdef.ResultRefused`` (its public home, where its records name it
    too). The message is the one line the attempt records: job, attempt, why, and what to
    return instead.
    """


ResultRefused.__module__ = "jobdef"  # the name sheets write and records show
