"""The data of each dashboard page, as plain JSON-ready dicts.

Each function here is one page: the HTML template renders its dict and the
``/api/...`` twin returns it as JSON, so the two never disagree. Every read is
bounded (see the engines' ``reader.sql``): counts stop at :data:`COUNT_CAP` (the
overview's dead counts at :data:`OVERVIEW_DEAD_CAP`) and say so, a filtered job
list searches a window of :data:`WINDOW` jobs per page, the throughput
chart reads at most :data:`RECENT_CAP` attempts, the dead letter groups the
newest :data:`DEAD_SAMPLE` dead jobs of each job.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jobdef.backends.elsewhere import elsewhere
from jobdef.backends.records import NEITHER_OUTCOMES, OUTCOMES, JobRecord
from jobdef.dashboard.plan import place
from jobdef.dashboard.results import result_facts
from jobdef.dashboard.store import Store
from jobdef.errors import UsageError
from jobdef.policy.durations import format_duration, parse_duration_or_none
from jobdef.policy.leases import DEFAULT_LEASE
from jobdef.policy.registry import Registry
from jobdef.redact import redact, secret_name, sensitive_names, shown_args
from jobdef.render import describe
from jobdef.render.context import next_run_times
from jobdef.render.explain import explain_data
from jobdef.runtime.classify import class_names, classify

STATES = ("waiting", "queued", "running", "done", "dead", "resolved", "cancelled")
# A count stops here: above it the page says "more than 10,000", never a full count(*).
COUNT_CAP = 10_000
# Jobs searched per page of a filtered list (a primary-key range, newest first).
WINDOW = 20_000
PAGE_SIZE = 50
# Attempts read for the last hour's throughput (the newest ones).
RECENT_CAP = 20_000
CHART_BUCKETS = 12  # five minutes each
# The dead letter groups a job's newest this many dead rows by error type.
DEAD_SAMPLE = 1_000
# The overview counts each job's dead rows up to this many ("more than 1,000"): a
# count reads that many index entries on every refresh, and the dead letter page
# counts on to COUNT_CAP.
OVERVIEW_DEAD_CAP = 1_000
# The longest piece of an arg or an error shown in a list cell.
CELL_CHARS = 120
# The most of one value (args, an error, a traceback) a job's page shows.
DETAIL_CHARS = 100_000
# A qualifier of the search box: args.reservation_id:42
_ARG = re.compile(r"^args\.([A-Za-z0-9_][A-Za-z0-9_.-]*):(.*)$")
NO_CURSOR = 2**62
MAX_ID = 2**63  # a job id is a signed 64-bit integer in both engines
# ASCII digits only: str.isdigit(), int() and a regex's \d also take "²" or "٤٢".
_DIGITS = re.compile(r"[0-9]{1,19}")


def parse_id(text: str) -> int | None:
    """The job or message id ``text`` writes in ASCII digits, from 1 to MAX_ID - 1; None
    for anything else. Every number of a query string or a form is read by this."""
    if not _DIGITS.fullmatch(text):
        return None
    number = int(text)
    return number if 0 < number < MAX_ID else None


def counted(value: int, cap: int = COUNT_CAP) -> dict[str, Any]:
    """A capped count and its label: ``{"count": 100000, "at_least": True, "text": ...}``."""
    at_least = value >= cap
    return {
        "count": value,
        "at_least": at_least,
        "text": f"more than {cap:,}, not counted further" if at_least else f"{value:,}",
    }


def when(epoch: float | None) -> str | None:
    """An epoch time as ISO 8601 UTC, to the second."""
    if epoch is None:
        return None
    try:
        moment = datetime.fromtimestamp(epoch, UTC)
    except (OverflowError, ValueError, OSError):
        # A time no date can say, stored before enqueue refused them: shown as it is.
        return f"{epoch:.6g} (epoch seconds)"
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    if seconds < 86400:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


def shown(value: Any, limit: int | None = DETAIL_CHARS) -> str:
    """A value as text for a page: JSON for structures, secrets masked, optionally cut."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = redact(text)
    if limit is not None and len(text) > limit:
        return text[: limit - 1] + "…"
    return text


# -- what applies ---------------------------------------------------------------------

JOB_ACTIONS = ("requeue", "resolve", "cancel")
# The state each action takes jobs from when it is applied to every job matching a
# filter: the filter is narrowed to it. A filter's cancel leaves running jobs alone
# (each stops a handler): they are cancelled one at a time or by selection.
FROM_STATE = {"requeue": "dead", "resolve": "dead", "cancel": "queued"}
# The states each action takes a chosen job from (a running job's cancel stops its handler).
TAKES = {"requeue": ("dead",), "resolve": ("dead",), "cancel": ("queued", "running")}


def applicable(states: Iterable[str]) -> list[str]:
    """The actions that apply to jobs in any of ``states``, the usual one first: a dead
    job is requeued (or resolved, when it should not run again), a queued or running one
    cancelled; a done, resolved or cancelled job takes none."""
    present = set(states)
    return [action for action in JOB_ACTIONS if present.intersection(TAKES[action])]


def fatal_reason(registry: Registry, job: str, error_type: str | None) -> str | None:
    """Why the sheet of ``job`` makes an error of ``error_type`` fatal (``ValueError is
    listed in errors.fatal``); None when it would be retried or no sheet defines the job.

    A stored error keeps its class's name only: a builtin's bases are known
    (``ConnectionRefusedError`` is an ``OSError``), another class is matched by its
    own name, as no module named by a stored row is imported here.
    """
    policy = registry.jobs.get(job)
    if policy is None or not error_type:
        return None
    found = getattr(builtins, error_type, None) if error_type.isidentifier() else None
    names = class_names(found) if isinstance(found, type) else (error_type,)
    classified = classify(policy.errors, names)
    return classified.reason if classified.action == "fatal" else None


# -- overview -------------------------------------------------------------------------


def overview(store: Store, registry: Registry) -> dict[str, Any]:
    """One row per queue, the outbox backlog and the dead jobs waiting for a human.

    A fixed number of small queries: the queue depths (active rows only), the
    newest ids, at most RECENT_CAP recent attempts, the running jobs' starts (when
    a queue has a rate), one dead count per job of the sheets, up to
    OVERVIEW_DEAD_CAP.
    """
    now = store.clock()
    infos = {row["queue"]: row for row in queue_depths(store)}
    names = sorted(set(infos) | set(registry.queues) | {job.queue for job in registry})
    since = now - 3600
    recent = store.rows("recent_attempts", since=since, cap=RECENT_CAP)
    newest = store.rows("newest_ids", cap=COUNT_CAP)[0]
    buckets: dict[str, list[list[int]]] = {n: _empty_chart() for n in names}
    by_outcome: dict[str, dict[str, int]] = {}
    for row in recent:
        slot = min(CHART_BUCKETS - 1, int((row["finished_at"] - since) // 300))
        per = buckets.setdefault(row["queue"], _empty_chart())
        per[max(0, slot)][_chart_part(row["outcome"])] += 1
        counts = by_outcome.setdefault(row["queue"], dict.fromkeys(OUTCOMES, 0))
        counts[row["outcome"]] = counts.get(row["outcome"], 0) + 1
    starts = rate_use(store, registry, recent, now)
    queues = []
    for name in sorted(set(names) | set(buckets)):
        info = infos.get(name) or {}
        policy = registry.queues.get(name)
        running = int(info.get("running") or 0)
        queued = int(info.get("queued") or 0)
        oldest = info.get("oldest_queued_age")
        chart = buckets.get(name, [])
        done = sum(b[0] for b in chart)
        failed = sum(b[1] for b in chart)
        outcomes = by_outcome.get(name) or dict.fromkeys(OUTCOMES, 0)
        concurrency = policy.concurrency if policy else None
        rate = policy.rate if policy else None
        queues.append(
            {
                "queue": name,
                "paused": bool(info.get("paused")),
                "queued": queued,
                "queued_text": counted(queued)["text"],
                "running": running,
                "oldest_wait": oldest,
                "oldest_wait_text": age(oldest),
                "done_last_hour": done,
                "failed_last_hour": failed,
                "attempts_last_hour": outcomes,
                "attempts_text": attempts_text(done, failed, outcomes),
                "failure_rate": None if done + failed == 0 else failed / (done + failed),
                "chart": chart,
                "concurrency": concurrency,
                "concurrency_used": None if not concurrency else running / concurrency,
                "rate": describe.rate(rate) if rate else None,
                "rate_use": None if not rate else starts[name],
            }
        )
    dead = []
    dead_by_queue: dict[str, tuple[int, bool]] = {}
    for job in registry:
        [row] = store.rows("dead_count", job=job.name, cap=OVERVIEW_DEAD_CAP)
        if row["count"]:
            count = int(row["count"])
            dead.append({"job": job.name, **counted(count, OVERVIEW_DEAD_CAP)})
            total, capped = dead_by_queue.get(job.queue, (0, False))
            dead_by_queue[job.queue] = (total + count, capped or count >= OVERVIEW_DEAD_CAP)
    for entry in queues:
        total, capped = dead_by_queue.get(entry["queue"], (0, False))
        entry["dead_jobs"] = total
        entry["dead_jobs_text"] = ("at least " if capped else "") + dead_jobs_text(total)
    return {
        "now": when(now),
        "queues": queues,
        "recent_attempts_capped": len(recent) >= RECENT_CAP,
        "outbox_undelivered": counted(int(newest["undelivered"] or 0)),
        "dead": dead,
        "jobs_ever": int(newest["job"] or 0),
    }


def _chart_part(outcome: str) -> int:
    """Which part of the overview's chart an attempt of ``outcome`` adds to: 0 done, 1
    failed, 2 neither (released or cancelled, :data:`NEITHER_OUTCOMES`)."""
    if outcome == "done":
        return 0
    return 2 if outcome in NEITHER_OUTCOMES else 1


def _empty_chart() -> list[list[int]]:
    return [[0, 0, 0] for _ in range(CHART_BUCKETS)]


def attempts_text(done: int, failed: int, outcomes: Mapping[str, int]) -> str:
    """``28 done, 30 failed attempts``, then the attempts that are neither, each by its
    outcome as the metrics label it: ``28 done, 3 failed, 2 cancelled attempts``
    (``attempt`` only when there is one in all)."""
    shown = [(done, "done"), (failed, "failed")]
    shown += [(outcomes[o], o) for o in OUTCOMES if o in NEITHER_OUTCOMES and outcomes.get(o)]
    said = ", ".join(f"{count:,} {word}" for count, word in shown)
    one = sum(count for count, _ in shown) == 1
    return f"{said} attempt{'' if one else 's'}"


def dead_jobs_text(count: int) -> str:
    """``1 dead job``, ``3 dead jobs``: a count of jobs, never of attempts."""
    return f"{count:,} dead job{'s' if count != 1 else ''}"


_RATE_WINDOWS = {"s": (1.0, "s"), "m": (60.0, "min"), "h": (3600.0, "h")}


def rate_use(
    store: Store, registry: Registry, recent: list[dict[str, Any]], now: float
) -> dict[str, dict[str, Any]]:
    """How full each rate-limited queue's rate is: the jobs it started in the current
    window (the last second, minute or hour, as the rate is shown: ``50/m`` is 50 in
    the last 60 s) against the rate.

    A start is a claim, which takes one of the queue's tokens: the ended ones are the
    attempt rows among ``recent`` (the overview's newest RECENT_CAP attempts, which
    cover the last hour unless capped) that started in the window, the others are
    running jobs (``running_starts``, one read of the running rows' index). The
    bucket holds one second's worth of starts, so a window can hold that many more
    than the rate (``51 / 50 per min``).
    """
    limits = {name: q.rate for name, q in registry.queues.items() if q.rate}
    if not limits:
        return {}
    windows = {}
    for name, per_second in limits.items():
        count, unit = describe.rate(per_second).split("/")
        windows[name] = (count, *_RATE_WINDOWS[unit])
    longest = max(seconds for _, seconds, _ in windows.values())
    running = store.rows("running_starts", since=now - longest, cap=COUNT_CAP)
    # Capped: the attempts read reach back only to the oldest end among them.
    reach = min((row["finished_at"] for row in recent), default=None)
    capped = len(recent) >= RECENT_CAP
    started: dict[str, list[float]] = {name: [] for name in windows}
    for row in (*recent, *running):
        if row["queue"] in started and row["started_at"] >= now - longest:
            started[row["queue"]].append(row["started_at"])
    out = {}
    for name, (count, seconds, per) in windows.items():
        since = now - seconds
        used = sum(1 for at in started[name] if at >= since)
        at_least = (capped and reach is not None and reach > since) or len(running) >= COUNT_CAP
        written = float(count)
        limit: int | float = int(written) if written.is_integer() else written
        out[name] = {
            "used": used,
            "limit": limit,
            "per": per,
            "window_seconds": seconds,
            "at_least": at_least,
            "used_fraction": used / limit,
            "text": f"{'at least ' if at_least else ''}{used:,} / {limit:,} per {per}",
        }
    return out


# -- jobs -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JobFilter:
    """What the job list shows: the filters and the search box, parsed."""

    state: str | None = None
    job: str | None = None
    queue: str | None = None
    since: float | None = None
    until: float | None = None
    q: str = ""
    job_id: int | None = None
    error: str | None = None
    arg_key: str | None = None
    arg_value: str | None = None
    before: int | None = None

    def query(self, **changes: Any) -> dict[str, str]:
        """The query string of this filter (for links and forms), with ``changes``."""
        raw = replace(self, **changes) if changes else self
        out = {
            "state": raw.state,
            "job": raw.job,
            "queue": raw.queue,
            "since": _iso(raw.since),
            "until": _iso(raw.until),
            "q": raw.q or None,
            "before": None if raw.before is None else str(raw.before),
        }
        return {k: v for k, v in out.items() if v}

    @property
    def is_empty(self) -> bool:
        return self.query(before=None) == {}


def _iso(epoch: float | None) -> str | None:
    return None if epoch is None else when(epoch)


def parse_time(text: str, now: float, name: str) -> float | None:
    """``2h`` (that long ago) or an ISO 8601 date/time (UTC unless it says)."""
    text = text.strip()
    if not text:
        return None
    seconds = parse_duration_or_none(text)
    if seconds is not None:
        return max(now - seconds, 0.0)  # longer ago than 1970: from the first job on
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"{name}: {text[:40]!r} is not a time; write a duration such as 2h (that long "
            "ago) or a date such as 2026-01-31T09:00Z"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def parse_filter(params: Mapping[str, str], now: float) -> JobFilter:
    """The filter of a job list's query string; a bad value is one :class:`UsageError`."""
    for name, value in params.items():
        if "\x00" in value:
            # No stored job can hold one (PostgreSQL's text and jsonb cannot), and a
            # query parameter with one is refused by the driver.
            raise UsageError(f"{name[:20]}: a NUL character matches nothing; remove it")
    state = params.get("state") or None
    if state is not None and state not in STATES:
        raise UsageError(f"state: {state[:20]!r} is not one of {', '.join(STATES)}")
    q = (params.get("q") or "").strip()[:500]
    job_id = arg_key = arg_value = None
    words: list[str] = []
    for token in q.split():
        if job_id is None and not words and (number := parse_id(token.removeprefix("#"))):
            job_id = number
        elif found := _ARG.match(token):
            if arg_key is not None:
                raise UsageError("search: one args.KEY:VALUE qualifier at a time")
            arg_key, arg_value = found.group(1), found.group(2)
        elif token.startswith("args."):
            raise UsageError(
                f"search: {token[:40]!r} is not a qualifier; write args.KEY:VALUE, "
                "e.g. args.reservation_id:42"
            )
        else:
            words.append(token)
    before = None
    if params.get("before"):
        before = parse_id(params["before"])
        if before is None:
            raise UsageError("before: a job id (digits 0-9), the cursor of the page")
    return JobFilter(
        state=state,
        job=(params.get("job") or None),
        queue=(params.get("queue") or None),
        since=parse_time(params.get("since", ""), now, "since"),
        until=parse_time(params.get("until", ""), now, "until"),
        q=q,
        job_id=job_id if not words else None,
        error=" ".join(words) if words else None,
        arg_key=arg_key,
        arg_value=arg_value,
        before=before,
    )


def job_row(record: JobRecord, registry: Registry | None = None) -> dict[str, Any]:
    """A job as a list row: short, escaped by the template, secrets masked (sensitive
    args too, as the job's sheet in ``registry`` says)."""
    policy = registry.jobs.get(record.job) if registry is not None else None
    error = record.last_error
    return {
        "id": record.id,
        "job": record.job,
        "queue": record.queue,
        "state": record.state,
        "attempt": record.attempt,
        "max_attempts": record.max_attempts,
        "args": shown(shown_args(policy, record.args), CELL_CHARS),
        "error": None if error is None else shown(f"{error.type}: {error.message}", CELL_CHARS),
        "created_at": when(record.created_at),
        "updated_at": when(record.updated_at),
    }


def _refuse_sensitive_search(flt: JobFilter, registry: Registry) -> None:
    """A search by a sensitive arg, or by a key inside an arg that the pages hide, would
    tell its value one guess at a time: refused."""
    name, *inside = (flt.arg_key or "").split(".")
    policies = [registry.jobs.get(flt.job)] if flt.job else [*registry, None]
    if any(map(secret_name, inside)) or any(sensitive_names(p, [name]) for p in policies):
        raise UsageError(f"search: args.{flt.arg_key} is sensitive, so jobs are not searched by it")


def by_args_index(store: Store, flt: JobFilter) -> bool:
    """Whether ``flt``'s list is read through the engine's index on args, not a window."""
    return flt.arg_key is not None and store.reader.args_index


def matching(store: Store, flt: JobFilter, before: int, limit: int) -> tuple[list[JobRecord], int]:
    """Jobs matching ``flt`` among the WINDOW jobs below ``before``, newest first; and
    the window's lowest id (0: the window reaches the first job).

    An args qualifier on an engine with an index on args (PostgreSQL's GIN index)
    searches every job below ``before`` through it (``jobs_by_args``): no window, so
    the lowest id is 0. With no filter at all the page is the ``limit`` jobs below
    ``before``: no window either.

    Finding the window's floor walks WINDOW entries of the primary key, so the page
    is first searched in the ids from the newest one below ``before`` down WINDOW
    ids, which hold at most WINDOW jobs and are the top of the window. When that
    fills the page, it is the window's page too; only a page that does not fill
    looks for the floor, and searches again if gaps in the ids put it lower.
    """
    filters = {
        "before": before,
        "limit": limit,
        "state": flt.state,
        "job": flt.job,
        "queue": flt.queue,
        "since": flt.since,
        "until": flt.until,
        "error": flt.error,
    }
    args = store.reader.args_params(flt.arg_key, flt.arg_value or "")
    if by_args_index(store, flt):
        rows = store.rows("jobs_by_args", **filters, **args)
        return [store.job_row(row) for row in rows], 0
    if flt.is_empty:
        rows = store.rows("jobs_window", floor=0, **filters, **args)
        return [store.job_row(row) for row in rows], 0
    [top] = store.rows("window_floor", before=before, skip=0) or [{"id": 0}]
    floor = max(0, int(top["id"]) - WINDOW + 1)
    rows = store.rows("jobs_window", floor=floor, **filters, **args)
    if len(rows) < limit and floor > 0:
        floor_rows = store.rows("window_floor", before=before, skip=WINDOW - 1)
        lowest = int(floor_rows[0]["id"]) if floor_rows else 0
        if lowest < floor:
            floor = lowest
            rows = store.rows("jobs_window", floor=floor, **filters, **args)
    return [store.job_row(row) for row in rows], floor


def fingerprint(store: Store) -> tuple[Any, ...]:
    """What changes when anything a page shows may have: the newest ids, queue depths."""
    [newest] = store.rows("newest_ids", cap=COUNT_CAP)
    queues = tuple(
        (q["queue"], q["paused"], q["queued"], q["running"]) for q in queue_depths(store)
    )
    return (tuple(newest.values()), queues)


def token(fingerprint: tuple[Any, ...]) -> str:
    """A short text that differs when the fingerprint does, for the page to carry."""
    return hashlib.sha256(repr(fingerprint).encode()).hexdigest()[:16]


def queue_depths(store: Store) -> list[dict[str, Any]]:
    """Every active or known queue: paused, queued (counted up to COUNT_CAP), running,
    oldest wait; read from the partial indexes of active rows only."""
    return store.rows("queue_depths", now=store.clock(), cap=COUNT_CAP)


def jobs(store: Store, flt: JobFilter, registry: Registry | None = None) -> dict[str, Any]:
    """One page of the job list, newest first, with the cursor of the next, and the
    actions that apply to it (:func:`list_actions`)."""
    page = _jobs(store, flt, registry)
    page["actions"] = list_actions(flt, page["jobs"])
    return page


def list_actions(flt: JobFilter, rows: list[dict[str, Any]]) -> list[str]:
    """The actions a list offers: those of the filter's state, or, with no state
    filtered, of the states its rows are in (a dead-only list offers no cancel)."""
    return applicable([flt.state] if flt.state else [row["state"] for row in rows])


def _jobs(store: Store, flt: JobFilter, registry: Registry | None) -> dict[str, Any]:
    if flt.arg_key is not None and registry is not None:
        _refuse_sensitive_search(flt, registry)
    if flt.job_id is not None:
        record = store.call(store.verbs.get, flt.job_id)
        records = [record] if record is not None else []
        return {
            "filter": flt.query(),
            "jobs": [job_row(r, registry) for r in records],
            "searched": f"job #{flt.job_id}",
            "older": None,
        }
    before = flt.before or NO_CURSOR
    records, floor = matching(store, flt, before, PAGE_SIZE)
    if by_args_index(store, flt):
        # Every job was searched, through the index: no window to name.
        full = len(records) == PAGE_SIZE
        below = f" below #{before}" if flt.before else ""
        return {
            "filter": flt.query(),
            "jobs": [job_row(r, registry) for r in records],
            "searched": f"every job{below}, through the args index",
            "older": flt.query(before=records[-1].id) if full else None,
        }
    if len(records) == PAGE_SIZE:
        older: int | None = records[-1].id
        searched = f"the newest jobs below #{before}" if flt.before else "the newest jobs"
    else:
        older = floor or None
        start = f"#{before - 1}" if flt.before else "the newest"
        searched = f"jobs from {start} down to #{floor}" if floor else f"every job from {start}"
    return {
        "filter": flt.query(),
        "jobs": [job_row(r, registry) for r in records],
        "searched": searched,
        "older": None if older is None else flt.query(before=older),
    }


# -- job detail -----------------------------------------------------------------------


def job_detail(
    store: Store,
    registry: Registry,
    job_id: int,
    *,
    base: Path | None = None,
    docs_url: str | None = None,
    sheet_link: str | None = None,
    lease: float = DEFAULT_LEASE,
) -> dict[str, Any] | None:
    """Everything about one job, and its attempts on the planned timeline of workers
    holding ``lease``."""
    if not 0 < job_id < MAX_ID:
        return None
    record = store.call(store.verbs.get, job_id)
    if record is None:
        return None
    history = store.call(store.verbs.attempts, job_id)
    policy = registry.jobs.get(record.job)
    plan = place(record, history, policy, lease=lease)
    explained = None
    if policy is not None:
        explained = explain_data(policy, registry, base=base, lease=lease)
    fields = []
    for row in (explained or {}).get("fields", []):
        origin = row["origin"]
        where = f"{origin['file']}:{origin['line']}" if origin else "built-in default"
        link = None
        if origin and sheet_link:
            link = sheet_link.format(file=origin["file"], line=origin["line"])
        fields.append({"path": row["path"], "value": row["value"], "where": where, "link": link})
    error = record.last_error
    return {
        "id": record.id,
        "job": record.job,
        "queue": record.queue,
        "state": record.state,
        "priority": record.priority,
        "attempt": record.attempt,
        "max_attempts": record.max_attempts,
        "idempotency_key": record.idempotency_key,
        "args": shown(json.dumps(shown_args(policy, record.args), ensure_ascii=False, indent=2)),
        "progress": None if record.progress is None else shown(dict(record.progress)),
        "result": result_facts(record, policy, store.clock(), shown),
        "note": record.note,
        "flow_id": record.flow_id,
        "step": record.step,
        "worker_id": record.worker_id,
        "lease_until": when(record.lease_until),
        "created_at": when(record.created_at),
        "updated_at": when(record.updated_at),
        "run_after": when(record.run_after),
        "finished_at": when(record.finished_at),
        "last_error": None
        if error is None
        else {
            "type": error.type,
            "message": shown(error.message),
            "traceback": shown(error.traceback),
        },
        "in_sheets": policy is not None,
        "sheet": explained["sheet"] if explained else None,
        "docs": f"{docs_url.rstrip('/')}/{record.job}.md" if docs_url and policy else None,
        "rerun": policy.rerun if policy else None,
        "rerun_this": rerun_command(record),
        "actions": applicable([record.state]),
        "fatal": None
        if error is None or record.state != "dead"
        else fatal_reason(registry, record.job, error.type),
        "fields": fields,
        "plan": {
            "rows": plan.rows,
            "worst_case": plan.worst_case,
            "deadline": plan.deadline,
            "lease": lease,
            "lease_text": format_duration(lease),
            "divergences": plan.divergences,
            "attempts": [
                {
                    **{k: v for k, v in asdict(a).items() if k not in ("window", "divergences")},
                    "started": when(a.started_at),
                    "finished": when(a.finished_at),
                    "error_message": None if a.error_message is None else shown(a.error_message),
                    "traceback": None if a.traceback is None else shown(a.traceback),
                    "window": None if a.window is None else list(a.window),
                    "divergences": list(a.divergences),
                }
                for a in plan.attempts
            ],
        },
    }


def rerun_command(record: JobRecord) -> str | None:
    """The command that requeues this dead job from a shell (the dashboard's Requeue
    does the same); None for a job in another state. A job that died in Celery or RQ
    goes back through that runtime's application object."""
    if record.state != "dead":
        return None
    if elsewhere(record) is not None:
        return f"jobdef requeue {record.id} --app module:app"
    return f"jobdef requeue {record.id}"


# -- dead letter, schedules, outbox, sheets -----------------------------------------------


def dead_letter(store: Store, registry: Registry) -> dict[str, Any]:
    """Dead jobs grouped by job and error type, each job with its sheet's rerun procedure."""
    groups = []
    for job in registry:
        rows = store.rows("dead_groups", job=job.name, cap=DEAD_SAMPLE)
        if not rows:
            continue
        [total] = store.rows("dead_count", job=job.name, cap=COUNT_CAP)
        groups.append(
            {
                "job": job.name,
                "rerun": job.rerun,
                "dead": counted(int(total["count"])),
                "sampled": sum(int(r["count"]) for r in rows) >= DEAD_SAMPLE,
                "errors": [
                    {
                        "error_type": row["error_type"],
                        **counted(int(row["count"])),
                        "first_at": when(row["first_at"]),
                        "last_at": when(row["last_at"]),
                        "newest_id": row["newest_id"],
                        "group": json.dumps([job.name, row["error_type"]]),
                        "fatal": fatal_reason(registry, job.name, row["error_type"]),
                        "sample": None if row["sample"] is None else shown(row["sample"], 300),
                    }
                    for row in rows
                ],
            }
        )
    return {"groups": groups}


def schedules(store: Store, registry: Registry) -> dict[str, Any]:
    """Batch jobs: cron line and zone, the last slots stored, the next five, missed ones."""
    from jobdef.schedule.slots import due_slots, schedule_of

    now = store.clock()
    out = []
    for job in registry:
        if job.mode != "batch" or not job.schedule:
            continue
        recent = store.rows("recent_slots", job=job.name, limit=5)
        last = recent[0]["slot"] if recent else None
        missed = due_slots(schedule_of(job), "all", last, now, grace=60.0) if last else []
        out.append(
            {
                "job": job.name,
                "schedule": job.schedule,
                "timezone": job.timezone,
                "catch_up": job.catch_up,
                "last_slots": [
                    {"slot": when(r["slot"]), "job_id": r["job_id"], "state": r["state"]}
                    for r in recent
                ],
                "next_runs": next_run_times(job, now),
                "missed": [
                    m.isoformat(timespec="minutes") for m in missed if m.timestamp() < now - 60
                ],
            }
        )
    return {"schedules": out}


def outbox(store: Store) -> dict[str, Any]:
    """Pending and failing deliveries per channel, and the oldest messages."""
    channels = store.rows("outbox_channels", cap=COUNT_CAP)
    messages = store.rows("outbox_messages", limit=PAGE_SIZE)
    return {
        "channels": [
            {
                "channel": r["channel"],
                **counted(int(r["pending"])),
                "failing": int(r["failing"] or 0),
                "oldest_at": when(r["oldest_at"]),
                "most_attempts": int(r["most_attempts"] or 0),
            }
            for r in channels
        ],
        "messages": [
            {
                "id": r["id"],
                "channel": r["channel"],
                "event": r["event"],
                "job": r["job"],
                "attempts": r["attempts"],
                "next_at": when(r["next_at"]),
                "created_at": when(r["created_at"]),
                "last_error": None if r["last_error"] is None else shown(r["last_error"], 300),
            }
            for r in messages
        ],
    }


def sheets(registry: Registry) -> dict[str, Any]:
    """Every job's effective policy: the 13 items of the docs' overview table (and the
    result, when some job declares one)."""
    items = describe.overview_items(registry)
    header = [item.label("en") for item in items]
    rows = [
        {
            "job": job.name,
            "cells": [
                describe.item_value(job, item.key, "en", registry.channels) for item in items
            ],
        }
        for job in registry
    ]
    return {"header": header, "jobs": rows}
