"""Exceptions raised by jobdef.

Every class has one root, :class:`JobdefError`. A class's docstring is its
default message, and a message ends with what to do about the problem, so the
CLI can print it as it is, without a traceback.
"""

from __future__ import annotations


class JobdefError(Exception):
    """Something went wrong in jobdef."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or "").strip())

    @property
    def message(self) -> str:
        return str(self.args[0])


class UsageError(JobdefError):
    """A command was called with options that do not fit together; see --help."""


class ConfigError(JobdefError):
    """The jobdef configuration is invalid; fix [tool.jobdef] or the JOBDEF_* variables."""


class DurationError(JobdefError, ValueError):
    """A duration must be a string with a unit, such as "250ms", "10s", "5m", "1h" or "1h30m"."""


class SheetError(JobdefError):
    """The job definition sheets have errors; run `jobdef validate` to list them."""


class UnknownJobError(JobdefError):
    """No sheet defines this job; check the name or the sheets folder."""


class ArgsError(JobdefError, ValueError):
    """The job's args do not match the `args` schema of its sheet; nothing was stored."""


class BackendError(JobdefError):
    """The job database could not be used; check the database URL and that the server is up."""


class StaleLeaseError(JobdefError):
    """The job's lease expired and another worker reclaimed it; this late write was refused."""


class ScheduleError(JobdefError, ValueError):
    """A batch job's schedule or time zone is invalid; write a 5-field cron line, an IANA zone."""
