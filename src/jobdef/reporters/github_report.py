"""GitHub Actions: workflow annotations, and a step summary table that holds every finding.

GitHub shows at most 10 error and 10 warning annotations per step, so the
summary table (written when ``GITHUB_STEP_SUMMARY`` is set) is where the full
list lives.
"""

from __future__ import annotations

from jobdef.render.escape import visible
from jobdef.reporters import Report


def _data(text: str) -> str:
    """Escaped as workflow commands want; what :func:`visible` then escapes is what else
    a log viewer would act on (ANSI, bidi)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def render(report: Report) -> str:
    out = []
    for d in report.diagnostics:
        level = "error" if d.severity == "error" else "warning"
        title = f"{d.code} {d.rule}".strip()
        file = visible(_property(report.path(d.file)))
        out.append(
            f"::{level} file={file},line={d.line},col={d.column},"
            f"title={_property(title)}::{visible(_data(d.message))}"
        )
    out.append(report.summary())
    return "\n".join(out) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def summary(report: Report) -> str:
    """Markdown for ``$GITHUB_STEP_SUMMARY``: a heading, the counts, one row per finding."""
    lines = ["## jobdef validate", "", report.summary(), ""]
    if report.diagnostics:
        lines += ["| Severity | Rule | Location | Message |", "| --- | --- | --- | --- |"]
        for d in report.diagnostics:
            lines.append(
                f"| {d.severity} | {d.code} | `{_cell(report.location(d.file, d.line, d.column))}` "
                f"| {_cell(visible(d.message))} |"
            )
        lines.append("")
    return "\n".join(lines) + "\n"
