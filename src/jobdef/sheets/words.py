"""Word helpers for messages: the closest known name to a misspelt one.

Two questions, two measures, both here so that every caller asks them the same way:

- :func:`did_you_mean` *suggests* a name in a message about a value that is
  wrong anyway (an unknown field, arg, channel, time zone). It uses difflib's
  similarity, which also catches a shortened name (``{order}`` -> ``order_id``).
- :func:`near_miss` *decides* whether a value that is valid as written is
  probably a typo of a defined name (rule JD274: a queue needs no Queue
  document). It allows only one or two :func:`edits`, so that two distinct
  names that merely look alike are not reported.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

# Past these sizes no suggestion is made: a guess among thousands of names helps nobody,
# and difflib's cost per word grows with each (a sheet of 5,000 unknown names against
# 5,000 args took 100 s of validation).
MAX_CHOICES = 1000
MAX_WORD = 200
# Names a message lists before it says how many more there are.
MAX_LISTED = 20


def closest(word: str, choices: Collection[str]) -> str | None:
    """The choice :func:`did_you_mean` would suggest for ``word``, or None."""
    import difflib

    if len(choices) > MAX_CHOICES or len(word) > MAX_WORD:
        return None
    match = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return match[0] if match else None


def did_you_mean(word: str, choices: Collection[str]) -> str:
    """``; did you mean 'x'?`` for the closest choice, or an empty string."""
    match = closest(word, choices)
    return f"; did you mean {match!r}?" if match else ""


def listing(items: Iterable[str], empty: str = "none") -> str:
    """``a, b, c`` for a message, at most :data:`MAX_LISTED` of ``items`` and then how many
    more (``..., t and 4,980 more``); ``empty`` when there are none. A message that lists
    every name of a hostile sheet would make each finding as big as the sheet."""
    items = list(items)
    if len(items) <= MAX_LISTED:
        return ", ".join(items) or empty
    return f"{', '.join(items[:MAX_LISTED])} and {len(items) - MAX_LISTED:,} more"


def edits(a: str, b: str) -> int:
    """Single-character insertions, deletions, substitutions and swaps of neighbours
    that turn ``a`` into ``b`` (optimal string alignment distance)."""
    rows = [list(range(len(b) + 1))]
    for i, x in enumerate(a, 1):
        row = [i]
        for j, y in enumerate(b, 1):
            best = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + (x != y))
            if i > 1 and j > 1 and x == b[j - 2] and a[i - 2] == y:
                best = min(best, rows[-2][j - 2] + 1)
            row.append(best)
        rows.append(row)
    return rows[-1][-1]


def near_miss(name: str, names: set[str]) -> str | None:
    """The one defined name ``name`` is a slip of the keyboard away from: one edit for
    short names, two from six letters on (``mial`` -> ``mail``, not ``points`` -> ``exports``)."""
    allowed = 1 if len(name) < 6 else 2
    close = sorted((edits(name, other), other) for other in names)
    return close[0][1] if close and close[0][0] <= allowed else None
