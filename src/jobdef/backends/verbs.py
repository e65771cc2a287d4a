"""The verbs written once for both engines, over a few primitives each engine provides.

A verb here runs queries whose names and parameters are the same in both
engines' ``queries.sql``: only the dialect of their SQL differs. An engine
inherits :class:`SharedVerbs` and gives it

- ``_read(name, params)``: the rows of one query, read by column name;
- ``_read_all(statements)``: the rows of each, read together in one transaction;
- ``_write_one(name, params)``: run one statement in its own transaction, its rowcount;
- ``_write_all(statements)``: run them in one transaction, the rows each returns;
- ``_ids_param(ids)``: how the dialect passes a list of ids (SQLite: JSON text,
  PostgreSQL: an array);
- ``_decode(value)``: a JSON column as the driver returns it, decoded;
- ``_wakes()``: the parameters a statement that makes jobs runnable takes to
  wake idle workers (PostgreSQL: its notify channel; SQLite: none);
- ``clock``: the engine's clock, epoch seconds.

Each engine keeps what its dialect does differently: enqueue, claim, the fenced
transitions, prune, migrations, and on PostgreSQL the listener. The engine's
error translation (and PostgreSQL's reconnect) lives in its primitives, so every
verb here has it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from jobdef.backends.records import JobRecord
from jobdef.backends.rows import Row, job_record


class Statement(NamedTuple):
    """One named query of the engine's ``queries.sql`` and its parameters."""

    name: str
    params: Mapping[str, Any]


class SharedVerbs(ABC):
    """The dialect-neutral verbs of :class:`~jobdef.backends.protocol.Backend`."""

    clock: Callable[[], float]

    @abstractmethod
    def _read(self, name: str, params: Mapping[str, Any]) -> Sequence[Row]: ...

    @abstractmethod
    def _read_all(self, statements: Sequence[Statement]) -> Sequence[Sequence[Row]]: ...

    @abstractmethod
    def _write_one(self, name: str, params: Mapping[str, Any]) -> int: ...

    @abstractmethod
    def _write_all(self, statements: Sequence[Statement]) -> Sequence[Sequence[Row]]: ...

    @abstractmethod
    def _ids_param(self, ids: Sequence[int]) -> Any: ...

    @abstractmethod
    def _decode(self, value: Any) -> Any: ...

    def _wakes(self) -> dict[str, Any]:
        return {}

    def _job(self, row: Row) -> JobRecord:
        return job_record(row, self._decode)
