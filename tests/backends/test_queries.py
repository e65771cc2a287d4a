"""Both engines' query files read on their own: whole fragments, and each engine uses
every query of its file and no other (its own module and the shared verbs together)."""

from __future__ import annotations

import ast
import inspect
import re
from importlib import resources
from types import ModuleType

import pytest

from jobdef.backends import cancels, elsewhere, flows, transitions, verbs, workers
from jobdef.backends.postgres import engine as postgres
from jobdef.backends.sql import load_queries
from jobdef.backends.sqlite import engine as sqlite

ENGINES: dict[str, ModuleType] = {"sqlite": sqlite, "postgres": postgres}
# Modules written once for both engines over the engines' primitives.
SHARED: tuple[ModuleType, ...] = (verbs, transitions, elsewhere, workers, flows, cancels)
_BLOCK = re.compile(r"^-- (name|fragment): ([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)
# The calls that take a query's name as a positional argument.
_TAKERS = {"_q", "_read", "_write_one", "_fenced_move", "_count", "_rowcount"}
# run: a flow transaction's (FlowTx.run); _one_flow: a read of one flow by a query.
_TAKERS |= {"Statement", "run", "_one_flow"}
_STATEMENT = re.compile(r"^(SELECT|INSERT|UPDATE|DELETE|WITH|CREATE|SET)\b")

# The only query names one engine has and the other not, each with why. Every
# other name is in both files, and means the same thing in both.
_LIMITED_STEPS = (
    "a step of the claim queue by queue, which PostgreSQL does in claim_jobs_limited and "
    "claim_jobs_by_queue"
)
POSTGRES_ONLY: dict[str, str] = {
    "session_settings": "the verbs' session turns bitmap scans off (SQLite pins with INDEXED BY) "
    "and has the server abort the statement of a client that is gone",
    "fixed_plans": "a worker's turn runs on plans made once per session; SQLite's planner "
    "has no plan cache to steer",
    "fresh_plans": "back to planning each statement, after fixed_plans",
    "one_snapshot": "reads of one transaction share a snapshot; a SQLite transaction's do",
    "reserve_job_ids": "a batch draws its ids first; SQLite reads each one from lastrowid",
    "insert_jobs": "a batch in one statement; SQLite inserts one job at a time (insert_job)",
    "insert_alike_jobs": "a keyless batch of one job's calls sent in pipelined statements; "
    "SQLite inserts one job at a time (insert_job)",
    "repoint_slot": "a slot taken for a reserved id whose row merged; SQLite reserves no ids",
    "ensure_queue_rows": "the limited claim locks queue rows; SQLite's one writer locks none",
    "lock_limited_queues": "locks limited queues between workers; SQLite reads queue_buckets",
    "claim_jobs_limited": "the limited claim in one statement; SQLite runs it as steps",
    "complete_and_claim": "a turn in one round trip; SQLite runs complete_jobs, claim_jobs",
    "claim_jobs_by_queue": "claim_jobs read queue by queue in one statement; SQLite runs steps",
    "complete_and_claim_by_queue": "a turn in one round trip, its claim by queue",
    "schema_exists": "the tables live in a schema of their own",
    "create_schema": "the tables live in a schema of their own",
    "create_schema_version": "made before any migration; SQLite's baseline makes it",
    "advisory_xact_lock": "serializes migrations across hosts; SQLite's write lock does",
    "take_lease": "elects the maintaining worker across hosts by lease; SQLite elects none",
    "give_back_lease": "a maintainer that stops hands its lease on at once",
    "server_time": "hosts share the store, so the engine's clock is the server's; SQLite is one",
    "watch_jobs": "marks waited jobs so their end notifies; SQLite's waiters read ended_jobs",
}
SQLITE_ONLY: dict[str, str] = {
    "schema_tables": "whether the version table exists; PostgreSQL's read catches UndefinedTable",
    "queues_with_queued": _LIMITED_STEPS,
    "queue_candidates": _LIMITED_STEPS,
    "running_per_queue": _LIMITED_STEPS,
    "queue_buckets": _LIMITED_STEPS,
    "spend_tokens": _LIMITED_STEPS,
    "claim_ids": _LIMITED_STEPS,
    "paused_queues": _LIMITED_STEPS,
    "record_attempt": "the attempt row after a fenced move; PostgreSQL's move writes it",
    "record_done_attempts": "the attempt rows after complete_jobs; PostgreSQL's writes them",
    "delete_jobs": "prune deletes a batch by ids; PostgreSQL's prune_batch deletes itself",
    "delete_attempts": "and their attempts; PostgreSQL's prune_batch deletes them too",
    "set_trace_context": "after each insert_job; PostgreSQL's insert_jobs writes it in the row",
    "set_positional_args": "after each insert_job; PostgreSQL's insert_jobs writes it too",
}
ONLY_IN = {"sqlite": SQLITE_ONLY, "postgres": POSTGRES_ONLY}


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
    """The query names ``module`` passes to the engine: ``_q("x")``, ``Statement("x", ...)``
    and the other helpers that take a name."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(inspect.getsource(module))):
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
    used = queries_named_in(ENGINES[engine]).union(*map(queries_named_in, SHARED))
    assert used == set(load_queries(_package(engine), "queries.sql"))


def _names(engine: str) -> set[str]:
    return set(load_queries(_package(engine), "queries.sql"))


def test_both_engines_define_the_same_queries_but_the_declared_dialect_only_ones() -> None:
    sqlite_names, postgres_names = _names("sqlite"), _names("postgres")
    undeclared = {
        "sqlite": sqlite_names - postgres_names - set(SQLITE_ONLY),
        "postgres": postgres_names - sqlite_names - set(POSTGRES_ONLY),
    }
    assert undeclared == {"sqlite": set(), "postgres": set()}, (
        "a query only one engine has: give the other engine the same name, "
        "or declare it dialect-only with the reason"
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_a_dialect_only_name_is_in_its_engine_only_and_says_why(engine: str) -> None:
    other = next(name for name in ENGINES if name != engine)
    for name, reason in ONLY_IN[engine].items():
        assert name in _names(engine), f"{name} is declared {engine}-only but not in its file"
        assert name not in _names(other), f"{name} is in both files: not {engine}-only"
        assert reason.strip(), f"{name}: say why it is {engine}-only"


# Parameters a shared verb passes that one engine's query leaves unread, and why.
# (``channel``, PostgreSQL's wake-up of idle workers, comes from ``_wakes``.)
UNREAD_PARAMETERS: dict[str, dict[str, set[str]]] = {
    # Only PostgreSQL's jobdef_queues has an updated_at column to stamp.
    "set_paused": {"sqlite": {"now"}},
    # PostgreSQL's leaves a released step's key out while an active job of its name
    # holds it (a unique index SQLite does not have).
    "flow_release_step": {"sqlite": {"job"}},
    # SQLite's workers poll: no channel tells them their turns.
    "register_worker": {"sqlite": {"wake_channel"}},
}


def _parameters(engine: str, sql: str) -> set[str]:
    code = re.sub(r"--[^\n]*", "", sql)
    if engine == "sqlite":
        return set(re.findall(r"(?<![:\w]):([a-z_]+)", code))
    # The channels PostgreSQL notifies (the workers', the waiters'): SQLite's are polled.
    return set(re.findall(r"%\(([a-z_]+)\)s", code)) - {"channel", "ended_channel"}


def test_the_queries_of_the_shared_verbs_take_the_same_parameters_in_both_engines() -> None:
    shared = set().union(*map(queries_named_in, SHARED))
    assert shared
    for name in sorted(shared):
        taken = {}
        for engine in ENGINES:
            sql = load_queries(_package(engine), "queries.sql")[name]
            unread = UNREAD_PARAMETERS.get(name, {}).get(engine, set())
            taken[engine] = _parameters(engine, sql) | unread
        assert taken["sqlite"] == taken["postgres"], f"{name} takes other parameters per engine"
