"""The runtime folder's test sheets and its worker processes, for test modules to import.

They live here rather than in ``conftest.py``: several test folders have a
``conftest`` module, and ``from conftest import ...`` gets whichever was imported
first when one pytest run collects more than this folder.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from support.workers import Processes, worker_command

HERE = Path(__file__).resolve().parent
SHEETS = HERE / "sheets"


class Workers:
    """Worker processes started with `python -m jobdef worker`, killed at teardown."""

    def __init__(self, db_url: str, tmp_path: Path, sheets: Path = SHEETS) -> None:
        self.db_url = db_url
        self.tmp_path = tmp_path
        self.sheets = sheets
        self.processes = Processes(tmp_path, importable=(HERE,))

    def start(self, *extra: str, name: str = "w", lease: str = "1s") -> subprocess.Popen[bytes]:
        command = worker_command(self.db_url, self.sheets, "--lease", lease, *extra)
        return self.processes.start(name, command).process

    def log(self, name: str = "w") -> str:
        return self.processes.log(name)

    def stop_all(self) -> None:
        self.processes.close()
