"""The JSON-Schema-Test-Suite (draft-07) run through a sheet: each test schema is one arg.

For every group of the suite, a sheet with one arg ``value`` whose schema is the
group's schema goes through ``jobdef validate``; each test's data is then
enqueued as that arg into a real SQLite queue. Enqueue must agree with the
suite: no invalid data stored, no valid data refused, no exception other than
``ArgsError``. A group ``validate`` refuses is counted; only the schemas that
cannot be one arg may be refused: a boolean schema (an arg's schema is a
mapping) and a ``$ref`` to a remote document (never fetched).

The suite lives beside the checkout (``../shared/external/json-schema-test-suite``,
see its SOURCE.txt); the test skips without it, and fails under ``CI=true``.
The counts are printed (``pytest -s``) and are in the assertion messages.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from jobdef.errors import ArgsError
from jobdef.runtime.queue import connect
from jobdef.sheets.build import build_registry
from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.pipeline import validate_sheets
from jobdef.sheets.schema_fast import UnsupportedSchema, compile_schema
from support.external import external_data

SHEET = """\
apiVersion: jobdef/v1
kind: Job
name: suite_case
handler: app.jobs:run
args:
  value: {schema}
max_attempts: 1
timeout: 30s
errors:
  default: fatal
"""


def _suite() -> Path:
    return external_data("json-schema-test-suite") / "draft7"


def _remote_only(errors: list[Diagnostic]) -> bool:
    """Whether validate refused only refs to other documents (JD108), never a ``#`` pointer."""
    return all(d.code == "JD108" and ": '#" not in d.message for d in errors)


def _holds_nul(data: object) -> bool:
    """Whether ``data`` holds a NUL character: args refuse it by jobdef's own rule (the
    same on both engines, as PostgreSQL's jsonb cannot store it), whatever the schema."""
    return "\\u0000" in json.dumps(data)


def _run(files: list[Path], tmp: Path) -> tuple[Counter[str], list[str]]:
    counts: Counter[str] = Counter()
    problems: list[str] = []
    with connect(f"sqlite:///{tmp / 'suite.db'}", build_registry([])) as queue:
        for file in files:
            for g, group in enumerate(json.loads(file.read_text(encoding="utf-8"))):
                counts["groups"] += 1
                where = f"{file.name} #{g} {group['description']!r}"
                schema = group["schema"]
                if not isinstance(schema, dict):
                    counts["not one arg (boolean schema)"] += 1
                    continue
                sheet = tmp / f"case_{file.stem}_{g}.yaml"
                sheet.write_text(
                    SHEET.format(schema=json.dumps(schema, ensure_ascii=False)), encoding="utf-8"
                )
                result = validate_sheets([sheet])
                errors = [d for d in result.diagnostics if d.severity == "error"]
                if errors:
                    counts["refused by validate"] += 1
                    if not _remote_only(errors):
                        problems.append(f"{where}: validate refused it: {errors[0].message}")
                    continue
                queue.registry = build_registry(result.documents, result.jobs)
                for test in group["tests"]:
                    counts["tests"] += 1
                    label = f"{where} / {test['description']!r}"
                    try:
                        stored = queue.enqueue("suite_case", {"value": test["data"]})
                    except ArgsError:
                        if test["valid"] and _holds_nul(test["data"]):
                            counts["valid refused: NUL, by jobdef's args rule"] += 1
                        elif test["valid"]:
                            counts["valid refused"] += 1
                            problems.append(f"{label}: valid data refused")
                        else:
                            counts["invalid refused (right)"] += 1
                        continue
                    except Exception as exc:  # the point of the test: nothing else escapes
                        counts["exceptions"] += 1
                        problems.append(f"{label}: {type(exc).__name__}: {exc}")
                        continue
                    if test["valid"]:
                        counts["valid stored (right)"] += 1
                    else:
                        counts["invalid stored"] += 1
                        problems.append(f"{label}: invalid data stored as job {stored.id}")
    return counts, problems


def _summary(name: str, counts: Counter[str]) -> str:
    return f"{name}: " + ", ".join(f"{key} {value}" for key, value in sorted(counts.items()))


@pytest.mark.slow
def test_enqueue_agrees_with_the_json_schema_test_suite(tmp_path: Path) -> None:
    files = sorted(_suite().glob("*.json"))
    counts, problems = _run(files, tmp_path)
    summary = _summary("JSON-Schema-Test-Suite draft7", counts)
    print("\n" + summary)
    assert counts["tests"] > 500, summary
    assert not problems, summary + "\n" + "\n".join(problems)


# Where jobdef differs from the optional tests, by design: patterns are Python's re
# (\d, \w and \s are Unicode-aware, \c and \p{...} do not compile and validate says
# so), and contentMediaType/contentEncoding are annotations, as draft-07 allows.
KNOWN_OPTIONAL = ("ecmascript-regex.json", "content.json")


def test_enqueue_and_the_optional_tests_differ_only_where_documented(tmp_path: Path) -> None:
    files = sorted((_suite() / "optional").glob("*.json"))
    counts, problems = _run(files, tmp_path)
    summary = _summary("JSON-Schema-Test-Suite draft7/optional", counts)
    print("\n" + summary)
    unexplained = [p for p in problems if not p.startswith(KNOWN_OPTIONAL)]
    assert counts["exceptions"] == 0, summary
    assert not unexplained, summary + "\n" + "\n".join(unexplained)


def test_the_fast_check_agrees_with_the_suite_or_gives_up(tmp_path: Path) -> None:
    """schema_fast compiles a suite schema and answers every test as the suite says, or
    raises UnsupportedSchema (never another exception, never a wrong answer)."""
    counts: Counter[str] = Counter()
    wrong: list[str] = []
    for file in sorted(_suite().glob("*.json")):
        for group in json.loads(file.read_text(encoding="utf-8")):
            try:
                check = compile_schema(group["schema"])
            except UnsupportedSchema:
                counts["schemas given up"] += 1
                continue
            counts["schemas compiled"] += 1
            for test in group["tests"]:
                counts["tests"] += 1
                # Compiled lazily (each property and pattern at its first use), afresh for
                # each test, it answers the same.
                lazy = compile_schema(group["schema"], lazy=True)
                if not check(test["data"]) == lazy(test["data"]) == test["valid"]:
                    wrong.append(f"{file.name} {group['description']!r} / {test['description']!r}")
    summary = _summary("schema_fast on draft7", counts)
    print("\n" + summary)
    assert not wrong, summary + "\n" + "\n".join(wrong)
