"""Both engines' query files read on their own: whole fragments, and each engine uses
every query of its file and no other (its own module and the shared verbs together)."""

from __future__ import annotations

import ast
import inspect
import re
from importlib import resources
from types import ModuleType

import pytest

from jobdef.backends import verbs
from jobdef.backends.postgres import engine as postgres
from jobdef.backends.sql import load_queries
from jobdef.backends.sqlite import engine as sqlite

ENGINES: dict[str, ModuleType] = {"sqlite": sqlite, "postgres": postgres}
_BLOCK = re.compile(r"^-- (name|fragment): ([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)
# The calls that take a query's name as a positional argument.
_TAKERS = {"_q", "_read", "_write_one", "_fenced_move", "_count", "_rowcount", "_finish"}
_TAKERS |= {"Statement"}
_STATEMENT = re.compile(r"^(SELECT|INSERT|UPDATE|DELETE|WITH|CREATE|SET)\b")


def _package(engine: str) -> str:
    return f"jobdef.backends.{engine}"


def _blocks(engine: str, kind: str) -> dict[str, str]:
    text = (resources.files(_package(engine)) / "queries.sql").read_text("utf-8")
    parts = _BLOCK.split(text)
    triples = zip(parts[1::3], parts[2::3], parts[3::3], strict=True)
    return {name: body for k, name, body in triples if k == kind}


def _code(sql: str) -> str:
    """``sql`` without comments and string literals."""
    return re.sub(r"'[^']*'", "''", re.sub(r"--[^\n]*", "", sql)).strip()


def _balanced(code: str) -> bool:
    depth = 0
    for char in code:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def queries_named_in(module: ModuleType) -> set[str]:
    """The query names ``module`` passes to the engine: ``Q["x"]``, ``self._q("x")``,
    ``Statement("x", ...)`` and the other helpers that take a name."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(inspect.getsource(module))):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == "Q"
            and isinstance(node.slice, ast.Constant)
        ):
            found.add(node.slice.value)
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in _TAKERS:
                found |= {a.value for a in node.args if isinstance(a, ast.Constant)}
    return found


@pytest.mark.parametrize("engine", ENGINES)
def test_every_fragment_is_whole_ctes_or_a_whole_statement(engine: str) -> None:
    fragments = _blocks(engine, "fragment")
    assert fragments
    for name, body in fragments.items():
        code = _code(body)
        assert _balanced(code), f"{engine} fragment {name} opens or closes half a parenthesis"
        separator = f"fragment {name} carries a separator; write `-- include: {name},` instead"
        assert not code.startswith(","), separator
        assert not code.endswith(","), separator
        if _STATEMENT.match(code):
            assert code.endswith(";"), f"{engine} fragment {name} is not a whole statement"
        else:
            assert re.match(r"^[a-z_]+ AS \(", code), f"{engine} fragment {name} is not a CTE"


@pytest.mark.parametrize("engine", ENGINES)
def test_every_query_is_balanced_once_its_fragments_are_in(engine: str) -> None:
    for name, sql in load_queries(_package(engine), "queries.sql").items():
        assert _balanced(_code(sql)), f"{engine} query {name} has unbalanced parentheses"


@pytest.mark.parametrize("engine", ENGINES)
def test_the_engine_uses_every_query_of_its_file_and_no_other(engine: str) -> None:
    used = queries_named_in(ENGINES[engine]) | queries_named_in(verbs)
    assert used == set(load_queries(_package(engine), "queries.sql"))
