"""docs/sheet-reference.md is generated from the schema: it must be what the generator
prints (regenerate with `python -m jobdef.sheets.reference > docs/sheet-reference.md`),
and it covers every field of every kind."""

from __future__ import annotations

from pathlib import Path

from jobdef.sheets.reference import KINDS, RULES_BY_KIND, field_paths, reference_markdown
from jobdef.sheets.rules import all_rules

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "sheet-reference.md"


def test_the_page_is_generated_from_the_current_schema() -> None:
    assert PAGE.read_text("utf-8") == reference_markdown(), (
        "docs/sheet-reference.md is stale: python -m jobdef.sheets.reference "
        "> docs/sheet-reference.md"
    )


def test_every_field_of_every_kind_has_its_section() -> None:
    page = reference_markdown()
    paths = field_paths()
    assert set(paths) == set(KINDS)
    for kind, fields in paths.items():
        for path in fields:
            assert f"### {kind} `{path}`\n" in page, (kind, path)
    for field in ("priority", "trigger", "dead_letter", "dead_letter.target", "limits.args_bytes"):
        assert field in paths["Job"]
    section = page[page.index("### Job `max_attempts`") :]
    section = section[: section.index("\n### ")]
    assert "- Type: integer, 1 to 1000" in section
    assert "- Default: 1 (no retry)" in section
    assert "[JD221](rules.md#jd221)" in section
    assert "- Example: `max_attempts: 1`" in section


def test_the_rules_named_exist_and_the_fields_they_check_exist() -> None:
    known = {rule.id for rule in all_rules()}
    paths = field_paths()
    for kind, table in RULES_BY_KIND.items():
        for field, rules in table.items():
            assert set(rules) <= known, (kind, field)
            assert field in paths[kind], (kind, field)
