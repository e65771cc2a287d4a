"""The PostgreSQL query file reads on its own: whole fragments, and no query unused or missing."""

from __future__ import annotations

import inspect
import re
from importlib import resources

from jobdef.backends.postgres import engine
from jobdef.backends.sql import load_queries

_BLOCK = re.compile(r"^-- (name|fragment): ([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)
# How the engine names a query: self._q("x"), and the helpers that take a name.
_USES = re.compile(r'(?:_q|_fetch|_fenced_move|_count|_rowcount)\(\s*"([a-z_][a-z0-9_]*)"')


def _blocks(kind: str) -> dict[str, str]:
    text = (resources.files("jobdef.backends.postgres") / "queries.sql").read_text("utf-8")
    parts = _BLOCK.split(text)
    triples = zip(parts[1::3], parts[2::3], parts[3::3], strict=True)
    return {name: body for k, name, body in triples if k == kind}


def _code(sql: str) -> str:
    """``sql`` without comments and string literals."""
    return re.sub(r"'[^']*'", "''", re.sub(r"--[^\n]*", "", sql)).strip()


def test_every_fragment_is_whole_ctes_never_half_a_parenthesis() -> None:
    fragments = _blocks("fragment")
    assert fragments
    for name, body in fragments.items():
        code = _code(body)
        depth = 0
        for char in code:
            depth += {"(": 1, ")": -1}.get(char, 0)
            assert depth >= 0, f"fragment {name} closes a parenthesis it did not open"
        assert depth == 0, f"fragment {name} leaves a parenthesis open"
        separator = f"fragment {name} carries a separator; write `-- include: {name},` instead"
        assert not code.startswith(","), separator
        assert not code.endswith(","), separator
        assert re.match(r"^[a-z_]+ AS \(", code), f"fragment {name} does not start a CTE"


def test_the_engine_uses_every_query_of_its_file_and_no_other() -> None:
    source = inspect.getsource(engine)
    used = set(_USES.findall(source))
    assert used == set(load_queries("jobdef.backends.postgres", "queries.sql"))
