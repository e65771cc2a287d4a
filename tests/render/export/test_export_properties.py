"""Any resolved policy, including ones the sheet rules would warn about, exports output
that its format's own model accepts: the converters clamp, they never emit invalid values."""

from __future__ import annotations

import json

import pytest
import yaml
from export_cases import (
    check_cloud_tasks,
    check_create_queue,
    check_kubernetes,
    check_retriers,
    check_temporal,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from jobdef.policy.model import BackoffPolicy, ErrorClass, ErrorPolicy, JobPolicy, RetentionPolicy
from jobdef.policy.registry import Registry
from jobdef.render.export import export

SECONDS = st.one_of(
    st.floats(min_value=0.001, max_value=10.0),
    st.floats(min_value=10.0, max_value=10 * 365 * 86400.0),
)
# A sheet name: a letter, then letters, digits and _ (100 characters at most).
NAMES = st.builds(
    str.__add__,
    st.sampled_from("abcxyz"),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_", max_size=99),
)
CLASSES = st.lists(
    st.sampled_from(["ConnectionError", "TimeoutError", "OSError", "app.errors.Gone"]),
    max_size=3,
    unique=True,
).map(lambda names: tuple(ErrorClass(n) for n in names))


@st.composite
def policies(draw: st.DrawFn) -> JobPolicy:
    strategy = draw(st.sampled_from(["fixed", "linear", "exponential", "list"]))
    backoff = BackoffPolicy(
        strategy=strategy,
        initial=draw(SECONDS),
        multiplier=draw(st.floats(min_value=1.0, max_value=10.0)),
        max=draw(st.none() | SECONDS),
        jitter=draw(st.sampled_from(["none", "full", "equal", "decorrelated"])),
        delays=tuple(draw(st.lists(SECONDS, min_size=1, max_size=8))) if strategy == "list" else (),
    )
    batch = draw(st.booleans())
    return JobPolicy(
        name=draw(NAMES),
        handler="app.jobs:run",
        mode="batch" if batch else "async",
        schedule="*/5 * * * *" if batch else None,
        timezone=draw(st.sampled_from(["UTC", "Asia/Tokyo", "America/New_York"])),
        catch_up=draw(st.sampled_from(["none", "latest", "all"])),
        max_attempts=draw(st.integers(min_value=1, max_value=1000)),
        backoff=backoff,
        timeout=draw(SECONDS),
        deadline=draw(st.none() | SECONDS),
        errors=ErrorPolicy(
            retry=draw(CLASSES),
            fatal=draw(CLASSES),
            default=draw(st.sampled_from(["retry", "fatal"])),
        ),
        on_reclaim=draw(st.sampled_from(["retry", "fail"])),
        priority=draw(st.integers(min_value=-100, max_value=100)),
        retention=RetentionPolicy(done=draw(st.none() | SECONDS), dead=draw(st.none() | SECONDS)),
    )


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(policies())
def test_any_policy_exports_valid_output_in_every_format(job):
    registry = Registry(jobs={job.name: job}, channels={})
    (sqs,) = json.loads(export(registry, "sqs").text)["jobs"].values()
    check_create_queue(sqs["queue"])
    check_create_queue(sqs["deadLetterQueue"])
    (tasks,) = json.loads(export(registry, "cloud-tasks").text)["jobs"].values()
    check_cloud_tasks(tasks)
    (temporal,) = json.loads(export(registry, "temporal").text)["jobs"].values()
    check_temporal(temporal)
    (machine,) = json.loads(export(registry, "step-functions").text)["jobs"].values()
    check_retriers(machine["definition"]["States"][machine["definition"]["StartAt"]])
    (manifest,) = yaml.safe_load_all(export(registry, "kubernetes").text)
    check_kubernetes(manifest)
    json.loads(export(registry, "json").text)  # finite numbers only (allow_nan=False)
