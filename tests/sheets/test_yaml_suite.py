"""The yaml-test-suite through the loader: the same findings with libyaml and without.

Every case of the suite (``../shared/external/yaml-test-suite/``, see its
SOURCE.txt) is loaded twice, as a sheet file would be: with libyaml's C parser
when PyYAML has it, and with the pure-Python parser only. Documents, positions
and every finding (rule, line, column, message) must be the same. The test also
reports how the loader's reading compares with the suite's own answer.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

import pytest
import yaml

from jobdef.sheets.strict_yaml import LoadedFile, load_text, parse_text
from support.external import external_data


def cases() -> dict[str, Any]:
    folder = external_data("yaml-test-suite")
    loaded: dict[str, Any] = json.loads((folder / "cases.json").read_text(encoding="utf-8"))
    return loaded


def outcome(loaded: LoadedFile) -> tuple[Any, ...]:
    """What validate sees of one file: documents with positions, and the findings."""
    return (
        [(repr(d.data), d.line, d.column, d.positions, d.key_positions) for d in loaded.documents],
        [(f.code, f.line, f.column, f.message) for f in loaded.diagnostics],
    )


def same_value(got: Any, expected: Any) -> bool:
    if isinstance(got, float) and isinstance(expected, float | int):
        return got == expected or (math.isnan(got) and math.isnan(expected))
    if isinstance(got, dict) and isinstance(expected, dict):
        return got.keys() == expected.keys() and all(same_value(got[k], expected[k]) for k in got)
    if isinstance(got, list) and isinstance(expected, list):
        return len(got) == len(expected) and all(
            same_value(a, b) for a, b in zip(got, expected, strict=True)
        )
    return type(got) is type(expected) and got == expected


def _json_documents(text: str) -> list[str]:
    """The suite's in.json holds one JSON value per document, one after the other."""
    decoder = json.JSONDecoder()
    values, index = [], 0
    while index < len(text):
        while index < len(text) and text[index].isspace():
            index += 1
        if index == len(text):
            break
        value, index = decoder.raw_decode(text, index)
        values.append(json.dumps(value))
    return values


def test_libyaml_and_the_pure_python_parser_give_the_same_findings(
    capsys: pytest.CaptureFixture[str],
) -> None:
    suite = cases()
    if not getattr(yaml, "__with_libyaml__", False):
        reason = "PyYAML has no libyaml here: only one parser to compare"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true needs PyYAML with libyaml: {reason}")
        pytest.skip(reason)
    differ = []
    raw_differ = 0
    for name, case in suite.items():
        fast = load_text(case["yaml"], "case.yaml", fast=True)
        reference = load_text(case["yaml"], "case.yaml", fast=False)
        if outcome(fast) != outcome(reference):
            differ.append(name)
        raw_differ += _parsers_differ(case["yaml"])
    with capsys.disabled():
        print(
            f"\nyaml-test-suite: {len(suite)} cases; the two parsers alone differ on "
            f"{raw_differ}; jobdef's findings differ on {len(differ)}"
        )
    assert differ == []
    assert len(suite) >= 400


def _parsers_differ(text: str) -> bool:
    """Whether libyaml and the pure-Python parser, used as they come, disagree."""

    def events(loader: Any) -> list[Any] | str:
        try:
            return [
                (type(e).__name__, getattr(e, "value", None), getattr(e, "tag", None))
                for e in yaml.parse(text, Loader=loader)
            ]
        except yaml.YAMLError:
            return "error"

    return events(yaml.CSafeLoader) != events(yaml.SafeLoader)


# Rules that refuse valid YAML on purpose: duplicates, anchors and aliases, merge keys,
# non-string keys, tags, what libraries misread.
ON_PURPOSE = {"JD005", "JD006", "JD007", "JD008", "JD012", "JD014"}


def test_the_loader_against_the_suites_own_answers(capsys: pytest.CaptureFixture[str]) -> None:
    suite = cases()
    counts: dict[str, list[str]] = {
        "invalid, refused": [],
        "invalid, accepted": [],
        "valid, read as the suite reads": [],
        "valid, read otherwise": [],
        "valid, refused by a sheet rule": [],
        "valid, refused as a syntax error": [],
        "valid without JSON, read": [],
    }
    for name, case in suite.items():
        documents, findings = parse_text(case["yaml"], "case.yaml", fast=False)
        errors = {f.code for f in findings if f.severity == "error"}
        if case["error"]:
            key = "invalid, refused" if errors else "invalid, accepted"
        elif errors & {"JD001", "JD002", "JD004"}:
            key = "valid, refused as a syntax error"
        elif errors:
            key = "valid, refused by a sheet rule"
            assert errors <= ON_PURPOSE, (name, errors)
        elif "json" not in case:
            key = "valid without JSON, read"
        else:
            expected = [json.loads(v) for v in _json_documents(case["json"])]
            same = same_value([d.data for d in documents], expected)
            key = "valid, read as the suite reads" if same else "valid, read otherwise"
        counts[key].append(name)
    with capsys.disabled():
        print("\nyaml-test-suite against its own answers (pure-Python parser):")
        for key, names in counts.items():
            listed = f": {' '.join(names)}" if len(names) <= 12 else ""
            print(f"  {len(names):3d} {key}{listed}")
    assert sum(len(names) for names in counts.values()) == len(suite)
    # What YAML libraries misread is refused: the three, and their kin.
    misread = ("652Z", "HM87/01", "SU5Z", "9JBA", "X4QW", "MUS6/00", "G5U8", "YJV2", "9C9N", "CVW2")
    for name in (*misread, "QB6E", "DK95/01"):
        assert name in counts["invalid, refused"] + counts["valid, refused by a sheet rule"]
