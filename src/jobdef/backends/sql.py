"""Named SQL blocks: each engine keeps its queries in one ``.sql`` file beside it.

A block starts with a ``-- name: claim_jobs`` line; the comment lines right after
it describe the query, and everything up to the next ``-- name:`` line is its text.
Every engine uses the same names, so the engines can be read side by side.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_NAME = re.compile(r"^-- name: ([a-z_][a-z0-9_]*)\s*$")


def parse_queries(text: str, source: str = "<sql>") -> dict[str, str]:
    """Split ``text`` into ``{name: sql}``; a duplicate or empty block is an error."""
    queries: dict[str, str] = {}
    name: str | None = None
    lines: list[str] = []

    def close() -> None:
        if name is None:
            return
        body = "\n".join(lines).strip()
        if not body:
            raise ValueError(f"{source}: query {name!r} has no SQL")
        queries[name] = body

    for line in text.splitlines():
        match = _NAME.match(line)
        if match is None:
            if name is not None and not (line.startswith("--") and not lines):
                lines.append(line)
            continue
        close()
        name, lines = match.group(1), []
        if name in queries:
            raise ValueError(f"{source}: query {name!r} is defined twice")
    close()
    return queries


@cache
def load_queries(package: str, filename: str) -> dict[str, str]:
    """The named queries of ``filename`` shipped in ``package`` (read once per process)."""
    text = (resources.files(package) / filename).read_text("utf-8")
    return parse_queries(text, f"{package}/{filename}")


def migration_files(package: str) -> list[tuple[int, str, str]]:
    """``(version, filename, sql)`` of the numbered ``NNNN_*.sql`` files in ``package``."""
    found = []
    for entry in resources.files(package).iterdir():
        match = re.match(r"^(\d{4})_[a-z0-9_]+\.sql$", entry.name)
        if match:
            found.append((int(match.group(1)), entry.name, entry.read_text("utf-8")))
    found.sort()
    versions = [version for version, _, _ in found]
    if versions != list(range(1, len(versions) + 1)):
        raise ValueError(f"{package}: migrations must be numbered 0001, 0002, ... got {versions}")
    return found
