"""What a worker's turn sends with its completions (engine._complete_params): the
leases as the text of arrays, and, for a turn whose handlers returned nothing and whose
sheets send no message, NULL for the results and the messages, which costs psycopg
nothing to send, and which the statement reads as it reads empty arrays
(tests/backends/test_results.py and test_transitions.py check the rows)."""

from __future__ import annotations

from jobdef.backends.postgres.engine import (
    PostgresBackend,
    _complete_params,
    _int_array,
    _text_array,
)
from jobdef.backends.records import Lease, Notification
from jobdef.backends.transitions import Completion

LEASES = [Lease(1, 1, "w"), Lease(2, 3, "w")]
NOTE_ARRAYS = ("note_job_ids", "message_ids", "channels", "events", "jobs", "payloads")


def test_a_turn_without_results_or_messages_sends_nulls_for_them() -> None:
    params = _complete_params(Completion(LEASES, {}, {}), 5.0)
    assert params["ids"] == "{1,2}"
    assert params["attempts"] == "{1,3}"
    assert params["workers"] == '{"w","w"}'
    assert params["results"] is None
    assert all(params[name] is None for name in NOTE_ARRAYS)


def test_a_turn_with_results_and_messages_sends_them_as_arrays() -> None:
    note = Notification("c", "done", "j", {"n": 1}, "m1")
    params = _complete_params(Completion(LEASES, {2: '"x"'}, {2: [note]}), 5.0)
    assert params["results"] == [None, '"x"']
    assert params["note_job_ids"] == [2]
    assert params["message_ids"] == ["m1"]
    assert params["payloads"] == ['{"n":1}']


def test_worker_ids_are_quoted_so_that_the_server_reads_them_back_as_they_are() -> None:
    ids = ['a"b', "c\\d", "e,f", "{g}", " h ", "NULL", "", 'a\\"b']
    assert _text_array(ids) == ('{"a\\"b","c\\\\d","e,f","{g}"," h ","NULL","","a\\\\\\"b"}')


def test_the_server_reads_the_arrays_as_the_values_they_were(pg_backend: PostgresBackend) -> None:
    ids = ['a"b', "c\\d", "e,f", "{g}", " h ", "NULL", "", "é☃", 'a\\"b']
    conn = pg_backend.sessions.connection()
    row = conn.execute(
        "SELECT %s::text[], %s::bigint[]", [_text_array(ids), _int_array([1, 2**40])]
    ).fetchone()
    assert row == (ids, [1, 2**40])
