"""Provisional sheet reading: plain PyYAML, no positions, no validation.

Replaced by the strict loader and validator; kept tiny so that the runtime and
the docs can be built against :func:`jobdef.registry.load_registry` meanwhile.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import yaml

from jobdef.registry import Document


def sheet_files(paths: Sequence[str | Path]) -> list[Path]:
    """Every ``*.yaml``/``*.yml`` file under ``paths``, sorted, files given directly included."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml"))
        else:
            found.append(path)
    return sorted(set(found))


def load_documents(paths: Sequence[str | Path]) -> list[Document]:
    docs: list[Document] = []
    for file in sheet_files(paths):
        with file.open(encoding="utf-8") as stream:
            for data in yaml.safe_load_all(stream):
                if isinstance(data, dict):
                    docs.append(Document(data=data, file=str(file)))
    return docs
