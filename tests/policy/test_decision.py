"""The sync / async / batch decision flow: one case per branch, and the deciding answer."""

from __future__ import annotations

import pytest

from jobdef.policy.decision import recommend
from jobdef.policy.model import DecisionAnswers


@pytest.mark.parametrize(
    ("answers", "expected"),
    [
        (
            DecisionAnswers(time_triggered=True, done_within_seconds=True),
            ("batch", "time_triggered"),
        ),
        (
            DecisionAnswers(result_needed_at_once=True, done_within_seconds=True),
            ("sync", "done_within_seconds"),
        ),
        (
            DecisionAnswers(result_needed_at_once=True, done_within_seconds=False),
            ("async", "done_within_seconds"),
        ),
        (
            DecisionAnswers(
                result_needed_at_once=False,
                calls_external_systems=True,
                must_accept_when_external_down=True,
                done_within_seconds=True,
            ),
            ("async", "must_accept_when_external_down"),
        ),
        (DecisionAnswers(done_within_seconds=False), ("async", "done_within_seconds")),
        (
            DecisionAnswers(
                calls_external_systems=True,
                must_accept_when_external_down=False,
                done_within_seconds=True,
            ),
            ("sync", "done_within_seconds"),
        ),
        (DecisionAnswers(result_needed_at_once=False), ("async", "result_needed_at_once")),
        (DecisionAnswers(), ("sync", None)),
    ],
    ids=[
        "time-triggered-is-batch",
        "result-at-once-and-quick-is-sync",
        "result-at-once-but-slow-is-async",
        "external-down-must-accept-is-async",
        "long-work-is-async",
        "quick-local-work-is-sync",
        "nobody-waits-is-async",
        "nothing-answered-is-sync-undecided",
    ],
)
def test_recommend_follows_the_flow_and_names_the_deciding_answer(
    answers: DecisionAnswers, expected: tuple[str, str | None]
) -> None:
    assert recommend(answers) == expected


def test_time_trigger_decides_before_every_other_answer() -> None:
    answers = DecisionAnswers(
        time_triggered=True,
        result_needed_at_once=True,
        done_within_seconds=True,
        calls_external_systems=True,
        must_accept_when_external_down=True,
    )
    assert recommend(answers) == ("batch", "time_triggered")
