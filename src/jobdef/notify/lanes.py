"""One delivery thread per channel, so a slow channel never delays the others.

The :class:`~jobdef.notify.sender.OutboxSender` claims messages and records
what became of them (it alone talks to the job store); a :class:`ChannelLane`
only renders and sends, one message at a time, in a thread of its own, and
hands back an :class:`Outcome` for each. A lane whose channel fails puts the
rest of that round's messages back untried, so a dead channel costs one
timeout per round; a message that waited in a lane's queue for half its lease
goes back to the outbox untried, before another sender could take it.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from jobdef.backends.records import OutboxRecord
from jobdef.errors import DeliveryError
from jobdef.notify.checks import Channel
from jobdef.notify.message import Message, digest_message, single_message
from jobdef.redact import redact

LOGGER = logging.getLogger("jobdef.outbox")


@dataclass(frozen=True, slots=True)
class Outcome:
    """What became of one message (one or more records, a digest): ``error`` None if sent."""

    channel: str
    records: Sequence[OutboxRecord]
    error: str | None = None
    digest: bool = False
    tried: bool = True


@dataclass(frozen=True, slots=True)
class _Batch:
    groups: Sequence[Sequence[OutboxRecord]]
    queued: float


def build_message(channel: Channel, records: Sequence[OutboxRecord]) -> Message:
    if len(records) == 1:
        return single_message(records[0].notification, channel.renderer)
    return digest_message(channel.name, [r.notification for r in records], channel.renderer)


class ChannelLane:
    """Sends the messages of one channel in a thread of its own; outcomes go to ``report``.

    Each :meth:`submit` is one round's messages for the channel, sent in order; after
    a failure the rest of that batch is put back untried.
    """

    def __init__(
        self, channel: Channel, report: Callable[[Outcome], None], *, max_wait: float
    ) -> None:
        self.channel = channel
        self.max_wait = max_wait
        self._report = report
        self._batches: queue.SimpleQueue[_Batch | None] = queue.SimpleQueue()
        self._thread = threading.Thread(
            target=self._run, name=f"jobdef-outbox-{channel.name}", daemon=True
        )
        self._thread.start()

    def submit(self, groups: Sequence[Sequence[OutboxRecord]]) -> None:
        self._batches.put(_Batch(groups, time.monotonic()))

    def close(self, timeout: float | None = None) -> None:
        self._batches.put(None)
        self._thread.join(timeout)

    def _run(self) -> None:
        while (batch := self._batches.get()) is not None:
            down: str | None = None
            for records in batch.groups:
                if down is None:
                    outcome = self._attempt(records, batch.queued)
                    down = outcome.error if outcome.tried else None
                else:
                    reason = f"not tried: channel {self.channel.name} failed this round: {down}"
                    outcome = Outcome(self.channel.name, records, reason, tried=False)
                self._report(outcome)

    def _attempt(self, records: Sequence[OutboxRecord], queued: float) -> Outcome:
        name = self.channel.name
        waited = time.monotonic() - queued
        if waited > self.max_wait:
            reason = f"not tried: waited {waited:.0f}s behind slower deliveries on channel {name}"
            return Outcome(name, records, reason, tried=False)
        digest = len(records) > 1
        try:
            self.channel.sender.send(build_message(self.channel, records))
        except DeliveryError as exc:
            return Outcome(name, records, exc.message, digest=digest)
        except Exception as exc:  # a sender bug must not stop the lane or the other channels
            # Scrubbed by the channel as its own errors are (a webhook's URL is a secret).
            scrub = getattr(self.channel.sender, "scrub", redact)
            LOGGER.error(
                "channel %s: unexpected error while sending\n%s",
                name,
                scrub(traceback.format_exc()).rstrip(),
            )
            return Outcome(name, records, scrub(f"{type(exc).__name__}: {exc}"), digest=digest)
        return Outcome(name, records, digest=digest)
