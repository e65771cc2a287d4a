"""SARIF 2.1.0, for code scanning: every rule of the catalogue, every finding with its region."""

from __future__ import annotations

import json
from typing import Any

from jobdef import __version__
from jobdef.reporters import Report
from jobdef.sheets.rules import all_rules

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def render(report: Report) -> str:
    rules = all_rules()
    index = {rule.id: i for i, rule in enumerate(rules)}
    results: list[dict[str, Any]] = []
    for d in report.diagnostics:
        result: dict[str, Any] = {
            "ruleId": d.code,
            "level": "error" if d.severity == "error" else "warning",
            "message": {"text": d.message},
            "locations": [_location(d.file, d.line, d.column)],
        }
        if d.code in index:
            result["ruleIndex"] = index[d.code]
        if d.related:
            result["relatedLocations"] = [
                {"id": i, **_location(r.file, r.line, r.column)} for i, r in enumerate(d.related)
            ]
        results.append(result)
    driver = {
        "name": "jobdef",
        "version": __version__,
        "informationUri": "https://jobdef.dev/",
        "rules": [
            {
                "id": rule.id,
                "name": rule.name,
                "shortDescription": {"text": rule.rationale},
                "defaultConfiguration": {
                    "level": "error" if rule.severity == "error" else "warning"
                },
            }
            for rule in rules
        ],
    }
    sarif = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{"tool": {"driver": driver}, "results": results}],
    }
    return json.dumps(sarif, ensure_ascii=False, indent=2) + "\n"


def _location(file: str, line: int, column: int) -> dict[str, Any]:
    return {
        "physicalLocation": {
            "artifactLocation": {"uri": file.replace("\\", "/")},
            "region": {"startLine": line, "startColumn": column},
        }
    }
