"""The claim window: what a worker holds starts at what its processes start soon, grows
on a deep backlog while they run dry, and falls back when a claim comes back short."""

from __future__ import annotations

from jobdef.runtime.claim_window import START_PER_PLACE, ClaimWindow


def test_it_starts_at_what_the_processes_start_soon() -> None:
    window = ClaimWindow(places=2, most=64)
    assert window.size == 2 * START_PER_PLACE
    assert window.want(holding=1) == 2 * START_PER_PLACE - 1
    assert window.want(holding=10) == 0


def test_on_a_deep_backlog_it_doubles_to_the_prefetch_while_the_processes_run_dry() -> None:
    window = ClaimWindow(places=2, most=64)
    sizes = []
    while window.size < 64:
        window.claimed(asked=window.size, got=window.size, starved=True)
        sizes.append(window.size)
    assert sizes == [8, 16, 32, 64]
    window.claimed(asked=64, got=64, starved=True)
    assert window.size == 64


def test_it_keeps_its_size_while_the_processes_have_work_and_falls_back_on_a_short_claim() -> None:
    window = ClaimWindow(places=1, most=32)
    for _ in range(3):
        window.claimed(asked=window.size, got=window.size, starved=True)
    assert window.size == 16
    window.claimed(asked=8, got=8, starved=False)
    assert window.size == 16
    window.claimed(asked=8, got=3, starved=True)  # the backlog is shallow: share it
    assert window.size == window.least == START_PER_PLACE


def test_a_small_prefetch_caps_it_from_the_start() -> None:
    assert ClaimWindow(places=4, most=4).size == 4


def test_places_that_run_at_once_start_it_wider() -> None:
    # Async handlers: 2 processes of 8 slots hold 16 jobs, all running at once.
    assert ClaimWindow(places=16, most=16).size == 16
