"""The admin's view of the job store: jobs, attempts and the outbox, read-only.

Rows change only through jobdef's verbs, as ``jobdef requeue/resolve/cancel`` change
them: the admin actions call the project's ``JobdefBackend`` engine, so a requeue
keeps the history, skips a job whose idempotency key is active again, and wakes the
workers, exactly as the command line does.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from typing import Any, TypeVar, cast

from django.contrib import admin, messages

from jobdef.contrib.django.models import Attempt, Job, OutboxMessage, when
from jobdef.contrib.django.worker import project_backend
from jobdef.errors import JobdefError
from jobdef.redact import shown_args

REQUEUABLE = ("dead", "cancelled", "resolved", "done")

F = TypeVar("F", bound=Callable[..., Any])


def display(description: str, ordering: str | None = None) -> Callable[[F], F]:
    """``admin.display``, typed (Django ships no types)."""
    return cast(Callable[[F], F], admin.display(description=description, ordering=ordering))


def action(description: str) -> Callable[[F], F]:
    """``admin.action``, typed."""
    return cast(Callable[[F], F], admin.action(description=description))


def _backend() -> Any:
    backend = project_backend()
    if backend is None:
        raise RuntimeError("TASKS has no jobdef.contrib.django.JobdefBackend")
    return backend


class ReadOnly(admin.ModelAdmin):  # type: ignore[misc]  # Django ships no types
    """No add, change or delete: jobdef's verbs are the only writers."""

    def get_queryset(self, request: Any) -> Any:
        return super().get_queryset(request).using(_backend().database)

    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return False


@admin.register(Job)
class JobAdmin(ReadOnly):
    list_display = ("id", "job", "queue", "state", "attempts", "priority", "created", "error")
    list_filter = ("state", "queue", "job")
    search_fields = ("job", "idempotency_key", "=id")
    actions = ("requeue", "resolve", "cancel")
    # The stored args are the handler's; a page shows them as every display does.
    exclude = ("args",)
    readonly_fields = ("shown_args",)

    @display(description="args")
    def shown_args(self, obj: Job) -> str:
        try:
            policy = _backend().registry.jobs.get(obj.job)
        except JobdefError:  # sheets that do not load: names alone decide
            policy = None
        args = obj.args if isinstance(obj.args, dict) else {}
        return json.dumps(shown_args(policy, args), ensure_ascii=False)

    @display(description="attempts")
    def attempts(self, obj: Job) -> str:
        return f"{obj.attempt}/{obj.max_attempts}"

    @display(description="created", ordering="created_at")
    def created(self, obj: Job) -> Any:
        return when(obj.created_at)

    @display(description="last error")
    def error(self, obj: Job) -> str:
        error = obj.last_error or {}
        return f"{error.get('type', '')}: {error.get('message', '')}"[:120] if error else ""

    @action(description="Requeue the selected finished jobs (attempts back to 0)")
    def requeue(self, request: Any, queryset: Any) -> None:
        by_state: dict[str, list[int]] = defaultdict(list)
        for job_id, state in queryset.values_list("id", "state"):
            by_state[state].append(job_id)
        engine = _backend().engine()
        moved = sum(
            engine.requeue(job_ids=ids, state=state)
            for state, ids in by_state.items()
            if state in REQUEUABLE
        )
        total = sum(len(ids) for ids in by_state.values())
        self.message_user(
            request,
            f"requeued {moved} of {total} selected jobs (active jobs, and jobs whose "
            "idempotency key is active again, are left as they are)",
            messages.SUCCESS if moved else messages.WARNING,
        )

    @action(description="Resolve the selected dead jobs (handled by hand)")
    def resolve(self, request: Any, queryset: Any) -> None:
        engine = _backend().engine()
        note = f"resolved in the Django admin by {request.user.get_username()}"
        ids = list(queryset.filter(state="dead").values_list("id", flat=True))
        done = sum(bool(engine.resolve(job_id, note)) for job_id in ids)
        self.message_user(request, f"resolved {done} of {queryset.count()} selected jobs")

    @action(description="Cancel the selected queued or running jobs")
    def cancel(self, request: Any, queryset: Any) -> None:
        """A running job's attempt ends cancelled and its worker stops the handler at
        its next heartbeat, as ``jobdef cancel`` does."""
        engine = _backend().engine()
        reason = f"cancelled in the Django admin by {request.user.get_username()}"
        taken = queryset.filter(state__in=("queued", "running"))
        ids = list(taken.values_list("id", flat=True))
        done = sum(bool(engine.cancel(job_id, reason)) for job_id in ids)
        self.message_user(request, f"cancelled {done} of {queryset.count()} selected jobs")


@admin.register(Attempt)
class AttemptAdmin(ReadOnly):
    list_display = ("job_id", "attempt", "outcome", "worker_id", "started", "error_text")
    list_filter = ("outcome",)
    search_fields = ("=job_id",)

    @display(description="started", ordering="started_at")
    def started(self, obj: Attempt) -> Any:
        return when(obj.started_at)

    @display(description="error")
    def error_text(self, obj: Attempt) -> str:
        error = obj.error or {}
        return f"{error.get('type', '')}: {error.get('message', '')}"[:120] if error else ""


@admin.register(OutboxMessage)
class OutboxAdmin(ReadOnly):
    list_display = ("id", "event", "job", "channel", "attempts", "created", "delivered")
    list_filter = ("event", "channel")

    @display(description="created", ordering="created_at")
    def created(self, obj: OutboxMessage) -> Any:
        return when(obj.created_at)

    @display(description="delivered", ordering="delivered_at")
    def delivered(self, obj: OutboxMessage) -> Any:
        return when(obj.delivered_at)
