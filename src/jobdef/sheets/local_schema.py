"""The project's own copy of the sheet schema, which editors read without a network.

``jobdef init`` writes it to :data:`LOCAL_SCHEMA` under the project root, ``jobdef
schema -o`` refreshes it, sheets point at it with a relative ``$schema`` line, and
``jobdef validate`` says when it differs from the schema of the jobdef that runs.
"""

from __future__ import annotations

import os
from pathlib import Path

from jobdef.sheets.files import read_regular
from jobdef.sheets.schema_check import schema_text

# Relative to the project root, with / separators (as written in sheets and settings).
LOCAL_SCHEMA = ".jobdef/jobdef-v1.schema.json"


def local_schema(root: Path) -> Path:
    return root / LOCAL_SCHEMA


def is_stale(root: Path) -> bool:
    """Whether the project has a copy of the schema that is not this jobdef's."""
    copy = local_schema(root)
    try:  # never through a symlink or from a FIFO, as sheets are read
        return read_regular(copy).decode("utf-8") != schema_text()
    except FileNotFoundError:
        return False
    except (OSError, UnicodeDecodeError):
        return True


def stale_note(root: Path) -> str:
    """The line ``validate`` prints about a stale copy."""
    return (
        f"note: {LOCAL_SCHEMA} differs from the schema of jobdef that ran this check, so "
        f"editors may check against an old schema; refresh it: jobdef schema -o {LOCAL_SCHEMA}"
    )


def schema_reference(folder: Path, root: Path) -> str:
    """The ``$schema`` value for a sheet in ``folder``: the local copy, relative to it."""
    relative = os.path.relpath(local_schema(root).absolute(), folder.absolute())
    return relative.replace(os.sep, "/")
