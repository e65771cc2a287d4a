"""What a change to the sheets does to each workflow: steps and edges added or removed, and
the flow's worst case before and after.

A flow changes when its own sheet does, and also when a job one of its steps runs
changes its retry policy: the worst case (the longest path, each step at its job's
worst case with lost attempts counted) is computed on each side with that side's
jobs, so ``max_attempts: 3 -> 6`` on a job shows on every flow that runs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from jobdef.policy.flow_timeline import FlowTimeline, flow_timeline
from jobdef.policy.registry import Registry
from jobdef.policy.workflow import WorkflowPolicy

# (parent, child, edge policy); finally's implicit edges are not listed.
EdgeKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class FlowChange:
    """One workflow added, removed or changed (its sheet, or the jobs its steps run)."""

    status: Literal["added", "removed", "changed"]
    name: str
    file: str
    steps_added: tuple[tuple[str, str], ...] = ()  # (step, job)
    steps_removed: tuple[tuple[str, str], ...] = ()
    jobs_changed: tuple[tuple[str, str, str], ...] = ()  # (step, old job, new job)
    args_changed: tuple[str, ...] = ()  # steps whose args mapping changed
    edges_added: tuple[tuple[str, str, str], ...] = ()  # (parent, child, policy)
    edges_removed: tuple[tuple[str, str, str], ...] = ()
    edges_changed: tuple[tuple[str, str, str, str], ...] = ()  # (parent, child, old, new)
    worst_before: float | None = None
    worst_after: float | None = None
    path_before: tuple[str, ...] = ()
    path_after: tuple[str, ...] = ()
    deadline_before: float | None = None
    deadline_after: float | None = None

    @property
    def worst_changed(self) -> bool:
        return self.worst_before != self.worst_after or self.path_before != self.path_after

    @property
    def newly_over_deadline(self) -> bool:
        """The flow fitted its deadline before and does not now."""
        return _fits(self.worst_before, self.deadline_before) is not False and (
            _fits(self.worst_after, self.deadline_after) is False
        )


def _fits(worst: float | None, deadline: float | None) -> bool | None:
    return None if worst is None or deadline is None else worst <= deadline


def _edges(flow: WorkflowPolicy) -> dict[EdgeKey, str]:
    return {
        (parent, step.name): policy
        for step in flow.steps.values()
        for parent, policy in step.after.items()
    }


def _timeline(flow: WorkflowPolicy, registry: Registry) -> FlowTimeline:
    return flow_timeline(flow, registry.jobs)


def _args(flow: WorkflowPolicy, step: str) -> dict[str, Any]:
    return {name: (s.path, s.literal) for name, s in flow.steps[step].args.items()}


def _changed(
    before: WorkflowPolicy, after: WorkflowPolicy, old: Registry, new: Registry
) -> FlowChange | None:
    old_steps, new_steps = set(before.steps), set(after.steps)
    old_edges, new_edges = _edges(before), _edges(after)
    t_old, t_new = _timeline(before, old), _timeline(after, new)
    change = FlowChange(
        "changed",
        after.name,
        after.file,
        steps_added=tuple((s, after.steps[s].job) for s in after.order() if s not in old_steps),
        steps_removed=tuple((s, before.steps[s].job) for s in before.order() if s not in new_steps),
        jobs_changed=tuple(
            (s, before.steps[s].job, after.steps[s].job)
            for s in after.order()
            if s in old_steps and before.steps[s].job != after.steps[s].job
        ),
        args_changed=tuple(
            s for s in after.order() if s in old_steps and _args(before, s) != _args(after, s)
        ),
        edges_added=tuple(
            (p, c, pol) for (p, c), pol in new_edges.items() if (p, c) not in old_edges
        ),
        edges_removed=tuple(
            (p, c, pol) for (p, c), pol in old_edges.items() if (p, c) not in new_edges
        ),
        edges_changed=tuple(
            (p, c, old_edges[(p, c)], pol)
            for (p, c), pol in new_edges.items()
            if (p, c) in old_edges and old_edges[(p, c)] != pol
        ),
        worst_before=t_old.worst_case,
        worst_after=t_new.worst_case,
        path_before=t_old.critical_path,
        path_after=t_new.critical_path,
        deadline_before=before.deadline,
        deadline_after=after.deadline,
    )
    unchanged = (
        not change.steps_added
        and not change.steps_removed
        and not change.jobs_changed
        and not change.args_changed
        and not change.edges_added
        and not change.edges_removed
        and not change.edges_changed
        and not change.worst_changed
        and change.deadline_before == change.deadline_after
    )
    return None if unchanged else change


def diff_flows(old: Registry, new: Registry) -> tuple[FlowChange, ...]:
    """Every workflow added, removed or changed from ``old`` to ``new``, by name."""
    out: list[FlowChange] = []
    for name in sorted(set(old.workflows) | set(new.workflows)):
        if name not in new.workflows:
            flow = old.workflows[name]
            t = _timeline(flow, old)
            out.append(
                FlowChange(
                    "removed",
                    name,
                    flow.file,
                    steps_removed=tuple((s, flow.steps[s].job) for s in flow.order()),
                    edges_removed=tuple((p, c, pol) for (p, c), pol in _edges(flow).items()),
                    worst_before=t.worst_case,
                    path_before=t.critical_path,
                    deadline_before=flow.deadline,
                )
            )
        elif name not in old.workflows:
            flow = new.workflows[name]
            t = _timeline(flow, new)
            out.append(
                FlowChange(
                    "added",
                    name,
                    flow.file,
                    steps_added=tuple((s, flow.steps[s].job) for s in flow.order()),
                    edges_added=tuple((p, c, pol) for (p, c), pol in _edges(flow).items()),
                    worst_after=t.worst_case,
                    path_after=t.critical_path,
                    deadline_after=flow.deadline,
                )
            )
        else:
            change = _changed(old.workflows[name], new.workflows[name], old, new)
            if change is not None:
                out.append(change)
    return tuple(out)


def flow_lines(change: FlowChange, lang: str = "en") -> list[str]:
    """The change in words, one line each (no marks): for the text and markdown renderers."""
    from jobdef.render.describe import duration

    def pick(en: str, ja: str) -> str:
        return ja if lang == "ja" else en

    lines = []
    lines += [
        pick(f"+ step {s} (job {j})", f"+ ステップ {s}（ジョブ {j}）")
        for s, j in change.steps_added
    ]
    lines += [
        pick(f"- step {s} (job {j})", f"- ステップ {s}（ジョブ {j}）")
        for s, j in change.steps_removed
    ]
    lines += [
        pick(f"~ step {s}: job {a} → {b}", f"~ ステップ {s}: ジョブ {a} → {b}")
        for s, a, b in change.jobs_changed
    ]
    lines += [
        pick(f"~ step {s}: args changed", f"~ ステップ {s}: 引数の変更")
        for s in change.args_changed
    ]
    lines += [
        pick(f"+ edge {p} → {c} ({pol})", f"+ 辺 {p} → {c}（{pol}）")
        for p, c, pol in change.edges_added
    ]
    lines += [
        pick(f"- edge {p} → {c} ({pol})", f"- 辺 {p} → {c}（{pol}）")
        for p, c, pol in change.edges_removed
    ]
    lines += [
        pick(f"~ edge {p} → {c}: {a} → {b}", f"~ 辺 {p} → {c}: {a} → {b}")
        for p, c, a, b in change.edges_changed
    ]
    worst = _worst_text(change, lang, duration)
    if worst:
        lines.append(worst)
    return lines


def _worst_text(change: FlowChange, lang: str, duration: Any) -> str:
    def side(worst: float | None, path: tuple[str, ...]) -> str:
        if worst is None:
            return "—"
        return f"{duration(worst, lang)} ({' → '.join(path)})"

    def limit(deadline: float | None, worst: float | None) -> str:
        fits = _fits(worst, deadline)
        if fits is None:
            return ""
        if lang == "ja":
            return f"、期限{duration(deadline, lang)}に{'収まる' if fits else '収まらない'}"
        return f", {'fits' if fits else 'does NOT fit'} the deadline of {duration(deadline, lang)}"

    if (
        change.status == "changed"
        and not change.worst_changed
        and change.deadline_before == change.deadline_after
    ):
        return ""
    head = "worst case" if lang != "ja" else "最悪所要時間"
    before = side(change.worst_before, change.path_before) + limit(
        change.deadline_before, change.worst_before
    )
    after = side(change.worst_after, change.path_after) + limit(
        change.deadline_after, change.worst_after
    )
    if change.status == "added":
        return f"{head}: {after}"
    if change.status == "removed":
        return f"{head}: {before}"
    return f"{head}: {before} → {after}"


def flow_json(change: FlowChange) -> Mapping[str, Any]:
    """The change as plain data (seconds)."""
    return {
        "status": change.status,
        "name": change.name,
        "file": change.file,
        "steps_added": [{"step": s, "job": j} for s, j in change.steps_added],
        "steps_removed": [{"step": s, "job": j} for s, j in change.steps_removed],
        "jobs_changed": [{"step": s, "before": a, "after": b} for s, a, b in change.jobs_changed],
        "args_changed": list(change.args_changed),
        "edges_added": [
            {"parent": p, "child": c, "policy": pol} for p, c, pol in change.edges_added
        ],
        "edges_removed": [
            {"parent": p, "child": c, "policy": pol} for p, c, pol in change.edges_removed
        ],
        "edges_changed": [
            {"parent": p, "child": c, "before": a, "after": b}
            for p, c, a, b in change.edges_changed
        ],
        "worst_case": {"before": change.worst_before, "after": change.worst_after},
        "critical_path": {"before": list(change.path_before), "after": list(change.path_after)},
        "deadline": {"before": change.deadline_before, "after": change.deadline_after},
        "newly_over_deadline": change.newly_over_deadline,
    }
