"""Only ``jobdef.backends`` knows the database engines: no other module names one.

The rest of jobdef reaches a store through the engine's driver, found by the
URL's scheme (:mod:`jobdef.backends.engines`), so adding an engine touches its
package, its entry in the registration and its tests, nothing else. Every module
is read with :mod:`ast`, never imported. Outside ``src/jobdef/backends/`` a module
may not

1. import an engine's package (any subpackage of ``jobdef.backends``), at the top
   or inside a function, nor the DB-API module of a registered engine
   (``sqlite3``, ``psycopg``);
2. hold a string that is, on its own, an engine's name, URL scheme or DB-API
   module, in any case (``"sqlite"``, ``"postgres"``): what a branch on the engine
   compares against;
3. hold a string that starts with an engine's URL scheme and a colon
   (``"sqlite:///"``, the start of an f-string too): a URL it builds, parses or
   compares;
4. define or use a name that holds one of those words (``SQLiteReader``,
   ``_postgres_url``, ``sqlite3.connect``).

Free to name engines, since they speak to a reader and decide nothing:
docstrings, comments, and text inside a longer string (a help line or a message:
"write sqlite:///jobdef.db or postgresql://host/db"). SQL files live in the
engines' packages only. The words come from the registration, so a new engine is
held to this as soon as it is registered.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from jobdef.backends.engines import ENGINES

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "jobdef"
BACKENDS = PACKAGE / "backends"

# Modules outside jobdef.backends that may name an engine, each with why. The test
# below fails once one no longer does, so an entry leaves with the reason it had.
ALLOWED: dict[str, str] = {
    "jobdef.project": (
        "the default database URL, sqlite:///jobdef.db: a setting written as the user "
        "writes it, which [tool.jobdef] database, JOBDEF_DATABASE_URL and --db override; "
        "the one engine jobdef chooses for a user, in the layer below backends"
    ),
    "jobdef.examples.points": (
        "an example handler, written as an application writes one: it keeps its own data "
        "in a SQLite file through sqlite3 and guards its work with first_run() on that "
        "connection (the application's database, not the job store)"
    ),
    "jobdef.examples.orders": (
        "the example workflow's handlers, written as an application writes them: charges "
        "and ledger entries live in a SQLite file of their own through sqlite3, each "
        "guarded with first_run() on that connection (the application's database)"
    ),
    "jobdef.examples.demo": (
        "the demo is an application of jobdef: it runs on a SQLite file of its own, "
        "shows its URL, and reads the outbox table with sqlite3 to show messages already "
        "delivered, which no verb lists"
    ),
}


def engine_words() -> tuple[frozenset[str], frozenset[str]]:
    """(every word that names an engine, the URL schemes), from the registration: the
    engine packages' names, the schemes and the DB-API modules."""
    schemes = frozenset(scheme for engine in ENGINES for scheme in engine.schemes)
    packages = {engine.driver.split(".")[2] for engine in ENGINES}
    modules = {module for engine in ENGINES for module in engine.connections}
    return frozenset({*schemes, *packages, *modules}), schemes


WORDS, SCHEMES = engine_words()


@dataclass(frozen=True)
class Finding:
    module: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.module}:{self.line}: {self.what}"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _docstrings(tree: ast.AST) -> set[int]:
    """The strings that stand alone as statements: docstrings, of a module, a class, a
    function or an attribute."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }


def _engine_import(name: str) -> bool:
    """Whether importing ``name`` reaches into an engine: its package, or its DB-API module."""
    parts = name.split(".")
    if parts[0] in WORDS:
        return True
    return parts[:2] == ["jobdef", "backends"] and len(parts) > 2 and (BACKENDS / parts[2]).is_dir()


def _holds_word(name: str) -> bool:
    return any(word in name.lower() for word in WORDS)


def _names(node: ast.AST) -> Iterator[str]:
    """The names ``node`` defines or uses."""
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.Attribute):
        yield node.attr
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name
    elif isinstance(node, ast.arg) or (isinstance(node, ast.keyword) and node.arg is not None):
        yield node.arg


def findings(module: str, source: str) -> list[Finding]:
    """Where ``source`` (the text of ``module``) names an engine, by the rules above."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    found: list[Finding] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import | ast.ImportFrom):
            targets = [alias.name for alias in node.names]
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                targets = [base, *(f"{base}.{name}" for name in targets)]
            for target in targets:
                if _engine_import(target):
                    found.append(Finding(module, line, f"imports {target}"))
                    break
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) in docstrings:
                continue
            text = node.value.strip().lower()
            if text in WORDS:
                found.append(Finding(module, line, f"the string {node.value!r} names an engine"))
            elif any(text.startswith(f"{scheme}:") for scheme in SCHEMES):
                found.append(Finding(module, line, f"the string {node.value[:40]!r} is a URL"))
            continue
        for name in _names(node):
            if _holds_word(name):
                found.append(Finding(module, line, f"the name {name} names an engine"))
    return sorted(set(found), key=lambda f: (f.line, f.what))


def outside_backends() -> dict[str, Path]:
    return {
        module_name(path): path
        for path in sorted(PACKAGE.rglob("*.py"))
        if BACKENDS not in path.parents
    }


def test_no_module_outside_backends_names_an_engine() -> None:
    found = [
        str(f)
        for module, path in outside_backends().items()
        if module not in ALLOWED
        for f in findings(module, path.read_text("utf-8"))
    ]
    print("\n".join(found))
    assert found == [], "reach the engine through its driver (jobdef.backends), or move it there"


def test_each_allowed_module_still_names_an_engine_and_says_why() -> None:
    modules = outside_backends()
    for module, reason in ALLOWED.items():
        assert module in modules, f"{module} is gone: remove it from ALLOWED"
        assert findings(module, modules[module].read_text("utf-8")), (
            f"{module} names no engine any more: remove it from ALLOWED"
        )
        assert reason.strip()


def test_sql_lives_in_the_engines_packages_only() -> None:
    engine_packages = {p for p in BACKENDS.iterdir() if (p / "__init__.py").is_file()}
    stray = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.sql")
        if not any(package in path.parents for package in engine_packages)
    ]
    assert stray == []


def test_the_words_come_from_every_registered_engine() -> None:
    assert {"sqlite", "sqlite3", "postgres", "postgresql", "psycopg", "psycopg2"} <= WORDS
    assert {"sqlite", "postgresql", "postgres"} <= SCHEMES


# The checker itself, on small sources written for it.


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from jobdef.backends.sqlite.engine import sqlite_path\n", "imports"),
        ("def f():\n    from jobdef.backends.postgres import session\n", "imports"),
        ("from jobdef.backends import postgres\n", "imports"),
        ("import psycopg\n", "imports"),
        ("import sqlite3 as db\n", "imports"),
        ("if store.engine == 'sqlite':\n    pass\n", "names an engine"),
        ("ENGINE = 'PostgreSQL'\n", "names an engine"),
        ("url = f'sqlite:///{path}'\n", "is a URL"),
        ("ok = url.startswith('postgresql:')\n", "is a URL"),
        ("class SQLiteReader:\n    pass\n", "the name SQLiteReader"),
        ("def _postgres_url(): ...\n", "the name _postgres_url"),
        ("x = db.psycopg_error\n", "the name psycopg_error"),
    ],
)
def test_the_checker_finds_each_kind_of_naming(source: str, expected: str) -> None:
    [finding] = findings("jobdef.dashboard.views", source)
    assert expected in finding.what


@pytest.mark.parametrize(
    "source",
    [
        '"""Reads run on SQLite or PostgreSQL (postgresql://...)."""\n',
        "def f():\n    '''On sqlite, polled.'''\n",
        "HELP = 'job database, e.g. sqlite:///jobdef.db or postgresql://host/db'\n",
        "raise BackendError('PostgreSQL cannot store a NUL character')\n",
        "from jobdef.backends import open_reader, describe_store\n",
        "from jobdef.backends.protocol import Reader\n",
        "# if store.engine == 'sqlite'\nx = 1\n",
        "engine = store.reader.engine\n",
    ],
)
def test_the_checker_leaves_text_for_a_reader_and_the_backends_api_alone(source: str) -> None:
    assert findings("jobdef.dashboard.views", source) == []
