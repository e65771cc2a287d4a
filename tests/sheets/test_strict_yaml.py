"""The strict loader: YAML 1.2 typing, positions, and what it refuses without expanding."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from jobdef.sheets.strict_yaml import MAX_BYTES, parse_text, read_file, resolve_plain

EXAMPLES = Path(__file__).resolve().parents[2] / "jobdefs"


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


# -- The loader names the real cause, and its answer does not depend on libyaml.


def read(text: str, fast: bool) -> tuple[list[Any], list[tuple[str, int, int]]]:
    """Documents and findings, with libyaml when PyYAML has it (``fast``) or without."""
    docs, diagnostics = (
        parse_text(text, "f.yaml") if fast else parse_text(text, "f.yaml", fast=False)
    )
    return [doc.data for doc in docs], [(d.code, d.line, d.column) for d in diagnostics]


BOTH = pytest.mark.parametrize("fast", [True, False], ids=["libyaml", "pure-python"])


@BOTH
def test_a_tab_inside_a_block_of_text_does_not_hide_the_real_error(fast: bool) -> None:
    text = (
        "name: sync\n"
        "description: |\n"
        "  Columns:\n"
        "  \tid, total\n"  # a tab in a block of text is text, even at the line's start
        "args: {order_id: {type: integer}\n"  # the real error: { not closed
        "handler: app.jobs:sync\n"
    )
    _, findings = read(text, fast)
    assert findings == [("JD001", 6, 1)]
    _, diagnostics = parse_text(text, "f.yaml")
    assert "the { at line 5, column 7 closed?" in diagnostics[0].message


@BOTH
@pytest.mark.parametrize(
    ("text", "where", "says"),
    [
        ("a:\n\tb: 1\n", (2, 1), "tab used for indentation"),
        ("a:\tb\n", (1, 3), "tab used as a separator"),
        ("a: b\t\nc: d\n", (1, 5), "tab at the end of a line"),
    ],
)
def test_a_tab_is_blamed_where_it_stops_the_parser(
    fast: bool, text: str, where: tuple[int, int], says: str
) -> None:
    _, findings = read(text, fast)
    assert findings == [("JD004", *where)]
    _, diagnostics = parse_text(text, "f.yaml", fast=fast)
    assert says in diagnostics[0].message


@BOTH
@pytest.mark.parametrize(
    ("text", "data", "where"),
    [
        ("{ ?foo: bar }\n", [{"foo": "bar"}], (1, 3)),  # YAML: the key is "?foo"
        ("a: [?x]\n", [{"a": [{"x": None}]}], (1, 5)),  # YAML: the text "?x"
        ('key: "value"# comment\n', [{"key": "value"}], (1, 13)),  # YAML: an error
        ("a: [b, c]#c\n", [{"a": ["b", "c"]}], (1, 10)),
        ("a: [b,#c\n  d]\n", [{"a": ["b", "d"]}], (1, 7)),
        ("a: [-]\n", [{"a": ["-"]}], (1, 5)),
        ("%YAML 1.2\n---\na: 1\n", [{"a": 1}], (1, 1)),
        ("%FOO bar\n---\na: 1\n", [{"a": 1}], (1, 1)),
        ("args: {\n  id: 1\n}\n", [{"args": {"id": 1}}], (3, 1)),  # } not indented
        ('title: "a\nb"\n', [{"title": "a b"}], (2, 1)),
    ],
)
def test_what_yaml_libraries_misread_is_refused_with_both_parsers(
    fast: bool, text: str, data: list[Any], where: tuple[int, int]
) -> None:
    assert read(text, fast) == (data, [("JD014", *where)])


@BOTH
@pytest.mark.parametrize(
    "text",
    [
        "a: [? x]\n",  # an explicit key, written as YAML says
        'a: ["?x", "-"]\n',
        "a: [b, c]  # c\n",
        'key: "value"  # comment\n',
        "a: a?b\n",
        "a: |\n  %x\n",
        "b: [x-y, -1]\n",
        "args: {\n  id: 1\n  }\n",
        'title: "a\n  b"\n',
        "a: ['it''s,#1', \"x\\\",#\", b,  # c,#d\n  e]\n",
        "a: [x,  # note\n# a comment line may start anywhere\n  z]\n",
    ],
)
def test_the_same_text_written_as_yaml_says_is_accepted(fast: bool, text: str) -> None:
    assert read(text, fast)[1] == []


@pytest.mark.parametrize(
    "text",
    [
        "a: b\t\n",  # libyaml takes a trailing tab, PyYAML's parser refuses it
        "seq:\t\n - a\n",
        "- [a?string]\n",  # libyaml reads a?string, PyYAML's parser stops at ?
        "{\n  foo : !!str,\n  !!str : bar,\n}\n",  # PyYAML's parser reads the tag !!str,
        "block: ># comment\n  scalar\n",  # libyaml takes the glued comment
        "%YAML 1.1#...\n---\n",
        "%YAM 1.1\n---\n",  # libyaml refuses an unknown directive, PyYAML's parser skips it
        '{\n"adjacent":value,\n"empty":\n}\n',  # the two place the empty value apart
    ],
)
def test_where_the_two_parsers_differ_the_loader_does_not(text: str) -> None:
    docs, findings = parse_text(text, "f.yaml")
    docs_py, findings_py = parse_text(text, "f.yaml", fast=False)
    assert [(d.data, d.positions) for d in docs] == [(d.data, d.positions) for d in docs_py]
    assert [(f.code, f.line, f.column, f.message) for f in findings] == [
        (f.code, f.line, f.column, f.message) for f in findings_py
    ]


def test_an_ordinary_sheet_is_read_by_libyaml_when_pyyaml_has_it() -> None:
    import yaml

    from jobdef.sheets import strict_yaml

    if not getattr(yaml, "__with_libyaml__", False):
        pytest.skip("PyYAML has no libyaml here")
    sheet = (EXAMPLES / "send_reservation_mail.yaml").read_text(encoding="utf-8")
    assert strict_yaml._fast_read(sheet, "sheet.yaml") is not None  # the 7x faster path
    assert strict_yaml._fast_read("a: [?x]\n", "f.yaml") is None  # the reference reads it
