"""Control characters and bidi overrides in sheet text are shown escaped in docs and TSV.

A title holding U+202E (right-to-left override) would show "fdp.exe" as
"exe.pdf" in a rendered page or a spreadsheet, and an ANSI escape would act on
the terminal of whoever reads the file with cat: both are written as visible
escapes (``\\u202e``, ``\\x1b``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from jobdef.policy.registry import Registry
from jobdef.render.docs import render_docs
from jobdef.render.escape import markdown_cell, markdown_inline, tsv_cell, visible
from jobdef.render.tsv import job_tsv, overview_tsv
from jobdef.sheets.pipeline import load_registry

RLO = "\u202e"
ESC = "\x1b"
RAW = (RLO, ESC, "\x85", "\u2066")


@pytest.fixture
def sheets(tmp_path: Path) -> Registry:
    job = {
        "apiVersion": "jobdef/v1",
        "kind": "Job",
        "name": "controls_job",
        "handler": "jobdef.examples.mail:send_reservation_mail",
        "queue": "mail",
        "title": f"Invoice {RLO}fdp.exe",
        "description": f"red {ESC}[31malert{ESC}[0m and \u2066isolate",
        "owner": "ops\x85team",
        "args": {"id": {"type": "integer", "description": f"id {RLO}x"}},
        "max_attempts": 3,
        "backoff": {"strategy": "fixed", "initial": "10s", "jitter": "none"},
        "timeout": "30s",
        "errors": {"retry": [{"class": "ConnectionError"}], "default": "fatal"},
        "retention": {"done": "1d", "dead": "until_resolved"},
    }
    (tmp_path / "controls.yaml").write_text(
        yaml.safe_dump(job, allow_unicode=True), encoding="utf-8"
    )
    return load_registry([tmp_path])


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_docs_and_tsv_show_control_and_bidi_characters_escaped(sheets: Registry, lang: str) -> None:
    job = sheets.job("controls_job")
    pages = render_docs(sheets, lang)
    for name, text in [
        *pages.items(),
        ("job.tsv", job_tsv(job, sheets, lang)),
        ("overview.tsv", overview_tsv(sheets, lang)),
    ]:
        assert not any(char in text for char in RAW), name
    page = pages["controls_job.md"]
    tsv = job_tsv(job, sheets, lang)
    assert "u202efdp.exe" in page
    assert "u202efdp.exe" in tsv
    assert "x1b[31malert" in page.replace("\\[", "[")


def test_the_cell_escapers_show_controls_as_escapes() -> None:
    assert visible(f"a{ESC}[0m{RLO}b\x85\x00") == "a\\x1b[0m\\u202eb\\x85\\x00"
    assert visible("日本語 plain text") == "日本語 plain text"
    assert RLO not in markdown_cell(f"x{RLO}y") + markdown_inline(f"x{RLO}y")
    assert tsv_cell(f"{RLO}=1") == "\\u202e=1"
    assert markdown_cell("a\nb") == "a<br>b"  # line breaks keep their meaning in a cell
