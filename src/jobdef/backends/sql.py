"""Named SQL blocks: each engine keeps its queries in one ``.sql`` file beside it.

A block starts with a ``-- name: claim_jobs`` line; the comment lines right after
it describe the query, and everything up to the next ``-- name:`` line is its text.
Every engine uses the same names, so the engines can be read side by side.

A ``-- fragment: NAME`` block is not a query but a piece of one that several
queries share, always whole: one or more CTEs, or a whole statement. A line
``-- include: NAME`` inside a query is replaced by it, so shared SQL is written
once; ``-- include: NAME,`` adds the comma that separates a CTE from the next.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any, NamedTuple

_BLOCK = re.compile(r"^-- (name|fragment): ([a-z_][a-z0-9_]*)\s*$")
_INCLUDE = re.compile(r"^\s*-- include: ([a-z_][a-z0-9_]*)(,?)\s*$", re.MULTILINE)


class Statement(NamedTuple):
    """One named query of the engine's ``queries.sql`` and its parameters."""

    name: str
    params: Mapping[str, Any]


def parse_queries(text: str, source: str = "<sql>") -> dict[str, str]:
    """Split ``text`` into ``{name: sql}``; a duplicate or empty block is an error."""
    blocks: dict[str, dict[str, str]] = {"name": {}, "fragment": {}}
    kind, name = "name", None
    lines: list[str] = []

    def close() -> None:
        if name is None:
            return
        body = "\n".join(lines).strip()
        if not body:
            raise ValueError(f"{source}: {kind} {name!r} has no SQL")
        blocks[kind][name] = body

    for line in text.splitlines():
        match = _BLOCK.match(line)
        if match is None:
            describes = line.startswith("--") and not lines and not _INCLUDE.match(line)
            if name is not None and not describes:
                lines.append(line)
            continue
        close()
        kind, name, lines = match.group(1), match.group(2), []
        if name in blocks[kind]:
            raise ValueError(f"{source}: {kind} {name!r} is defined twice")
    close()
    fragments = blocks["fragment"]

    def include(match: re.Match[str]) -> str:
        try:
            return fragments[match.group(1)] + match.group(2)
        except KeyError:
            raise ValueError(f"{source}: no fragment named {match.group(1)!r}") from None

    return {query: _INCLUDE.sub(include, body) for query, body in blocks["name"].items()}


@cache
def load_queries(package: str, filename: str) -> dict[str, str]:
    """The named queries of ``filename`` shipped in ``package`` (read once per process)."""
    text = (resources.files(package) / filename).read_text("utf-8")
    return parse_queries(text, f"{package}/{filename}")


def migration_files(package: str) -> list[tuple[int, str, str]]:
    """``(version, filename, sql)`` of the numbered ``NNNN_*.sql`` files in ``package``.

    They are numbered one after another from the first. An engine that came later
    starts at the version it joined (SQLite at 0004), its first file holding the
    whole schema at that version, so one number names one step on every engine."""
    found = []
    for entry in resources.files(package).iterdir():
        match = re.match(r"^(\d{4})_[a-z0-9_]+\.sql$", entry.name)
        if match:
            found.append((int(match.group(1)), entry.name, entry.read_text("utf-8")))
    found.sort()
    versions = [version for version, _, _ in found]
    first = versions[0] if versions else 1
    if versions != list(range(first, first + len(versions))):
        raise ValueError(
            f"{package}: migrations must be numbered one after another, got {versions}"
        )
    return found
