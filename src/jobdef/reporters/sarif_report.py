"""SARIF 2.1.0, for code scanning: every rule of the catalogue, every finding with its region.

Locations are relative to the project root, named by the base id ``PROJECTROOT``
(``originalUriBaseIds``), percent-encoded; a sheet outside the root is an absolute
``file:`` URI. Columns count Unicode code points (``columnKind``), as the sheet reader
does. Each result carries a ``partialFingerprints`` entry built from the rule, the file,
the message and the text of the line, not its number, so code scanning keeps matching a
finding after lines above it are added or removed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jobdef import __version__
from jobdef.reporters import Report
from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.rules import all_rules
from jobdef.sheets.rules.base import Rule

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
ROOT_ID = "PROJECTROOT"
REPOSITORY = "https://github.com/jobdef/jobdef"
FINGERPRINT = "jobdefFindingHash/v1"
_NUMBERS = re.compile(r"\d+")


def docs_ref() -> str:
    """The git ref the rule pages are linked at: the release tag, or main for a dev build."""
    return "main" if "dev" in __version__ else f"v{__version__}"


def help_uri(rule_id: str) -> str:
    """Where a rule is explained: its row of docs/rules.md (anchor ``#jd212``)."""
    return f"{REPOSITORY}/blob/{docs_ref()}/docs/rules.md#{rule_id.lower()}"


def render(report: Report) -> str:
    rules = all_rules()
    index = {rule.id: i for i, rule in enumerate(rules)}
    results: list[dict[str, Any]] = []
    seen: Counter[str] = Counter()
    for d in report.diagnostics:
        result: dict[str, Any] = {
            "ruleId": d.code,
            "level": "error" if d.severity == "error" else "warning",
            "message": {"text": d.message},
            "locations": [_location(report, d.file, d.line, d.column)],
        }
        if d.code in index:
            result["ruleIndex"] = index[d.code]
        if d.related:
            result["relatedLocations"] = [
                {"id": i, **_location(report, r.file, r.line, r.column)}
                for i, r in enumerate(d.related)
            ]
        digest = _fingerprint(report, d)
        seen[digest] += 1
        result["partialFingerprints"] = {FINGERPRINT: f"{digest}:{seen[digest]}"}
        results.append(result)
    driver = {
        "name": "jobdef",
        "version": __version__,
        "informationUri": REPOSITORY,
        "rules": [_rule(rule) for rule in rules],
    }
    run: dict[str, Any] = {"tool": {"driver": driver}}
    if report.root is not None:
        root = _file_uri(report.root).rstrip("/") + "/"
        run["originalUriBaseIds"] = {ROOT_ID: {"uri": root}}
    run["columnKind"] = "unicodeCodePoints"
    run["results"] = results
    sarif = {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(sarif, ensure_ascii=False, indent=2) + "\n"


def _rule(rule: Rule) -> dict[str, Any]:
    uri = help_uri(rule.id)
    return {
        "id": rule.id,
        "name": rule.name,
        "shortDescription": {"text": rule.rationale},
        "help": {
            "text": f"{rule.rationale} See {uri}",
            "markdown": f"{rule.rationale} See [{rule.id} in the rules]({uri}).",
        },
        "helpUri": uri,
        "defaultConfiguration": {"level": "error" if rule.severity == "error" else "warning"},
    }


def _fingerprint(report: Report, d: Diagnostic) -> str:
    """A hash of what the finding is, not where: numbers in the message (a line it
    refers to) are left out; the line's text is in only when it may be shown."""
    source = (report.source_line(d.file, d.line) or "") if d.excerpt else ""
    parts = (d.code, report.path(d.file), _NUMBERS.sub("#", d.message), source.strip())
    return hashlib.sha256("\0".join(parts).encode("utf-8", "backslashreplace")).hexdigest()[:32]


def _location(report: Report, file: str, line: int, column: int) -> dict[str, Any]:
    relative = report.relative(file)
    if relative is not None:
        artifact = {"uri": _quote(relative), "uriBaseId": ROOT_ID}
    else:
        artifact = {"uri": _file_uri(file)}
    return {
        "physicalLocation": {
            "artifactLocation": artifact,
            "region": {"startLine": line, "startColumn": column},
        }
    }


def _quote(path: str) -> str:
    """A relative URI reference: each byte outside the unreserved set percent-encoded
    (bytes of a name that is not UTF-8 as they are on disk)."""
    return quote(path, safe="/", errors="surrogateescape")


def _file_uri(path: str) -> str:
    return "file://" + _quote(Path(path).absolute().as_posix())
