"""What every export format shares: notes, whole-second clamping, the sheet's waits.

A target's vocabulary is narrower than a sheet: whole seconds where the sheet
says ``250ms``, a maximum where the sheet has none, one jitter where the sheet
names four. Each converter writes the closest valid value and a :class:`Note`
saying what changed, so no export is invalid and none is silently different.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from jobdef.errors import UsageError
from jobdef.policy.backoff import base_delay, delay_range
from jobdef.policy.fields import declares_result
from jobdef.policy.model import ErrorAction, ErrorPolicy, JobPolicy, QueuePolicy
from jobdef.policy.registry import Registry
from jobdef.render.describe import duration, result


@dataclass(frozen=True, slots=True)
class Note:
    """A sheet field that the target cannot express exactly, and what the export does instead."""

    job: str
    field: str
    text: str

    def line(self) -> str:
        """The note as one line: ``job: field: text``."""
        return f"{self.job}: {self.field}: {self.text}"


@dataclass
class Notes:
    """The notes of one job's export, collected while its fields are converted."""

    job: str
    items: list[Note] = field(default_factory=list)

    def add(self, path: str, text: str) -> None:
        self.items.append(Note(self.job, path, text))

    def texts(self) -> list[str]:
        """``field: text`` of each note, for a format's own notes list or comment."""
        return [f"{n.field}: {n.text}" for n in self.items]


def seconds(value: float) -> str:
    """Seconds as a person reads them in a note: ``30s``, ``1h30m``."""
    return duration(value)


def whole_seconds(
    value: float, low: int, high: int, notes: Notes, path: str, *, target: str
) -> int:
    """``value`` rounded up to whole seconds within ``[low, high]``; a note when it changed.

    Rounding up, not to nearest: a timeout or wait cut short is the unsafe side.
    """
    if not math.isfinite(value):
        notes.add(path, f"unbounded; {target} is set to its maximum, {seconds(high)}")
        return high
    whole = math.ceil(value)
    if whole > high:
        notes.add(
            path,
            f"{seconds(value)} is above the maximum of {target} ({seconds(high)}); "
            f"set to {seconds(high)}",
        )
        return high
    if whole < low:
        notes.add(
            path,
            f"{seconds(value)} is below the minimum of {target} ({seconds(low)}); "
            f"set to {seconds(low)}",
        )
        return low
    if whole != value:
        notes.add(path, f"{target} takes whole seconds; {seconds(value)} rounded up to {whole}s")
    return whole


def clamp_count(value: int, low: int, high: int, notes: Notes, path: str, *, target: str) -> int:
    """A count within ``[low, high]``; a note when it was cut."""
    if value > high:
        notes.add(path, f"{value} is above the maximum of {target} ({high}); set to {high}")
        return high
    if value < low:
        notes.add(path, f"{value} is below the minimum of {target} ({low}); set to {low}")
        return low
    return value


def retries(job: JobPolicy) -> int:
    """How many retries the sheet allows: attempts after the first."""
    return max(job.max_attempts - 1, 0)


def sheet_waits(job: JobPolicy) -> list[float]:
    """The wait before each retry without jitter, capped (the sheet's schedule)."""
    return [base_delay(job.backoff, n) for n in range(1, retries(job) + 1)]


def effective_cap(job: JobPolicy) -> float | None:
    """The longest wait before any retry this job makes, jitter included; None without retries.

    This is the cap a target must allow: the sheet's ``backoff.max`` when a retry
    reaches it, else the largest wait the schedule reaches (which a target that
    defaults a cap, such as Temporal's 100x initial, must be told).
    """
    highs = [delay_range(job.backoff, n)[1] for n in range(1, retries(job) + 1)]
    return max(highs) if highs else None


def waits_text(waits: Sequence[float], limit: int = 6) -> str:
    """``10s, 20s, 40s, …`` for a note; at most ``limit`` waits are shown."""
    shown = [seconds(w) if math.isfinite(w) else "unbounded" for w in waits[:limit]]
    return ", ".join(shown) + (", …" if len(waits) > limit else "")


def same_waits(a: Sequence[float], b: Sequence[float]) -> bool:
    """Equal schedules, to the millisecond (targets round, floats drift)."""
    return len(a) == len(b) and all(
        (math.isinf(x) and math.isinf(y)) or abs(x - y) < 0.001 for x, y in zip(a, b, strict=True)
    )


def geometric_waits(initial: float, rate: float, cap: float | None, count: int) -> list[float]:
    """``initial * rate**(k-1)``, capped: the schedule of ASL and Temporal retry policies."""
    out: list[float] = []
    for k in range(count):
        try:
            wait = initial * rate**k
        except OverflowError:
            wait = math.inf
        out.append(wait if cap is None else min(wait, cap))
    return out


def fitted_rate(waits: Sequence[float]) -> float:
    """The growth factor that takes the first wait to the last in ``len(waits)`` steps (>= 1).

    For a schedule a geometric policy cannot follow (linear, a list): the fit keeps
    the first and the last wait and goes through neither of the others exactly.
    """
    if len(waits) < 2 or waits[0] <= 0 or not math.isfinite(waits[-1]):
        return 1.0
    rate: float = (waits[-1] / waits[0]) ** (1 / (len(waits) - 1))
    return max(round(rate, 3), 1.0)


# The classes a worker-side timeout is an instance of (jobdef.runtime.errors.AttemptTimedOut),
# nearest first: the sheet classifies a timeout by these, as it does a raised error.
_TIMEOUT_MRO = (
    "jobdef.runtime.errors.AttemptTimedOut",
    "TimeoutError",
    "OSError",
    "EnvironmentError",
    "IOError",
    "Exception",
    "BaseException",
)


def timeout_action(errors: ErrorPolicy) -> ErrorAction:
    """Whether the sheet retries an attempt that ran past its timeout."""
    listed = {c.name: "retry" for c in errors.retry} | {c.name: "fatal" for c in errors.fatal}
    for name in _TIMEOUT_MRO:
        if name in listed:
            return "retry" if listed[name] == "retry" else "fatal"
    return errors.default


def note_fatal_timeout(job: JobPolicy, notes: Notes, retried: str) -> None:
    """A note when the sheet buries a timed-out attempt but the target retries it anyway."""
    if retries(job) and timeout_action(job.errors) == "fatal":
        notes.add("errors", f"{retried}; the sheet treats a timeout as fatal")


def note_result(job: JobPolicy, notes: Notes, instead: str) -> None:
    """A note on ``result`` for a sheet that declares one: ``instead`` says what the target
    does with a return value (and what to do); the note ends with what the sheet asks."""
    if declares_result(job):
        notes.add(
            "result", f"{instead}; the sheet's result: {result(job.result, job.retention.done)}"
        )


def short_class(name: str) -> str:
    """``smtplib.SMTPServerDisconnected`` -> ``SMTPServerDisconnected``: the name that Lambda's
    and Temporal's Python runtimes report for a raised exception (the class's own name)."""
    return name.rpartition(".")[2]


def short_classes(names: Sequence[str]) -> list[str]:
    """Bare class names, each once, in sheet order."""
    return list(dict.fromkeys(short_class(n) for n in names))


def queue_policy(job: JobPolicy, registry: Registry) -> QueuePolicy | None:
    return registry.queues.get(job.queue)


def queue_shared(job: JobPolicy, registry: Registry) -> bool:
    """Whether other jobs of the registry run on ``job``'s queue (and share its limits)."""
    return any(other.queue == job.queue and other.name != job.name for other in registry)


# One "-" for each character a DNS label cannot hold (a sheet's name holds only "_"),
# so that send_mail and send__mail stay apart as send-mail and send--mail.
_NOT_DNS = re.compile(r"[^a-z0-9-]")


def bounded_name(name: str, limit: int, notes: Notes, target: str, *, dns: bool = False) -> str:
    """``name`` as a target's resource name: at most ``limit`` characters (a hash keeps it
    unique when cut), and with ``dns`` each ``_`` written ``-``; a note when it was cut
    or could not be written as it is.

    A DNS label cannot end in ``-``, so a name ending in ``_`` (``send_mail_``) gets the
    hash of the whole name in its place (``send-mail-3f2a9c1b``): without it, it would be
    ``send_mail``'s name too, and one export would overwrite the other's resource.
    """
    out = name
    if dns:
        out = _NOT_DNS.sub("-", name.lower())
        if out != out.strip("-"):
            out = out.strip("-") + "-" + _digest(name)
            notes.add(
                "name",
                f"{target} cannot begin or end with '-' (here an '_'); named {out}, the "
                f"hash of the whole name keeping it apart from {out.rsplit('-', 1)[0]}",
            )
    if len(out) <= limit:
        return out
    cut = out[: limit - 9].rstrip("-") + "-" + _digest(name)
    notes.add("name", f"longer than {target} allows ({limit} characters); named {cut}")
    return cut


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]


def distinct_names(
    jobs: Iterable[JobPolicy], name_of: Callable[[JobPolicy], str], target: str
) -> None:
    """Refuse, in one line, jobs that would share one resource name in a target.

    The names are made one job at a time (an export of one job names it as an export of
    all does), so this is the check that two never meet; with :func:`bounded_name` only
    a hash's coincidence could make them. ``jobs``: all of the registry's, not only the
    exported ones, whose resources may exist already."""
    seen: dict[str, str] = {}
    for job in jobs:
        name = name_of(job)
        other = seen.setdefault(name, job.name)
        if other != job.name:
            raise UsageError(
                f"jobs {other!r} and {job.name!r} would both be {target} {name!r}, and one "
                "would replace the other; rename one of them in its sheet"
            )
