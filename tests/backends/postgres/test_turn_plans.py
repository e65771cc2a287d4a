"""A worker's turn on PostgreSQL is planned once per session, safely; every other
statement is planned for its parameters, as the session is configured."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
from psycopg import sql

from jobdef.backends.postgres.engine import (
    PLANNED_EITHER_WAY,
    PostgresBackend,
    _complete_params,
)
from jobdef.backends.records import ClaimOptions, NewJob
from jobdef.backends.transitions import Completion
from support import ManualClock

from .helpers import terminate

OPTIONS = ClaimOptions("w", 30, limit=10)


def _planning(backend: PostgresBackend) -> tuple[str, str]:
    """How the engine's session plans now (read without changing it)."""
    row = backend.sessions.connection().execute(
        "SELECT current_setting('plan_cache_mode'), current_setting('enable_seqscan')"
    )
    return row.fetchone()


def _turn(backend: PostgresBackend) -> None:
    """One turn of a worker: complete what it holds and claim again; then the change
    notification it causes is sent at once (it runs on the same session)."""
    held = [job.lease for job in backend.claim(OPTIONS)]
    backend.complete_and_claim(held, {}, OPTIONS)
    backend.changes.close()


PLANNED_ONCE = ("force_generic_plan", "off")
AS_CONFIGURED = ("auto", "on")


def _turn_plan(backend: PostgresBackend, name: str) -> str:
    """The plan the engine's session makes once for the turn's query ``name``."""
    now = backend.clock()
    params: dict[str, Any] = _complete_params(Completion([], {}, {}), now)
    params |= backend._ends() | backend._claim_params(OPTIONS, now)
    return _fixed_plan(backend, name, params)


def _fixed_plan(backend: PostgresBackend, name: str, params: dict[str, Any]) -> str:
    """The plan the engine's session makes for the query ``name`` under the turn's
    settings: prepared with its parameters as ``$n``, planned generically."""
    names: list[str] = []

    def placeholder(match: re.Match[str]) -> str:
        if match.group(1) not in names:
            names.append(match.group(1))
        return f"${names.index(match.group(1)) + 1}"

    text = re.sub(r"%\((\w+)\)[sb]", placeholder, backend._q(name))
    conn = backend.sessions.connection()
    conn.execute(backend._q("fixed_plans"))
    conn.execute("DEALLOCATE ALL")
    conn.execute(f"PREPARE turn_plan AS {text}", prepare=False)
    values = sql.SQL(", ").join(sql.Literal(params[n]) for n in names)
    explain = sql.SQL("EXPLAIN EXECUTE turn_plan")
    if names:  # no () for a query without parameters
        explain += sql.SQL("({})").format(values)
    try:
        return "\n".join(row[0] for row in conn.execute(explain, prepare=False))
    finally:
        conn.execute("DEALLOCATE turn_plan", prepare=False)
        conn.execute(backend._q("fresh_plans"))


def test_a_workers_turns_are_planned_once_not_at_every_turn(
    pg_backend: PostgresBackend,
) -> None:
    """PostgreSQL kept planning each turn anew (~0.3 ms, a turn of ten jobs' worth)."""
    pg_backend.enqueue([NewJob("j", {"n": n}, "default") for n in range(200)])
    for _ in range(8):
        _turn(pg_backend)
    rows = pg_backend.sessions.connection().execute(
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE %s",
        ["%THEN done.done_ids END AS done_ids%"],  # complete_and_claim
    )
    counts = rows.fetchall()
    assert counts, "the turn's statement should be prepared on the session"
    generic, custom = counts[0]
    assert (generic > 0, custom) == (True, 0)


def test_the_turns_plan_made_on_an_empty_table_reads_through_indexes(
    pg_backend: PostgresBackend,
) -> None:
    """A plan made once must hold as the table grows: made on an empty table, a plan
    free to scan would read the whole table to lease a few jobs by id."""
    for name in ("claim_jobs", "complete_jobs", "complete_and_claim"):
        plan = _turn_plan(pg_backend, name)
        assert "Seq Scan on jobdef_jobs" not in plan, f"{name}:\n{plan}"
        assert "jobdef_jobs_pkey" in plan or name == "complete_jobs", f"{name}:\n{plan}"


def test_other_statements_are_planned_for_their_parameters_after_a_turn(
    pg_backend: PostgresBackend,
) -> None:
    pg_backend.enqueue([NewJob("j", {}, "default") for _ in range(3)])
    _turn(pg_backend)
    assert _planning(pg_backend) == PLANNED_ONCE
    pg_backend.stats()
    assert _planning(pg_backend) == AS_CONFIGURED


def _idle_round(backend: PostgresBackend) -> None:
    """What an idle worker runs on the session between two polls, besides maintenance
    that only the elected one runs: its view of the fleet, the reclaim, its beat."""
    backend.worker_rows()
    backend.expired_leases()
    backend.beat_worker("w")


def test_an_idle_workers_round_leaves_the_sessions_planning_as_it_is(
    pg_backend: PostgresBackend,
) -> None:
    """Each of those statements set the planning back from the poll's, and the next
    poll set it again: two round trips of an idle worker's four or five a second."""
    pg_backend.enqueue([NewJob("j", {}, "default") for _ in range(3)])
    _turn(pg_backend)
    _idle_round(pg_backend)
    assert _planning(pg_backend) == PLANNED_ONCE
    pg_backend.stats()
    _idle_round(pg_backend)
    assert _planning(pg_backend) == AS_CONFIGURED


# How each statement of PLANNED_EITHER_WAY reads, as it is written to: the workers table
# (a row a worker) whole, one worker's row by its key, the running jobs by their index.
READS_EITHER_WAY = {
    "list_workers": "on jobdef_workers",
    "beat_worker": "Index Scan using jobdef_workers_pkey",
    "expired_leases": "using jobdef_jobs_running",
}


@pytest.mark.parametrize("name", sorted(READS_EITHER_WAY))
def test_a_statement_planned_either_way_reads_as_written_under_the_turns_settings(
    pg_backend: PostgresBackend, name: str
) -> None:
    """Run under the turn's settings (a plan made once, sequential scans off), a statement
    of PLANNED_EITHER_WAY reads its table as under the session's own: never the jobs
    table whole."""
    assert set(READS_EITHER_WAY) == PLANNED_EITHER_WAY
    params: dict[str, Any] = {"id": "w", "now": pg_backend.clock(), "limit": 100}
    plan = _fixed_plan(pg_backend, name, params)
    assert READS_EITHER_WAY[name] in plan, f"{name}:\n{plan}"
    assert "Seq Scan on jobdef_jobs" not in plan, f"{name}:\n{plan}"


def test_a_new_session_plans_the_turn_once_again(pg_backend: PostgresBackend) -> None:
    pg_backend.enqueue([NewJob("j", {}, "default") for _ in range(3)])
    _turn(pg_backend)
    terminate(pg_backend.conninfo, pg_backend.sessions.connection().info.backend_pid)
    _turn(pg_backend)  # on a new session, which starts as configured
    assert _planning(pg_backend) == PLANNED_ONCE


def test_behind_a_transaction_pooler_a_turn_sets_nothing_on_the_session(
    postgres_url: str, pg_backend: PostgresBackend
) -> None:
    url = f"{postgres_url}{'&' if '?' in postgres_url else '?'}wake=poll"
    pg_backend.enqueue([NewJob("j", {}, "default") for _ in range(3)])
    with PostgresBackend(url, schema=pg_backend.schema) as pooled:
        _turn(pooled)
        assert _planning(pooled) == AS_CONFIGURED


def test_the_turns_planning_is_set_outside_the_work_and_survives_its_rollback(
    pg_backend: PostgresBackend,
) -> None:
    """Set inside the work's transaction, a rollback would undo it while the engine
    believed it set, and the next turn would be planned at every execution again."""
    pg_backend.stats()  # as configured

    def failing(conn: psycopg.Connection[Any]) -> None:
        with conn.transaction():
            conn.execute("SELECT 1 / 0")

    with pytest.raises(psycopg.errors.DivisionByZero):
        pg_backend._run(failing, plan_once=True)
    assert _planning(pg_backend) == PLANNED_ONCE


def test_after_a_turn_a_statement_is_planned_as_the_session_started(
    postgres_url: str, postgres_schema: str, clock: ManualClock
) -> None:
    """Back from a turn's settings, the session has the values it started with (here the
    URL's ``options``, as a role's or a database's would be), not the server's."""
    options = quote("-c plan_cache_mode=force_custom_plan -c enable_seqscan=off")
    backend = PostgresBackend(
        f"{postgres_url}?options={options}", schema=postgres_schema, clock=clock
    )
    try:
        backend.migrate()
        backend.enqueue([NewJob("j", {"n": n}, "default") for n in range(3)])
        for _ in range(2):
            _turn(backend)
            assert _planning(backend) == PLANNED_ONCE
            backend.get(1)  # any statement but a turn's
            assert _planning(backend) == ("force_custom_plan", "off")
    finally:
        backend.close()
