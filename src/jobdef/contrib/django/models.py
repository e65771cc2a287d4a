"""Read-only models over jobdef's tables, for the admin (``managed = False``: jobdef's own
migrations make and change these tables, never Django's).

Times are epoch seconds, as jobdef stores them; the admin shows them as dates. On
PostgreSQL the tables are in the schema of the project's ``JobdefBackend``
(``OPTIONS["schema"]``, default ``public``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import models


def _schema() -> str | None:
    for entry in getattr(settings, "TASKS", {}).values():
        if entry.get("BACKEND") == "jobdef.contrib.django.JobdefBackend":
            schema = entry.get("OPTIONS", {}).get("schema")
            return str(schema) if schema else None
    return None


def table(name: str) -> str:
    """``name``, in the jobdef schema when there is one (Django quotes it as "s"."t")."""
    schema = _schema()
    return f'{schema}"."{name}' if schema else name


def when(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, tz=UTC)


class Job(models.Model):  # type: ignore[misc]  # Django ships no types
    id = models.BigAutoField(primary_key=True)
    job = models.TextField()
    queue = models.TextField()
    priority = models.IntegerField()
    args = models.JSONField()
    state = models.TextField()
    attempt = models.IntegerField()
    max_attempts = models.IntegerField()
    idempotency_key = models.TextField(null=True)
    run_after = models.FloatField()
    created_at = models.FloatField()
    updated_at = models.FloatField()
    finished_at = models.FloatField(null=True)
    worker_id = models.TextField(null=True)
    last_error = models.JSONField(null=True)
    note = models.TextField(null=True)

    class Meta:
        managed = False
        db_table = table("jobdef_jobs")
        ordering = ("-id",)

    def __str__(self) -> str:
        return f"{self.job} #{self.id} ({self.state})"


class Attempt(models.Model):  # type: ignore[misc]
    id = models.BigAutoField(primary_key=True)
    job_id = models.BigIntegerField()
    attempt = models.IntegerField()
    worker_id = models.TextField()
    started_at = models.FloatField()
    finished_at = models.FloatField(null=True)
    outcome = models.TextField(null=True)
    error = models.JSONField(null=True)

    class Meta:
        managed = False
        db_table = table("jobdef_attempts")
        ordering = ("-job_id", "-attempt")

    def __str__(self) -> str:
        return f"job {self.job_id} attempt {self.attempt}"


class OutboxMessage(models.Model):  # type: ignore[misc]
    id = models.BigAutoField(primary_key=True)
    message_id = models.TextField()
    channel = models.TextField()
    event = models.TextField()
    job = models.TextField()
    payload = models.JSONField()
    attempts = models.IntegerField()
    next_at = models.FloatField()
    created_at = models.FloatField()
    delivered_at = models.FloatField(null=True)
    last_error = models.TextField(null=True)

    class Meta:
        managed = False
        db_table = table("jobdef_outbox")
        ordering = ("-id",)
        verbose_name = "outbox message"

    def __str__(self) -> str:
        return f"{self.event} of {self.job} to {self.channel}"


def shown(value: Any) -> Any:
    """An epoch column as a date for the admin's lists."""
    return when(value) if isinstance(value, int | float) else value
