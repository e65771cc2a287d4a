"""What a task returns is its ``TaskResult.return_value``, through real workers.

On SQLite and on PostgreSQL: a returned dict is stored as JSON and read back by
``get_result()``; a value larger than the sheet's ``result.max_bytes`` fails the
attempt with ``jobdef.ResultRefused``, and the job its sheet does not retry is
FAILED with that error, one line naming the job, the attempt and the limit.
"""

from __future__ import annotations

import pytest
from jd_support import Project, drain, unique

from jobdef.contrib.django.compat import TaskResultStatus
from jobdef.policy.values import DEFAULT_RESULT_BYTES

pytestmark = pytest.mark.slow


def test_a_returned_dict_is_the_return_value_and_a_too_large_one_fails_the_task(
    project: Project, engine_alias: str
) -> None:
    from jdproject import tasks

    report = tasks.report.using(backend=engine_alias)
    item, big = unique(), unique()
    small = report.enqueue(item=item, size=3)
    large = report.enqueue(item=big, size=DEFAULT_RESULT_BYTES)
    err = drain(project, engine_alias)

    small.refresh()
    assert small.status == TaskResultStatus.SUCCESSFUL
    # As JSON: the tuple is a list.
    assert small.return_value == {"item": item, "counts": [1, 2], "text": "xxx", "note": "é"}
    assert report.get_result(small.id).return_value == small.return_value
    assert project.backend(engine_alias).engine().get(int(small.id)).result == small.return_value

    large.refresh()
    assert large.status == TaskResultStatus.FAILED  # errors.default: fatal, one attempt
    with pytest.raises(ValueError, match="Task failed"):  # the framework's word for it
        large.return_value  # noqa: B018
    [error] = large.errors
    assert error.exception_class_path == "jobdef.ResultRefused"
    stored = project.backend(engine_alias).engine().get(int(large.id))
    assert (stored.state, stored.result) == ("dead", None)
    assert stored.last_error is not None
    assert stored.last_error.message.startswith(
        f"job {large.id} (report) attempt 1: return value refused, it is "
    )
    assert f"more than the {DEFAULT_RESULT_BYTES} allowed by result.max_bytes of " in (
        stored.last_error.message
    )
    assert "return value refused" in err
