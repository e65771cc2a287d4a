"""What the rules that read effective policies get to see."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from jobdef.policy.model import JobPolicy, Origin
from jobdef.sheets.diagnostics import Location
from jobdef.sheets.document import Document, Path_


@dataclass
class Context:
    """The documents of one validation run.

    ``documents`` holds every document read; ``valid`` those that passed the
    schema (only they are merged); ``jobs`` pairs each valid Job document with
    its effective policy (built only when every Defaults document is valid).
    """

    documents: Sequence[Document]
    valid: Sequence[Document]
    jobs: Sequence[tuple[Document, JobPolicy]]
    check_imports: bool = False
    _lists: dict[Path_, dict[tuple[str, int, int], Document]] = field(default_factory=dict)

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

    def item(self, origin: Origin | None, path: Path_, index: int) -> Location | None:
        """The position of item ``index`` of the list written at ``origin`` (a list field)."""
        if origin is None:
            return None
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
