"""Grouping: an incident must not send a thousand messages.

Per channel, at most ``digest_after`` messages go out in any window of
``window`` seconds (a minute). Events beyond that wait, still leased in the
outbox, and go out together as one digest as soon as the window has room
again; a digest lists every event it holds. A digest holds at most
:data:`MAX_DIGEST_ITEMS` events (chat services cut longer texts), so a larger
backlog becomes a few digests, each counted against the window too.

So a burst of B events on one channel sends at most ``digest_after`` single
messages in its first minute and then ``ceil(rest / MAX_DIGEST_ITEMS)``
digests. The limit is per sender (per worker process).
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from jobdef.backends.records import OutboxRecord

WINDOW_SECONDS = 60.0
MAX_DIGEST_ITEMS = 200


@dataclass(frozen=True, slots=True)
class Held:
    """An outbox message waiting for room in its channel's window."""

    record: OutboxRecord
    claimed_at: float


class ChannelPacer:
    """The send window of one channel and the messages waiting for it."""

    def __init__(self, limit: int, window: float = WINDOW_SECONDS) -> None:
        self.limit = max(1, limit)
        self.window = window
        self._sent: deque[float] = deque()
        self.held: list[Held] = []

    def room(self, now: float) -> int:
        """How many messages may go out now without passing the limit."""
        while self._sent and self._sent[0] <= now - self.window:
            self._sent.popleft()
        return self.limit - len(self._sent)

    def sent(self, now: float) -> None:
        """Count one delivered message (single or digest) against the window."""
        self._sent.append(now)

    def unsent(self, at: float) -> None:
        """Take back a message counted at ``at`` that was not delivered after all."""
        with contextlib.suppress(ValueError):  # already out of the window
            self._sent.remove(at)

    def admit(self, records: Sequence[OutboxRecord], now: float) -> list[OutboxRecord]:
        """Split claimed ``records``: those to send one by one now; the rest are held.

        While messages are held, new ones queue behind them, so the order of
        events on a channel is kept.
        """
        free = 0 if self.held else max(0, self.room(now))
        self.held.extend(Held(record, now) for record in records[free:])
        return list(records[:free])

    def due(self, now: float, force_before: float | None = None) -> list[list[OutboxRecord]]:
        """Take the held messages that may go out now, in groups of one message each.

        A group of one goes out as a normal message, a larger one as a digest.
        ``force_before``: messages claimed before this time go out even without
        room (their outbox lease is about to run out).
        """
        groups: list[list[OutboxRecord]] = []
        budget = max(0, self.room(now))
        while self.held and (budget > 0 or self._overdue(force_before)):
            chunk, self.held = self.held[:MAX_DIGEST_ITEMS], self.held[MAX_DIGEST_ITEMS:]
            groups.append([h.record for h in chunk])
            budget -= 1
        return groups

    def _overdue(self, force_before: float | None) -> bool:
        return force_before is not None and any(h.claimed_at < force_before for h in self.held)

    def take_all(self) -> list[OutboxRecord]:
        """Every held message, and none held any more."""
        records = [h.record for h in self.held]
        self.held = []
        return records
