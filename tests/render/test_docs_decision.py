"""The sync / async / batch decision answers of a sheet appear in its page and explanation."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from jobdef.policy.registry import Registry
from jobdef.render.docs import render_docs
from jobdef.render.explain import explain
from jobdef.sheets.pipeline import load_registry

SHEET = """\
apiVersion: jobdef/v1
kind: Job
name: sync_thumbnail
handler: jobdef.examples.images:resize_image
mode: async
max_attempts: 2
errors: {default: retry}
decision:
  result_needed_at_once: true
  done_within_seconds: true
  calls_external_systems: false
"""


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    (tmp_path / "job.yaml").write_text(SHEET, encoding="utf-8")
    return load_registry([tmp_path])


def test_decision_answers_are_listed_on_the_page(registry: Registry) -> None:
    page = render_docs(registry, "en")["sync_thumbnail.md"]
    section = page[page.index("## Decision") :]
    assert "| result_needed_at_once | yes |" in section
    assert "| done_within_seconds | yes |" in section
    assert "| calls_external_systems | no |" in section
    assert "| time_triggered | — |" in section
    ja = render_docs(registry, "ja")["sync_thumbnail.md"]
    assert "| result_needed_at_once | はい |" in ja
    assert "| decision.done_within_seconds | yes |" in page


@pytest.mark.skipif(
    importlib.util.find_spec("jobdef.policy.decision") is None,
    reason="the decision check (jobdef.policy.decision) is not part of this install",
)
def test_the_recommended_mode_is_shown_with_its_reason(registry: Registry) -> None:
    page = render_docs(registry, "en")["sync_thumbnail.md"]
    assert (
        "**Recommended mode**: sync, decided by done_within_seconds "
        "(the sheet says async: check it)"
    ) in page
    text = explain(registry.job("sync_thumbnail"), registry, "text")
    assert "Recommended mode: sync, decided by done_within_seconds" in text
