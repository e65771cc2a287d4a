"""What a workflow does, for its docs page, ``jobdef explain FLOW``, its TSV and ``diff``.

One row per step: the job it runs, what it waits for, what its failure does to the
rest of the flow, and where it sits on the flow's worst-case timeline
(:func:`jobdef.policy.flow_timeline.flow_timeline`: the longest path, each step at
its job's worst case with lost attempts counted).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobdef.errors import UsageError
from jobdef.policy.flow_timeline import FlowTimeline, flow_timeline
from jobdef.policy.leases import DEFAULT_LEASE
from jobdef.policy.model import JobPolicy
from jobdef.policy.registry import Registry
from jobdef.policy.workflow import ArgSource, Step, WorkflowPolicy
from jobdef.redact import shown_args
from jobdef.render import describe

FORMATS = ("text", "markdown", "json")


def _pick(lang: str, en: str, ja: str) -> str:
    return ja if lang == "ja" else en


def _join(parts: list[str], lang: str) -> str:
    return _pick(lang, ", ", "、").join(parts)


def waits_for(step: Step, lang: str = "en") -> str:
    """What the step waits for, each parent with what its failure means when not ``cancel``."""
    if step.is_finally:
        return _pick(
            lang,
            "every other step, whatever their outcome",
            "ほかのすべてのステップの終了（結果を問わない）",
        )
    if not step.after:
        return _pick(lang, "nothing (starts with the flow)", "なし（フローの開始時に実行）")
    parts = []
    for parent, policy in step.after.items():
        if policy == "run":
            parts.append(
                _pick(lang, f"{parent} (runs anyway if it fails)", f"{parent}（失敗しても実行）")
            )
        elif policy == "ignore":
            parts.append(
                _pick(lang, f"{parent} (its failure is ignored)", f"{parent}（失敗は無視）")
            )
        else:
            parts.append(parent)
    return _join(parts, lang)


def cancelled_by(flow: WorkflowPolicy, step: str) -> tuple[str, ...]:
    """The steps that never run when ``step`` ends not done: its ``cancel`` children, theirs,
    and so on, in the flow's order."""
    gone = {step}
    for name in flow.order():
        node = flow.steps[name]
        if any(
            gone_parent in gone and policy == "cancel" for gone_parent, policy in node.after.items()
        ):
            gone.add(name)
    return tuple(name for name in flow.order() if name in gone and name != step)


def on_failure(flow: WorkflowPolicy, step: Step, lang: str = "en") -> str:
    """What the step ending dead, cancelled or missing does to the rest of the flow."""
    if step.is_finally:
        return _pick(
            lang,
            "recorded; the flow's outcome is that of the other steps",
            "記録のみ。フローの結果はほかのステップで決まる",
        )
    parts = []
    cancelled = cancelled_by(flow, step.name)
    if cancelled:
        parts.append(
            _pick(
                lang,
                f"cancels {_join(list(cancelled), lang)}",
                f"{_join(list(cancelled), lang)}を取り消す",
            )
        )
    for child in flow.children(step.name):
        if child in cancelled:
            continue
        policy = flow.steps[child].after[step.name]
        if policy == "run":
            parts.append(_pick(lang, f"{child} runs anyway", f"{child}はそれでも実行"))
        elif policy == "ignore":
            parts.append(_pick(lang, f"{child} ignores it", f"{child}は無視して実行"))
    parts.append(_pick(lang, "the flow ends failed", "フローは失敗で終わる"))
    return _pick(lang, "; ", "。").join(parts)


def arg_text(name: str, source: ArgSource, job: JobPolicy | None = None) -> str:
    """``order_id ← args.order_id`` or ``points = 10``; a literal as every display shows
    args (:func:`jobdef.redact.shown_args`: a sensitive arg of the job as ``***``)."""
    if source.path is not None:
        return f"{name} ← {source}"
    shown = shown_args(job, {name: describe_literal(source.literal)})[name]
    return f"{name} = {json.dumps(shown, ensure_ascii=False)}"


def step_args(step: Step, job: JobPolicy | None) -> dict[str, str]:
    """Each arg of the step as :func:`arg_text` writes it."""
    return {name: arg_text(name, source, job) for name, source in step.args.items()}


def describe_literal(value: Any) -> Any:
    """A frozen literal as JSON can write it."""
    from jobdef.policy.values import thaw

    return thaw(value)


@dataclass(frozen=True, slots=True)
class StepRow:
    """One step as the page, explain and the TSV show it."""

    name: str
    job: str
    page: str
    title: str
    waits: str
    on_failure: str
    args: str
    latest_start: str
    worst: str
    latest_end: str
    critical: bool


@dataclass(frozen=True, slots=True)
class Edge:
    """One arrow of the graph: ``source`` is waited for by ``target``."""

    source: str
    target: str
    policy: str  # cancel | run | ignore | finally


def graph_edges(flow: WorkflowPolicy) -> list[Edge]:
    """Every ``after:`` edge, then one dotted edge from each last step to ``finally``."""
    edges = [
        Edge(parent, step.name, policy)
        for step in (flow.steps[name] for name in flow.order())
        for parent, policy in step.after.items()
    ]
    last = flow.finally_step
    if last is not None:
        sinks = [n for n in flow.order() if n != last.name and not flow.children(n)]
        edges += [Edge(sink, last.name, "finally") for sink in sinks]
    return edges


def worst_case_text(timeline: FlowTimeline, lang: str = "en") -> str:
    """``12m along charge → mail → ledger, fits the deadline of 3h``."""
    window = describe.duration(timeline.worst_case, lang)
    path = " → ".join(timeline.critical_path)
    head = _pick(lang, f"{window} along {path}", f"{window}（{path}の経路）")
    if timeline.deadline is None:
        return head + _pick(lang, ", no deadline", "、期限なし")
    limit = describe.duration(timeline.deadline, lang)
    if timeline.fits_deadline:
        return head + _pick(lang, f", fits the deadline of {limit}", f"、期限{limit}に収まる")
    return head + _pick(
        lang, f", does NOT fit the deadline of {limit}", f"、期限{limit}に収まらない"
    )


def bound_text(timeline: FlowTimeline, lang: str = "en") -> str:
    """What each step's worst case assumes, the lease named."""
    lease = describe.duration(timeline.lease, lang)
    every = describe.duration(timeline.reclaim_interval, lang)
    which = (
        _pick(lang, f"the worker's default lease {lease}", f"ワーカーの既定のリース{lease}")
        if timeline.lease == DEFAULT_LEASE
        else _pick(lang, f"the lease of {lease} (--lease)", f"リース{lease}（--lease）")
    )
    return _pick(
        lang,
        "Each step at its job's worst case: every wait at its jitter maximum, every attempt "
        f"to its timeout, and every attempt lost (its worker died) back only after {which} "
        f"+ a reclaim every {every}. A released step is assumed to find a free worker at once.",
        "各ステップはジョブの最悪ケースで数える: 待ち時間はすべてジッターの最大、各試行はタイム"
        f"アウトまで実行、失われた試行は{which}＋{every}ごとの回収の後に戻る。"
        "解放されたステップはすぐに空きワーカーが拾うものとする。",
    )


def flow_context(
    flow: WorkflowPolicy,
    registry: Registry,
    lang: str = "en",
    base: str | Path | None = None,
    *,
    lease: float | None = None,
) -> dict[str, Any]:
    """Everything the flow's page and explain show."""
    timeline = flow_timeline(flow, registry.jobs, lease=lease or DEFAULT_LEASE)
    rows = []
    for bound in timeline.steps:
        step = flow.steps[bound.name]
        job = registry.jobs.get(step.job)
        rows.append(
            StepRow(
                name=step.name,
                job=step.job,
                page=f"{step.job}.md",
                title=job.title if job is not None else "",
                waits=waits_for(step, lang),
                on_failure=on_failure(flow, step, lang),
                args=_join(list(step_args(step, job).values()), lang) or "—",
                latest_start=describe.duration(bound.latest_start, lang),
                worst=describe.duration(bound.worst, lang),
                latest_end=describe.duration(bound.latest_end, lang),
                critical=bound.on_critical_path,
            )
        )
    args = flow.args.get("properties", {})
    return {
        "flow": flow,
        "rows": rows,
        "edges": graph_edges(flow),
        "timeline": timeline,
        "critical": list(timeline.critical_path),
        "worst_case_text": worst_case_text(timeline, lang),
        "bound_text": bound_text(timeline, lang),
        "sheet_file": describe.display_path(flow.file, base),
        "args": [
            (name, describe_arg(schema), str(schema.get("description", "")))
            for name, schema in args.items()
        ],
        "key": flow.idempotency.key if flow.idempotency is not None else None,
        "deadline": describe.duration(flow.deadline, lang),
        "notify": _notify(flow, lang),
    }


def describe_arg(schema: Any) -> str:
    """An arg's schema in one line, without its description."""
    plain = {k: v for k, v in describe_literal(schema).items() if k != "description"}
    return json.dumps(plain, ensure_ascii=False, sort_keys=True)


def _notify(flow: WorkflowPolicy, lang: str) -> str:
    notify = flow.notify
    if notify is None or notify.channel is None or not notify.events:
        return _pick(lang, "nobody", "なし")
    return f"{notify.channel}: {_join(list(notify.events), lang)}"


def flow_data(
    flow: WorkflowPolicy,
    registry: Registry,
    lang: str = "en",
    base: str | Path | None = None,
    *,
    lease: float | None = None,
) -> dict[str, Any]:
    """The explanation as plain data: seconds beside the text."""
    context = flow_context(flow, registry, lang, base, lease=lease)
    timeline: FlowTimeline = context["timeline"]
    return {
        "name": flow.name,
        "kind": "Workflow",
        "title": flow.title,
        "owner": flow.owner,
        "sheet": context["sheet_file"],
        "args": {name: schema for name, schema, _ in context["args"]},
        "idempotency_key": context["key"],
        "deadline": flow.deadline,
        "notify": context["notify"],
        "steps": [
            {
                "name": row.name,
                "job": row.job,
                "after": dict(flow.steps[row.name].after),
                "finally": flow.steps[row.name].is_finally,
                "waits_for": row.waits,
                "on_failure": row.on_failure,
                "args": step_args(flow.steps[row.name], registry.jobs.get(row.job)),
                "latest_start": bound.latest_start,
                "worst_case": bound.worst,
                "latest_end": bound.latest_end,
                "critical": bound.on_critical_path,
            }
            for row, bound in zip(context["rows"], timeline.steps, strict=True)
        ],
        "timeline": {
            "worst_case": timeline.worst_case,
            "critical_path": list(timeline.critical_path),
            "fits_deadline": timeline.fits_deadline,
            "text": context["worst_case_text"],
            "assumed_lease": timeline.lease,
            "lease_is_default": timeline.lease == DEFAULT_LEASE,
            "reclaim_interval": timeline.reclaim_interval,
            "bound": context["bound_text"],
        },
    }


def explain_flow(
    flow: WorkflowPolicy,
    registry: Registry,
    fmt: str = "text",
    *,
    lang: str = "en",
    templates: str | Path | None = None,
    base: str | Path | None = None,
    lease: float | None = None,
) -> str:
    """The explanation of ``flow`` in ``fmt`` (``text``, ``markdown``: its page, ``json``)."""
    if fmt == "json":
        data = flow_data(flow, registry, lang, base, lease=lease)
        return json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    from jobdef.render.templates import environment, render

    env = environment(lang, templates)
    context = flow_context(flow, registry, lang, base, lease=lease)
    name = "workflow.md.j2" if fmt == "markdown" else "workflow.txt.j2"
    return render(env, name, **context).rstrip() + "\n"
