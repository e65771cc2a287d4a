"""The registry: every job, workflow, channel and queue policy of a set of sheets, by name."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import field
from typing import TYPE_CHECKING

from jobdef.errors import UnknownJobError, UnknownWorkflowError
from jobdef.policy.model import ChannelPolicy, JobPolicy, QueuePolicy
from jobdef.records import Record, record

if TYPE_CHECKING:
    from jobdef.policy.workflow import WorkflowPolicy


@record
class Registry(Record):
    """Every job, workflow, channel and queue of a set of sheets, by name.

    Iterating and ``len`` go over the jobs only: a workflow runs jobs, it is not one.
    """

    jobs: Mapping[str, JobPolicy]
    channels: Mapping[str, ChannelPolicy]
    queues: Mapping[str, QueuePolicy] = field(default_factory=dict)
    workflows: Mapping[str, WorkflowPolicy] = field(default_factory=dict)

    def job(self, name: str) -> JobPolicy:
        try:
            return self.jobs[name]
        except KeyError:
            known = ", ".join(sorted(self.jobs)) or "none"
            raise UnknownJobError(
                f"no sheet defines a job named {name[:60]!r} (jobs: {known}); "
                "check the name or point --sheets at the right folder"
            ) from None

    def workflow(self, name: str) -> WorkflowPolicy:
        try:
            return self.workflows[name]
        except KeyError:
            known = ", ".join(sorted(self.workflows)) or "none"
            raise UnknownWorkflowError(
                f"no sheet defines a workflow named {name[:60]!r} (workflows: {known}); "
                "check the name or point --sheets at the right folder"
            ) from None

    def known(self, name: str) -> None:
        """Raise :class:`UnknownJobError` unless ``name`` is a job or a workflow; the message
        lists both (for the commands that take either: explain, tsv)."""
        if name in self.jobs or name in self.workflows:
            return
        if not self.workflows:
            self.job(name)  # raises, worded as for any job
        jobs = ", ".join(sorted(self.jobs)) or "none"
        flows = ", ".join(sorted(self.workflows)) or "none"
        raise UnknownJobError(
            f"no sheet defines a job or workflow named {name[:60]!r} (jobs: {jobs}; "
            f"workflows: {flows}); check the name or point --sheets at the right folder"
        )

    def __iter__(self) -> Iterator[JobPolicy]:
        return iter(self.jobs[name] for name in sorted(self.jobs))

    def __len__(self) -> int:
        return len(self.jobs)
