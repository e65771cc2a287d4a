"""``first_run(ctx, connection)`` takes Django's connection and records the key in the
handler's own ``transaction.atomic()``: it commits, or rolls back, with the work."""

from __future__ import annotations

import uuid

import pytest
from django.db import connections, transaction
from jd_support import Project

from jobdef import Context, first_run
from jobdef.errors import UsageError


def context(project: Project, alias: str) -> Context:
    return Context(
        job_id=1,
        job="award",
        attempt=1,
        max_attempts=3,
        idempotency_key=f"order-{uuid.uuid4().hex}:points",
        database_url=project.backend(alias).database_url,
    )


def test_the_key_commits_and_rolls_back_with_the_handlers_transaction(
    project: Project, engine_alias: str
) -> None:
    ctx = context(project, engine_alias)
    connection = connections[engine_alias]
    with transaction.atomic(using=engine_alias):
        assert first_run(ctx, connection)
        transaction.set_rollback(True, using=engine_alias)
    with transaction.atomic(using=engine_alias):
        assert first_run(ctx, connection)  # the rolled-back run recorded nothing
    with transaction.atomic(using=engine_alias):
        assert not first_run(ctx, connection)  # the committed one did


def test_outside_atomic_it_is_refused(project: Project) -> None:
    with pytest.raises(UsageError, match=r"inside `with transaction.atomic\(\):`"):
        first_run(context(project, "default"), connections["default"])
