"""Compare two registries of effective policies: what a change to the sheets does to each job.

Pure functions over :class:`~jobdef.policy.registry.Registry` objects, no I/O and no
wording: :func:`diff_registries` returns structured changes, each with the
consequences a reviewer must know about (the facts behind a sentence, plus a
severity). :mod:`jobdef.review.render` turns them into words.

Because both sides are *effective* policies (defaults merged), a change in a
``Defaults`` document shows on every job that inherits the changed field, with
the Defaults file as the origin of the new value.

A change is **breaking** when it can hurt work that is already in the database
or silently drop a safety net: the idempotency recipe changes (keys of queued
jobs no longer match), retention is shortened (rows are pruned at the next run),
the notify channel is removed, max_attempts is lowered (queued rows keep the
cap they were enqueued with, new ones get the lower one), the queue changes, a
job is removed or renamed (queued rows keep the old name), or stored results are
kept shorter (they are deleted at the next retention run).

A change to what is kept of a handler's return value warns when callers may lose
what they read: the value is no longer stored, a smaller ``max_bytes`` or a new
schema fails attempts whose value passed before, and a receipt shows more of it.

A changed recipe also reaches past the queued rows when the job has a
``dedupe_window`` (finished jobs inside it no longer absorb a new enqueue of the
same work) or its handler calls ``first_run`` (the keys it recorded in
processed_keys no longer match): in both cases the same work can run twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from jobdef.policy.backoff import retry_timeline
from jobdef.policy.model import ChannelPolicy, JobPolicy, Origin, QueuePolicy
from jobdef.policy.registry import Registry
from jobdef.policy.values import thaw
from jobdef.review.effective import effective_values, value_origin
from jobdef.review.flow_diff import FlowChange, diff_flows

Severity = Literal["info", "warning", "breaking"]


@dataclass(frozen=True, slots=True)
class Recorded:
    """What the job store holds of one job besides its active rows (``jobdef diff --db``):
    ``done`` jobs still stored, ``done_in_window`` of them finished inside the old
    dedupe window (None without a window)."""

    done: int
    done_in_window: int | None = None


@dataclass(frozen=True, slots=True)
class DiffContext:
    """What the sheets alone do not say: the job store's counts and which handlers call
    ``first_run`` (read from their source)."""

    active: Mapping[str, int] | None = None
    recorded: Mapping[str, Recorded] | None = None
    first_run: frozenset[str] = frozenset()


Status = Literal["added", "removed", "renamed", "changed"]

# Fields whose change moves the retry timeline.
_TIMELINE_PREFIXES = ("max_attempts", "backoff.", "timeout", "deadline")
# A removed/added pair counts as a rename when the handler or the file is the same,
# or when at least this share of the values the two sheets write themselves agree.
RENAME_SIMILARITY = 0.8


@dataclass(frozen=True, slots=True)
class Consequence:
    """What a change means for the job, as facts; ``kind`` names the sentence that explains it."""

    kind: str
    severity: Severity
    facts: Mapping[str, Any] = field(default_factory=dict)

    @property
    def breaking(self) -> bool:
        return self.severity == "breaking"


@dataclass(frozen=True, slots=True)
class FieldChange:
    """One effective value that differs; an origin is ``None`` for a built-in default."""

    path: str
    before: Any
    after: Any
    before_origin: Origin | None = None
    after_origin: Origin | None = None

    @property
    def via_defaults(self) -> bool:
        """The change reached the job through a Defaults document (or its removal from one)."""
        origin = self.after_origin or self.before_origin
        return origin is not None and origin.source == "defaults"


@dataclass(frozen=True, slots=True)
class JobChange:
    """A job that was added, removed, renamed or changed, with every changed effective value."""

    status: Status
    name: str
    file: str
    old_name: str | None = None
    fields: tuple[FieldChange, ...] = ()
    consequences: tuple[Consequence, ...] = ()
    # The two effective policies, for renderers that describe values in words.
    before: JobPolicy | None = field(default=None, compare=False, repr=False)
    after: JobPolicy | None = field(default=None, compare=False, repr=False)

    @property
    def breaking(self) -> bool:
        return any(c.breaking for c in self.consequences)


@dataclass(frozen=True, slots=True)
class ItemChange:
    """A Channel or Queue document that was added, removed or changed."""

    kind: Literal["channel", "queue"]
    status: Literal["added", "removed", "changed"]
    name: str
    fields: tuple[FieldChange, ...] = ()


@dataclass(frozen=True, slots=True)
class RegistryDiff:
    """Everything that differs between two versions of the sheets."""

    jobs: tuple[JobChange, ...]
    items: tuple[ItemChange, ...] = ()
    unchanged: tuple[str, ...] = ()
    flows: tuple[FlowChange, ...] = ()

    @property
    def breaking(self) -> bool:
        return any(job.breaking for job in self.jobs)

    @property
    def empty(self) -> bool:
        return not self.jobs and not self.items and not self.flows

    def count(self, status: Status) -> int:
        return sum(1 for job in self.jobs if job.status == status)

    def defaults_reach(self) -> dict[str, tuple[str, ...]]:
        """Field path -> the jobs where that field changed through a Defaults document."""
        reach: dict[str, list[str]] = {}
        for job in self.jobs:
            for change in job.fields:
                if change.via_defaults:
                    reach.setdefault(change.path, []).append(job.name)
        return {path: tuple(names) for path, names in reach.items()}


def _field_changes(old: JobPolicy, new: JobPolicy) -> tuple[FieldChange, ...]:
    before, after = effective_values(old), effective_values(new)
    paths = [*after, *(p for p in before if p not in after)]
    return tuple(
        FieldChange(
            path,
            before.get(path),
            after.get(path),
            value_origin(old, path) if path in before else None,
            value_origin(new, path) if path in after else None,
        )
        for path in paths
        if before.get(path) != after.get(path)
    )


def _timeline_facts(job: JobPolicy) -> dict[str, Any]:
    timeline = retry_timeline(job)
    return {
        "attempts": job.max_attempts,
        "worst_case": timeline.worst_case,
        "deadline": job.deadline,
        "fits_deadline": timeline.fits_deadline,
    }


def _timeline_consequences(old: JobPolicy, new: JobPolicy) -> list[Consequence]:
    before, after = _timeline_facts(old), _timeline_facts(new)
    out = [Consequence("retry_window", "info", {"before": before, "after": after})]
    if after["fits_deadline"] is False and before["fits_deadline"] is not False:
        out.append(
            Consequence(
                "deadline_missed",
                "warning",
                {"worst_case": after["worst_case"], "deadline": after["deadline"]},
            )
        )
    elif after["fits_deadline"] is True and before["fits_deadline"] is False:
        out.append(
            Consequence(
                "deadline_met",
                "info",
                {"worst_case": after["worst_case"], "deadline": after["deadline"]},
            )
        )
    return out


def _added_facts(job: JobPolicy) -> dict[str, Any]:
    """What a reviewer of a new job wants at a glance: its retry window and its safety nets."""
    return {
        **_timeline_facts(job),
        "queue": job.queue,
        "idempotency_key": job.idempotency.key,
        "channel": job.notify.channel,
    }


def _error_action(job: JobPolicy, name: str) -> tuple[str, bool]:
    """What ``job`` does with an error class named ``name``: (retry|fatal, listed?)."""
    if any(c.name == name for c in job.errors.fatal):
        return "fatal", True
    if any(c.name == name for c in job.errors.retry):
        return "retry", True
    return job.errors.default, False


def _error_consequences(old: JobPolicy, new: JobPolicy) -> list[Consequence]:
    out: list[Consequence] = []
    names = dict.fromkeys(
        c.name for policy in (old, new) for c in (*policy.errors.retry, *policy.errors.fatal)
    )
    for name in names:
        (was, was_listed), (now, now_listed) = _error_action(old, name), _error_action(new, name)
        if was != now:
            out.append(
                Consequence(
                    "error_class",
                    "warning" if now == "fatal" else "info",
                    {
                        "error": name,
                        "before": was,
                        "after": now,
                        "listed_before": was_listed,
                        "listed_after": now_listed,
                    },
                )
            )
    if old.errors.default != new.errors.default:
        out.append(
            Consequence(
                "error_default",
                "warning" if new.errors.default == "fatal" else "info",
                {"before": old.errors.default, "after": new.errors.default},
            )
        )
    return out


def _shortened(before: float | None, after: float | None) -> bool:
    """``None`` means kept forever (or until resolved), which is longer than any duration."""
    return after is not None and (before is None or after < before)


def _recipe_facts(old: JobPolicy, context: DiffContext) -> dict[str, Any]:
    """How far a changed recipe of ``old`` reaches: its dedupe window, whether its handler
    records keys with first_run, and what the store holds of both."""
    facts: dict[str, Any] = {
        "dedupe_window": old.idempotency.dedupe_window,
        "first_run": old.name in context.first_run,
    }
    found = (context.recorded or {}).get(old.name)
    if context.recorded is not None:
        facts["done"] = found.done if found else 0
        if old.idempotency.dedupe_window is not None:
            facts["done_in_window"] = (found.done_in_window or 0) if found else 0
    return facts


def _policy_consequences(
    old: JobPolicy, new: JobPolicy, paths: set[str], context: DiffContext | None = None
) -> list[Consequence]:
    out: list[Consequence] = []
    if any(p.startswith(_TIMELINE_PREFIXES) for p in paths):
        out.extend(_timeline_consequences(old, new))
    # Each queued row keeps the max_attempts it was enqueued with (JobRecord.max_attempts).
    attempts = {"before": old.max_attempts, "after": new.max_attempts}
    if new.max_attempts < old.max_attempts:
        out.append(Consequence("attempts_lowered", "breaking", attempts))
    elif new.max_attempts > old.max_attempts:
        out.append(Consequence("attempts_raised", "info", attempts))
    out.extend(_error_consequences(old, new))
    if old.idempotency.key != new.idempotency.key:
        out.append(
            Consequence(
                "idempotency_recipe",
                "breaking",
                {
                    "before": old.idempotency.key,
                    "after": new.idempotency.key,
                    **_recipe_facts(old, context or DiffContext()),
                },
            )
        )
    for state in ("done", "dead"):
        before, after = getattr(old.retention, state), getattr(new.retention, state)
        if _shortened(before, after):
            out.append(
                Consequence(
                    "retention_cut", "breaking", {"state": state, "before": before, "after": after}
                )
            )
    before_channel, after_channel = old.notify.channel, new.notify.channel
    if before_channel and not after_channel:
        out.append(Consequence("notify_channel_removed", "breaking", {"channel": before_channel}))
    elif before_channel and after_channel != before_channel:
        out.append(
            Consequence(
                "notify_channel_changed",
                "warning",
                {"before": before_channel, "after": after_channel},
            )
        )
    dropped = [e for e in old.notify.events if e not in new.notify.events]
    if after_channel and dropped:
        out.append(Consequence("notify_events_removed", "warning", {"events": dropped}))
    if old.queue != new.queue:
        out.append(
            Consequence("queue_changed", "breaking", {"before": old.queue, "after": new.queue})
        )
    if old.on_reclaim != new.on_reclaim:
        out.append(
            Consequence(
                "on_reclaim",
                "warning" if new.on_reclaim == "fail" else "info",
                {"before": old.on_reclaim, "after": new.on_reclaim},
            )
        )
    out.extend(_result_consequences(old, new))
    old_required = set(old.args_schema.get("required", ()))
    added = sorted(set(new.args_schema.get("required", ())) - old_required)
    if added:
        out.append(Consequence("args_required", "warning", {"args": added}))
    return out


def _shown(public: bool | tuple[str, ...]) -> set[str] | None:
    """The result fields a receipt shows: None for the whole value."""
    return None if public is True else set(public or ())


def _result_consequences(old: JobPolicy, new: JobPolicy) -> list[Consequence]:
    """What a change of ``result:`` does to callers that read stored values."""
    before, after = old.result, new.result
    if before.store and not after.store:
        return [Consequence("result_not_stored", "warning", {})]
    if not after.store:
        return []
    out: list[Consequence] = []
    # A result kept as long as its job follows retention.done, whose cut is said already.
    own = old.origin("result.retention") or new.origin("result.retention")
    if before.store and own is not None and _shortened(before.retention, after.retention):
        facts = {"before": before.retention, "after": after.retention}
        out.append(Consequence("result_retention_cut", "breaking", facts))
    if before.store and after.max_bytes < before.max_bytes:
        facts = {"before": before.max_bytes, "after": after.max_bytes}
        out.append(Consequence("result_bytes_lowered", "warning", facts))
    if after.schema is not None and after.schema != before.schema:
        out.append(Consequence("result_schema", "warning", {"new": before.schema is None}))
    was, now = _shown(before.public if before.store else False), _shown(after.public)
    if now is None and was is not None:
        out.append(Consequence("result_public_widened", "warning", {"fields": None}))
    elif now is not None and was is not None and now - was:
        out.append(Consequence("result_public_widened", "warning", {"fields": sorted(now - was)}))
    return out


def _own_values(job: JobPolicy) -> dict[str, Any]:
    """The values the job's own sheet writes (inherited ones say nothing about identity)."""
    return {
        path: value
        for path, value in effective_values(job).items()
        if (origin := value_origin(job, path)) is not None
        and origin.source == "sheet"
        and path not in ("handler", "rerun")
    }


def _similarity(old: JobPolicy, new: JobPolicy) -> float:
    """Share of the values either sheet writes itself that are equal on both sides."""
    before, after = _own_values(old), _own_values(new)
    paths = set(before) | set(after)
    same = sum(1 for p in paths if before.get(p) == after.get(p))
    return same / len(paths) if paths else 0.0


def _rename_score(old: JobPolicy, new: JobPolicy) -> float | None:
    """How likely ``new`` is ``old`` renamed; ``None`` when they are unrelated."""
    similarity = _similarity(old, new)
    same_handler, same_file = old.handler == new.handler, old.file == new.file
    if not (same_handler or same_file or similarity >= RENAME_SIMILARITY):
        return None
    return 2 * same_handler + same_file + similarity


def match_renames(removed: list[JobPolicy], added: list[JobPolicy]) -> list[tuple[str, str]]:
    """Pair removed and added jobs that are one job renamed, best matches first."""
    scored = [
        (score, old.name, new.name)
        for old in removed
        for new in added
        if (score := _rename_score(old, new)) is not None
    ]
    pairs: list[tuple[str, str]] = []
    taken_old: set[str] = set()
    taken_new: set[str] = set()
    for _, old_name, new_name in sorted(scored, key=lambda s: (-s[0], s[1], s[2])):
        if old_name not in taken_old and new_name not in taken_new:
            pairs.append((old_name, new_name))
            taken_old.add(old_name)
            taken_new.add(new_name)
    return pairs


# Consequences that concern the rows already in the job store under the old policy.
QUEUED_KINDS = frozenset(
    {"attempts_lowered", "idempotency_recipe", "queue_changed", "job_removed", "job_renamed"}
)


def _with_active(
    consequences: list[Consequence], name: str, active: Mapping[str, int] | None
) -> tuple[Consequence, ...]:
    """Add how many jobs of ``name`` are queued or running to the consequences about them."""
    if active is None:
        return tuple(consequences)
    count = active.get(name, 0)
    return tuple(
        Consequence(c.kind, c.severity, {**c.facts, "active": count})
        if c.kind in QUEUED_KINDS
        else c
        for c in consequences
    )


def diff_jobs(
    old: JobPolicy,
    new: JobPolicy,
    active: Mapping[str, int] | None = None,
    context: DiffContext | None = None,
) -> JobChange | None:
    """The change from ``old`` to ``new`` (a rename when the names differ), ``None`` if equal.

    ``active``: job name -> jobs queued or running now, when the job store was asked;
    ``context``: the rest of what the store and the handlers' source say.
    """
    changes = _field_changes(old, new)
    renamed = old.name != new.name
    if not changes and not renamed:
        return None
    consequences = _policy_consequences(old, new, {c.path for c in changes}, context)
    if renamed:
        consequences.insert(
            0, Consequence("job_renamed", "breaking", {"before": old.name, "after": new.name})
        )
    return JobChange(
        status="renamed" if renamed else "changed",
        name=new.name,
        old_name=old.name if renamed else None,
        file=new.file,
        fields=changes,
        consequences=_with_active(consequences, old.name, active),
        before=old,
        after=new,
    )


def _item_values(item: ChannelPolicy | QueuePolicy) -> dict[str, Any]:
    if isinstance(item, ChannelPolicy):
        return {"type": item.type, **thaw(item.settings)}
    return {"concurrency": item.concurrency, "rate": item.rate, "description": item.description}


def _diff_items(
    kind: Literal["channel", "queue"],
    old: Mapping[str, ChannelPolicy | QueuePolicy],
    new: Mapping[str, ChannelPolicy | QueuePolicy],
) -> list[ItemChange]:
    out: list[ItemChange] = []
    for name in sorted(set(old) | set(new)):
        if name not in new:
            out.append(ItemChange(kind, "removed", name))
        elif name not in old:
            out.append(ItemChange(kind, "added", name))
        else:
            before, after = _item_values(old[name]), _item_values(new[name])
            changes = tuple(
                FieldChange(path, before.get(path), after.get(path))
                for path in dict.fromkeys([*before, *after])
                if before.get(path) != after.get(path)
            )
            if changes:
                out.append(ItemChange(kind, "changed", name, changes))
    return out


def diff_registries(
    old: Registry,
    new: Registry,
    active: Mapping[str, int] | None = None,
    context: DiffContext | None = None,
) -> RegistryDiff:
    """Every added, removed, renamed and changed job, channel and queue from ``old`` to ``new``,
    and every workflow added, removed or changed (by its sheet or its steps' jobs).

    ``active`` (job name -> jobs queued or running now) adds those counts to the
    consequences that concern rows already in the job store.
    """
    removed = [old.jobs[n] for n in sorted(set(old.jobs) - set(new.jobs))]
    added = [new.jobs[n] for n in sorted(set(new.jobs) - set(old.jobs))]
    renames = dict(match_renames(removed, added))
    renamed_to = set(renames.values())
    jobs: list[JobChange] = []
    unchanged: list[str] = []
    for name in sorted(set(old.jobs) & set(new.jobs)):
        change = diff_jobs(old.jobs[name], new.jobs[name], active, context)
        if change is None:
            unchanged.append(name)
        else:
            jobs.append(change)
    for old_name, new_name in renames.items():
        change = diff_jobs(old.jobs[old_name], new.jobs[new_name], active, context)
        if change is not None:  # always, since the names differ
            jobs.append(change)
    for job in added:
        if job.name not in renamed_to:
            jobs.append(
                JobChange(
                    "added",
                    job.name,
                    job.file,
                    consequences=(Consequence("job_added", "info", _added_facts(job)),),
                    after=job,
                )
            )
    for job in removed:
        if job.name not in renames:
            jobs.append(
                JobChange(
                    "removed",
                    job.name,
                    job.file,
                    consequences=_with_active(
                        [Consequence("job_removed", "breaking")], job.name, active
                    ),
                    before=job,
                )
            )
    order = {"removed": 0, "renamed": 1, "changed": 2, "added": 3}
    jobs.sort(key=lambda j: (not j.breaking, order[j.status], j.name))
    items = [
        *_diff_items("channel", old.channels, new.channels),
        *_diff_items("queue", old.queues, new.queues),
    ]
    return RegistryDiff(
        jobs=tuple(jobs),
        items=tuple(items),
        unchanged=tuple(unchanged),
        flows=diff_flows(old, new),
    )
