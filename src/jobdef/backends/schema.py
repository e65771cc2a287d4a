"""The one line for a store whose schema is not current, shared by the engines and the CLI.

Operator commands do not migrate: they may run under a role that must not
change the schema, and moving a store to a new version while the previous
release's workers still run on it is the operator's step to take. So a store
without jobdef tables, or with older ones, is refused with what to run.
"""

from __future__ import annotations

from typing import Protocol

from jobdef.errors import BackendError
from jobdef.redact import redact


class Versioned(Protocol):
    """What every engine answers about its schema (the
    :class:`~jobdef.backends.protocol.Backend` protocol includes it)."""

    def migrate(self) -> None: ...
    def schema_version(self) -> int: ...
    def latest_version(self) -> int: ...
    def close(self) -> None: ...


def require_current(backend: Versioned, url: str, where: str) -> None:
    """Refuse the store at ``url`` (``where`` names it in the message) unless its tables
    are at this jobdef's newest version, or a newer one."""
    version, latest = backend.schema_version(), backend.latest_version()
    if version >= latest:
        return
    upgrade_hint = f"run `jobdef db upgrade --db {redact(url)}` or start a worker"
    if version == 0:
        raise BackendError(f"no jobdef tables in {where}; {upgrade_hint}")
    raise BackendError(
        f"the jobdef tables in {where} are at version {version} and this jobdef needs "
        f"version {latest}; {upgrade_hint}"
    )
