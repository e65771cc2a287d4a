"""What the templates of one job receive: the policy, its timeline, and its facts in words.

Built once per job from the registry, the same for the docs page and for
``jobdef explain``; the retry timeline comes from :func:`jobdef.policy.backoff.retry_timeline`,
the function the runtime schedules retries with.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jobdef.policy.backoff import Timeline, retry_timeline
from jobdef.policy.leases import DEFAULT_LEASE
from jobdef.policy.model import ChannelPolicy, JobPolicy, QueuePolicy
from jobdef.policy.registry import Registry
from jobdef.render import describe


def is_scheduled(job: JobPolicy) -> bool:
    """Whether the job has run times to list: a batch job with a cron schedule."""
    return job.mode == "batch" and bool(job.schedule)


def dst_rule_of(job: JobPolicy) -> str | None:
    """What a batch job's cron line does when the clock changes (English; ``t()`` it),
    or ``None`` when its zone keeps one offset."""
    if not is_scheduled(job):
        return None
    from jobdef.schedule import CronSchedule

    return CronSchedule(job.schedule or "", job.timezone).dst_rule()


def next_run_times(job: JobPolicy, after: float | datetime | None = None) -> list[dict[str, str]]:
    """The next five cron slots of a batch job after ``after`` (default: now), in its
    zone and in UTC, by the rule the scheduler follows (:func:`jobdef.schedule.next_runs`)."""
    if not is_scheduled(job):
        return []
    from jobdef.schedule import next_runs

    runs = next_runs(job, time.time() if after is None else after, count=5)
    return [
        {
            "local": run.isoformat(timespec="minutes"),
            "utc": run.astimezone(UTC).isoformat(timespec="minutes"),
        }
        for run in runs
    ]


@dataclass(frozen=True, slots=True)
class FieldRow:
    """One effective field: its sheet path, its value in words, and where it came from."""

    path: str
    value: str
    origin: str
    source: str


@dataclass(frozen=True, slots=True)
class Transition:
    """One arrow of the state diagram; ``label`` is plain text (escape it for Mermaid)."""

    source: str
    target: str
    label: str


@dataclass(frozen=True, slots=True)
class ErrorRow:
    """How one listed error class (or, with ``name=None``, any unlisted one) is treated."""

    name: str | None
    text: str
    action: str
    treatment: str


def error_rows(job: JobPolicy, lang: str) -> list[ErrorRow]:
    """Each listed error class with what it does, then what any other error does."""
    rows = [
        ErrorRow(
            entry.name,
            describe.error_class(entry, lang),
            action,
            describe.error_action(action, lang),
        )
        for action, entries in (("retry", job.errors.retry), ("fatal", job.errors.fatal))
        for entry in entries
    ]
    other = _pick(lang, "any error not listed", "一覧にないエラー")
    default = job.errors.default
    rows.append(
        ErrorRow(
            None,
            _pick(lang, f"{other} (errors.default)", f"{other}（errors.default）"),
            default,
            describe.error_action(default, lang),
        )
    )
    return rows


def _pick(lang: str, en: str, ja: str) -> str:
    return ja if lang == "ja" else en


def state_transitions(job: JobPolicy, timeline: Timeline, lang: str) -> list[Transition]:
    """The life of one job as state-diagram arrows, with its own attempts, waits and retention."""
    n = job.max_attempts
    arrows = [
        Transition("[*]", "queued", _pick(lang, "enqueued", "登録")),
        Transition("queued", "running", _pick(lang, "claimed by a worker", "ワーカーが取得")),
        Transition("running", "done", _pick(lang, "success", "成功")),
    ]
    retries = timeline.rows[1:]
    retryable = bool(job.errors.retry) or job.errors.default == "retry"
    causes = []
    if retryable:
        causes.append(_pick(lang, "retryable error", "再試行するエラー"))
    if job.on_reclaim == "retry":
        causes.append(_pick(lang, "worker died", "ワーカー停止"))
    if retries and causes:
        low = min(row.wait_min for row in retries)
        high = max(row.wait_max for row in retries)
        wait = describe.wait_range(low, high, lang)
        cause = _pick(lang, " or ", "または").join(causes)
        which = _pick(
            lang,
            "attempt 1" if n == 2 else f"attempts 1-{n - 1}",
            "1回目" if n == 2 else f"1〜{n - 1}回目",
        )
        arrows.append(
            Transition(
                "running",
                "queued",
                _pick(
                    lang,
                    f"{cause} after {which}, wait {wait}",
                    f"{cause}（{which}）、待ち{wait}",
                ),
            )
        )
    if retries:
        dead = _pick(
            lang, f"fatal error or attempt {n} failed", f"再試行しないエラーまたは{n}回目の失敗"
        )
    else:
        dead = _pick(lang, "any error (1 attempt only)", "エラー（試行は1回のみ）")
    if job.on_reclaim == "fail":
        dead += _pick(lang, ", or worker died", "、またはワーカー停止")
    arrows += [
        Transition("running", "dead", dead),
        Transition("dead", "queued", _pick(lang, "requeue", "再投入（requeue）")),
        Transition(
            "dead", "resolved", _pick(lang, "resolved by an operator", "運用者が対応済みにした")
        ),
        Transition("queued", "cancelled", _pick(lang, "cancelled", "取り消し")),
        Transition(
            "running",
            "cancelled",
            _pick(lang, "cancelled (the handler is stopped)", "取り消し（ハンドラーを停止）"),
        ),
    ]
    for state, keep in (("done", job.retention.done), ("dead", job.retention.dead)):
        if keep is not None:
            after = describe.duration(keep, lang)
            arrows.append(
                Transition(state, "[*]", _pick(lang, f"deleted after {after}", f"{after}後に削除"))
            )
    return arrows


def recommended_mode(job: JobPolicy, lang: str) -> str | None:
    """The mode the decision flow recommends for the job's answers, in words.

    ``None`` when the sheet has no ``decision`` block, or when this install has
    no decision check (:mod:`jobdef.policy.decision`).
    """
    if job.decision is None:
        return None
    try:
        from jobdef.policy.decision import recommend
    except ImportError:
        return None
    mode, deciding = recommend(job.decision)
    return describe.recommendation(mode, deciding, job.mode, lang)


def field_rows(job: JobPolicy, lang: str, base: str | Path | None) -> list[FieldRow]:
    """Every effective field of ``job`` with its value and origin, in sheet order."""
    paths = describe.effective_fields(job)
    origins = [job.origin(path) for path in paths]
    return [
        FieldRow(
            path=path,
            value=describe.field_value(job, path, lang),
            origin=text,
            source="builtin" if origin is None else origin.source,
        )
        for path, origin, text in zip(
            paths, origins, describe.origin_texts(origins, lang, base), strict=True
        )
    ]


def job_context(
    job: JobPolicy,
    registry: Registry,
    lang: str,
    base: str | Path | None = None,
    *,
    lease: float | None = None,
) -> dict[str, Any]:
    """The template context of one job; ``lease``: the lease of the worker that runs it
    (``jobdef explain --lease``), else the worker's default, for the timeline's bounds
    after a lost attempt."""
    channel: ChannelPolicy | None = registry.channels.get(job.notify.channel or "")
    queue: QueuePolicy | None = registry.queues.get(job.queue)
    timeline: Timeline = retry_timeline(job, lease=DEFAULT_LEASE if lease is None else lease)
    return {
        "job": job,
        # The result fields the done notification carries (none when nothing is stored).
        "carries": job.result.notify if job.result.store else (),
        "sheet_file": describe.display_path(job.file, base),
        "rows": describe.sheet_rows(job, lang, registry.channels),
        "timeline": timeline,
        "fields": field_rows(job, lang, base),
        "channel": channel,
        "queue": queue,
        "transitions": state_transitions(job, timeline, lang),
        "errors": error_rows(job, lang),
        "recommended": recommended_mode(job, lang),
        "dst_rule": dst_rule_of(job),
    }
