"""A :class:`~jobdef.review.diff.RegistryDiff` as terminal text, Markdown or JSON.

Markdown is written to be posted as a pull request comment as it is: a summary
line, one section per job with a table of changed values (before, after, and
where the new value is set) and the consequences in words, breaking ones first.
"""

from __future__ import annotations

import json
from typing import Any

from jobdef.policy.model import JobPolicy, Origin
from jobdef.render import describe
from jobdef.render.escape import markdown_cell, markdown_inline
from jobdef.review.diff import Consequence, FieldChange, ItemChange, JobChange, RegistryDiff
from jobdef.review.flow_diff import flow_json, flow_lines
from jobdef.review.sentences import sentence

FORMATS = ("text", "markdown", "json")

_SEVERITY_ORDER = {"breaking": 0, "warning": 1, "info": 2}
_LABELS = {
    "en": {
        "breaking": "breaking",
        "warning": "warning",
        "info": "note",
        "added": "added",
        "removed": "removed",
        "renamed": "renamed",
        "changed": "changed",
        "field": "Field",
        "before": "Before",
        "after": "After",
        "set_in": "Set in",
        "defaults": "Defaults",
        "builtin": "built-in default",
        "no_changes": "No change to the effective policy of any job.",
        "unchanged": "unchanged",
        "reach": "Defaults change reaching several jobs",
        "no_sheets": "no sheets",
    },
    "ja": {
        "breaking": "破壊的",
        "warning": "注意",
        "info": "参考",
        "added": "追加",
        "removed": "削除",
        "renamed": "名前変更",
        "changed": "変更",
        "field": "項目",
        "before": "変更前",
        "after": "変更後",
        "set_in": "設定箇所",
        "defaults": "Defaults",
        "builtin": "組み込みの既定値",
        "no_changes": "どのジョブの実効ポリシーも変わらない。",
        "unchanged": "変更なし",
        "reach": "複数のジョブに及ぶ Defaults の変更",
        "no_sheets": "シートなし",
    },
}


def _label(key: str, lang: str) -> str:
    return _LABELS.get(lang, _LABELS["en"])[key]


def _where(change: FieldChange, lang: str) -> str:
    """Where the new value is set (a sheet, Defaults, or built in)."""
    return describe.origin_text(change.after_origin, lang)


def _value(policy: JobPolicy | None, change: FieldChange, side: str, lang: str) -> str:
    """One side of a changed value, worded by :mod:`jobdef.render.describe` like everywhere else.

    An arg is shown as its schema, since the review is about what changed in it.
    """
    raw = change.before if side == "before" else change.after
    if policy is None or change.path.startswith("args."):
        return _raw_value(change.path, raw, lang)
    return describe.field_value(policy, change.path, lang)


def _raw_value(path: str, value: Any, lang: str) -> str:
    """A Channel/Queue setting or an arg schema, which have no describe wording of their own."""
    if value is None:
        return "なし" if lang == "ja" else "none"
    if path == "rate" and isinstance(value, float):
        return describe.rate(value, lang)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def _ordered(consequences: tuple[Consequence, ...]) -> list[Consequence]:
    return sorted(consequences, key=lambda c: _SEVERITY_ORDER[c.severity])


def _delta(change: FieldChange) -> str | None:
    """``+A -B`` for a list of names that gained or lost entries; ``None`` for other values."""
    lists = (change.before, change.after)
    if not all(isinstance(v, list) and all(isinstance(i, str) for i in v) for v in lists):
        return None
    added = [f"+{v}" for v in change.after if v not in change.before]
    removed = [f"-{v}" for v in change.before if v not in change.after]
    return " ".join(added + removed) or None  # None: only the order changed


def summary_counts(diff: RegistryDiff) -> dict[str, int]:
    return {
        "breaking": sum(c.breaking for job in diff.jobs for c in job.consequences),
        "changed": diff.count("changed"),
        "added": diff.count("added"),
        "renamed": diff.count("renamed"),
        "removed": diff.count("removed"),
        "unchanged": len(diff.unchanged),
    }


def _summary(diff: RegistryDiff, lang: str) -> str:
    counts = summary_counts(diff)
    jobs = [f"{n} {_label(k, lang)}" for k, n in counts.items() if n and k != "breaking"]
    if lang == "ja":
        breaking = (
            f"破壊的な変更 {counts['breaking']}件" if counts["breaking"] else "破壊的な変更なし"
        )
        return f"{breaking} · ジョブ: {'、'.join(jobs) or 'なし'}"
    n_breaking = counts["breaking"]
    head = "no breaking change" if not n_breaking else f"{n_breaking} breaking change"
    plural = "s" if n_breaking > 1 else ""
    return f"{head}{plural} · jobs: {', '.join(jobs) or 'none'}"


def _reach_lines(diff: RegistryDiff) -> list[tuple[str, tuple[str, ...]]]:
    return [(path, names) for path, names in diff.defaults_reach().items() if len(names) > 1]


# --- text -------------------------------------------------------------------------------------

_MARK = {"added": "+", "removed": "-", "renamed": ">", "changed": "~"}


def _plain(text: str) -> str:
    return text.replace("`", "")


def _job_title(job: JobChange, lang: str) -> str:
    name = f"{job.old_name} → {job.name}" if job.old_name else job.name
    return f"{_MARK[job.status]} {name} ({_label(job.status, lang)}, {job.file})"


def render_text(diff: RegistryDiff, old: str, new: str, lang: str = "en") -> str:
    lines = [f"jobdef diff {old} → {new}", _summary(diff, lang), ""]
    if diff.empty:
        lines.append(_label("no_changes", lang))
    for path, names in _reach_lines(diff):
        lines.append(f"{_label('reach', lang)}: {path} → {', '.join(names)}")
    if _reach_lines(diff):
        lines.append("")
    for job in diff.jobs:
        lines.append(_job_title(job, lang))
        width = max((len(c.path) for c in job.fields), default=0)
        for change in job.fields:
            delta = _delta(change)
            if delta is None:
                before = _value(job.before, change, "before", lang)
                delta = f"{before} → {_value(job.after, change, 'after', lang)}"
            lines.append(f"    {change.path:<{width}}  {delta}   [{_where(change, lang)}]")
        for consequence in _ordered(job.consequences):
            mark = {"breaking": "!!", "warning": " !", "info": " ·"}[consequence.severity]
            label = _label(consequence.severity, lang).upper() if consequence.breaking else ""
            text = _plain(sentence(consequence, lang))
            lines.append(f"  {mark} {label + ': ' if label else ''}{text}")
        lines.append("")
    for flow in diff.flows:
        what = "workflow" if lang != "ja" else "ワークフロー"
        lines.append(
            f"{_MARK[flow.status]} {flow.name} ({what}, {_label(flow.status, lang)}, {flow.file})"
        )
        lines += [f"    {line}" for line in flow_lines(flow, lang)]
        lines.append("")
    lines.extend(_items_text(diff.items, lang))
    return "\n".join(lines).rstrip() + "\n"


def _items_text(items: tuple[ItemChange, ...], lang: str) -> list[str]:
    lines = []
    for item in items:
        lines.append(f"{_MARK[item.status]} {item.kind} {item.name} ({_label(item.status, lang)})")
        for change in item.fields:
            lines.append(
                f"    {change.path}  {_raw_value(change.path, change.before, lang)}"
                f" → {_raw_value(change.path, change.after, lang)}"
            )
    return lines


# --- markdown ---------------------------------------------------------------------------------


def _code(text: str) -> str:
    """``text`` as an inline code span (a longer fence when it holds backticks)."""
    text = " ".join(str(text).splitlines()).replace("|", "\\|")
    fence = "``" if "`" in text else "`"
    return f"{fence}{text}{fence}" if fence == "`" else f"{fence} {text} {fence}"


def _md_sentence(text: str) -> str:
    """A sentence with `code` spans kept as code and the rest escaped."""
    parts = text.split("`")
    return "".join(_code(p) if i % 2 else markdown_inline(p) for i, p in enumerate(parts))


def _md_value(policy: JobPolicy | None, change: FieldChange, side: str, lang: str) -> str:
    """A value as code, so that names and recipes read exactly as written in the sheet."""
    return _code(_value(policy, change, side, lang))


_ICON = {"breaking": "🛑", "warning": "⚠️", "info": "ℹ️"}


def render_markdown(diff: RegistryDiff, old: str, new: str, lang: str = "en") -> str:
    title = "jobdef diff" if lang == "en" else "jobdef diff（ジョブ定義の差分）"
    lines = [f"### {title}: {_code(old)} → {_code(new)}", "", f"**{_summary(diff, lang)}**", ""]
    if diff.empty:
        lines += [_label("no_changes", lang), ""]
    reach = _reach_lines(diff)
    if reach:
        lines.append(f"> **{_label('reach', lang)}**")
        lines += [
            f"> - {_code(path)}: {', '.join(_code(n) for n in names)}" for path, names in reach
        ]
        lines.append("")
    for job in diff.jobs:
        name = f"{_code(job.old_name)} → {_code(job.name)}" if job.old_name else _code(job.name)
        flag = f" · **{_label('breaking', lang)}**" if job.breaking else ""
        lines += [f"#### {name} ({_label(job.status, lang)}){flag}", "", f"{_code(job.file)}", ""]
        if job.fields:
            lines.append(
                f"| {_label('field', lang)} | {_label('before', lang)} | "
                f"{_label('after', lang)} | {_label('set_in', lang)} |"
            )
            lines.append("| --- | --- | --- | --- |")
            for change in job.fields:
                before = _md_value(job.before, change, "before", lang)
                after = _md_value(job.after, change, "after", lang)
                where = markdown_cell(_where(change, lang))
                lines.append(f"| {_code(change.path)} | {before} | {after} | {where} |")
            lines.append("")
        for consequence in _ordered(job.consequences):
            label = _label(consequence.severity, lang)
            strong = f"**{label}**" if consequence.severity != "info" else label
            icon = _ICON[consequence.severity]
            lines.append(f"- {icon} {strong}: {_md_sentence(sentence(consequence, lang))}")
        lines.append("")
    for flow in diff.flows:
        what = "workflow" if lang != "ja" else "ワークフロー"
        lines += [f"#### {_code(flow.name)} ({what}, {_label(flow.status, lang)})", ""]
        lines += [f"{_code(flow.file)}", ""]
        lines += [f"- {_md_sentence(line)}" for line in flow_lines(flow, lang)]
        lines.append("")
    if diff.items:
        for item in diff.items:
            changes = "; ".join(
                f"{_code(c.path)}: {_code(_raw_value(c.path, c.before, lang))} → "
                f"{_code(_raw_value(c.path, c.after, lang))}"
                for c in item.fields
            )
            suffix = f": {changes}" if changes else ""
            lines.append(f"- {item.kind} {_code(item.name)} ({_label(item.status, lang)}){suffix}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


# --- json -------------------------------------------------------------------------------------


def _origin_json(origin: Origin | None) -> dict[str, Any] | None:
    if origin is None:
        return None
    return {
        "file": origin.file,
        "line": origin.line,
        "column": origin.column,
        "source": origin.source,
    }


def diff_to_json(diff: RegistryDiff, old: str, new: str, lang: str = "en") -> dict[str, Any]:
    """The whole diff as plain data; durations are seconds, ``message`` is the sentence."""
    return {
        "old": old,
        "new": new,
        "breaking": diff.breaking,
        "summary": summary_counts(diff),
        "jobs": [
            {
                "status": job.status,
                "name": job.name,
                "old_name": job.old_name,
                "file": job.file,
                "breaking": job.breaking,
                "fields": [
                    {
                        "path": c.path,
                        "before": c.before,
                        "after": c.after,
                        "before_origin": _origin_json(c.before_origin),
                        "after_origin": _origin_json(c.after_origin),
                    }
                    for c in job.fields
                ],
                "consequences": [
                    {
                        "kind": c.kind,
                        "severity": c.severity,
                        "breaking": c.breaking,
                        "facts": dict(c.facts),
                        "message": _plain(sentence(c, lang)),
                    }
                    for c in _ordered(job.consequences)
                ],
            }
            for job in diff.jobs
        ],
        "items": [
            {
                "kind": item.kind,
                "status": item.status,
                "name": item.name,
                "fields": [
                    {"path": c.path, "before": c.before, "after": c.after} for c in item.fields
                ],
            }
            for item in diff.items
        ],
        "unchanged": list(diff.unchanged),
        "workflows": [flow_json(flow) for flow in diff.flows],
    }


def render(diff: RegistryDiff, old: str, new: str, fmt: str = "text", lang: str = "en") -> str:
    """``diff`` in the output format ``fmt`` (one of :data:`FORMATS`)."""
    if fmt == "markdown":
        return render_markdown(diff, old, new, lang)
    if fmt == "json":
        return json.dumps(diff_to_json(diff, old, new, lang), ensure_ascii=False, indent=2) + "\n"
    return render_text(diff, old, new, lang)
