"""A sheet cannot inject markup into the docs or a formula into a spreadsheet."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
import yaml

from jobdef.policy.registry import Registry
from jobdef.render.docs import render_docs
from jobdef.render.escape import (
    TSV_CELL_LIMIT,
    markdown_cell,
    markdown_inline,
    mermaid_label,
    tsv_cell,
)
from jobdef.render.explain import explain
from jobdef.render.tsv import job_tsv, overview_tsv
from jobdef.sheets.pipeline import load_registry

SCRIPT = "<script>alert(1)</script>"
FORMULA = '=HYPERLINK("http://evil.example/?q=1","click")'
LONG = "長い説明" * 10_000  # 40,000 characters, more than a spreadsheet cell holds
HOSTILE = {
    "title": f"a | b || c {SCRIPT}",
    "description": "line1\nline2\r\nline3 [click](javascript:alert(1)) **bold** `code` _emph_",
    "trigger": FORMULA,
    "owner": "@SUM(A1)",
    "rerun": "-2+3\tthen\tcall <img src=x onerror=alert(1)>",
}


def _write_hostile_sheets(folder: Path) -> None:
    job = {
        "apiVersion": "jobdef/v1",
        "kind": "Job",
        "name": "hostile_job",
        "handler": "jobdef.examples.mail:send_reservation_mail",
        "queue": "mail",
        **HOSTILE,
        "args": {
            "id": {"type": "integer", "description": f"ID | {SCRIPT}\nsecond line"},
            "note": {"type": "string", "description": LONG},
        },
        "max_attempts": 3,
        "backoff": {"strategy": "fixed", "initial": "10s", "jitter": "none"},
        "timeout": "30s",
        "errors": {
            "retry": [{"class": "ConnectionError", "description": "+cmd|' /C calc'!A0"}],
            "fatal": [{"class": "ValueError", "description": '"quoted\tstart'}],
            "default": "fatal",
        },
        "notify": {"channel": "ops-chat", "events": ["dead"]},
        "retention": {"done": "1d", "dead": "until_resolved"},
    }
    channel = {
        "apiVersion": "jobdef/v1",
        "kind": "Channel",
        "name": "ops-chat",
        "type": "log",
        "description": f"| {SCRIPT}",
    }
    (folder / "hostile.yaml").write_text(
        yaml.safe_dump_all([job, channel], allow_unicode=True), encoding="utf-8"
    )


@pytest.fixture
def hostile(tmp_path: Path) -> Registry:
    _write_hostile_sheets(tmp_path)
    return load_registry([tmp_path])


def _unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_hostile_values_cannot_break_markdown_tables_or_inject_html(
    hostile: Registry, lang: str
) -> None:
    pages = render_docs(hostile, lang)
    explained = explain(hostile.job("hostile_job"), hostile, "markdown", lang=lang)
    for text in [*pages.values(), explained]:
        assert "<script" not in text.lower()
        assert "<img" not in text.lower()
        assert "\t" not in text
        assert not re.search(r"(?<!\\)\[click", text), "a sheet link stayed a link"
        assert "**bold**" not in text
        assert "line2" not in [line[:5] for line in text.splitlines()]
        tables = [line for line in text.splitlines() if line.startswith("|")]
        for line in tables:
            assert line.endswith("|"), line
        # Each table keeps the column count of its header row.
        widths: list[int] = []
        for line in [*text.splitlines(), ""]:
            if line.startswith("|"):
                widths.append(_unescaped_pipes(line))
            elif widths:
                assert len(set(widths)) == 1, widths
                widths = []
    page = pages["hostile_job.md"]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "line1<br>line2<br>line3" in page
    assert LONG in page.replace("\\", "")  # long text is kept whole in Markdown


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_hostile_values_stay_in_their_cell_and_never_become_formulas(
    hostile: Registry, lang: str
) -> None:
    text = job_tsv(hostile.job("hostile_job"), hostile, lang)
    # Read it the way a spreadsheet reads pasted TSV (quotes honoured).
    rows = list(csv.reader(io.StringIO(text), dialect="excel-tab"))
    assert len(rows) == 14
    assert {len(row) for row in rows} == {3}
    assert len(text.splitlines()) == 14
    for row in rows:
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@")), cell
            assert len(cell) <= TSV_CELL_LIMIT
    values = {row[0]: row[2] for row in rows}
    trigger = values["起点" if lang == "ja" else "Trigger"]
    assert trigger == "'" + FORMULA
    assert values["再実行の手順" if lang == "ja" else "Re-run procedure"].startswith(
        "'-2+3 then call"
    )
    overview = list(csv.reader(io.StringIO(overview_tsv(hostile, lang)), dialect="excel-tab"))
    assert [len(row) for row in overview] == [13, 13]


def test_markdown_cell_escapes_pipes_html_newlines_and_inline_markup() -> None:
    assert markdown_cell("a|b") == "a\\|b"
    assert markdown_cell("<b>&") == "&lt;b&gt;&amp;"
    assert markdown_cell("one\ntwo\r\nthree") == "one<br>two<br>three"
    assert markdown_cell("[x](y) *z* `c` ~~s~~") == "\\[x\\](y) \\*z\\* \\`c\\` \\~\\~s\\~\\~"
    assert markdown_cell("send_reservation_mail") == "send_reservation_mail"
    assert markdown_cell("_emph_") == "\\_emph\\_"
    assert markdown_inline("title\nmore") == "title more"


def test_tsv_cell_neutralises_formulas_and_keeps_one_line() -> None:
    assert tsv_cell("=1+1") == "'=1+1"
    assert tsv_cell("＝1") == "'＝1"
    assert tsv_cell("@cmd") == "'@cmd"
    assert tsv_cell("a\tb\nc") == "a b c"
    assert tsv_cell('"quoted" rest') == '"""quoted"" rest"'
    assert tsv_cell("x" * (TSV_CELL_LIMIT + 10)) == "x" * (TSV_CELL_LIMIT - 1) + "…"
    assert tsv_cell("30秒") == "30秒"


def test_mermaid_labels_cannot_end_the_statement() -> None:
    assert mermaid_label('a: b; c # d "e" <f>\n[*] --> x') == "a b c d e f * -- x"
