"""The named-SQL loader that every engine's query file goes through."""

from __future__ import annotations

import pytest

from jobdef.backends.sql import load_queries, parse_queries


def test_blocks_are_split_by_name_and_their_description_is_dropped():
    text = "-- header\n-- name: a\n-- what a does\nSELECT 1;\n\n-- name: b\nSELECT\n  2;\n"
    assert parse_queries(text) == {"a": "SELECT 1;", "b": "SELECT\n  2;"}


def test_a_name_defined_twice_is_an_error():
    with pytest.raises(ValueError, match="'a' is defined twice"):
        parse_queries("-- name: a\nSELECT 1;\n-- name: a\nSELECT 2;\n")


def test_an_empty_block_is_an_error():
    with pytest.raises(ValueError, match="'a' has no SQL"):
        parse_queries("-- name: a\n-- only a comment\n-- name: b\nSELECT 1;\n")


def test_the_sqlite_file_defines_every_query_the_engine_uses():
    import inspect
    import re

    from jobdef.backends import sqlite

    used = set(re.findall(r'Q\["([a-z_]+)"\]', inspect.getsource(sqlite)))
    used |= set(re.findall(r'_read\("([a-z_]+)"', inspect.getsource(sqlite)))
    used |= set(re.findall(r'_finish\(\s*conn,\s*"([a-z_]+)"', inspect.getsource(sqlite)))
    assert used <= set(load_queries("jobdef.backends", "sqlite.sql"))
