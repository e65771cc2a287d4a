"""The outbox sender: retries with backoff, a down channel loses nothing, bursts become digests."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from notify_servers import WebhookServer, free_port
from sqlite_outbox import NEW_YEAR_2026, bury_with, dead, open_store

from jobdef.backends.protocol import Backend
from jobdef.notify.checks import Channel, build_channels
from jobdef.notify.digest import MAX_DIGEST_ITEMS
from jobdef.notify.sender import DELIVERY_BACKOFF, OutboxSender, SenderSettings, SenderThread
from jobdef.policy.backoff import delay_range
from jobdef.policy.model import ChannelPolicy
from jobdef.policy.registry import Registry
from jobdef.policy.values import freeze
from support import ManualClock, eventually


def webhook_channels(url: str, digest_after: int = 20, name: str = "ops") -> dict[str, Channel]:
    policy = ChannelPolicy(
        name=name,
        type="webhook",
        settings=freeze({"url_env": "HOOK_URL", "digest_after": digest_after, "timeout": "2s"}),
    )
    registry = Registry(jobs={}, channels={name: policy})
    return build_channels(registry, {"HOOK_URL": url}, names=[name])


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(NEW_YEAR_2026)


@pytest.fixture
def outbox(tmp_path: Path, clock: ManualClock) -> Iterator[Backend]:
    backend = open_store(tmp_path / "jobs.db", clock)
    yield backend
    backend.close()


def sender_for(outbox: Backend, channels: dict[str, Channel], clock: ManualClock) -> OutboxSender:
    return OutboxSender(outbox, channels, clock=clock, rng=random.Random(7))


def test_delivers_a_pending_message_and_marks_it_delivered(
    outbox: Backend, clock: ManualClock, webhook: WebhookServer
) -> None:
    bury_with(outbox, [dead(1)])
    report = sender_for(outbox, webhook_channels(webhook.url), clock).run_once()

    assert (report.delivered, report.messages, report.failed) == (1, 1, 0)
    assert webhook.message_ids() == ["send_mail:1:5:dead:0"]
    assert outbox.outbox_pending() == []


def test_failed_delivery_is_retried_with_backoff_until_the_channel_is_back(
    outbox: Backend, clock: ManualClock
) -> None:
    server = WebhookServer()  # port reserved, nothing listening yet: the channel is down
    bury_with(outbox, [dead(1)])
    sender = sender_for(outbox, webhook_channels(server.url), clock)

    for attempt in (1, 2, 3):
        report = sender.run_once()
        assert report.failed == 1
        [row] = outbox.outbox_pending()
        assert row.attempts == attempt
        assert "unreachable" in (row.last_error or "")
        low, high = delay_range(DELIVERY_BACKOFF, attempt)
        assert clock() + low <= row.next_at <= clock() + high
        assert sender.run_once().claimed == 0  # not due before its backoff
        clock.set(row.next_at)

    server.start()
    try:
        assert sender.run_once().delivered == 1
        assert server.message_ids() == ["send_mail:1:5:dead:0"]
        assert outbox.outbox_pending() == []
    finally:
        server.stop()


def test_a_failing_channel_is_tried_once_per_round_not_once_per_message(
    outbox: Backend, clock: ManualClock, webhook: WebhookServer
) -> None:
    webhook.status = 500
    bury_with(outbox, [dead(job_id) for job_id in range(1, 11)])
    report = sender_for(outbox, webhook_channels(webhook.url), clock).run_once()

    assert len(webhook.received) == 1
    assert report.failed == 10
    rows = outbox.outbox_pending()
    assert len(rows) == 10
    assert all(r.attempts == 1 for r in rows)
    assert sum("not tried" in (r.last_error or "") for r in rows) == 9


def test_one_channel_down_does_not_delay_another(
    outbox: Backend, clock: ManualClock, webhook: WebhookServer
) -> None:
    channels = {
        **webhook_channels(f"http://127.0.0.1:{free_port()}/down", name="down"),
        **webhook_channels(webhook.url, name="up"),
    }
    bury_with(outbox, [dead(1, "down"), dead(2, "up")])
    report = sender_for(outbox, channels, clock).run_once()

    assert (report.delivered, report.failed) == (1, 1)
    assert webhook.message_ids() == ["send_mail:2:5:dead:0"]
    [waiting] = outbox.outbox_pending()
    assert waiting.notification.channel == "down"


def test_a_message_for_an_unknown_channel_waits_in_the_outbox(
    outbox: Backend, clock: ManualClock, webhook: WebhookServer
) -> None:
    bury_with(outbox, [dead(1, "renamed")])
    report = sender_for(outbox, webhook_channels(webhook.url), clock).run_once()

    assert report.failed == 1
    [row] = outbox.outbox_pending()
    assert "no Channel named 'renamed'" in (row.last_error or "")


@pytest.mark.slow
def test_a_burst_of_1000_dead_jobs_sends_a_bounded_number_of_messages_listing_every_job(
    outbox: Backend, clock: ManualClock, webhook: WebhookServer
) -> None:
    bury_with(outbox, [dead(job_id) for job_id in range(1, 1001)])
    ids = [f"send_mail:{job_id}:5:dead:0" for job_id in range(1, 1001)]
    sender = sender_for(outbox, webhook_channels(webhook.url, digest_after=20), clock)

    # The burst arrives within one minute: 20 single messages, the rest held.
    for _ in range(30):
        sender.run_once()
        clock.advance(1)
    assert len(webhook.received) == 20
    assert sender.held == 980
    # The window rolls: the held events go out as digests, every one of them listed.
    clock.advance(31)
    report = sender.run_once()
    assert report.digests == -(-980 // MAX_DIGEST_ITEMS)
    assert len(webhook.received) == 20 + report.digests
    assert sorted(webhook.message_ids()) == sorted(ids)
    digest = webhook.received[-1].body
    assert digest["event"] == "digest"
    assert digest["text"].count("jobdef requeue ") == digest["count"]
    assert outbox.outbox_pending() == []


def test_digest_after_counts_per_channel_per_minute(
    outbox: Backend, clock: ManualClock, webhook: WebhookServer
) -> None:
    sender = sender_for(outbox, webhook_channels(webhook.url, digest_after=3), clock)
    for minute in range(3):
        bury_with(outbox, [dead(minute * 10 + job_id) for job_id in range(3)])
        sender.run_once()
        clock.advance(61)
    # Three a minute is within the limit: all single messages, no digest.
    assert len(webhook.received) == 9
    assert all(r.body["event"] == "dead" for r in webhook.received)


def test_held_messages_go_out_before_their_lease_runs_out(
    outbox: Backend, clock: ManualClock, webhook: WebhookServer
) -> None:
    sender = OutboxSender(
        outbox,
        webhook_channels(webhook.url, digest_after=1),
        SenderSettings(lease_seconds=90, window_seconds=60),
        clock=clock,
    )
    bury_with(outbox, [dead(1), dead(2)])
    sender.run_once()
    assert (len(webhook.received), sender.held) == (1, 1)
    clock.advance(59)  # room comes at 60s, but the lease (90s) forces it out from 75s on
    sender.run_once()
    assert sender.held == 1
    clock.advance(17)
    sender.run_once()
    assert sender.held == 0
    assert len(webhook.received) == 2


def test_lease_shorter_than_the_window_is_refused(outbox: Backend) -> None:
    with pytest.raises(ValueError, match="longer than the grouping window"):
        SenderSettings(lease_seconds=30, window_seconds=60)


def test_sender_thread_delivers_in_the_background_and_flushes_on_stop(
    tmp_path: Path, outbox: Backend, clock: ManualClock, webhook: WebhookServer
) -> None:
    bury_with(outbox, [dead(job_id) for job_id in range(1, 6)])
    thread = SenderThread(
        lambda: open_store(tmp_path / "jobs.db", clock),
        webhook_channels(webhook.url, digest_after=2),
        SenderSettings(poll_interval=0.05),
        clock=clock,
    )
    thread.start()
    eventually(lambda: len(webhook.received) == 2, what="two single messages")
    eventually(lambda: thread.rounds >= 2, what="another round")
    assert len(webhook.received) == 2  # the window is full; the rest wait
    thread.stop()
    assert not thread.is_alive()
    assert len(webhook.received) == 3
    assert sorted(webhook.message_ids()) == sorted(f"send_mail:{i}:5:dead:0" for i in range(1, 6))
    assert outbox.outbox_pending() == []
