"""Exceptions raised by jobdef.

Every class has one root, :class:`JobdefError`. A class's docstring is its
default message, and a message ends with what to do about the problem, so the
CLI can print it as it is, without a traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jobdef.sheets.diagnostics import Diagnostic


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

    def __init__(self, message: str | None = None, diagnostics: Sequence[Diagnostic] = ()) -> None:
        super().__init__(message)
        self.diagnostics: tuple[Diagnostic, ...] = tuple(diagnostics)

    @classmethod
    def from_diagnostics(
        cls,
        diagnostics: Sequence[Diagnostic],
        shown: int = 10,
        path: Callable[[str], str] = str,
    ) -> SheetError:
        """One message listing the first ``shown`` findings, carrying all of them; ``path``
        turns a file into what the message shows (relative to the project root)."""
        lines = [
            f"{path(d.file)}:{d.line}:{d.column}: {d.severity} {d.code} {d.message}"
            for d in diagnostics[:shown]
        ]
        if len(diagnostics) > shown:
            lines.append(f"... and {len(diagnostics) - shown} more")
        noun = "error" if len(diagnostics) == 1 else "errors"
        return cls(
            f"the job definition sheets have {len(diagnostics)} {noun}:\n"
            + "\n".join(lines)
            + "\nfix them; `jobdef validate` lists every finding",
            diagnostics,
        )


class UnreadableInputError(JobdefError):
    """A sheet path does not exist or cannot be read; check the path and its permissions."""


class UnknownJobError(JobdefError):
    """No sheet defines this job; check the name or the sheets folder."""


class UnknownWorkflowError(JobdefError):
    """No sheet defines this workflow; check the name or the sheets folder."""


class HandlerError(JobdefError):
    """A handler of a queue this worker serves cannot be called; fix it or the pythonpath."""


class ArgsError(JobdefError, ValueError):
    """The job's args do not match the `args` schema of its sheet, or another value of
    the call does not fit (a priority out of range); nothing was stored."""


class BackendError(JobdefError):
    """The job database could not be used; check the database URL and that the server is up."""


class ChannelError(JobdefError):
    """A notification channel cannot be used; set the environment variables its sheet names."""


class DeliveryError(JobdefError):
    """A notification could not be delivered; the outbox keeps it and tries again later."""


class ScheduleError(JobdefError, ValueError):
    """A batch job's schedule or time zone is invalid; write a 5-field cron line, an IANA zone."""
