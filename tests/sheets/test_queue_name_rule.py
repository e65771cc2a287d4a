"""JD274: a job's queue one slip of the keyboard away from a Queue document's name."""

from __future__ import annotations

import pytest

from jobdef.sheets.words import edits, near_miss

QUEUES = {"exports", "mail", "batch"}


@pytest.mark.parametrize(
    ("a", "b", "count"),
    [("mail", "mail", 0), ("mial", "mail", 1), ("mails", "mail", 1), ("exprots", "exports", 1),
     ("expor", "exports", 2), ("points", "exports", 4), ("", "mail", 4)],
)  # fmt: skip
def test_edits_counts_a_swap_of_neighbours_as_one(a: str, b: str, count: int) -> None:
    assert edits(a, b) == count
    assert edits(b, a) == count


@pytest.mark.parametrize(
    ("queue", "meant"),
    [("mial", "mail"), ("exprots", "exports"), ("exprt", None), ("points", None),
     ("default", None), ("bach", "batch"), ("match", "batch")],
)  # fmt: skip
def test_near_miss_allows_one_edit_below_six_letters_and_two_from_six(
    queue: str, meant: str | None
) -> None:
    assert near_miss(queue, QUEUES) == meant
