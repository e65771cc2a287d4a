"""What a task returns is its ``TaskResult.return_value``, through real workers.

On SQLite and on PostgreSQL: a returned dict is stored as JSON and read back by
``get_result()``; a value too large to store leaves the job done with no result and
one warning in the worker's log naming the job and the limit.
"""

from __future__ import annotations

import pytest
from jd_support import Project, drain, unique

from jobdef.contrib.django.compat import TaskResultStatus
from jobdef.runtime.payloads import MAX_RESULT_BYTES

pytestmark = pytest.mark.slow


def test_a_returned_dict_is_the_return_value_and_a_too_large_one_is_none(
    project: Project, engine_alias: str
) -> None:
    from jdproject import tasks

    report = tasks.report.using(backend=engine_alias)
    item, big = unique(), unique()
    small = report.enqueue(item=item, size=3)
    large = report.enqueue(item=big, size=MAX_RESULT_BYTES)
    err = drain(project, engine_alias)

    small.refresh()
    assert small.status == TaskResultStatus.SUCCESSFUL
    # As JSON: the tuple is a list.
    assert small.return_value == {"item": item, "counts": [1, 2], "text": "xxx", "note": "é"}
    assert report.get_result(small.id).return_value == small.return_value
    assert project.backend(engine_alias).engine().get(int(small.id)).result == small.return_value

    large.refresh()
    assert large.status == TaskResultStatus.SUCCESSFUL  # the work happened
    assert large.return_value is None
    assert project.backend(engine_alias).engine().get(int(large.id)).result is None
    warnings = [line for line in err.splitlines() if "return value not stored" in line]
    assert len(warnings) == 1, err
    [warning] = warnings
    assert f"job {large.id} (report) attempt 1: return value not stored" in warning
    assert f"more than the {MAX_RESULT_BYTES} allowed" in warning
    assert "the job is done with no result" in warning
