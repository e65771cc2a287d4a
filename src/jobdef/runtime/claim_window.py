"""How many jobs a worker holds at once: its :class:`ClaimWindow`.

A worker that claimed everything its handler processes could queue (``prefetch``
per process) would, in a fleet, take a shallow backlog from its neighbours: the
first worker to wake holds 32 jobs that run one after another while the others
idle, and enqueue-to-start grows with the queue it hoards. A worker that claimed
only its free places would, on a deep backlog, pay a round trip to the store for
every few jobs, and its processes would wait on the store between claims.

So the window starts at what the processes can start soon (a running place and
one waiting task per process) and grows, doubling, only while it proves too
small: a claim that came back full while a process sat idle (the processes ran
dry during the round trip, and the store has more). It falls back to the start
as soon as a claim comes back short: the backlog is shallow, and what is left is
better shared with the other workers. On a deep backlog it reaches ``prefetch``
per process within a few claims, which is the batching of a lone worker.
"""

from __future__ import annotations

# Tasks per place the window starts at: the one a process runs and one waiting, so
# it starts its next job without waiting for the worker's next claim.
START_PER_PLACE = 2


class ClaimWindow:
    """The number of jobs a worker holds (claimed and not yet completed), between what its
    handler processes start soon (``places``: the jobs they run at once) and ``most``."""

    def __init__(self, places: int, most: int) -> None:
        self.least = min(most, places * START_PER_PLACE)
        self.most = most
        self.size = self.least

    def want(self, holding: int) -> int:
        """How many jobs to claim while holding ``holding``."""
        return max(0, self.size - holding)

    def claimed(self, asked: int, got: int, starved: bool) -> None:
        """After a claim of ``asked`` jobs that brought ``got``; ``starved``: a process had
        nothing to run when the claim was made."""
        if got < asked:
            self.size = self.least
        elif starved:
            self.size = min(self.most, self.size * 2)
