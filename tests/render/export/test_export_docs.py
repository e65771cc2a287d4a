"""docs/export.md shows the real output: each example is what `jobdef export` prints today."""

from __future__ import annotations

import pytest
from export_cases import REPO

from jobdef.render.export import export

# (format, job) of each full example in docs/export.md (the json one is abridged).
EXAMPLES = [
    ("sqs", "export_csv"),
    ("cloud-tasks", "send_reservation_mail"),
    ("step-functions", "resize_image"),
    ("temporal", "nightly_report"),
    ("kubernetes", "nightly_report"),
]


@pytest.mark.parametrize(("fmt", "job"), EXAMPLES)
def test_the_docs_example_is_the_current_output(examples, fmt, job):
    page = (REPO / "docs" / "export.md").read_text("utf-8")
    text = export(examples, fmt, [job], base=REPO).text.rstrip()
    assert text in page, (
        f"docs/export.md: the {fmt} example of {job} is stale; paste the output of "
        f"`jobdef export --format {fmt} {job}` there"
    )
