"""A handler the adapters' sensitive-args tests run: it proves it got the value whole."""

from __future__ import annotations

import os
from pathlib import Path


def sign_in(user: str, password: str) -> None:
    Path(os.environ["JOBDEF_TEST_SEEN"]).write_text(f"{user}:{password}", encoding="utf-8")
