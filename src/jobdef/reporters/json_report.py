"""JSON: one object with counts and every finding, for scripts and editors."""

from __future__ import annotations

import json
from typing import Any

from jobdef import __version__
from jobdef.reporters import Report


def render(report: Report) -> str:
    errors, warnings = report.counts
    payload: dict[str, Any] = {
        "tool": "jobdef",
        "version": __version__,
        "files": len(report.files),
        "errors": errors,
        "warnings": warnings,
        "diagnostics": [
            {
                "file": report.path(d.file),
                "line": d.line,
                "column": d.column,
                "severity": d.severity,
                "code": d.code,
                "rule": d.rule,
                "message": d.message,
                "related": [
                    {"file": report.path(r.file), "line": r.line, "column": r.column}
                    for r in d.related
                ],
            }
            for d in report.diagnostics
        ],
    }
    return json.dumps(payload, ensure_ascii=False, indent=2) + "\n"
