"""Random flows with random outcomes, run in the store and checked against a model.

Each example draws a flat graph (every edge from an earlier step to a later one,
each with a random edge policy, sometimes a ``finally``), an outcome for each step
(done; dead at once; a failed attempt then done; two failed attempts, so dead), and
the order in which a worker takes up what is queued. The store runs it (SQLite, in
this process, for speed: the settling code is the same for both engines) and:

- no step is claimed while one of its parents (every other step, for ``finally``)
  has not ended;
- no step is claimed more often than its attempts allow;
- every step and the flow end as the model says, nothing is left waiting, and every
  cancelled step carries its reason.

The model is the rule of the sheet, written as plainly as possible: a step is
cancelled when a parent on a ``cancel`` edge did not end done; otherwise it runs and
ends as its outcome says.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest
from flow_specs import new_flow
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobdef.backends import open_backend
from jobdef.backends.flows import ENDED
from jobdef.backends.records import ClaimOptions, ErrorInfo
from support import ManualClock

OUTCOMES = ("done", "dead", "retry_done", "retry_dead")
POLICIES = ("cancel", "run", "ignore")
BOOM = ErrorInfo("RuntimeError", "boom")


@st.composite
def flows(draw: st.DrawFn) -> tuple[dict, dict[str, str], int]:
    count = draw(st.integers(1, 7))
    names = [f"s{i}" for i in range(count)]
    spec: dict = {}
    for i, name in enumerate(names):
        parents = draw(st.lists(st.sampled_from(names[:i]), unique=True)) if i else []
        spec[name] = ({p: draw(st.sampled_from(POLICIES)) for p in parents}, {})
    if draw(st.booleans()):
        spec["finally"] = ({}, {})
    outcomes = {name: draw(st.sampled_from(OUTCOMES)) for name in spec}
    return spec, outcomes, draw(st.integers(0, 2**32))


def model(spec: dict, outcomes: dict[str, str]) -> tuple[dict[str, str], str]:
    """Each step's end and the flow's, by the sheet's rule."""
    ends: dict[str, str] = {}
    for name, (after, _args) in spec.items():  # parents come first in the spec
        cancelled = any(
            policy == "cancel" and ends[parent] != "done" for parent, policy in after.items()
        )
        ran = "done" if outcomes[name] in ("done", "retry_done") else "dead"
        ends[name] = "cancelled" if cancelled else ran
    steps = [ends[n] for n in spec if n != "finally"]
    return ends, "done" if all(end == "done" for end in steps) else "failed"


@pytest.fixture(scope="module")
def flow_store(tmp_path_factory: pytest.TempPathFactory):
    clock = ManualClock(1_700_000_000.0)
    path: Path = tmp_path_factory.mktemp("flow-properties") / "jobs.db"
    backend = open_backend(f"sqlite:///{path}?synchronous=off", clock=clock)
    yield backend, clock
    backend.close()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flows())
def test_random_flows_end_as_the_model_says(flow_store, drawn) -> None:
    backend, clock = flow_store
    spec, outcomes, seed = drawn
    rng = random.Random(seed)
    receipt = backend.start_flow(new_flow(spec, max_attempts=2))
    claims: Counter[str] = Counter()
    options = ClaimOptions("w", 30, limit=100)
    while True:
        claimed = backend.claim(options)
        if not claimed:
            break
        # Only this flow's steps are queued: earlier examples' flows have all ended.
        rng.shuffle(claimed)
        for record in claimed[: rng.randint(1, len(claimed))]:
            states = backend.get_flow(receipt.id).steps
            after, _ = spec[record.step]
            parents = [n for n in spec if n != record.step] if record.step == "finally" else after
            waiting_on = [p for p in parents if states[p] not in ENDED]
            assert not waiting_on, f"{record.step} claimed before {waiting_on} ended"
            claims[record.step] += 1
            outcome = outcomes[record.step]
            if outcome == "done" or (outcome == "retry_done" and record.attempt == 2):
                assert backend.complete([record.lease], results={record.id: "{}"}) == [True]
            elif outcome == "dead" or record.attempt == 2:
                assert backend.bury(record.lease, BOOM)
            else:
                assert backend.retry(record.lease, BOOM, run_after=clock(), delay=0)
        # What was claimed and not ended this round goes back, as a worker's shutdown.
        for record in claimed:
            current = backend.get(record.id)
            if current.state == "running" and current.attempt == record.attempt:
                assert backend.release(record.lease)
    flow = backend.get_flow(receipt.id)
    ends, flow_end = model(spec, outcomes)
    assert flow.steps == ends
    assert flow.state == flow_end
    assert all(count <= 2 for count in claims.values()), claims
    for name, state in flow.steps.items():
        if state == "cancelled":
            assert backend.get(flow.step_ids[name]).note
            assert claims[name] == 0
