"""The outbox sender: delivers the messages that transitions wrote to the outbox.

Delivery is at least once. A message is claimed (leased, so two senders do not
race), sent, then marked delivered; a failed delivery is recorded and retried
after a backoff drawn by :func:`jobdef.policy.backoff.next_delay`, for as long as it
takes: a channel that is down delays messages and never loses them. A crash
between sending and marking sends the message again after its lease, with the
same message id, so the receiver can drop the copy.

The sender never holds up job processing: :class:`SenderThread` runs it in its
own thread with its own backend connection. Nor does one channel hold up
another: each channel sends from a thread of its own
(:class:`~jobdef.notify.lanes.ChannelLane`), each delivery is bounded by the
channel's timeout as a total deadline, and once a channel fails, the rest of
its messages in that round are put back without trying, so a dead channel
costs one timeout per round, not one per message.
"""

from __future__ import annotations

import logging
import queue
import random
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from jobdef.backends.protocol import Backend
from jobdef.backends.records import OutboxRecord
from jobdef.errors import BackendError
from jobdef.notify.checks import Channel
from jobdef.notify.digest import MAX_DIGEST_ITEMS, WINDOW_SECONDS, ChannelPacer
from jobdef.notify.lanes import ChannelLane, Outcome
from jobdef.policy.backoff import next_delay
from jobdef.policy.model import BackoffPolicy
from jobdef.redact import redact

LOGGER = logging.getLogger("jobdef.outbox")
STORE_PAUSE_MAX = 5.0  # the longest pause between rounds while the job store is out

# Waits between delivery attempts of one message: 5s, 10s, 20s ... capped at 5 minutes,
# so a channel that comes back hears the backlog within minutes.
DELIVERY_BACKOFF = BackoffPolicy(
    strategy="exponential", initial=5.0, multiplier=2.0, max=300.0, jitter="equal"
)
_MAX_ERROR_CHARS = 500


@dataclass(frozen=True, slots=True)
class SenderSettings:
    """How the outbox sender claims, paces and retries; checked when built.

    ``batch_size``: messages claimed per round. ``lease_seconds``: how long a claimed
    message is the sender's; it must outlast the grouping window (``window_seconds``)
    plus a delivery, as held messages stay leased while they wait for room in their
    channel's window. ``max_held``: messages held for a digest at most.
    ``backoff``: the waits between delivery attempts of one message.
    ``poll_interval``: seconds between the rounds of :class:`SenderThread`.
    """

    batch_size: int = 100
    lease_seconds: float = 300.0
    window_seconds: float = WINDOW_SECONDS
    max_held: int = 10_000
    backoff: BackoffPolicy = DELIVERY_BACKOFF
    poll_interval: float = 1.0

    def __post_init__(self) -> None:
        if self.lease_seconds <= self.window_seconds:
            raise ValueError(
                f"lease_seconds ({self.lease_seconds:g}) must be longer than the grouping "
                f"window ({self.window_seconds:g}): held messages stay leased while they wait"
            )


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
    """One sender over one backend connection, as ``settings`` say; call :meth:`run_once`
    repeatedly. ``observe`` is told (channel, messages, delivered?) of each recorded
    delivery (the worker's metrics)."""

    def __init__(
        self,
        backend: Backend,
        channels: Mapping[str, Channel],
        settings: SenderSettings | None = None,
        *,
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
        observe: Callable[[str, int, bool], None] | None = None,
    ) -> None:
        self.backend = backend
        self.settings = settings = settings or SenderSettings()
        self.observe = observe
        self.channels = dict(channels)
        self.clock = clock
        self.rng = rng or random.Random()
        window, lease = settings.window_seconds, settings.lease_seconds
        self.pacers = {
            name: ChannelPacer(channel.digest_after, window)
            for name, channel in self.channels.items()
        }
        # Held messages claimed this long ago go out even without room, well before
        # their lease runs out and another sender takes them.
        self._force_after = window + (lease - window) / 2
        # A message queued behind a slow delivery this long goes back untried, so its
        # lease does not run out while it waits.
        self._max_wait = lease / 2
        self._lanes: dict[str, ChannelLane] = {}
        self._outcomes: queue.SimpleQueue[Outcome] = queue.SimpleQueue()
        self._pending = 0  # batches' groups handed to lanes whose outcome is not recorded
        self._in_flight = 0  # records in those groups
        self._counted_at: dict[int, float] = {}  # first record's id -> when its group counted

    @property
    def held(self) -> int:
        return sum(len(p.held) for p in self.pacers.values())

    def run_once(self, wait: bool = True) -> SendReport:
        """Claim due messages, send what the windows allow, hold the rest, send due digests.

        Each channel sends in its own :class:`~jobdef.notify.lanes.ChannelLane`. With
        ``wait`` the round returns when every message it handed out is sent or has
        failed; without it (the sender thread), a slow channel's messages finish in a
        later round and the other channels go on meanwhile.
        """
        report = SendReport()
        self._record(report)
        records: list[OutboxRecord] = []
        settings = self.settings
        if self.held + self._in_flight < settings.max_held:
            records = self.backend.outbox_claim(settings.batch_size, settings.lease_seconds)
        report.claimed = len(records)
        now = self.clock()
        by_channel: dict[str, list[OutboxRecord]] = defaultdict(list)
        for record in records:
            by_channel[record.notification.channel].append(record)
        batches: dict[str, list[list[OutboxRecord]]] = defaultdict(list)
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
            batches[name].extend(self._counted(pacer, [[r] for r in pacer.admit(group, now)]))
        now = self.clock()
        for name, pacer in self.pacers.items():
            due = pacer.due(now, force_before=now - self._force_after)
            batches[name].extend(self._counted(pacer, due))
        self._dispatch(batches)
        self._record(report, wait=wait)
        report.held = self.held
        return report

    def flush(self) -> SendReport:
        """Send every held message now, ignoring the windows (the sender is stopping)."""
        report = SendReport()
        self._record(report)
        batches: dict[str, list[list[OutboxRecord]]] = {}
        for name, pacer in self.pacers.items():
            records = pacer.take_all()
            batches[name] = [
                records[start : start + MAX_DIGEST_ITEMS]
                for start in range(0, len(records), MAX_DIGEST_ITEMS)
            ]
        self._dispatch(batches)
        self._record(report, wait=True)
        return report

    def close(self, timeout: float | None = 30.0) -> None:
        """Stop the channels' threads after what they are sending (outcomes not recorded
        stay leased in the outbox and go out again after the lease)."""
        for lane in self._lanes.values():
            lane.close(timeout)
        self._lanes.clear()

    def _counted(
        self, pacer: ChannelPacer, groups: list[list[OutboxRecord]]
    ) -> list[list[OutboxRecord]]:
        """``groups``, each counted against the window as it is handed out (a message in
        flight takes room as a sent one does)."""
        now = self.clock()
        for group in groups:
            pacer.sent(now)
            self._counted_at[group[0].id] = now
        return groups

    def _dispatch(self, batches: Mapping[str, Sequence[Sequence[OutboxRecord]]]) -> None:
        for name, groups in batches.items():
            if not groups:
                continue
            lane = self._lanes.get(name)
            if lane is None:
                lane = ChannelLane(self.channels[name], self._outcomes.put, max_wait=self._max_wait)
                self._lanes[name] = lane
            self._in_flight += sum(len(g) for g in groups)
            self._pending += len(groups)
            lane.submit(groups)

    def _record(self, report: SendReport, wait: bool = False) -> None:
        """Write to the store what the channels' threads report (all of it, with ``wait``)."""
        while self._pending:
            try:
                outcome = self._outcomes.get(block=wait)
            except queue.Empty:
                return
            self._pending -= 1
            self._in_flight -= len(outcome.records)
            self._apply(outcome, report)

    def _apply(self, outcome: Outcome, report: SendReport) -> None:
        counted_at = self._counted_at.pop(outcome.records[0].id, None)
        if outcome.error is not None:
            if counted_at is not None:  # only delivered messages take room in the window
                self.pacers[outcome.channel].unsent(counted_at)
            self._failed(outcome.records, outcome.error, report)
            if self.observe is not None:
                self.observe(outcome.channel, len(outcome.records), False)
            if outcome.tried:
                # Messages waiting for a digest on this channel go back to the outbox as well.
                held = self.pacers[outcome.channel].take_all()
                self._failed(held, f"not tried: {outcome.error}", report)
            return
        self.backend.outbox_delivered([r.id for r in outcome.records])
        report.delivered += len(outcome.records)
        report.messages += 1
        report.digests += int(outcome.digest)
        if self.observe is not None:
            self.observe(outcome.channel, len(outcome.records), True)

    def _failed(self, records: Sequence[OutboxRecord], error: str, report: SendReport) -> None:
        error = redact(error)[:_MAX_ERROR_CHARS]
        for record in records:
            delay = next_delay(self.settings.backoff, record.attempts + 1, self.rng)
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
    connection of its own, which it closes.
    :meth:`wake` makes the next round start at once; :meth:`stop` runs one last
    round (so a short-lived worker still delivers what it wrote), sends held
    digests, closes the connection and joins.
    """

    def __init__(
        self,
        open_backend: Callable[[], Backend],
        channels: Mapping[str, Channel],
        settings: SenderSettings | None = None,
        *,
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
        observe: Callable[[str, int, bool], None] | None = None,
        name: str = "jobdef-outbox-sender",
    ) -> None:
        self.open_backend = open_backend
        self.channels = channels
        self.settings = settings or SenderSettings()
        self._parts = (clock, rng, observe)
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
        clock, rng, observe = self._parts
        sender = OutboxSender(
            backend, self.channels, self.settings, clock=clock, rng=rng, observe=observe
        )
        self.sender = sender
        out = 0  # rounds in a row that found the job store out
        try:
            while not self._stop.is_set():
                busy = False
                pause = self.settings.poll_interval
                try:
                    report = sender.run_once(wait=False)
                    busy = report.claimed >= self.settings.batch_size
                except BackendError as exc:
                    # The store is out (a full disk, a server gone): one line, not a
                    # traceback per round, and a growing pause, as the worker's.
                    out += 1
                    if out == 1:
                        LOGGER.error(
                            "outbox sender: the job store cannot be used: %s; the messages "
                            "stay in the outbox, trying again every %gs at most",
                            exc,
                            STORE_PAUSE_MAX,
                        )
                    pause = max(pause, min(STORE_PAUSE_MAX, 0.25 * 2 ** (out - 1)))
                except Exception:
                    LOGGER.exception("outbox sender round failed; the messages stay in the outbox")
                else:
                    if out:
                        LOGGER.warning(
                            "outbox sender: the job store works again after %d failed rounds", out
                        )
                        out = 0
                self.rounds += 1
                if not busy:
                    self._wake.wait(pause)
                    self._wake.clear()
            try:
                sender.run_once()
                sender.flush()
            except Exception:
                LOGGER.exception("outbox sender could not finish its last round; messages wait")
        finally:
            sender.close()
            backend.close()
