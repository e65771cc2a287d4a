"""Handlers of the example sheets in ``jobdefs/``, used by ``jobdef demo``.

They are small but real: mail is written as ``.eml`` files, images are
resized (PGM/PPM), points go to a SQLite balance table, exports and reports are
CSV files. Everything lands under :func:`data_dir` (``$JOBDEF_EXAMPLES_DIR``,
default a ``jobdef-examples`` folder in the system temp folder).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def data_dir() -> Path:
    """Where the example handlers read and write; created on first use."""
    folder = Path(
        os.environ.get("JOBDEF_EXAMPLES_DIR") or Path(tempfile.gettempdir()) / "jobdef-examples"
    )
    folder.mkdir(parents=True, exist_ok=True)
    return folder
