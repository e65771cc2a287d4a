"""The help of every command is laid out at the width argparse would choose, which the
CLI reads itself (:func:`jobdef.cli.terminal_columns`) rather than through shutil."""

from __future__ import annotations

import shutil

import pytest

from jobdef.cli import build_parser, terminal_columns


@pytest.mark.parametrize("columns", [None, "50", "200", "0", "-3", "wide", ""])
def test_the_width_is_shutils(columns: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert terminal_columns() == shutil.get_terminal_size().columns


def test_help_follows_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    narrow = build_parser("validate").format_help()
    monkeypatch.setenv("COLUMNS", "160")
    wide = build_parser("validate").format_help()
    assert max(map(len, narrow.splitlines())) <= 58 < max(map(len, wide.splitlines()))
