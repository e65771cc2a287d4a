"""The outbox sender: delivers the messages that transitions wrote to the outbox.

Delivery is at least once. A message is claimed (leased, so two senders do not
race), sent, then marked delivered; a failed delivery is recorded and retried
after a backoff drawn by :func:`jobdef.policy.backoff.next_delay`, for as long as it
takes: a channel that is down delays messages and never loses them. A crash
between sending and marking sends the message again after its lease, with the
same message id, so the receiver can drop the copy.

The sender never holds up job processing: :class:`SenderThread` runs it in its
own thread with its own backend connection, each delivery is bounded by the
channel's timeout, and once a channel fails, the rest of its messages in that
round are put back without trying, so a dead channel costs one timeout per
round, not one per message.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jobdef.backends.protocol import Backend
from jobdef.backends.records import OutboxRecord
from jobdef.errors import DeliveryError
from jobdef.notify.checks import Channel
from jobdef.notify.digest import MAX_DIGEST_ITEMS, WINDOW_SECONDS, ChannelPacer
from jobdef.notify.message import Message, digest_message, single_message
from jobdef.policy.backoff import next_delay
from jobdef.policy.model import BackoffPolicy

LOGGER = logging.getLogger("jobdef.outbox")

# Waits between delivery attempts of one message: 5s, 10s, 20s ... capped at 5 minutes,
# so a channel that comes back hears the backlog within minutes.
DELIVERY_BACKOFF = BackoffPolicy(
    strategy="exponential", initial=5.0, multiplier=2.0, max=300.0, jitter="equal"
)
_MAX_ERROR_CHARS = 500


@dataclass(slots=True)
class SendReport:
    """What one round of the sender did."""

    claimed: int = 0
    delivered: int = 0
    messages: int = 0
    digests: int = 0
    failed: int = 0
    held: int = 0


class OutboxSender:
    """One sender over one backend connection; call :meth:`run_once` repeatedly.

    ``lease_seconds`` must outlast the grouping window plus a delivery: held
    messages stay leased while they wait for room in their channel's window.
    """

    def __init__(
        self,
        backend: Backend,
        channels: Mapping[str, Channel],
        *,
        clock: Callable[[], float] = time.time,
        backoff: BackoffPolicy = DELIVERY_BACKOFF,
        batch_size: int = 100,
        lease_seconds: float = 300.0,
        window_seconds: float = WINDOW_SECONDS,
        max_held: int = 10_000,
        rng: random.Random | None = None,
    ) -> None:
        self.backend = backend
        self.channels = dict(channels)
        self.clock = clock
        self.backoff = backoff
        self.batch_size = batch_size
        self.lease_seconds = lease_seconds
        self.max_held = max_held
        self.rng = rng or random.Random()
        self.pacers = {
            name: ChannelPacer(channel.digest_after, window_seconds)
            for name, channel in self.channels.items()
        }
        if lease_seconds <= window_seconds:
            raise ValueError(
                f"lease_seconds ({lease_seconds:g}) must be longer than the grouping window "
                f"({window_seconds:g}): held messages stay leased while they wait"
            )
        # Held messages claimed this long ago go out even without room, well before
        # their lease runs out and another sender takes them.
        self._force_after = window_seconds + (lease_seconds - window_seconds) / 2

    @property
    def held(self) -> int:
        return sum(len(p.held) for p in self.pacers.values())

    def run_once(self) -> SendReport:
        """Claim due messages, send what the windows allow, hold the rest, send due digests."""
        report = SendReport()
        down: dict[str, str] = {}
        records: list[OutboxRecord] = []
        if self.held < self.max_held:
            records = self.backend.outbox_claim(self.batch_size, self.lease_seconds)
        report.claimed = len(records)
        now = self.clock()
        by_channel: dict[str, list[OutboxRecord]] = defaultdict(list)
        for record in records:
            by_channel[record.notification.channel].append(record)
        for name, group in by_channel.items():
            pacer = self.pacers.get(name)
            if pacer is None:
                self._failed(
                    group,
                    f"no Channel named {name!r} in the sheets this worker loaded; "
                    "add the Channel document (the message waits in the outbox)",
                    report,
                )
                continue
            for record in pacer.admit(group, now):
                self._deliver(name, [record], report, down)
        now = self.clock()
        for name, pacer in self.pacers.items():
            for group in pacer.due(now, force_before=now - self._force_after):
                self._deliver(name, group, report, down)
        report.held = self.held
        return report

    def flush(self) -> SendReport:
        """Send every held message now, ignoring the windows (the sender is stopping)."""
        report = SendReport()
        down: dict[str, str] = {}
        for name, pacer in self.pacers.items():
            records = pacer.take_all()
            for start in range(0, len(records), MAX_DIGEST_ITEMS):
                self._deliver(name, records[start : start + MAX_DIGEST_ITEMS], report, down)
        return report

    def _deliver(
        self, name: str, records: Sequence[OutboxRecord], report: SendReport, down: dict[str, str]
    ) -> None:
        if name in down:
            reason = f"not tried: channel {name} failed this round: {down[name]}"
            self._failed(records, reason, report)
            return
        channel = self.channels[name]
        message = self._message(channel, records)
        try:
            channel.sender.send(message)
        except DeliveryError as exc:
            down[name] = exc.message
            self._failed(records, exc.message, report)
            # Messages waiting for a digest on this channel go back to the outbox as well.
            self._failed(self.pacers[name].take_all(), f"not tried: {exc.message}", report)
            return
        except Exception as exc:  # a sender bug must not stop the other channels
            LOGGER.exception("channel %s: unexpected error while sending", name)
            down[name] = f"{type(exc).__name__}: {exc}"
            self._failed(records, down[name], report)
            return
        self.backend.outbox_delivered([r.id for r in records])
        self.pacers[name].sent(self.clock())
        report.delivered += len(records)
        report.messages += 1
        report.digests += int(message.digest)

    @staticmethod
    def _message(channel: Channel, records: Sequence[OutboxRecord]) -> Message:
        if len(records) == 1:
            return single_message(records[0].notification, channel.renderer)
        return digest_message(channel.name, [r.notification for r in records], channel.renderer)

    def _failed(self, records: Sequence[OutboxRecord], error: str, report: SendReport) -> None:
        error = error[:_MAX_ERROR_CHARS]
        for record in records:
            delay = next_delay(self.backoff, record.attempts + 1, self.rng)
            self.backend.outbox_failed(record.id, error, self.clock() + delay)
            report.failed += 1
        if records:
            LOGGER.warning(
                "channel %s: %d message(s) not delivered, will retry: %s",
                records[0].notification.channel,
                len(records),
                error,
            )


class SenderThread:
    """Runs an :class:`OutboxSender` in a thread of its own, with its own backend connection.

    ``open_backend`` is called inside the thread, so the sender has a
    connection of its own; ``owns_backend=False`` leaves a shared one open.
    :meth:`wake` makes the next round start at once; :meth:`stop` runs one last
    round (so a short-lived worker still delivers what it wrote), sends held
    digests, closes the connection and joins.
    """

    def __init__(
        self,
        open_backend: Callable[[], Backend],
        channels: Mapping[str, Channel],
        *,
        poll_interval: float = 1.0,
        name: str = "jobdef-outbox-sender",
        owns_backend: bool = True,
        **options: Any,  # OutboxSender's keyword options, checked when it is built
    ) -> None:
        self.open_backend = open_backend
        self.owns_backend = owns_backend
        self.channels = channels
        self.poll_interval = poll_interval
        self.options = options
        self.rounds = 0
        self.sender: OutboxSender | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout: float | None = 30.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        try:
            backend = self.open_backend()
        except Exception:
            LOGGER.exception("outbox sender cannot open the job store; the next tick retries")
            return
        sender = OutboxSender(backend, self.channels, **self.options)
        self.sender = sender
        try:
            while not self._stop.is_set():
                busy = False
                try:
                    report = sender.run_once()
                    busy = report.claimed >= sender.batch_size
                except Exception:
                    LOGGER.exception("outbox sender round failed; the messages stay in the outbox")
                self.rounds += 1
                if not busy:
                    self._wake.wait(self.poll_interval)
                    self._wake.clear()
            try:
                sender.run_once()
                sender.flush()
            except Exception:
                LOGGER.exception("outbox sender could not finish its last round; messages wait")
        finally:
            if self.owns_backend:
                backend.close()
