"""The worker's outbox service: keeps the sender thread alive, delivers on close."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from notify_servers import WebhookServer
from sqlite_outbox import NEW_YEAR_2026, bury_with, dead, open_store

from jobdef.notify.sender import SenderSettings
from jobdef.policy.model import ChannelPolicy, JobPolicy, NotifyPolicy
from jobdef.policy.registry import Registry
from jobdef.policy.values import freeze
from jobdef.runtime.maintenance import MaintenanceContext
from jobdef.runtime.maintenance.outbox import OutboxService
from support import ManualClock, eventually


class StoreAt:
    """A stand-in for the worker's store that only tells where the database lives."""

    def __init__(self, url: str) -> None:
        self.url = url


def registry() -> Registry:
    channel = ChannelPolicy("ops", "webhook", freeze({"url_env": "HOOK_URL", "timeout": "2s"}))
    job = JobPolicy("send_mail", "x:y", notify=NotifyPolicy("ops", ("dead",)))
    return Registry(jobs={"send_mail": job}, channels={"ops": channel})


def test_a_sender_thread_that_died_is_started_again_at_the_next_tick(
    tmp_path: Path, webhook: WebhookServer, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "later"  # does not exist yet: opening the store fails
    clock = ManualClock(NEW_YEAR_2026)
    ctx = MaintenanceContext(
        StoreAt(f"sqlite:///{folder / 'jobs.db'}"),  # type: ignore[arg-type]
        registry(),
        "w1",
        clock,
    )
    settings = SenderSettings(poll_interval=0.05)
    service = OutboxService(ctx, environ={"HOOK_URL": webhook.url}, settings=settings)
    with caplog.at_level(logging.ERROR, logger="jobdef.outbox"):
        service.tick(clock())
        eventually(lambda: "cannot open the job store" in caplog.text, what="the failure log")

    folder.mkdir()
    backend = open_store(folder / "jobs.db", clock)
    try:
        bury_with(backend, [dead(1)])
        eventually(lambda: service._thread is not None and not service._thread.is_alive())
        service.tick(clock())
        eventually(lambda: webhook.received, what="delivery by the restarted sender")
        service.close()
        assert backend.outbox_pending() == []
    finally:
        backend.close()
