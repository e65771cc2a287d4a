"""What the rules that read effective policies get to see.

A finding about a value a job inherited from ``Defaults`` is about that job: the
rules locate it with :meth:`Context.where` (or :meth:`Context.item`) as for any
value, which gives the Defaults line; :meth:`Context.at_job` then moves it to the
job's own line, names the job and keeps the Defaults line as related. Each
``where`` records which job asked for an inherited place, and the findings of a
rule are read as the rule yields them, so the last job that asked is the one a
finding at that place is about (:func:`jobdef.sheets.rules.check` does this).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from jobdef.sheets.diagnostics import Diagnostic, Location
from jobdef.sheets.document import Document, Path_

if TYPE_CHECKING:
    from jobdef.policy.model import JobPolicy, Origin
    from jobdef.policy.workflow import WorkflowPolicy


# Never compared nor printed: without the generated __eq__ and __repr__, each of which
# costs `jobdef validate` start-up time.
@dataclass(repr=False, eq=False)
class Context:
    """The documents of one validation run.

    ``documents`` holds every document read; ``valid`` those that passed the
    schema (only they are merged); ``jobs`` pairs each valid Job document with
    its effective policy (built only when every Defaults document is valid);
    ``workflows`` each valid Workflow document with its policy.
    """

    documents: Sequence[Document]
    valid: Sequence[Document]
    jobs: Sequence[tuple[Document, JobPolicy]]
    check_imports: bool = False
    workflows: Sequence[tuple[Document, WorkflowPolicy]] = ()
    _lists: dict[Path_, dict[tuple[str, int, int], Document]] = field(default_factory=dict)
    # Place in a Defaults document -> the job and field that last asked for it.
    _inherited: dict[tuple[str, int, int], tuple[Document, JobPolicy, str]] = field(
        default_factory=dict
    )

    def of_kind(self, kind: str) -> list[Document]:
        return [doc for doc in self.valid if doc.kind == kind]

    @property
    def channels(self) -> Mapping[str, Document]:
        return {str(doc.data["name"]): doc for doc in self.of_kind("Channel")}

    @property
    def defaults(self) -> list[Document]:
        return self.of_kind("Defaults")

    def where(self, job: Document, policy: JobPolicy, *paths: str) -> Location:
        """Where the first of ``paths`` that was written anywhere is; else the job's own key
        of that field's first part; else the job's start."""
        for path in paths:
            origin = policy.origins.get(path)
            if origin is not None:
                if origin.source == "defaults":
                    self._inherit((origin.file, origin.line, origin.column), job, policy, path)
                return Location(origin.file, origin.line, origin.column)
            position = job.positions.get(tuple(path.split(".")))
            if position is not None:
                return Location(job.file, *position)
        for path in paths:
            head = path.split(".")[0]
            if (head,) in job.key_positions:
                line, column = job.key_positions[(head,)]
                return Location(job.file, line, column)
        return Location(job.file, job.line, 1)

    def item(
        self,
        origin: Origin | None,
        path: Path_,
        index: int,
        job: tuple[Document, JobPolicy] | None = None,
    ) -> Location | None:
        """The position of item ``index`` of the list written at ``origin`` (a list field);
        ``job``: the job whose list it is, when it may be inherited."""
        if origin is None:
            return None
        found = self._item(origin, path, index)
        if job is not None and origin.source == "defaults" and found is not None:
            place = (found.file, found.line, found.column)
            self._inherit(place, *job, ".".join(map(str, path)))
        return found

    def _item(self, origin: Origin, path: Path_, index: int) -> Location | None:
        places = self._lists.get(path)
        if places is None:  # index once per list field: where each document wrote it
            places = self._lists[path] = {
                (doc.file, *doc.positions[path]): doc
                for doc in self.documents
                if path in doc.positions
            }
        doc = places.get((origin.file, origin.line, origin.column))
        if doc is not None and (*path, index) in doc.positions:
            line, column = doc.positions[(*path, index)]
            return Location(origin.file, line, column)
        return Location(origin.file, origin.line, origin.column)

    def _inherit(
        self, place: tuple[str, int, int], job: Document, policy: JobPolicy, path: str
    ) -> None:
        self._inherited[place] = (job, policy, path)

    def forget_inherited(self) -> None:
        """Start a new rule: no place asked for so far belongs to its findings."""
        self._inherited.clear()

    def at_job(self, diagnostic: Diagnostic) -> Diagnostic:
        """``diagnostic`` moved to the job's own line when it sits on an inherited value's
        place in a Defaults document (see the module docstring); else as it is."""
        asked = self._inherited.get((diagnostic.file, diagnostic.line, diagnostic.column))
        if asked is None:
            return diagnostic
        job, policy, path = asked
        head = path.split(".")[0]
        line, column = job.key_positions.get(
            (head,), job.positions.get(("name",), (job.line, job.column))
        )
        inherited = Location(diagnostic.file, diagnostic.line, diagnostic.column)
        return dataclasses.replace(
            diagnostic,
            file=job.file,
            line=line,
            column=column,
            message=f"job {policy.name!r}: {diagnostic.message} ({path} is inherited from "
            f"Defaults at {inherited.file}:{inherited.line})",
            related=(inherited, *diagnostic.related),
        )
