"""Named SQL blocks: each engine keeps its statements in one ``.sql`` file beside it.

A block starts with ``-- name: <query_name>``; the comment lines right after
it describe the statement, and the block runs until the next ``-- name:``.
Runtime code refers to statements only by name, so the SQL reads on its own
and both engines can use the same names for the same verbs.
"""

from __future__ import annotations

import re
from importlib import resources

_NAME = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


def parse_queries(text: str) -> dict[str, str]:
    """Split ``text`` into ``{name: statement}``; a repeated name is an error."""
    queries: dict[str, str] = {}
    matches = list(_NAME.finditer(text))
    for match, following in zip(matches, [*matches[1:], None], strict=True):
        end = following.start() if following else len(text)
        body = text[match.end() : end].strip()
        name = match.group(1)
        if name in queries:
            raise ValueError(f"query {name!r} is defined twice")
        queries[name] = body
    return queries


def load_queries(package: str, filename: str) -> dict[str, str]:
    """The named blocks of ``filename``, a resource of ``package``."""
    return parse_queries(resources.files(package).joinpath(filename).read_text("utf-8"))
