"""The strict loader: YAML 1.2 typing, positions, and what it refuses without expanding."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from jobdef.sheets.strict_yaml import MAX_BYTES, parse_text, read_file, resolve_plain


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("on", "on"),
        ("yes", "yes"),
        ("010", 10),
        ("0o10", 8),
        ("0x1F", 31),
        ("1:30", "1:30"),
        ("2026-01-01", "2026-01-01"),
        ("true", True),
        ("False", False),
        ("~", None),
        ("", None),
        ("1.5e3", 1500.0),
        ("-.inf", float("-inf")),
        ("1_000", "1_000"),
    ],
)
def test_plain_scalars_get_yaml_1_2_core_types(text: str, value: object) -> None:
    assert resolve_plain(text) == value
    assert type(resolve_plain(text)) is type(value)


def test_every_node_has_its_line_and_column() -> None:
    docs, diagnostics = parse_text("a: 1\nb:\n  c: [u, v]\n---\nd: e\n", "f.yaml")
    assert diagnostics == []
    assert [doc.data for doc in docs] == [{"a": 1, "b": {"c": ["u", "v"]}}, {"d": "e"}]
    assert docs[0].positions[("b", "c", 1)] == (3, 10)
    assert docs[0].key_positions[("b", "c")] == (3, 3)
    assert docs[1].positions[("d",)] == (5, 4)


def test_an_alias_bomb_is_refused_in_milliseconds_without_expansion() -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for parent, child in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{child}: &{child} [" + ",".join([f"*{parent}"] * 9) + "]")
    bomb = "\n".join(lines) + "\n"
    assert len(bomb) < 1100
    started = time.perf_counter()
    docs, diagnostics = parse_text(bomb, "bomb.yaml")
    elapsed = time.perf_counter() - started
    assert {d.code for d in diagnostics} == {"JD006"}
    assert len(diagnostics) == 2  # one for the anchors, one for the aliases, each counted
    assert docs[0].data["i"] == [None] * 9  # aliases are never resolved
    assert elapsed < 1.0  # generous bound for a busy machine; expansion would take forever


def test_a_file_over_the_size_limit_is_refused_before_parsing(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("a: " + "x" * MAX_BYTES + "\n", encoding="utf-8")
    loaded = read_file(big, "big.yaml")
    assert loaded.documents == []
    assert [(d.code, d.line) for d in loaded.diagnostics] == [("JD003", 1)]
    assert "1 MiB" in loaded.diagnostics[0].message


def test_a_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbfa: 1\n")
    loaded = read_file(path)
    assert loaded.diagnostics == []
    assert loaded.documents[0].data == {"a": 1}


def test_control_characters_are_reported_at_their_position() -> None:
    _, diagnostics = parse_text("a: 1\nb: x\x07y\n", "f.yaml")
    assert [(d.code, d.line, d.column) for d in diagnostics] == [("JD002", 2, 5)]


def test_a_syntax_error_keeps_the_documents_before_it() -> None:
    docs, diagnostics = parse_text("a: 1\n---\nb: [\n", "f.yaml")
    assert [doc.data for doc in docs] == [{"a": 1}]
    assert [d.code for d in diagnostics] == ["JD001"]
