"""The stylesheet's colours for what ended: an attempt or job that is neither a success
nor a failure (cancelled, released) is muted, never drawn in the failure colour."""

from __future__ import annotations

import re
from pathlib import Path

import jobdef.dashboard

CSS = Path(jobdef.dashboard.__file__).parent / "static" / "dashboard.css"


def _declarations() -> dict[str, dict[str, str]]:
    """Each selector of the stylesheet with its declarations (a rule of several
    selectors gives each of them the same)."""
    text = re.sub(r"/\*.*?\*/", "", CSS.read_text(encoding="utf-8"), flags=re.S)
    found: dict[str, dict[str, str]] = {}
    for selectors, body in re.findall(r"([^{}]+)\{([^}]*)\}", text):
        pairs = (part.split(":", 1) for part in body.split(";") if ":" in part)
        declared = {name.strip(): value.strip() for name, value in pairs}
        for selector in selectors.split(","):
            found.setdefault(selector.strip(), {}).update(declared)
    return found


def test_a_cancelled_or_released_state_and_outcome_is_muted_not_a_failure():
    css = _declarations()
    failure = css[".state-dead"]["color"]
    success = css[".state-done"]["color"]
    for selector in (".state-cancelled", ".outcome-cancelled", ".outcome-released"):
        colour = css[selector]["color"]
        assert colour not in (failure, success), selector
        assert "font-weight" not in css[selector], f"{selector} is not stressed as dead is"
    assert css[".state-cancelled"]["color"] == css[".note"]["color"]


def test_the_chart_draws_neither_apart_from_done_and_failed():
    css = _declarations()
    fills = {part: css[f"svg.chart rect.{part}"]["fill"] for part in ("ok", "bad", "neither")}
    assert len(set(fills.values())) == 3, fills
