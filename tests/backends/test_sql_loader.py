"""The named-SQL loader that every engine's query file goes through."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobdef.backends.sql import migration_files, parse_queries


def test_blocks_are_split_by_name_and_their_description_is_dropped():
    text = "-- header\n-- name: a\n-- what a does\nSELECT 1;\n\n-- name: b\nSELECT\n  2;\n"
    assert parse_queries(text) == {"a": "SELECT 1;", "b": "SELECT\n  2;"}


def test_a_name_defined_twice_is_an_error():
    with pytest.raises(ValueError, match="'a' is defined twice"):
        parse_queries("-- name: a\nSELECT 1;\n-- name: a\nSELECT 2;\n")


def test_an_empty_block_is_an_error():
    with pytest.raises(ValueError, match="'a' has no SQL"):
        parse_queries("-- name: a\n-- only a comment\n-- name: b\nSELECT 1;\n")


def test_a_fragment_is_written_once_and_included_where_queries_say() -> None:
    text = (
        "-- fragment: done_ctes\n-- shared\nfinished AS (SELECT 1 AS id)\n\n"
        "-- name: one\nWITH\n-- include: done_ctes\nSELECT id FROM finished;\n\n"
        "-- name: two\nWITH\n-- include: done_ctes\n, more AS (SELECT 2)\nSELECT 1;\n"
    )
    queries = parse_queries(text)
    assert set(queries) == {"one", "two"}  # a fragment is not a query
    assert queries["one"] == "WITH\nfinished AS (SELECT 1 AS id)\nSELECT id FROM finished;"
    assert "finished AS (SELECT 1 AS id)\n, more AS" in queries["two"]


def test_an_include_with_a_comma_separates_the_fragment_from_the_next_cte() -> None:
    text = (
        "-- fragment: first\nfirst AS (SELECT 1 AS id)\n\n"
        "-- name: one\nWITH\n-- include: first,\nsecond AS (SELECT id FROM first)\n"
        "SELECT id FROM second;\n"
    )
    assert parse_queries(text)["one"] == (
        "WITH\nfirst AS (SELECT 1 AS id),\nsecond AS (SELECT id FROM first)\nSELECT id FROM second;"
    )


def test_including_an_unknown_fragment_names_it() -> None:
    with pytest.raises(ValueError, match="no fragment named 'missing'"):
        parse_queries("-- name: one\nWITH\n-- include: missing\nSELECT 1;\n")


def _migrations_package(root: Path, name: str, numbers: list[int]) -> str:
    package = root / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    for number in numbers:
        (package / f"{number:04d}_step.sql").write_text(f"SELECT {number};\n")
    return name


def test_migrations_are_numbered_one_after_another_from_the_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    late = _migrations_package(tmp_path, "late_engine_migrations", [4, 5, 6])
    assert [number for number, _, _ in migration_files(late)] == [4, 5, 6]
    gap = _migrations_package(tmp_path, "gap_engine_migrations", [1, 2, 4])
    with pytest.raises(ValueError, match=r"numbered one after another, got \[1, 2, 4\]"):
        migration_files(gap)
