"""One YAML document of a sheet file as plain data, with the position of every value."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jobdef.policy.model import Origin

Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class Document:
    """One YAML document of kind Job, Channel or Defaults, as plain data.

    ``positions`` maps a path inside ``data`` (``("backoff", "initial")``) to the
    1-based (line, column) of its value; ``key_positions`` maps it to the
    position of its key. The loader (:mod:`jobdef.sheets.pipeline`) fills both in.
    """

    data: Mapping[str, Any]
    file: str
    line: int = 1
    positions: Mapping[Path_, tuple[int, int]] = field(default_factory=dict)
    key_positions: Mapping[Path_, tuple[int, int]] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return str(self.data.get("kind", ""))

    def origin(self, path: Path_, source: str) -> Origin:
        line, column = self.positions.get(path, (self.line, 1))
        return Origin(self.file, line, column, source)  # type: ignore[arg-type]
