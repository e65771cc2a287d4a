"""One YAML document of a sheet file as plain data, with the position of every value.

The strict loader (:mod:`jobdef.sheets.strict_yaml`) makes these; the schema
check, the rules and the builder read them. There is no other document type.
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Any

from jobdef.records import Record, record

if TYPE_CHECKING:
    from jobdef.policy.model import Origin, Source

Path_ = tuple[str | int, ...]

# An integer written with more characters than this is kept as its text (see below).
INTEGER_TEXT_LIMIT = 1000


class OverlongInteger(str):
    """A plain integer scalar too long to read: the loader keeps its text instead of calling
    ``int()``, which refuses 4,300 digits and more (and would spend quadratic time below
    that). Rule JD109 reports it; nothing reads it as a number."""


# 1-based (line, column).
Position = tuple[int, int]


@record
class Document(Record):
    """One YAML document of kind Job, Channel, Defaults or Queue, as plain data.

    ``data`` is a mapping in every document :func:`~jobdef.sheets.strict_yaml.read_file`
    returns (:func:`~jobdef.sheets.strict_yaml.parse_text` also returns documents
    whose root is a list or a scalar, which ``read_file`` reports and drops).
    ``line`` and ``column`` are where the document starts; ``positions`` maps a
    path inside ``data`` (``("backoff", "initial")``) to the position of its
    value, ``key_positions`` to the position of its key. The loader fills both
    in while it reads.
    """

    data: Any
    file: str
    line: int = 1
    column: int = 1
    positions: dict[Path_, Position] = field(default_factory=dict)
    key_positions: dict[Path_, Position] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return str(self.data.get("kind", ""))

    def origin(self, path: Path_, source: Source) -> Origin:
        # Here: only building a policy asks, and sheets without a job or a workflow are
        # checked without loading the policy model (see jobdef.policy.values).
        from jobdef.policy.model import Origin

        line, column = self.positions.get(path, (self.line, 1))
        return Origin(self.file, line, column, source)
