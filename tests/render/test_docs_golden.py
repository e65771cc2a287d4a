"""Golden files: every example sheet rendered in both languages, compared byte for byte.

Regenerate after an intended change (e.g. when origins gain real line numbers)
with ``make golden``, i.e. ``JOBDEF_UPDATE_GOLDEN=1 python3 -m pytest
tests/render/test_docs_golden.py`` followed by ``jobdef docs``; review the diff.
"""

from __future__ import annotations

import os
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from jobdef.render.docs import RunsAfter, render_docs
from jobdef.render.explain import explain
from jobdef.render.flow import explain_flow
from jobdef.render.tsv import flow_tsv, job_tsv, overview_tsv
from jobdef.sheets.pipeline import load_registry

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("JOBDEF_UPDATE_GOLDEN") == "1"
LANGS = ("en", "ja")


# A fixed "now" for the next-runs list of batch jobs, so the golden text is stable.
GOLDEN_NOW = datetime(2026, 3, 7, 12, 0, tzinfo=UTC).timestamp()
GOLDEN_RUNS_AFTER = RunsAfter(date(2026, 3, 7))


def rendered() -> dict[str, str]:
    """Every output of the example sheets, by its path under golden/."""
    registry = load_registry([REPO / "jobdefs"])
    out: dict[str, str] = {}
    for lang in LANGS:
        pages = render_docs(registry, lang, base=REPO, runs_after=GOLDEN_RUNS_AFTER)
        for page, text in pages.items():
            out[f"{lang}/{page}"] = text
        for job in registry:
            out[f"{lang}/{job.name}.tsv"] = job_tsv(job, registry, lang)
            out[f"{lang}/explain/{job.name}.txt"] = explain(
                job, registry, "text", lang=lang, base=REPO, now=GOLDEN_NOW
            )
        for name, flow in registry.workflows.items():
            out[f"{lang}/{name}.tsv"] = flow_tsv(flow, registry, lang)
            out[f"{lang}/explain/{name}.txt"] = explain_flow(
                flow, registry, "text", lang=lang, base=REPO
            )
        out[f"{lang}/overview.tsv"] = overview_tsv(registry, lang)
    return out


OUTPUTS = rendered()


def _golden_files() -> set[str]:
    return {p.relative_to(GOLDEN).as_posix() for p in GOLDEN.rglob("*") if p.is_file()}


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_output_matches_golden_file(name: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(OUTPUTS[name].encode("utf-8"))
    assert path.exists(), f"missing golden file {name}; run `make golden`"
    assert path.read_bytes().decode("utf-8") == OUTPUTS[name]


def test_every_example_sheet_has_golden_files_in_both_languages() -> None:
    registry = load_registry([REPO / "jobdefs"])
    expected = {"index.md", "overview.tsv"}
    for job in registry:
        expected |= {f"{job.name}.md", f"{job.name}.tsv", f"explain/{job.name}.txt"}
    for name in registry.workflows:
        expected |= {f"{name}.md", f"{name}.tsv", f"explain/{name}.txt"}
    assert len(registry) == 8
    assert list(registry.workflows) == ["order_placed"]
    assert _golden_files() == {f"{lang}/{name}" for lang in LANGS for name in expected}
