"""``jobdef tsv``: the classic job definition sheet as tab-separated text for spreadsheets.

Two shapes: one job as the three-column sheet (item, what to write, value),
and an overview with one row per job and one column per item. Every cell goes
through :func:`~jobdef.render.escape.tsv_cell`, so a value can neither break the
grid nor become a formula. Lines end with ``\\n``; ``bom=True`` prefixes the
UTF-8 byte order mark that some spreadsheet programs need to detect UTF-8.
"""

from __future__ import annotations

from collections.abc import Sequence

from jobdef.policy.model import JobPolicy
from jobdef.policy.registry import Registry
from jobdef.policy.workflow import WorkflowPolicy
from jobdef.render import describe
from jobdef.render.escape import tsv_row
from jobdef.render.flow import flow_context
from jobdef.render.labels import translate

BOM = "\ufeff"


def sheet_header(lang: str = "en") -> tuple[str, str, str]:
    """``項目 / 記入内容 / 内容`` (``Item / What to write / Value``).

    The value column is named ``内容`` ("content"), not the classic template's
    ``記入例`` ("example"): the table describes a real job, not an example.
    """
    return (translate("Item", lang), translate("What to write", lang), translate("Value", lang))


def _lines(rows: Sequence[list[str] | tuple[str, ...]], bom: bool) -> str:
    text = "".join(tsv_row(row) + "\n" for row in rows)
    return BOM + text if bom else text


def job_tsv(job: JobPolicy, registry: Registry, lang: str = "en", *, bom: bool = False) -> str:
    """One job as a 14-line table: the header, then the 13 items of the classic sheet (and
    a 15th line, the result, when the job declares a ``result:``)."""
    rows = [sheet_header(lang), *describe.sheet_rows(job, lang, registry.channels)]
    return _lines(rows, bom)


def overview_tsv(registry: Registry, lang: str = "en", *, bom: bool = False) -> str:
    """Every job, one row each (sorted by name), one column per item of the classic sheet
    (and a result column when some job declares a ``result:``)."""
    jobs = [registry.jobs[name] for name in sorted(registry.jobs)]
    items = describe.overview_items(jobs)
    header = [item.label(lang) for item in items]
    rows = [
        [describe.item_value(job, item.key, lang, registry.channels) for item in items]
        for job in jobs
    ]
    return _lines([header, *rows], bom)


def flow_tsv(
    flow: WorkflowPolicy, registry: Registry, lang: str = "en", *, bom: bool = False
) -> str:
    """A workflow's steps, one row each in the flow's order: the step, its job, what it waits
    for, what its failure does, its args, and its place on the flow's worst-case timeline."""
    context = flow_context(flow, registry, lang)
    header = [
        translate(label, lang)
        for label in (
            "Step",
            "Job",
            "Waits for",
            "If it fails",
            "Args",
            "Latest start",
            "Step worst case",
            "Latest end",
            "Critical path",
        )
    ]
    rows = [
        [
            row.name,
            row.job,
            row.waits,
            row.on_failure,
            row.args,
            row.latest_start,
            row.worst,
            row.latest_end,
            describe.yes_no(row.critical, lang),
        ]
        for row in context["rows"]
    ]
    return _lines([header, *rows], bom)
